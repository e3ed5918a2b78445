"""AIVAT: a head-to-head match's result per hand with the luck of the cards and of the players'
own random choices taken out, unbiased (Burch, Schmid, Moravcik, Morrill and Bowling, 2018).

The estimator. A hand is a path of events: chance deals (the hole hands, each round's board) and
decisions. Given a value function ``v`` on the states of the hand, each event whose distribution
is known adds a control variate: at a chance event ``h -> h.c`` the term
``v(h.c) - E_c' v(h.c')`` (the expectation over the cards the dealer could have dealt), and at a
decision of a player whose strategy is known the term ``v(h.a) - sum_a' pi(a' | h) v(h.a')``
(over the actions it could have taken, with the probabilities it drew its action from). Each
term has expectation 0 whatever ``v`` is, so

    AIVAT = payoff - sum of the terms

has the expected value of the payoff (unbiased), and a variance that is the smaller the better
``v`` predicts the hand's result. In a match played here every card is known afterwards and
both players tell the distribution behind each action (:class:`~blueprint.player.KnownPlayer`),
so the terms are taken at every chance event and at both players' decisions: the estimate keeps
only the expected gain of each decision, not the luck of which cards came or which action a
mixed strategy happened to draw.

The value function: the showdown value of the state as it stands,

    v_0(h) = (P(seat 0 wins) - P(seat 1 wins)) * min(spent)

over the board cards still to come (exact over every completion where there are at most
:data:`~holdem.evaluator.SHOWDOWN_EXACT_MAX`, as on the flop, turn and river; a sample of
``samples`` completions before the flop), with the payoff itself at a fold and at the end. It
is a martingale over the cards (the expected ``v`` after a deal is ``v`` before it), so a chance
term is ``v(after) - v(before)``; before the hole cards are dealt its expectation is 0 (the two
seats' hands are exchangeable). The paper's players used a value network for ``v``; the
project's blueprint values are not cheap enough to take at every chance node of a 52-card hand,
and the showdown value already removes the cards' luck. The sampled pre-flop odds are an unbiased
estimate drawn independently of the cards to come, so the estimator stays unbiased; on games
small enough to enumerate (Leduc) every odds figure is exact and the expected AIVAT value equals
the exact value of the match (tests/evaluation/test_aivat.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from holdem.evaluator import showdown_odds
from holdem.state import State

AIVAT_SAMPLES = 4_000  # board completions drawn for the odds before the flop (1.7M in hold'em)


class Event(NamedTuple):
    """One step of a hand: ``before`` -> ``after``, with the acting player's distribution for a
    decision (``dist``: ``{action: probability}``), or None for a chance deal."""

    before: State
    after: State
    dist: dict[str, float] | None


class ShowdownValue:
    """The value function of one hand (its hole cards fixed): ``v_0`` of the module docstring,
    with each board length's odds computed once. ``seed`` draws the sampled odds."""

    def __init__(self, holes: Sequence[Sequence[int]], seed: int, samples: int = AIVAT_SAMPLES):
        self.holes = tuple(tuple(int(c) for c in h) for h in holes)
        self.seed, self.samples = seed, samples
        self._odds: dict[tuple[int, ...], float] = {}

    def edge(self, state: State) -> float:
        """``P(seat 0 wins) - P(seat 1 wins)`` at a showdown from ``state``'s board."""
        board = tuple(int(c) for c in state.board_cards)
        hit = self._odds.get(board)
        if hit is None:
            g = state.gamedef
            p0, p1 = showdown_odds(
                self.holes,
                board,
                g.deck_size,
                g.total_board_cards,
                g.num_suits,
                g.num_ranks,
                self.samples,
                self.seed * 16 + len(board),
            )
            hit = self._odds[board] = p0 - p1
        return hit

    def __call__(self, state: State) -> float:
        """Seat 0's value of ``state`` (dealt, with both hole hands)."""
        if state.is_terminal():
            return float(state.payoffs()[0])
        return self.edge(state) * min(state.spent)

    def after_action(self, state: State, action: str) -> float:
        """Seat 0's value of ``state.apply(action)``, without building the state (a random
        player's strategy names every legal raise): a fold loses the folder's chips; a call or a
        raise changes the acting seat's chips (to the other's, capped by its stack; to the
        raise-to), valued at the same board's odds (a call that ends the hand is its showdown)."""
        me = state.current_player()
        spent = list(state.spent)
        if action == "f":
            return -float(spent[0]) if me == 0 else float(spent[1])
        if action == "c":
            spent[me] = min(max(spent), state.gamedef.stack[me])
        elif action == "r":  # limit: the one raise-to
            rr = state.betting.raise_range()
            if rr is None:
                raise ValueError(f"no raise is legal at {state}")
            spent[me] = rr[0]
        else:
            spent[me] = int(action[1:])
        return self.edge(state) * min(spent)


def aivat_value(events: Sequence[Event], value: ShowdownValue) -> float:
    """Seat 0's AIVAT estimate of the hand ``events`` (in play order, ending at the terminal
    state): the payoff less one term per event (module docstring)."""
    if not events or not events[-1].after.is_terminal():
        raise ValueError("AIVAT needs a whole hand, from the deal to its end")
    est = float(events[-1].after.payoffs()[0])
    for before, after, dist in events:
        if dist is None:
            expected = value(before) if before.hole_cards[0] and before.hole_cards[1] else 0.0
            est -= value(after) - expected
        else:
            expected = sum(p * value.after_action(before, a) for a, p in dist.items() if p > 0.0)
            est -= value(after) - expected
    return est


__all__ = ["AIVAT_SAMPLES", "Event", "ShowdownValue", "aivat_value"]
