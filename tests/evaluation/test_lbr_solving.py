"""LBR against blueprint + subgame solving (:mod:`mccfr.evaluation.lbr_solving`) on a small hold'em
blueprint: the opponent model matches the solving player, and LBR runs repeat."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from blueprint.blueprint import Blueprint
from blueprint.trainer import make_trainer
from mccfr.evaluation.lbr import LBRError, LocalBestResponse
from mccfr.evaluation.lbr_opponents import BlueprintOpponent, Hands, LBROpponent
from mccfr.evaluation.lbr_solving import SESSION, SolvingOpponent
from mccfr.evaluation.match import view_of
from mccfr.evaluation.solving import HAND, SolvingPlayer
from subgame.nested import solve_state

ITERS = 20


@pytest.fixture(scope="module")
def bp() -> Blueprint:
    # hunl20 (52 cards) with the table-free `rank` buckets, as tests/serving/conftest.py
    tr = make_trainer("hunl20", bets="small", cards="rank", algo="pluribus", seed=1)
    tr.run(300)
    return Blueprint(tr)


@pytest.fixture(scope="module")
def hands(bp) -> Hands:
    return Hands(bp.game)


DEAL = [0, 13, 26, 40, 5, 18, 31, 44, 9]  # seat 0, seat 1, flop, turn, river


def _river(bp, bet: bool):
    """A river decision reached by checking and calling; ``bet``: seat 0 bet the pot first."""
    s = bp.game.initial_state(hand_id=7).deal(DEAL[:4])
    i = 4
    while s.round < 3 or (bet and s.current_player() == 0):
        if s.current_player() < 0:  # chance
            k = 3 if s.round == 0 else 1
            s = s.deal(DEAL[i : i + k])
            i += k
            continue
        if s.round == 3:
            pot = int(sum(s.betting.spent))
            s = s.apply(f"r{int(s.betting.max_spent) + pot}")
        else:
            s = s.apply("c")
    while s.current_player() < 0:
        s = s.deal(DEAL[i : i + 1])
        i += 1
    return s


@pytest.mark.parametrize("bet", [False, True])
def test_matches_the_solving_player(bp, hands, bet):
    state = _river(bp, bet)
    seat = state.current_player()
    opp = SolvingOpponent(bp, hands, "reach-maxmargin", from_round=3, iterations=ITERS)
    keys, P = opp.action_probs(state)
    assert opp.solves == 1
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-9)
    sp = SolvingPlayer(bp, "reach-maxmargin", iterations=ITERS, from_round=3)
    strat = sp.strategy(view_of(state, seat))[0]
    h = hands.of(state.hole_cards[seat])
    assert set(strat) == set(keys)
    for j, a in enumerate(keys):
        assert P[h, j] == pytest.approx(strat[a], abs=1e-6)
    # the same solve answers again (memoised), and a real action keeps it as the hand's subgame
    a, lik = opp.act(state, h, np.random.default_rng(0))
    assert opp.solves == 1 and a in keys
    np.testing.assert_array_equal(lik, P[:, keys.index(a)])


def _turn_then_river(bp):
    """The first seat to act after the flop, at its turn decision (every street checked so far)
    and then at its river decision after it and the other seat checked the turn."""
    deal = [20, 13, 22, 40, 5, 18, 31, 44, 9]  # 7c5d against 7hQc
    s = bp.game.initial_state(hand_id=11).deal(deal[:4])
    i = 4
    while s.round < 2 or s.current_player() < 0:
        if s.current_player() < 0:  # chance
            k = 3 if s.round == 0 else 1
            s = s.deal(deal[i : i + k])
            i += k
        else:
            s = s.apply("c")
    river = s.apply("c").apply("c").deal(deal[i : i + 1])
    assert river.round == 3 and river.current_player() == s.current_player()
    return s, river


@pytest.mark.parametrize("path", ["act", "likelihood"])
def test_later_solves_use_the_ranges_earlier_solves_played(bp, hands, path):
    """Solving from the turn, the player's river subgame gives it the range its own turn subgame
    played (``played``), not the blueprint's: LBR's model (after the opponent's real turn decision,
    as LBR's ``act`` or as a range rebuilt by ``likelihood``) answers the river exactly as the
    player's ``decide`` does."""
    turn, river = _turn_then_river(bp)
    seat = turn.current_player()
    h = hands.of(turn.hole_cards[seat])
    sp = SolvingPlayer(bp, "reach-maxmargin", iterations=ITERS, from_round=2)
    rng = np.random.default_rng(0)
    opp = SolvingOpponent(bp, hands, "reach-maxmargin", from_round=2, iterations=ITERS)
    opp.new_hand()
    for state in (turn, river):
        _, dist = sp.decide(view_of(state, seat), rng)
        keys, P = opp.action_probs(state)
        total = sum(dist.values())  # the player's float32 answer, as the probabilities it samples
        assert set(keys) == set(dist)
        for j, a in enumerate(keys):
            assert abs(P[h, j] - dist[a] / total) <= 1e-9, (state, a)
        if state is turn:  # the opponent's real decision there (the turn is checked either way)
            if path == "act":
                opp.act(turn, h, np.random.default_rng(1))
            else:
                opp.likelihood(turn, "c")
    assert sp.solves == opp.solves == 2 and sp.policy.played(
        HAND, sp._key(view_of(river, seat)), view_of(river, seat)
    )
    assert opp.policy.played(SESSION, (river.hand_id, seat), view_of(river, seat))


def test_solution_ignores_the_solvers_own_cards(bp):
    state = _river(bp, False)
    seat = state.current_player()
    a = view_of(state, seat)
    other = state.hole_cards[seat]
    alt = tuple(c for c in range(52) if c not in set(DEAL))[:2]
    assert alt != tuple(other)
    holes = list(state.hole_cards)
    holes[seat] = alt
    b = view_of(type(state)(state.game, state.betting, tuple(holes), state.board_cards, state.hand_id), seat)
    s1, n1 = solve_state(bp, a, "reach-maxmargin", time_budget=None, iterations=ITERS)
    s2, n2 = solve_state(bp, b, "reach-maxmargin", time_budget=None, iterations=ITERS)
    assert n1 == n2
    np.testing.assert_array_equal(s1.strategy, s2.strategy)


def test_before_from_round_is_the_blueprint(bp, hands):
    s = bp.game.initial_state(hand_id=1).deal(DEAL[:4])
    opp = SolvingOpponent(bp, hands, from_round=3, iterations=ITERS)
    ref = BlueprintOpponent(bp, hands)
    for _ in range(2):  # pre-flop, then the flop after a call
        k1, p1 = opp.action_probs(s)
        k2, p2 = ref.action_probs(s)
        assert k1 == k2
        np.testing.assert_array_equal(p1, p2)
        s = s.apply("c")
        if s.current_player() < 0:
            s = s.deal(DEAL[4:7])
    assert opp.solves == 0


def test_lbr_models_the_solving_player_by_solving(bp):
    """A SolvingPlayer (which has a blueprint too) is modelled by solving, not by its blueprint."""
    sp = SolvingPlayer(bp, "reach-maxmargin", iterations=ITERS, from_round=3)
    opp = LocalBestResponse(bp.game, sp).opp
    assert isinstance(opp, SolvingOpponent) and isinstance(opp, LBROpponent)
    assert (opp.method, opp.from_round, opp.iterations, opp.name) == ("reach-maxmargin", 3, ITERS, sp.name)
    assert opp.off_tree is None  # it translates off-tree bets, as the player does
    # the player's off-tree solving too (the same policy): nested after far off-tree bets
    sp = SolvingPlayer(bp, "reach-maxmargin", iterations=ITERS, from_round=3, off_tree=0.2)
    opp = LocalBestResponse(bp.game, sp).opp
    assert opp.off_tree == sp.off_tree == 0.2 and opp.policy.off_tree == sp.policy.off_tree


def test_lbr_against_solving_repeats(bp):
    def run():
        sp = SolvingPlayer(bp, "reach-maxmargin", iterations=ITERS, from_round=3)
        lbr = LocalBestResponse(bp.game, sp, menu="fcpa", preflop="call", call_rounds=(1, 2))
        return lbr, lbr.run(6, seed=13, jobs=1)

    l1, r1 = run()
    l2, r2 = run()
    assert l1.opp.solves > 0 and r1.opponent_counters["solves"] == l1.opp.solves
    np.testing.assert_array_equal(r1.per_pair, r2.per_pair)
    assert r1.opponent.endswith("+solve") or "solve" in r1.opponent


def test_lbr_against_solving_in_processes_is_the_same(bp):
    """Pairs played in two worker processes (each solving on one thread): the same values and
    the same solve counts as in one process."""
    sp = SolvingPlayer(bp, "reach-maxmargin", iterations=ITERS, from_round=3)
    lbr = LocalBestResponse(bp.game, sp, menu="fcpa", preflop="call", call_rounds=(1, 2))
    one = lbr.run(10, seed=13, jobs=1)
    two = lbr.run(10, seed=13, jobs=2)
    assert two.jobs == 2 and one.opponent_counters["solves"] > 0
    np.testing.assert_array_equal(one.per_pair, two.per_pair)
    assert one.opponent_counters == two.opponent_counters and one.decisions == two.decisions
    assert lbr.opp.solves == two.opponent_counters["solves"]  # the workers' solves, counted here


def test_one_solve_per_public_state_answers_every_probe(bp, monkeypatch):
    """Within a hand, each public state the opponent meets or LBR probes (the opponent's answer
    to each raise LBR weighs, re-raises included) is solved once: LBR's probes, the opponent's
    real decision there and the all-in answers all read the same solve."""
    import mccfr.evaluation.lbr_solving as ls

    solved: list[tuple] = []
    real_solve = ls.solve_state

    def counting(bp_, view, *a, **kw):
        solved.append((view.hand_id, view.viewer, view.betting.actions, tuple(view.board_cards)))
        return real_solve(bp_, view, *a, **kw)

    monkeypatch.setattr(ls, "solve_state", counting)
    sp = SolvingPlayer(bp, "reach-maxmargin", iterations=ITERS, from_round=3)
    lbr = LocalBestResponse(bp.game, sp, menu="fcpa", preflop="call", call_rounds=(1, 2), reraise=True)
    opp = lbr.opp
    asked: list[tuple] = []
    real_probs = opp._probs

    def probs(state, real):
        if state.round >= opp.from_round:
            asked.append((state.hand_id, state.betting.actions, tuple(state.board_cards)))
        return real_probs(state, real)

    monkeypatch.setattr(opp, "_probs", probs)
    res = lbr.run(10, seed=13, jobs=1)
    assert len(solved) == len(set(solved)) == res.opponent_counters["solves"] > 0
    # the states solved are states asked about, and some were asked about more than once (a
    # probe, then the real decision or the all-in answer there) yet solved once
    assert {(h, a, b) for h, _, a, b in solved} <= set(asked)
    again = {k for k, n in Counter(asked).items() if n > 1}
    assert again and again & {(h, a, b) for h, _, a, b in solved}


def test_call_rounds(bp):
    lbr = LocalBestResponse(bp.game, bp, call_rounds=(1,))
    s = bp.game.initial_state().deal(DEAL[:4])
    assert len(lbr.candidates(s)) > 1
    s = s.apply("c").apply("c").deal(DEAL[4:7])
    assert lbr.candidates(s) == ["c"]
    with pytest.raises(LBRError):
        LocalBestResponse(bp.game, bp, call_rounds=(4,))


def test_time_budget_solver_is_refused(bp):
    sp = SolvingPlayer(bp, "reach-maxmargin", iterations=None, time_budget=0.1)
    with pytest.raises(LBRError):
        LocalBestResponse(bp.game, sp)
