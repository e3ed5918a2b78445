"""The vectorized public-tree CFR+ / best response agrees with the exact reference."""

import numpy as np
import pytest

from abstraction.buckets import build_buckets
from abstraction.cards import from_file
from abstraction.tree import build_tree
from blueprint.best_response import BestResponse
from blueprint.tables import normalize_blocks
from blueprint.vector_cfr import VectorCFR
from holdem.gamedef import GameDef


@pytest.fixture(scope="module")
def game():
    # three rounds: hole cards, a 2-card flop, a 1-card turn; 3 ranks x 4 suits
    return GameDef(
        "limit", 3, (2000, 2000), (10, 5), (10, 20, 20), (1, 0, 0), (1, 1, 1), 4, 3, 2, (0, 2, 1), "t3"
    )


@pytest.mark.slow  # 2 minutes on 2 cores; the vectorised CFR serves experiments only
def test_best_response_matches_reference_and_cfr_plus_converges(game, tmp_path):
    tree = build_tree(game)
    build_buckets(game, (3, 8, 12), "ehs2", tmp_path / "lossy", progress=False, log=lambda m: None)
    cards = from_file(game, tmp_path / "lossy")
    vc = VectorCFR(tree, cards)
    raw = VectorCFR(tree, cards, canonical=False)
    assert len(vc.boards) < len(raw.boards)
    # orbit representatives: the weights of a board's continuations count every raw continuation
    from math import comb

    for b, cb in enumerate(vc.boards):
        if vc.b_hi[b] > vc.b_lo[b]:
            nb = len(vc.boards[vc.b_lo[b]]) - len(cb)
            nposs = comb(game.deck_size - 4 - len(cb), nb)
            assert vc.b_w[vc.b_lo[b] : vc.b_hi[b]].sum() * nposs == pytest.approx(
                comb(game.deck_size - len(cb), nb)
            )
    # turn cards are orbits under each flop's stabilizer: fewer than every turn of every canonical flop
    assert np.sum(vc.b_round == 2) < np.sum(vc.b_round == 1) * (game.deck_size - 2)
    probs = normalize_blocks(
        tree, vc.row_offset, np.array(cards.num_buckets), np.random.default_rng(3).random(vc.size)
    )
    ref = BestResponse(tree, cards, vc.row_offset)
    e_ref, br_ref = ref.exploitability(probs)
    e, br = vc.exploitability(probs)
    e_raw, _ = raw.exploitability(probs)
    assert e > 0.5
    assert br == pytest.approx(br_ref, abs=1e-9)
    assert e_raw == pytest.approx(e_ref, abs=1e-9)
    assert vc.expected_value(probs) == pytest.approx(ref.expected_value(probs), abs=1e-9)
    # CFR+ on the perfect-recall lossless abstraction: exploitability in the real game goes to 0
    exact = VectorCFR(tree, None)
    exact.iterate(3)
    e3 = exact.exploitability()[0]
    exact.iterate(45)
    e48 = exact.exploitability()[0]
    assert e48 < 0.1 * e3 and e48 < 0.3  # chips; big blind 10
    # a lossy abstraction stays exploitable in the real game
    vc.iterate(48)
    assert vc.exploitability()[0] > 3 * e48
