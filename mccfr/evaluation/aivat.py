"""AIVAT: a head-to-head match's result per hand with the luck of the cards and of the players'
own random choices taken out, unbiased (Burch, Schmid, Moravcik, Morrill and Bowling, 2018).

Imaginary observations. Where both players' strategies are known for *every* private hand they
could hold (a blueprint, the blueprint + solving player at a fixed iteration count, a baseline
that ignores its cards), the hand is scored not by the cards dealt but over every pair of hands
the two could have held, each weighted by the chance that they would have played exactly as they
did (Bayes over their actions: the ranges LBR keeps, :mod:`mccfr.evaluation.lbr_opponents`). The
base is the expected payoff given what was public (the betting and the board ``s``):

    U(s) = E[payoff | s] = sum_{x, y} p(x, y | s) payoff(x, y, s)

over hands ``x``, ``y`` that share no card with each other or the board, ``p(x, y | s)``
proportional to the product of each player's probabilities of its actions. A fold's payoff is the
same for every pair; a showdown's is summed over the two ranges by :func:`range_showdown` (a numba
kernel over the 1,326 hands). By the tower property its expectation is the match's value, and
the luck of who held the better cards is gone. From it, one control variate per decision takes
out the luck of the action drawn: ``V(h.a) - sum_a' p(a' | h) V(h.a')``, with ``p(a' | h)`` the
action's probability given the public history alone (the actor's strategy over its range, each
hand weighted by the opponent's range it leaves: :func:`compatible_mass`) and ``V`` a fold's
payoff, the ranges' showdown on the river after a call or raise, and 0 for a call or raise
before the river. Each term has expectation 0 given the public history, so

    AIVAT = U(s) - sum of the terms

is unbiased, and what remains is the expected gain of each decision over the range that made it.

The model of each player must be the strategy it really played: every decision checks the
model's probability of the action taken, for the hand actually held, against the distribution
the player drew it from (:class:`~blueprint.player.KnownPlayer`). A hand with a mismatch over
1e-6 (counted in ``mismatches``), or a player whose strategy is known only for the hand it holds
(``minraise``, ``overbet:X``, a solving player with a time budget) is scored by the hand as dealt.

The hand as dealt (:func:`aivat_value`): at each chance deal ``h -> h.c`` the term
``v(h.c) - E_c' v(h.c')`` and at each decision ``v(h.a) - sum_a' pi(a' | h) v(h.a')`` are taken
off the payoff; each has expectation 0 whatever ``v`` is. Its value function is the showdown value
of the state as it stands, ``v_0(h) = (P(seat 0 wins) - P(seat 1 wins)) * min(spent)`` over the
board cards still to come (exact where there are at most
:data:`~holdem.evaluator.SHOWDOWN_EXACT_MAX` completions; a sample of ``samples`` before the flop,
drawn apart from the cards to come), a martingale over the cards, so a chance term is
``v(after) - v(before)`` (0 before the hole cards: the two seats' hands are exchangeable).

On Leduc every figure is exact and the expected AIVAT value equals the exact value of the match,
by either scoring (tests/evaluation/test_aivat.py enumerates every deal and action).
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

from blueprint.player import KnownPlayer, Player
from holdem.evaluator import card_bit, rank_cardset, showdown_odds
from holdem.game import Game
from holdem.state import State
from mccfr.evaluation.lbr_opponents import BlueprintOpponent, Hands
from mccfr.evaluation.lbr_solving import solving_opponent
from mccfr.evaluation.match import Event
from mccfr.evaluation.players import AlwaysCall, AlwaysRaise, BlueprintPlayer, RandomPlayer
from mccfr.evaluation.solving import SolvingPlayer

AIVAT_SAMPLES = 4_000  # board completions drawn for the odds before the flop (1.7M in hold'em)


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
        if action == "f":
            return fold_value(state)
        return self.edge(state) * contested_after(state, action)


def fold_value(state: State) -> float:
    """Seat 0's payoff when the seat to act at ``state`` folds: the folder loses its chips."""
    spent = state.spent
    return -float(spent[0]) if state.current_player() == 0 else float(spent[1])


def contested_after(state: State, action: str) -> int:
    """The contested chips, ``min(spent)``, after the seat to act calls (matching the other's
    chips, capped by its stack) or raises (``r<to>``, or limit's one raise-to) at ``state``,
    without building the state."""
    me = state.current_player()
    spent = list(state.spent)
    if action == "c":
        spent[me] = min(max(spent), state.gamedef.stack[me])
    elif action == "r":  # limit: the one raise-to
        rr = state.betting.raise_range()
        if rr is None:
            raise ValueError(f"no raise is legal at {state}")
        spent[me] = rr[0]
    else:
        spent[me] = int(action[1:])
    return min(spent)


def aivat_value(events: Sequence[Event], value: ShowdownValue) -> float:
    """Seat 0's AIVAT estimate of the hand ``events`` (in play order, ending at the terminal
    state): the payoff less one term per event (module docstring)."""
    if not events or not events[-1].after.is_terminal():
        raise ValueError("AIVAT needs a whole hand, from the deal to its end")
    est = float(events[-1].after.payoffs()[0])
    for before, after, _, dist in events:
        if dist is None:
            expected = value(before) if before.hole_cards[0] and before.hole_cards[1] else 0.0
            est -= value(after) - expected
        else:
            expected = sum(p * value.after_action(before, a) for a, p in dist.items() if p > 0.0)
            est -= value(after) - expected
    return est


@numba.njit(cache=True)
def range_showdown(board, hands_cs, hands_mask, w0, w1, num_suits):
    """``(sum w0[x] w1[y] sign(x beats y), sum w0[x] w1[y])`` over the pairs of hands that share no
    card with each other or the (complete) ``board``: seat 0's expected share of the contested
    chips at the showdown, times the pairs' weight, and that weight."""
    base = np.int64(0)
    bm = np.int64(0)
    for c in board:
        base |= card_bit(c, num_suits)
        bm |= np.int64(1) << c
    n = hands_cs.shape[0]
    live0 = np.zeros(n, np.int64)
    live1 = np.zeros(n, np.int64)
    n0 = 0
    n1 = 0
    rank = np.zeros(n, np.int64)
    for i in range(n):
        if hands_mask[i] & bm:
            continue
        if w0[i] > 0.0 or w1[i] > 0.0:
            rank[i] = rank_cardset(base | hands_cs[i])
        if w0[i] > 0.0:
            live0[n0] = i
            n0 += 1
        if w1[i] > 0.0:
            live1[n1] = i
            n1 += 1
    num = 0.0
    den = 0.0
    for a in range(n0):
        i = live0[a]
        mi = hands_mask[i]
        for b in range(n1):
            j = live1[b]
            if mi & hands_mask[j]:
                continue
            w = w0[i] * w1[j]
            den += w
            if rank[i] > rank[j]:
                num += w
            elif rank[i] < rank[j]:
                num -= w
    return num, den


@numba.njit(cache=True)
def compatible_mass(w, hands_mask, hands, board_mask):
    """For every hand ``x``: the weight of the hands ``y`` of ``w`` that share no card with ``x``
    or the board (0 for an ``x`` that shares a card with the board). Inclusion-exclusion over
    ``x``'s cards for one- and two-card hands (O(n)), every pair otherwise."""
    n, k = hands.shape
    out = np.zeros(n)
    if k > 2:
        for i in range(n):
            t = 0.0
            for j in range(n):
                if w[j] != 0.0 and not (hands_mask[j] & (board_mask | hands_mask[i])):
                    t += w[j]
            out[i] = 0.0 if hands_mask[i] & board_mask else t
        return out
    per_card = np.zeros(64)
    total = 0.0
    for j in range(n):
        if w[j] == 0.0 or hands_mask[j] & board_mask:
            continue
        total += w[j]
        for c in range(k):
            per_card[hands[j, c]] += w[j]
    for i in range(n):
        t = total
        for c in range(k):
            t -= per_card[hands[i, c]]
        if hands_mask[i] & board_mask:
            t = 0.0
        elif k == 2:
            t += w[i]  # y = x was taken off twice
        out[i] = t
    return out


def _board_mask(state: State) -> np.int64:
    m = 0
    for c in state.board_cards:
        m |= 1 << int(c)
    return np.int64(m)


MISMATCH_TOL = 1e-6
MEMO_STATES = 20_000  # public states whose blueprint strategies AIVAT keeps
_BLIND = "blind"  # a model that ignores its cards: the range stays uniform


class AIVAT:
    """Scores the hands of a match between ``a`` and ``b`` (:class:`~mccfr.evaluation.match.HandScorer`;
    the module docstring): both must tell the distribution behind each action
    (:class:`~blueprint.player.KnownPlayer`), else a :class:`ValueError` names the one that cannot.
    ``seed`` and ``samples`` draw the pre-flop odds of the control-variate fallback."""

    def __init__(self, game: Game, a: Player, b: Player, seed: int = 0, samples: int = AIVAT_SAMPLES):
        for p in (a, b):
            if not isinstance(p, KnownPlayer):
                raise ValueError(
                    f"AIVAT needs each player's action probabilities, and player {p.name!r} does not tell them"
                )
        if not 1 <= samples <= 10_000_000:
            raise ValueError(f"AIVAT samples must be in 1..10,000,000, got {samples}")
        self.game, self.seed, self.samples = game, seed, samples
        g = game.gamedef
        self.hands = Hands(game) if g.deck_size <= 63 and g.num_hole_cards <= 3 else None
        self.models = {id(p): self._model(p) for p in (a, b)}
        self.mismatches = 0  # decisions where a model disagreed with the player (that seat: its hand)
        self.point_hands = 0  # hands scored with a seat's cards as dealt
        self._value: tuple[tuple, ShowdownValue] | None = None
        self._memo: dict = {}  # blueprint models' action_probs by public state

    def _model(self, p: Player):
        """The strategy of every hand of ``p``: a blueprint's, a solving player's (a fixed
        iteration count), :data:`_BLIND` for a baseline that ignores its cards, else None."""
        if self.hands is None:
            return None
        if isinstance(p, (AlwaysCall, AlwaysRaise, RandomPlayer)):
            return _BLIND
        if isinstance(p, BlueprintPlayer):
            return BlueprintOpponent(p.bp, self.hands)
        if isinstance(p, SolvingPlayer) and p.iterations is not None and p.time_budget is None:
            return solving_opponent(p, self.hands)
        return None

    def score(self, events: Sequence[Event], seats: Sequence[Player], pair: int) -> float:
        """Seat 0's AIVAT value of the finished hand ``events`` played by ``seats``."""
        if not events or not events[-1].after.is_terminal():
            raise ValueError("AIVAT needs a whole hand, from the deal to its end")
        end = events[-1].after
        models = [self.models.get(id(p)) for p in seats]
        if self.hands is None or all(m is None for m in models):
            return self._per_hand(events, pair)
        H = self.hands
        g = end.gamedef
        actual = [H.of(end.hole_cards[s]) for s in (0, 1)]
        decisions = [ev for ev in events if ev.dist is not None and ev.action is not None]
        # first pass: each seat's likelihoods, and whether its model played as the player did
        keep = [m is not None for m in models]
        cols: list[np.ndarray | None] = []
        for ev in decisions:
            who = ev.before.current_player()
            m = models[who]
            col = None
            if m is not None and m is not _BLIND:
                col = self._likelihood(m, ev.before, ev.action)
                if abs(float(col[actual[who]]) - ev.dist.get(ev.action, 0.0)) > MISMATCH_TOL:
                    self.mismatches += 1
                    keep[who] = False
            cols.append(col)
        if not all(keep):  # a seat's cards as dealt: the control variates of the hand as dealt
            self.point_hands += 1
            return self._per_hand(events, pair)
        w = [np.ones(len(H)), np.ones(len(H))]
        correction = 0.0
        for ev, col in zip(decisions, cols):
            who = ev.before.current_player()
            other = 1 - who
            dist = ev.dist
            assert dist is not None and ev.action is not None
            ranged = keep[who] and models[who] is not _BLIND
            if ranged:
                keys, P = self._action_probs(models[who], ev.before)
                mass = w[who] * compatible_mass(w[other], H.mask, H.hands, _board_mask(ev.before))
                total = float(mass.sum())
                probs = {k: float(mass @ P[:, j]) / total for j, k in enumerate(keys)} if total > 0 else dist
            else:
                keys, P, probs = list(dist), None, dist
            expected = 0.0
            taken = 0.0
            for j, a in enumerate(keys):
                q = probs.get(a, 0.0)
                if q <= 0.0 and a != ev.action:
                    continue
                wa = w[who] * P[:, j] if P is not None else w[who]
                v = self._child_value(ev.before, a, who, wa, w[other])
                expected += q * v
                if a == ev.action:
                    taken = v
            correction += taken - expected
            if ranged and col is not None:
                w[who] = w[who] * col
        if not end.betting.showdown():
            return float(end.payoffs()[0]) - correction
        num, den = range_showdown(
            np.asarray(end.board_cards, np.int64), H.cs, H.mask, w[0], w[1], g.num_suits
        )
        if not den > 0.0:  # cannot happen with faithful models (the hands dealt have weight)
            return float(end.payoffs()[0]) - correction
        return num / den * min(end.spent) - correction

    def _action_probs(self, m, state: State) -> tuple[list[str], np.ndarray]:
        """``m.action_probs(state)``; a blueprint's, a function of the betting and the board alone,
        is kept (up to :data:`MEMO_STATES` public states, then the memo starts afresh)."""
        if not isinstance(m, BlueprintOpponent):
            return m.action_probs(state)
        key = (id(m), state.betting.actions, state.board_cards)
        hit = self._memo.get(key)
        if hit is None:
            if len(self._memo) >= MEMO_STATES:
                self._memo.clear()
            hit = self._memo[key] = m.action_probs(state)
        return hit

    def _likelihood(self, m, state: State, action: str) -> np.ndarray:
        """The probability of ``action`` at ``state`` for every hand, asked as the player asks it
        (a solving player's model keeps the hand's subgame, as the player does)."""
        if not isinstance(m, BlueprintOpponent):
            return m.likelihood(state, action)
        keys, P = self._action_probs(m, state)
        return P[:, keys.index(action)] if action in keys else np.zeros(P.shape[0])

    def _child_value(
        self, state: State, action: str, who: int, w_actor: np.ndarray, w_other: np.ndarray
    ) -> float:
        """Seat 0's value of ``state.apply(action)`` with the actor's range ``w_actor`` after it:
        a fold's payoff; on the last round the ranges' showdown on the board; earlier 0 (the
        control variate takes out the luck of folds and of the last round's actions)."""
        if action == "f":
            return fold_value(state)
        g = state.gamedef
        if len(state.board_cards) < g.total_board_cards:
            return 0.0
        contested = contested_after(state, action)
        ws = (w_actor, w_other) if who == 0 else (w_other, w_actor)
        H = self.hands
        assert H is not None
        num, den = range_showdown(
            np.asarray(state.board_cards, np.int64), H.cs, H.mask, ws[0], ws[1], g.num_suits
        )
        return num / den * contested if den > 0.0 else 0.0

    def _per_hand(self, events: Sequence[Event], pair: int) -> float:
        """The control-variate score (:func:`aivat_value`), one value function per duplicate pair
        (both hands hold the same cards per seat) with its pre-flop odds drawn from ``seed`` and
        the pair."""
        end = events[-1].after
        key = (pair, end.hole_cards)
        if self._value is None or self._value[0] != key:
            seed = int(np.random.SeedSequence([self.seed, pair, 0xA17A]).generate_state(1)[0])
            self._value = (key, ShowdownValue(end.hole_cards, seed=seed, samples=self.samples))
        return aivat_value(events, self._value[1])


__all__ = ["AIVAT", "AIVAT_SAMPLES", "MISMATCH_TOL", "ShowdownValue", "aivat_value", "range_showdown"]
