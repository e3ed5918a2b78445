"""Pluribus-style search for N seats (subgame.multiway): it lowers a weak blueprint's NashConv on
3-player Kuhn (OpenSpiel-checked NashConv as the oracle) and wins against copies of it, its hand
draws follow the ranges, its subgame is the round, and bad settings are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from abstraction.tree import KIND_DECISION
from blueprint.blueprint import Blueprint
from blueprint.nplayer import NPlayerGame, nash_conv
from blueprint.numerics import seed_rng_state
from blueprint.trainer import make_trainer
from holdem.betting import CALL
from mccfr.evaluation.match_n import exact_values
from mccfr.evaluation.players import BlueprintPlayer, PlayerSpecError, player_from_spec
from mccfr.evaluation.solving import SearchPlayer
from subgame import multiway_kernels as MK
from subgame.multiway import MultiwaySearch, SearchConfig


def _blueprint(game: str, iterations: int) -> Blueprint:
    tr = make_trainer(game, algo="linear", seed=0)
    tr.run(iterations)
    return Blueprint(tr)


@pytest.fixture(scope="module")
def kuhn3_weak() -> Blueprint:
    return _blueprint("kuhn.limit.3p", 300)


@pytest.fixture(scope="module")
def leduc3() -> Blueprint:
    return _blueprint("leduc.limit.3p", 20_000)


def test_search_lowers_a_weak_blueprints_nash_conv_on_three_player_kuhn(kuhn3_weak):
    # Kuhn is one round: every seat searches the whole game from its start (ranges: the deal),
    # continuation-free; the policy of the answers at every information set is far nearer an
    # equilibrium than the 300-iteration blueprint it starts from
    bp = kuhn3_weak
    flat = NPlayerGame.from_gamedef("kuhn.limit.3p")
    before = nash_conv(flat, flat.policy_from(lambda s: bp.strategy(s)))
    player = SearchPlayer(bp, SearchConfig(iterations=16_000, from_round=0))
    after = nash_conv(flat, flat.policy_from(player.probs))
    assert player.sources == {"search": len(flat.infoset_node)}
    assert before > 0.03
    assert after < 0.5 * before, (before, after)


def test_search_beats_copies_of_a_weak_blueprint_exactly(kuhn3_weak):
    # exact expected chips over every seating, no sampling: one searching seat against two
    # copies of the blueprint it searches from
    flat = NPlayerGame.from_gamedef("kuhn.limit.3p")
    bp = BlueprintPlayer(kuhn3_weak)
    search = SearchPlayer(kuhn3_weak, SearchConfig(iterations=1000, from_round=0))
    v = exact_values(flat, [search, bp, bp])
    assert v[0] > 0.01, v
    assert abs(v.sum()) < 1e-9


def test_answers_are_seeded_by_the_state_and_rounds_before_the_first_are_the_blueprints(leduc3):
    bp = leduc3
    ms = MultiwaySearch(bp, SearchConfig(iterations=300))
    early = "MATCHSTATE:1:0:r:|3c|"
    a = ms.answer(early)
    assert a.source == "blueprint" and a.strategy == bp.strategy(early)
    late = "MATCHSTATE:2:0:ccc/cr:||2d/4c"
    x, y = ms.answer(late), ms.answer(late)
    assert x.source == "search" and x.iterations == 300
    assert x.strategy == y.strategy
    assert set(x.strategy) == {"f", "c", "r"} and abs(sum(x.strategy.values()) - 1) < 1e-12
    other = MultiwaySearch(bp, SearchConfig(iterations=300, seed=1)).answer(late)
    assert other.strategy != x.strategy


def test_the_subgame_is_the_round_and_its_leaves_the_next_rounds_first_decisions(leduc3):
    bp = leduc3
    t = bp.tree
    ms = MultiwaySearch(bp, SearchConfig(iterations=10, from_round=0, continuations=4))
    state = bp.game.state("MATCHSTATE:0:0:crc:5d||")
    pb, rd = ms.problem(state, bp.path(state))
    assert pb.root == 0 and t.betting_string(pb.cur) == "crc"
    sub = np.nonzero(rd.sub_off >= 0)[0]
    leaves = np.nonzero(rd.leaf_off >= 0)[0]
    first = {n for n in range(t.num_nodes) if t.kind[n] == KIND_DECISION and t.round[n] == 0}
    assert set(sub.tolist()) == first
    assert len(leaves) == rd.leaves and all(t.round[n] == 1 and t.round[t.parent[n]] == 0 for n in leaves)
    assert len(leaves) == sum(1 for n in range(t.num_nodes) if t.round[n] == 1 and t.round[t.parent[n]] == 0)
    # the seat's own earlier action of the round ("c" at the root) is frozen, nothing else
    assert t.edge_kind[pb.frozen[0]] == CALL and t.edge_child[pb.frozen[0]] == bp.path(state)[1]
    assert (pb.frozen >= 0).sum() == 1
    # its answer searches with rollouts at the leaves
    ms.answer(state)
    assert ms.stats[1] > 0


def test_hand_draws_follow_the_ranges_given_no_shared_card(leduc3):
    # 3 seats, 8 cards, one on the board: the joint draw's frequencies against the exact
    # product of the ranges restricted to hands that share no card
    bp = leduc3
    ms = MultiwaySearch(bp, SearchConfig(iterations=10))
    state = bp.game.state("MATCHSTATE:0:0:crcc/:5d||/4c")
    pb, rd = ms.problem(state, bp.path(state))
    sc = ms._scratch(rd, 3)
    rng = seed_rng_state(np.random.SeedSequence(7))
    H = len(ms.hands)
    counts = np.zeros((H, H, H))
    draws = 60_000
    for _ in range(draws):
        MK.sample_hands(pb, sc, rng, False)
        counts[tuple(sc.hand)] += 1
    pdf = np.diff(np.concatenate([np.zeros((3, 1)), pb.cdf], axis=1), axis=1)
    cards = ms.hands[:, 0]
    want = np.einsum("i,j,k->ijk", pdf[0], pdf[1], pdf[2])
    ok = (
        (cards[:, None, None] != cards[None, :, None])
        & (cards[:, None, None] != cards[None, None, :])
        & (cards[None, :, None] != cards[None, None, :])
    )
    want = want * ok
    want /= want.sum()
    got = counts / draws
    assert np.abs(got - want).max() < 0.01
    assert counts[~ok].sum() == 0
    blocked = cards == int(pb.board[0])
    assert counts[blocked].sum() == counts[:, blocked].sum() == counts[:, :, blocked].sum() == 0


@pytest.mark.parametrize(
    "kw, word",
    [
        ({"iterations": 0}, "iterations"),
        ({"iterations": None, "seconds": None}, "iterations, seconds"),
        ({"seconds": float("nan")}, "seconds"),
        ({"seconds": -1.0}, "seconds"),
        ({"continuations": 5}, "continuations"),
        ({"bias": 1.0}, "bias"),
        ({"bias": float("inf")}, "bias"),
        ({"from_round": -1}, "from_round"),
    ],
)
def test_bad_settings_are_refused_by_name(kw, word):
    with pytest.raises(ValueError, match=word):
        SearchConfig(**kw)


def test_a_round_the_game_lacks_and_bad_specs_are_refused(kuhn3_weak, tmp_path):
    with pytest.raises(ValueError, match="only 1 round"):
        MultiwaySearch(kuhn3_weak, SearchConfig(from_round=1))
    with pytest.raises(PlayerSpecError, match="search"):
        player_from_spec(f"{tmp_path}+search:many", kuhn3_weak.game)


def test_the_searching_seats_range_follows_its_own_searched_play(leduc3):
    # searching from the first round: at a second-round decision the seat's range is its earlier
    # searches' strategies for every hand (the actions it took), not the blueprint's
    bp = leduc3
    player = SearchPlayer(bp, SearchConfig(iterations=200, from_round=0))
    state = bp.game.state("MATCHSTATE:0:0:crcc/:5d||/4c")
    played = player._played(state)
    assert sorted(played) == [0, 3]  # seat 0's "c" at the start, then its "c" facing the raise
    first = player.search.answer(bp.game.state("MATCHSTATE:0:0::5d||"))
    assert first.hands is not None
    assert np.allclose(sum(first.hands.values()), 1.0)  # a distribution per hand (none blocked)
    assert np.array_equal(played[0], first.hands["c"])
    assert player.probs(state) == player.probs(state)
    # the range differs from the blueprint's: the answer is searched against another range
    ms = player.search
    with_played = ms._ranges(state, 1, played)
    assert not np.allclose(with_played[0], ms._ranges(state, 1)[0])
    assert np.allclose(with_played[1:], ms._ranges(state, 1)[1:])
