"""The full-game scorer of the Brown & Sandholm rebuild (subgame/fullgame.py) on a tiny deck."""

import numpy as np
import pytest

from abstraction.buckets import build_buckets
from abstraction.isomorphism import HandIndexer
from blueprint.algo import get_algo
from blueprint.blueprint import Blueprint
from blueprint.trainer import RunConfig, Trainer
from subgame.fullgame import (FLOP_BETS_TOML, CombinedBestResponse, FullGame, SolveSettings, board_classes,
                              flop_game, preflop_gift_rates, run_experiment)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("fullgame")
    g = flop_game(ranks=4, suits=3, stack_bb=5)
    ix = HandIndexer.for_game(g)
    ab = build_buckets(g, (ix.size(0), 3), "ehs", d / "ab", progress=False, log=lambda s: None)
    (d / "bets.toml").write_text(FLOP_BETS_TOML)
    tr = Trainer(RunConfig(g.name, str(d / "bets.toml"), str(ab), get_algo("dcfr"), 0), gamedef=g)
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
    res = run_experiment(bp, SolveSettings(iterations=100, methods=("resolve", "maxmargin")),
                         log=lambda s: None, fg=fg, max_boards=len(fg.reps) // 3)
    assert 0 < res["coverage"] < 1
    mbb = res["mbb"]
    # exact best response in the full game: the safe methods at most the blueprint (small tolerance for
    # the finite solves), and the flop re-solved without card abstraction helps here
    assert mbb["resolve"] <= mbb["blueprint"] + 5.0
    assert mbb["maxmargin"] <= mbb["blueprint"] + 5.0
    assert min(mbb["resolve"], mbb["maxmargin"]) < mbb["blueprint"]
