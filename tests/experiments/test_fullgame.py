"""The full-game scorer of the Brown & Sandholm rebuild (scripts/experiments/fullgame.py) on a tiny deck."""

import numpy as np
import pytest

from abstraction.bets import parse_bets
from abstraction.buckets import build_buckets
from abstraction.isomorphism import HandIndexer
from blueprint.blueprint import Blueprint
from blueprint.trainer import make_trainer
from holdem.cards import cards_str
from scripts.experiments.fullgame import (
    FLOP_BETS_TOML,
    FLOP_OFF_TREE_TOML,
    CombinedBestResponse,
    FullGame,
    SolveSettings,
    board_classes,
    flop_game,
    off_tree_edges,
    preflop_gift_rates,
    run_experiment,
    run_nested_experiment,
)
from subgame.tree import SubgameError, board_hands


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("fullgame")
    g = flop_game(ranks=4, suits=3, stack_bb=5)
    ix = HandIndexer.for_game(g)
    ab = build_buckets(g, (ix.size(0), 3), "ehs", d / "ab", progress=False, log=lambda s: None)
    (d / "bets.toml").write_text(FLOP_BETS_TOML)
    tr = make_trainer(g, bets=str(d / "bets.toml"), cards=str(ab), algo="dcfr", seed=0)
    tr.run(5000)
    return tr, Blueprint(tr), FullGame(Blueprint(tr))


def test_board_classes_cover_every_board():
    g = flop_game(ranks=4, suits=4, stack_bb=5)
    bc = board_classes(g, 3)
    assert sum(bc.count.values()) == len(bc.canon) == 560
    hands = [tuple(h) for h in __import__("subgame.tree", fromlist=["all_hands"]).all_hands(g).tolist()]
    for b, (rep, p) in list(bc.canon.items())[::37]:
        perm = bc.perms[p]
        assert tuple(sorted((c // 4) * 4 + perm[c % 4] for c in b)) == rep
        h = hands[5]
        assert hands[bc.hand_perm[p][5]] == tuple(sorted((c // 4) * 4 + perm[c % 4] for c in h))


def test_scorer_matches_trainer_exploitability(tiny):
    tr, bp, fg = tiny
    base, base_brv = tr.exploitability()
    fast, brv = CombinedBestResponse(fg).exploitability()
    assert fast == pytest.approx(base, abs=1e-6 * (1 + abs(base)))  # float32 strategies in the kernels
    np.testing.assert_allclose(brv, base_brv, atol=1e-6)
    # the blueprint lifted onto the public trees and passed back as re-solved tables scores the same
    tables = {(n, rep): fg.bp_sigma(n, rep).copy() for n in fg.roots for rep in fg.reps}
    again, _ = CombinedBestResponse(fg, tables).exploitability()
    assert again == pytest.approx(base, abs=1e-6)


def test_gift_rates_are_nonnegative_and_zero_without_opponent_decisions(tiny):
    _, bp, fg = tiny
    rates = preflop_gift_rates(CombinedBestResponse(fg))
    for (n, seat), r in rates.items():
        assert (r >= -1e-9).all()
    # a blueprint that is not an exact best response somewhere gives something away preflop
    assert any(r.max() > 0 for r in rates.values())


def test_safe_resolve_not_worse_than_blueprint(tiny):
    _, bp, fg = tiny
    # a third of the board classes (the rest keep the blueprint, which is itself a safe choice)
    res = run_experiment(
        bp,
        SolveSettings(iterations=100, methods=("resolve", "maxmargin")),
        log=lambda s: None,
        fg=fg,
        max_boards=len(fg.reps) // 3,
    )
    assert 0 < res["coverage"] < 1
    mbb = res["mbb"]
    # exact best response in the full game: the safe methods at most the blueprint (small tolerance for
    # the finite solves), and the flop re-solved without card abstraction helps here
    assert mbb["resolve"] <= mbb["blueprint"] + 5.0
    assert mbb["maxmargin"] <= mbb["blueprint"] + 5.0
    assert min(mbb["resolve"], mbb["maxmargin"]) < mbb["blueprint"]


# -- Table 2: the full game with an off-tree 0.75-pot first flop bet ------------------------------------


@pytest.fixture(scope="module")
def full(tiny):
    return FullGame(tiny[1], parse_bets(FLOP_OFF_TREE_TOML))


class _Fixed:
    """An rng whose draws are one number: picks a pseudo-harmonic translation branch."""

    def __init__(self, x):
        self.x = x

    def random(self):
        return self.x


def test_translation_lift_matches_play_time_strategy(tiny, full):
    _, bp, _ = tiny
    fg = full
    S = bp.gamedef.num_suits
    edges = [(n, u, c) for n in fg.roots for u, c in off_tree_edges(fg, n)]
    assert edges  # the 0.75-pot bet is in the full game and not in the blueprint
    K = 200
    for n, u, c in edges:
        rep = fg.reps[5]
        tree, sig = fg.tree(n, rep), fg.bp_sigma(n, rep)
        valid = board_hands(tree).valid[tree.board[u]]
        # never bet by the blueprint (blocked hands get uniform rows, never reached)
        assert sig[int(tree.row[u]) + list(tree.children(u)).index(c), valid].max() == 0.0
        me = int(tree.player[c])
        labels = tree.action_labels(c)
        r0 = int(tree.row[c])
        ok = np.nonzero(board_hands(tree).valid[tree.board[c]])[0]
        for h in ok[:: max(1, len(ok) // 4)]:
            hole = cards_str(board_hands(tree).hands[h].tolist(), S)
            ms = (
                f"MATCHSTATE:{me}:0:{tree.betting(c).betting_string()}:"
                f"{hole + '|' if me == 0 else '|' + hole}/{cards_str(list(rep), S)}"
            )
            # Blueprint.strategy with an rng draws the translation afresh: average over evenly spaced draws
            want: dict = {}
            for k in range(K):
                for key, p in bp.strategy(ms, rng=_Fixed((k + 0.5) / K)).items():
                    want[key] = want.get(key, 0.0) + p / K
            got = {lab: float(sig[r0 + j, h]) for j, lab in enumerate(labels)}
            assert set(want) <= set(got)
            for lab in got:
                assert got[lab] == pytest.approx(want.get(lab, 0.0), abs=1.0 / K + 1e-6), (ms, lab)


def test_full_game_needs_the_blueprints_actions(tiny):
    coarse = FLOP_BETS_TOML.replace("sizes = [0.5, 1.0]", "sizes = [1.0]")
    with pytest.raises(SubgameError, match="lacks actions"):
        FullGame(tiny[1], parse_bets(coarse))


def test_nested_safe_answers_to_the_off_tree_bet(tiny):
    _, bp, fg = tiny
    res = run_nested_experiment(
        bp,
        parse_bets(FLOP_OFF_TREE_TOML),
        SolveSettings(iterations=100, methods=("resolve", "reach-maxmargin")),
        log=lambda s: None,
        max_boards=len(fg.reps) // 4,
    )
    assert 0 < res["coverage"] < 1 and res["fallbacks"] == 0
    x = res["mbb"]
    base = x["no-off-tree"]
    assert base == pytest.approx(
        CombinedBestResponse(fg).exploitability()[0] * 10, rel=1e-9
    )  # 100-chip big blind
    # the same strategy against a responder with one more action: never less exploitable
    assert x["translation"] >= base - 1e-6
    for m in ("resolve", "reach-maxmargin"):
        # safe nested answers: the off-tree bet wins (almost) nothing over the blueprint's own actions,
        # so nested solving is not worse than translation (small tolerance for the finite solves)
        assert base - 1e-6 <= x[m] <= base + 0.5
        assert x[m] <= x["translation"] + 0.5
