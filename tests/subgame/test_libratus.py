"""The Libratus endgame reader: the file's hand order, the game it implies, and clear errors."""

import itertools
from pathlib import Path

import numpy as np
import pytest

from holdem.cards import parse_cards
from subgame.libratus import read_libratus
from subgame.solver import solve
from subgame.tree import SubgameError, hand_index

FIX = Path(__file__).resolve().parents[1] / "data" / "libratus"  # copies of ../shared/fixtures/libratus


def _file_reach(path):
    toks = path.read_text().split()
    i = toks.index("-reach")
    return np.array([float(x) for x in toks[i + 1 :]]).reshape(2, 1326)


def test_river_endgame_reads_in_the_files_hand_order():
    sub = read_libratus(FIX / "subgame4.txt")
    g = sub.game
    assert sub.board == tuple(parse_cards("JsKs5cQs7d", 4, 13))
    assert sub.pot == 3750 and sub.root.spent == (1875, 1875) and sub.root.round == 3
    assert sub.root.current_player() == 0  # out of position: the big blind acts first after the flop
    raw = _file_reach(FIX / "subgame4.txt")
    idx = hand_index(g)
    order = [parse_cards(r + s, 4, 13)[0] for r in "23456789TJQKA" for s in "shdc"]
    for k, (a, b) in enumerate(itertools.combinations(order, 2)):
        if k % 97 == 0 or k < 5:
            assert sub.ranges[0, idx[tuple(sorted((a, b)))]] == raw[0, k]
            assert sub.ranges[1, idx[tuple(sorted((a, b)))]] == raw[1, k]
    # the file's first hands are 2s2h, 2s2d, 2s2c, 2s3s
    assert raw[0, 0] == sub.ranges[0, idx[tuple(sorted(parse_cards("2s2h", 4, 13)))]]
    assert raw[0, 3] == sub.ranges[0, idx[tuple(sorted(parse_cards("2s3s", 4, 13)))]]


def test_river_endgame_solves_to_half_a_percent_of_the_pot():
    sub = read_libratus(FIX / "subgame4.txt")
    sol = solve(sub, "unsafe", target_pct_pot=0.5, check_every=10)
    assert sol.exploitability_pct_pot <= 0.5
    with pytest.raises(SubgameError, match="alternative"):
        solve(sub, "resolve", iterations=1)


def test_bad_files_are_named(tmp_path):
    good = (FIX / "subgame4.txt").read_text()
    cases = {
        "missing": (good.replace("-pot 3750", ""), "missing field -pot"),
        "short": (good.rsplit(" ", 10)[0], "2 x 1326"),
        "board": (good.replace("JsKs5cQs7d", "JsKs5cQs"), "needs 5 board cards"),
        "card": (good.replace("JsKs5cQs7d", "JsKs5cQsXd"), "-board"),
        "neg": (good.replace("-reach 0.0020375338", "-reach -0.5"), "probabilities"),
        "odd": (good.replace("-pot 3750", "-pot 3751"), "must be even"),
    }
    for name, (text, msg) in cases.items():
        p = tmp_path / f"{name}.txt"
        p.write_text(text)
        with pytest.raises(SubgameError, match=msg):
            read_libratus(p)
    with pytest.raises(SubgameError, match="cannot read"):
        read_libratus(tmp_path / "nope.txt")
    # a blocked hand with weight: the reader names it
    raw = good.split()
    i = raw.index("-reach")
    order = [r + s for r in "23456789TJQKA" for s in "shdc"]
    k = [a + b for a, b in itertools.combinations(order, 2)].index("JsAs")
    raw[i + 1 + k] = "0.5"
    p = tmp_path / "blocked.txt"
    p.write_text(" ".join(raw))
    with pytest.raises(SubgameError, match="shares a card with the board"):
        read_libratus(p)


def test_package_entry_point():
    import subgame

    sub = read_libratus(FIX / "subgame4.txt")
    sol = subgame.solve(sub, method="unsafe", iterations=20)
    assert isinstance(sol, subgame.Solution) and sol.iterations == 20 and "unsafe" in subgame.METHODS
    with pytest.raises(AttributeError):
        subgame.nothing_here
