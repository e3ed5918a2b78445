"""AIVAT (mccfr.evaluation.aivat): unbiased by exact enumeration, narrower in matches, clear errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from blueprint.blueprint import Blueprint
from blueprint.player import sample
from blueprint.trainer import make_trainer
from holdem.game import Game
from holdem.state import CHANCE, TERMINAL, State
from mccfr.evaluation.aivat import AIVAT, ShowdownValue, aivat_value
from mccfr.evaluation.match import Event, exact_value, paired_difference, play_hand, play_match, view_of
from mccfr.evaluation.players import BlueprintPlayer, RandomPlayer, player_from_spec

LEDUC = Game.load("leduc")


@pytest.fixture(scope="module")
def leduc_bp():
    tr = make_trainer("leduc", algo="cfr+")
    tr.run(60)  # far from equilibrium on purpose: a mixed strategy with luck to take out
    return BlueprintPlayer(Blueprint(tr), name="leduc-cfr+")


def _moments(game: Game, seats) -> np.ndarray:
    """Exact first and second moments of seat 0's result over every deal and every action of
    ``seats``: rows plain, AIVAT (:class:`AIVAT`, as a match scores a hand) and the per-hand
    control variates (:func:`aivat_value`); columns ``E[x]``, ``E[x^2]``."""
    g = game.gamedef
    out = np.zeros((3, 2))
    scorer = AIVAT(game, *seats)

    def walk(state: State, events: list[Event], p: float) -> None:
        who = state.current_player()
        if who == TERMINAL:
            plain = state.payoffs()[0]
            est = scorer.score(events, seats, 0)
            cv = aivat_value(events, ShowdownValue(state.hole_cards, seed=0))
            out[:] += p * np.array([[plain, plain * plain], [est, est * est], [cv, cv * cv]])
            return
        if who == CHANCE:
            if not state.hole_cards[0]:  # both hands at once, as play_hand deals them
                pairs = [(a, b) for a in range(g.deck_size) for b in range(g.deck_size) if a != b]
                for a, b in pairs:
                    after = state.deal([a, b])
                    walk(after, [*events, Event(state, after, None, None)], p / len(pairs))
                return
            used = set(state.hole_cards[0]) | set(state.hole_cards[1]) | set(state.board_cards)
            left = [c for c in range(g.deck_size) if c not in used]
            for c in left:
                after = state.deal([c])
                walk(after, [*events, Event(state, after, None, None)], p / len(left))
            return
        dist = seats[who].probs(view_of(state, who))
        for a, q in dist.items():
            if q > 0.0:
                after = state.apply(a)
                walk(after, [*events, Event(state, after, a, dist)], p * q)

    walk(game.initial_state(), [], 1.0)
    assert scorer.mismatches == 0
    return out


# random and always-raise: slow (a mixed opponent is the blueprint's case, a known one minraise's)
@pytest.mark.parametrize(
    "opponent",
    [
        pytest.param("random", marks=pytest.mark.slow),
        pytest.param("always-raise", marks=pytest.mark.slow),
        "minraise",
        "blueprint",
    ],
)
def test_aivat_is_unbiased_exactly_on_leduc_and_cuts_the_variance(leduc_bp, opponent):
    # minraise's strategy is known only for the hand it holds: its seat keeps its cards
    b = leduc_bp if opponent == "blueprint" else player_from_spec(opponent, LEDUC)
    exact = exact_value(LEDUC, leduc_bp, b)
    for seat, seats in enumerate(((leduc_bp, b), (b, leduc_bp))):
        m = _moments(LEDUC, seats)
        a_value = exact.seat_chips[seat] if seat == 0 else -exact.seat_chips[seat]
        assert m[0, 0] == pytest.approx(a_value, abs=1e-12)
        assert m[1, 0] == pytest.approx(m[0, 0], abs=1e-9)  # unbiased: the same expectation, exactly
        assert m[2, 0] == pytest.approx(m[0, 0], abs=1e-9)
        var = m[:, 1] - m[:, 0] ** 2
        assert var[1] < 0.5 * var[0] and var[2] < 0.6 * var[0], (opponent, seat, var)


def test_a_match_scored_by_aivat_agrees_with_the_exact_value_with_a_narrower_interval(leduc_bp):
    rand = RandomPlayer()
    exact = exact_value(LEDUC, leduc_bp, rand).chips_per_hand
    r = play_match(LEDUC, leduc_bp, rand, hands=6_000, seed=3, aivat=AIVAT(LEDUC, leduc_bp, rand))
    assert r.aivat and r.aivat_ci95 < 0.6 * r.ci95
    assert abs(r.aivat_mean - exact) < 1.5 * r.aivat_ci95  # ~3 standard errors
    assert abs(r.mean - exact) < 1.5 * r.ci95
    assert r.aivat_hands_factor == pytest.approx((r.ci95 / r.aivat_ci95) ** 2)
    js = r.to_json()
    assert js["aivat_mean"] == r.aivat_mean and js["aivat_ci95"] == r.aivat_ci95
    # the plain figures are those of the same match played without AIVAT (same seed, same actions)
    plain = play_match(LEDUC, leduc_bp, rand, hands=2_000, seed=3)
    again = play_match(LEDUC, leduc_bp, rand, hands=2_000, seed=3, aivat=AIVAT(LEDUC, leduc_bp, rand))
    assert plain.pair_chips == again.pair_chips and "aivat_mean" not in plain.to_json()
    assert math.isnan(plain.aivat_mean)


def test_aivat_on_no_limit_holdem_takes_out_the_cards_luck():
    g = Game.load("hunl100")
    a, b = player_from_spec("always-call", g), player_from_spec("minraise", g)
    r = play_match(g, a, b, hands=400, seed=1, aivat=AIVAT(g, a, b, samples=500))
    assert np.isfinite(r.aivat_mean) and r.aivat_ci95 < 0.75 * r.ci95
    assert abs(r.aivat_mean - r.mean) < r.ci95 + r.aivat_ci95


def test_a_player_that_plays_off_its_model_keeps_its_cards(leduc_bp):
    class Bluffer(BlueprintPlayer):
        """The blueprint's tree, but it raises a tenth more often than the blueprint says."""

        def decide(self, state, rng):
            dist = dict(self.bp.strategy(state))
            if "r" in dist and dist["r"] < 0.9:
                dist = {
                    k: (v + 0.1 if k == "r" else v * (1 - (dist["r"] + 0.1)) / (1 - dist["r"]))
                    for k, v in dist.items()
                }
            return sample(dist, rng), dist

    liar = Bluffer(leduc_bp.bp, name="bluffer")
    scorer = AIVAT(LEDUC, liar, RandomPlayer())
    exact = exact_value(LEDUC, _Probs(liar), RandomPlayer()).chips_per_hand
    r = play_match(LEDUC, liar, RandomPlayer(), hands=3_000, seed=2, aivat=scorer)
    assert scorer.mismatches > 0 and scorer.point_hands > 0
    assert abs(r.aivat_mean - exact) < 1.5 * r.aivat_ci95


class _Probs:
    """A player's ``decide`` distribution as ``probs`` (for the exact value of a liar)."""

    def __init__(self, p):
        self.p, self.name = p, p.name

    def probs(self, state):
        return self.p.decide(state, np.random.default_rng(0))[1]

    def act(self, state, rng):
        return self.p.act(state, rng)


def test_a_hand_of_deterministic_players_scores_its_showdown_value():
    # both players always call: AIVAT takes out the luck of every card, leaving the one decision
    # that changes the value: the small blind's call, worth its pre-flop edge on the chips added
    g = Game.load("hunl100")
    call = player_from_spec("always-call", g)
    rngs = [np.random.default_rng(0)] * 2
    deal = np.random.default_rng(5).choice(52, g.gamedef.cards_per_deal, replace=False)
    events: list[Event] = []
    end = play_hand(g, (call, call), rngs, deal, 0, events)
    assert end.is_terminal() and len(events) >= 4
    v = ShowdownValue(end.hole_cards, seed=1, samples=200)
    dealt = events[0].after
    assert min(dealt.spent) == 50 and events[1].after.spent == (100, 100)
    assert aivat_value(events, v) == pytest.approx(v.edge(dealt) * 50, abs=1e-9)
    with pytest.raises(ValueError, match="whole hand"):
        aivat_value(events[:-1], v)


def test_aivat_refuses_a_player_that_cannot_tell_its_probabilities():
    class Opaque:
        name = "remote-bot"

        def act(self, state, rng):
            return "c"

    with pytest.raises(ValueError, match="remote-bot"):
        AIVAT(LEDUC, Opaque(), RandomPlayer())
    with pytest.raises(ValueError, match="samples"):
        AIVAT(LEDUC, RandomPlayer(), RandomPlayer(), samples=0)


def test_a_paired_aivat_difference_against_the_opponent_playing_itself(leduc_bp):
    rand = RandomPlayer()
    x = play_match(LEDUC, leduc_bp, rand, 400, seed=4, common_random=True, aivat=AIVAT(LEDUC, leduc_bp, rand))
    y = play_match(LEDUC, rand, rand, 400, seed=4, common_random=True, aivat=AIVAT(LEDUC, rand, rand))
    mean, ci = paired_difference(x, y, aivat=True)
    d = np.asarray(x.aivat_pair_chips) - np.asarray(y.aivat_pair_chips)
    assert mean == pytest.approx(d.mean()) and ci > 0
    with pytest.raises(ValueError, match="AIVAT"):
        paired_difference(x, play_match(LEDUC, rand, rand, 400, seed=4), aivat=True)
