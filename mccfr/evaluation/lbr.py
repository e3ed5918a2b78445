"""Local best response (Lisy & Bowling 2017): a lower bound on exploitability for big games.

LBR plays real hands against a fixed opponent strategy (a blueprint, or a baseline player) from
each seat. It knows its own cards and tracks the opponent's *range*: a weight per private hand
(1,326 in hold'em), zero for hands that share a card with LBR's hand or the board, multiplied by
the opponent's probability of every action it is seen to take (Bayes: the blueprint's strategy
for that hand's card bucket at that node). At each of its decisions LBR values each action of
its menu as if the hand were then checked and called down to a showdown:

* fold: ``-spent[LBR]``;
* call/check: ``(2 E - 1) * m``, with ``E`` LBR's showdown equity (win + tie / 2) against the
  range and ``m`` the contested amount after calling;
* raise to ``x``: ``fp * spent[opp] + (1 - fp) * (2 E_c - 1) * m_x``, where ``fp`` is the
  range-weighted probability that the opponent folds to the raise (its strategy at the node the
  raise leads to, per hand) and ``E_c`` the equity against the part of the range that does not
  fold;

and takes the best (ties: call, then the smaller raise, then fold). That estimate is blind to
re-raises: the part of the range that re-raises counts as calling to a showdown. With
``reraise=True`` (``--lbr-reraise``) LBR looks one action further: each re-raise ``x'`` of the
opponent's strategy, weighted by its range-weighted probability, is valued at LBR's better answer
to it, ``max(-spent, (2 E_r - 1) * m_x')`` (fold, or call against the re-raising part of the
range), and ``E_c`` is the equity against the calling part only (opponents that give
``action_probs``: blueprints, blueprint + solving; card-blind baselines keep the plain estimate).
Equity is exact over every remaining board when there are at most ``max_exact_boards`` of them
(50: the river and the turn in hold'em, every round of small decks) and sampled before that
(``samples`` = 500 boards: the flop and pre-flop in hold'em). By default LBR uses its menu in every round (``preflop="menu"``);
``preflop="call"`` makes it just check or call in the first round, the cheap setting of the 2017
study. That setting is a poor exploiter of a weak blueprint: it calls every pre-flop all-in with
any hand (BENCHMARKS.md measures it losing to a barely trained blueprint). ``call_rounds`` names
further rounds where LBR only checks or calls (``(1,)``: the flop); the study's four settings are
pre-flop and flop each check/call or the menu.

Whatever LBR's heuristic estimates, the result is the *sampled value of a real strategy* against
the opponent, played out to the end of each hand, so its expectation is at most the best
response value. A hand that ends in a showdown scores LBR's payoff averaged over the opponent's
range at that point instead of against the one dealt hand (``rao_blackwell=True``), and when the
betting ends all-in before the river also over the board cards still to come (exact over at most
``max_exact_boards`` completions, else ``samples`` of them); when the opponent faces LBR's all-in
(fold or call, both ending the hand) its answer is averaged too, with each hand's fold probability: the range is
the exact posterior of the opponent's hand given all LBR has seen (uniform prior, card removal,
the opponent's known strategy), so the expectation is unchanged and the variance much smaller; averaging both seats gives a lower bound on exploitability
(``(BR_0 + BR_1) / 2``, OpenSpiel's convention). Each deal is played twice, LBR in seat 0 and in
seat 1 with the same cards per seat, and the 95% interval is over the pairs.

Action menus (``--lbr-actions``): ``fc`` (fold, call), ``fcpa`` (fold, call, pot, all-in: the
sizes of the study), ``pot-fractions`` (fold, call, 0.5, 0.75, 1, 1.5, 2 pots and all-in), or a
comma list of pot fractions with ``allin`` (``0.5,1,allin``). A pot fraction ``f`` raises to
``maxSpent + f * (pot + toCall)``, clamped into the legal range; limit games have one raise.

The opponent's strategy is exactly what :class:`mccfr.evaluation.players.BlueprintPlayer` plays: an
off-tree raise of LBR's is mapped by the randomized pseudo-harmonic translation (its mixture over
both neighbours, :meth:`blueprint.blueprint.Blueprint.node_distribution`), and where the abstract
tree has no node for the history the blueprint's fallback node answers
(:meth:`blueprint.blueprint.Blueprint.decision_nodes`), as the player does. Baselines that ignore their cards
(``always-call``, ``always-raise``, ``random``) need no range update. Blueprint + subgame solving
(:class:`mccfr.evaluation.solving.SolvingPlayer`, ``RUN_DIR+solve:METHOD``) is modelled by
:class:`mccfr.evaluation.lbr_solving.SolvingOpponent`: one solve per public state gives every hand's
strategy.

LBR's models of its opponent (:class:`~mccfr.evaluation.lbr_opponents.LBROpponent`: the strategy of
every private hand at once) are in :mod:`mccfr.evaluation.lbr_opponents`. The range and equity
computations are numba kernels over flat arrays (:func:`equity_vs_range`,
:func:`mccfr.evaluation.lbr_opponents.range_buckets`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import multiprocessing
import os
import signal
import time
import warnings
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, cast

import numba
import numpy as np

from abstraction.bets import ALLIN
from abstraction.combinatorics import next_combination
from blueprint.blueprint import Blueprint
from blueprint.player import sample
from holdem.betting import Betting
from holdem.evaluator import card_bit, rank_cardset
from holdem.game import Game
from holdem.gamedef import require_two_players
from holdem.state import CHANCE, TERMINAL, State
from mccfr.evaluation.lbr_log import COUNTERS, open_log, pair_record
from mccfr.evaluation.lbr_opponents import (
    BlueprintOpponent,
    CardBlindOpponent,
    Hands,
    LBRError,
    LBROpponent,
)
from mccfr.evaluation.lbr_solving import SolvingOpponent, solving_opponent
from mccfr.evaluation.match import InBigBlinds
from mccfr.evaluation.players import AlwaysCall, AlwaysRaise, RandomPlayer
from mccfr.evaluation.solving import SolvingPlayer
from mccfr_util.reporting import big_blind_of, ci95

MENUS: dict[str, tuple[float, ...]] = {
    "fc": (),
    "fcpa": (1.0, ALLIN),
    "pot-fractions": (0.5, 0.75, 1.0, 1.5, 2.0, ALLIN),
}
MAX_HANDS = 10_000_000  # one run's hands (the deals are drawn up front)
MAX_JOBS = 1024
MAX_EXACT_BOARDS = 50  # hold'em: river 1 and turn 44-46 boards exact; flop (990-1,081) and pre-flop sampled
SAMPLES = 500


def parse_menu(text: str) -> tuple[float, ...]:
    """Raise sizes (pot fractions, :data:`abstraction.bets.ALLIN` for all-in) of a menu name or
    a comma list such as ``0.5,1,allin``."""
    if text in MENUS:
        return MENUS[text]
    sizes = []
    for part in text.split(","):
        part = part.strip().lower()
        if part in ("allin", "all-in", "a"):
            sizes.append(ALLIN)
            continue
        try:
            f = float(part)
        except ValueError:
            raise LBRError(
                f"unknown LBR action menu {text!r}: use {', '.join(MENUS)} or pot fractions such as 0.5,1,allin"
            ) from None
        if not (f > 0 and math.isfinite(f)):
            raise LBRError(f"LBR action menu {text!r}: pot fractions must be positive, got {part!r}")
        sizes.append(f)
    return tuple(sorted(set(sizes), key=lambda x: (x == ALLIN, x)))


# -- numba kernels ------------------------------------------------------------------------------
@numba.njit(cache=True)
def equity_vs_range(
    my_cards, board, rest, k, hands_cs, hands_mask, weights, num_suits, max_exact, samples, seed
):
    """Showdown equity (win + tie / 2) of ``my_cards`` against each opponent hand with a positive
    weight, over the ``k`` board cards still to come drawn from ``rest`` (the cards neither in
    ``my_cards`` nor on ``board``), each completion that the hand does not block counted equally.

    Every completion when there are at most ``max_exact`` of them, else ``samples`` uniform ones.
    Returns float64 ``[H]`` (0.5 for hands of weight 0 or without a completion).
    """
    H = hands_cs.shape[0]
    win = np.zeros(H)
    cnt = np.zeros(H)
    mine = np.int64(0)
    for c in my_cards:
        mine |= card_bit(c, num_suits)
    base = np.int64(0)
    for c in board:
        base |= card_bit(c, num_suits)
    live = np.nonzero(weights > 0.0)[0]
    n = rest.shape[0]
    total = 1.0
    for i in range(k):
        total = total * (n - i) / (i + 1)
    idx = np.arange(max(k, 1))
    exact = total <= max_exact
    draws = int(total + 0.5) if exact else samples
    np.random.seed(seed)
    pool = rest.copy()
    for d in range(draws):
        cs = base
        m = np.int64(0)
        if k > 0:
            if exact:
                if d > 0:
                    next_combination(idx, k, n)
                for i in range(k):
                    c = rest[idx[i]]
                    cs |= card_bit(c, num_suits)
                    m |= np.int64(1) << c
            else:
                for i in range(k):  # partial Fisher-Yates: k distinct cards
                    j = i + np.random.randint(n - i)
                    t = pool[i]
                    pool[i] = pool[j]
                    pool[j] = t
                    cs |= card_bit(pool[i], num_suits)
                    m |= np.int64(1) << pool[i]
        r = rank_cardset(cs | mine)
        for t in range(live.shape[0]):
            h = live[t]
            if hands_mask[h] & m:
                continue
            o = rank_cardset(cs | hands_cs[h])
            cnt[h] += 1.0
            if r > o:
                win[h] += 1.0
            elif r == o:
                win[h] += 0.5
    eq = np.full(H, 0.5)
    for t in range(live.shape[0]):
        h = live[t]
        if cnt[h] > 0:
            eq[h] = win[h] / cnt[h]
    return eq


@numba.njit(cache=True)
def _remove_cards(weights, hands_mask, mask):
    """Zero the weight of every hand that holds a card of ``mask``."""
    for h in range(weights.shape[0]):
        if hands_mask[h] & mask:
            weights[h] = 0.0


def _opponent(opponent, hands: Hands) -> LBROpponent:
    """LBR's model of ``opponent`` (a blueprint, a player, or a model already made): its strategy
    for every hand at once."""
    if isinstance(opponent, (BlueprintOpponent, CardBlindOpponent, SolvingOpponent)):
        own = getattr(opponent, "hands", None)
        if own is not None and len(own) != len(hands):
            raise LBRError(f"the opponent model {opponent.name!r} was made for another game's hands")
        return opponent
    if isinstance(opponent, Blueprint):
        return BlueprintOpponent(opponent, hands)
    if isinstance(opponent, (AlwaysCall, AlwaysRaise, RandomPlayer)):
        return CardBlindOpponent(opponent)
    if isinstance(opponent, SolvingPlayer):  # blueprint + solving
        return solving_opponent(opponent, hands)
    bp = getattr(opponent, "bp", None)
    if isinstance(bp, Blueprint):  # a BlueprintPlayer
        return BlueprintOpponent(bp, hands)
    raise LBRError(
        f"LBR needs an opponent whose strategy it can read per hand: a blueprint (RUN_DIR), "
        f"blueprint + solving (RUN_DIR+solve:METHOD) or always-call, always-raise, random; not {getattr(opponent, 'name', opponent)!r}"
    )


# -- the LBR player -----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LBRResult(InBigBlinds):
    """LBR's mean winnings against the opponent (a lower bound on its exploitability)."""

    opponent: str
    game: str
    menu: str
    hands: int
    pairs: int
    chips_per_hand: float
    ci95_chips: float
    seat_chips: tuple[float, float]
    seat_ci95: tuple[float, float]
    big_blind: int | None
    seed: int
    seconds: float
    decisions: int
    per_pair: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0), repr=False, compare=False
    )  # chips per deal (both seats)
    jobs: int = 1  # processes that played the pairs
    hands_played: int | None = None  # by this call (fewer than hands when a log had some): None, all
    pair_seconds: float | None = None  # the pairs' own seconds, summed (every pair, logged ones too)
    cpu_seconds: float | None = None  # CPU time of the pairs this call played, summed over processes
    opponent_counters: dict = dataclasses.field(default_factory=dict, compare=False)  # a solver's solves...

    @property
    def hands_per_cpu_hour(self) -> float | None:
        """Hands this call played per hour of CPU time its processes got: ``played / cpu_seconds *
        3600`` (on a shared machine the wall clock times the processes would count the others'
        time too); without ``cpu_seconds``, per hour of ``jobs`` cores' wall clock. None when it
        played none."""
        played = self.hands if self.hands_played is None else self.hands_played
        if played <= 0 or self.seconds <= 0:
            return None
        if self.cpu_seconds:
            return played / self.cpu_seconds * 3600.0
        return played / (self.seconds * self.jobs) * 3600.0

    @property
    def lbr(self) -> float:
        return self.chips_per_hand * self.scale()

    @property
    def lbr_ci95(self) -> float:
        return self.ci95_chips * self.scale()

    def to_json(self) -> dict:
        k = self.scale()
        return {
            "lbr": self.lbr,
            "lbr_ci95": self.lbr_ci95,
            "unit": self.unit,
            "hands": self.hands,
            "pairs": self.pairs,
            "lbr_seats": [v * k for v in self.seat_chips],
            "lbr_seats_ci95": [v * k for v in self.seat_ci95],
            "lbr_chips": self.chips_per_hand,
            "lbr_ci95_chips": self.ci95_chips,
            "lbr_actions": self.menu,
            "opponent": self.opponent,
            "seed": self.seed,
            "seconds": self.seconds,
            "decisions": self.decisions,
            "jobs": self.jobs,
            "hands_played": self.hands if self.hands_played is None else self.hands_played,
            "hands_per_cpu_hour": self.hands_per_cpu_hour,
            "cpu_seconds": self.cpu_seconds,
        }


class LocalBestResponse:
    """LBR against one opponent in one game (see the module docstring)."""

    def __init__(
        self,
        game: Game,
        opponent,
        menu: str = "fcpa",
        preflop: str = "menu",
        max_exact_boards: int = MAX_EXACT_BOARDS,
        samples: int = SAMPLES,
        rao_blackwell: bool = True,
        call_rounds: Sequence[int] = (),
        reraise: bool = False,
    ):
        require_two_players(game.gamedef, "LBR (a best response to one opponent)")
        if preflop not in ("call", "menu"):
            raise LBRError(f"preflop must be 'call' or 'menu', got {preflop!r}")
        if any(not 0 <= int(r) < game.gamedef.num_rounds for r in call_rounds):
            raise LBRError(
                f"call_rounds must be rounds 0..{game.gamedef.num_rounds - 1}, got {tuple(call_rounds)}"
            )
        if samples < 1:
            raise LBRError(f"samples must be >= 1, got {samples}")
        bp = opponent if isinstance(opponent, Blueprint) else getattr(opponent, "bp", None)
        if isinstance(bp, Blueprint) and bp.gamedef.to_acpc() != game.gamedef.to_acpc():
            raise LBRError(
                f"the blueprint plays {bp.gamedef.name or 'another game'}, not {game.gamedef.name or 'this game'}"
            )
        self.game = game
        self.g = game.gamedef
        self.menu_name = menu
        self.sizes = parse_menu(menu)
        self.preflop = preflop
        # rounds where LBR only checks or calls: the first with preflop="call", and call_rounds
        self.call_rounds = frozenset(int(r) for r in call_rounds) | ({0} if preflop == "call" else set())
        self.rao_blackwell = rao_blackwell
        self.reraise = bool(reraise)
        self.max_exact = int(max_exact_boards)
        self.samples = int(samples)
        self.hands = Hands(game)
        self.opp = _opponent(opponent, self.hands)
        self.decisions = 0

    # -- one decision -------------------------------------------------------------------------
    def candidates(self, state: State) -> list[str]:
        """LBR's legal menu actions here: ``f`` (when facing a bet), ``c``, then raises by size."""
        b = state.betting
        out = ["f"] if b.can_fold() else []
        out.append("c")
        if state.round in self.call_rounds:
            return ["c"]
        rr = b.raise_range()
        if rr is None or not self.sizes:
            return out
        if self.g.is_limit:
            return out + ["r"]
        tos = []
        for f in self.sizes:
            to = rr[1] if f == ALLIN else b.pot_raise_to(f)
            to = min(max(to, rr[0]), rr[1])
            if to not in tos:
                tos.append(to)
        return out + [f"r{to}" for to in sorted(tos)]

    def action_values(self, state: State, weights: np.ndarray, rng: np.random.Generator) -> dict[str, float]:
        """LBR's estimated net chips of each candidate action (see the module docstring)."""
        g = self.g
        me = state.current_player()
        opp = 1 - me
        b = state.betting
        cands = self.candidates(state)
        if len(cands) == 1:
            return {cands[0]: 0.0}
        done = g.board_cards_through(g.num_rounds - 1)
        board = np.array(state.board_cards, np.int64)
        hole = np.array(state.hole_cards[me], np.int64)
        used = set(state.board_cards) | set(state.hole_cards[me])
        rest = np.array([c for c in range(g.deck_size) if c not in used], np.int64)
        eq = self._eq_cache.get(len(board))
        if eq is None:  # weights only fall to zero within a street: the first vector serves all its decisions
            eq = equity_vs_range(
                hole,
                board,
                rest,
                done - len(board),
                self.hands.cs,
                self.hands.mask,
                weights,
                g.num_suits,
                self.max_exact,
                self.samples,
                int(rng.integers(2**31 - 1)),
            )
            self._eq_cache[len(board)] = eq
        W = float(weights.sum())
        E = float(weights @ eq) / W
        out: dict[str, float] = {}
        for a in cands:
            if a == "f":
                out[a] = -float(b.spent[me])
            elif a == "c":
                m = min(min(b.max_spent, g.stack[me]), b.spent[opp])
                out[a] = (2.0 * E - 1.0) * m
            elif self.reraise and hasattr(self.opp, "action_probs"):
                out[a] = self._raise_value_seeing_reraises(state.apply(a), me, weights, W, eq)
            else:
                after = state.apply(a)
                to = after.betting.spent[me]
                fp_h = self.opp.fold_probs(after)
                fp_vec = np.broadcast_to(np.asarray(fp_h, np.float64), weights.shape)
                fp = float(weights @ fp_vec) / W
                wc = weights * (1.0 - fp_vec)
                Wc = float(wc.sum())
                Ec = float(wc @ eq) / Wc if Wc > 0 else E
                m = min(to, g.stack[opp])
                out[a] = fp * float(b.spent[opp]) + (1.0 - fp) * (2.0 * Ec - 1.0) * m
        return out

    def _raise_value_seeing_reraises(
        self, after: State, me: int, weights: np.ndarray, W: float, eq: np.ndarray
    ) -> float:
        """LBR's estimate of the raise that led to ``after``, looking one action further
        (``reraise=True``): the opponent folds (LBR wins its chips), calls (a showdown at the
        raise's size against the calling hands) or re-raises, each size with its probability per
        hand, and LBR then answers that re-raise with the better of folding (losing what it has
        put in) and calling to a showdown against the hands that re-raise so."""
        g = self.g
        opp = 1 - me
        b = after.betting
        to = float(b.spent[me])
        keys, P = cast(Any, self.opp).action_probs(after)  # opponents with action_probs only
        value = 0.0
        for j, k in enumerate(keys):
            wk = weights * P[:, j]
            Wk = float(wk.sum())
            if Wk <= 0.0:
                continue
            share = Wk / W
            if k == "f":
                value += share * float(b.spent[opp])
                continue
            Ek = float(wk @ eq) / Wk
            if k == "c":
                value += share * (2.0 * Ek - 1.0) * min(to, float(g.stack[opp]))
                continue
            r = after.apply(k).betting  # a re-raise: LBR folds or calls it
            m = min(float(r.spent[opp]), float(g.stack[me]))
            value += share * max(-to, (2.0 * Ek - 1.0) * m)
        return value

    def decide(self, state: State, weights: np.ndarray, rng: np.random.Generator) -> str:
        vals = self.action_values(state, weights, rng)
        self.decisions += 1
        order = [a for a in vals if a != "f"] + (["f"] if "f" in vals else [])
        best = order[0]
        for a in order[1:]:
            if vals[a] > vals[best] + 1e-9:
                best = a
        return best

    # -- one hand -----------------------------------------------------------------------------
    def play_hand(
        self,
        deal: Sequence[int],
        seat: int,
        rng_opp: np.random.Generator,
        rng_lbr: np.random.Generator,
        hand_id: int = 0,
    ) -> float:
        """LBR's net chips in ``seat`` for one hand with the cards ``deal`` (deal order)."""
        g = self.g
        h = g.num_hole_cards
        state = self.game.initial_state(hand_id=hand_id).deal([int(c) for c in deal[: 2 * h]])
        i = 2 * h
        opp = 1 - seat
        new_hand = getattr(self.opp, "new_hand", None)
        if new_hand is not None:
            new_hand()  # nothing carries over from the hand played before
        weights = np.ones(len(self.hands))
        self._eq_cache: dict[int, np.ndarray] = {}  # board length -> LBR's equity vector this hand
        mine = 0
        for c in state.hole_cards[seat]:
            mine |= 1 << c
        _remove_cards(weights, self.hands.mask, np.int64(mine))
        opp_hand = self.hands.of(state.hole_cards[opp])
        while True:
            who = state.current_player()
            if who == TERMINAL:
                if self.rao_blackwell and state.betting.showdown() and weights.sum() > 0:
                    return self._expected_showdown(state, seat, weights)
                return float(state.payoffs()[seat])
            if who == CHANCE:
                if self.rao_blackwell and state.betting.showdown() and weights.sum() > 0:
                    # all-in before the river: nobody acts again; average the rest of the board too
                    return self._expected_showdown(state, seat, weights, int(rng_lbr.integers(2**31 - 1)))
                k = max(1, g.board_cards_through(state.round) - len(state.board_cards))
                cards = [int(c) for c in deal[i : i + k]]
                i += k
                state = state.deal(cards)
                m = 0
                for c in cards:
                    m |= 1 << c
                _remove_cards(weights, self.hands.mask, np.int64(m))
                continue
            if who == opp:
                if self.rao_blackwell and weights.sum() > 0 and self._response_ends_betting(state):
                    return self._expected_response(state, seat, weights, int(rng_lbr.integers(2**31 - 1)))
                a, lik = self.opp.act(state, opp_hand, rng_opp)
                if lik is not None:
                    nw = weights * lik
                    if nw.sum() > 0:  # the true hand has positive likelihood; guard underflow
                        weights = nw / nw.sum()
            else:
                a = self.decide(state, weights, rng_lbr)
            state = state.apply(a)

    @staticmethod
    def _response_ends_betting(state: State) -> bool:
        """The opponent faces a bet it can only fold to or call (LBR's all-in), and a call ends
        the betting: both answers lead straight to the end of the hand."""
        b = state.betting
        return b.can_fold() and b.raise_range() is None and state.apply("c").betting.showdown()

    def _expected_response(self, state: State, seat: int, weights: np.ndarray, seed: int) -> float:
        """LBR's payoff averaged over the opponent's range *and* its fold / call answer at a state
        where both end the hand (:meth:`_response_ends_betting`): each hand ``h`` of the posterior
        folds with its strategy's probability ``f_h`` (LBR wins the opponent's chips) or calls to a
        showdown over the rest of the board. The same expectation as playing the answer out."""
        opp = 1 - seat
        fp = np.broadcast_to(np.asarray(self.opp.fold_probs(state), np.float64), weights.shape)
        called = state.apply("c")
        eq = self._runout_equity(state, seat, weights, seed)
        m = float(min(called.betting.spent))
        v = fp * float(state.betting.spent[opp]) + (1.0 - fp) * (2.0 * eq - 1.0) * m
        return float(weights @ v) / float(weights.sum())

    def _runout_equity(self, state: State, seat: int, weights: np.ndarray, seed: int) -> np.ndarray:
        """LBR's equity against each hand of the opponent's range, over the board cards still to
        come (every completion up to ``max_exact_boards``, else ``samples`` of them)."""
        g = self.g
        hole = np.array(state.hole_cards[seat], np.int64)
        board = np.array(state.board_cards, np.int64)
        k = g.board_cards_through(g.num_rounds - 1) - len(board)
        used = set(state.board_cards) | set(state.hole_cards[seat])
        rest = (
            np.array([c for c in range(g.deck_size) if c not in used], np.int64)
            if k
            else np.zeros(0, np.int64)
        )
        return equity_vs_range(
            hole,
            board,
            rest,
            k,
            self.hands.cs,
            self.hands.mask,
            weights,
            g.num_suits,
            self.max_exact,
            self.samples,
            seed,
        )

    def _expected_showdown(self, state: State, seat: int, weights: np.ndarray, seed: int = 0) -> float:
        """LBR's showdown payoff averaged over the opponent's range (its exact posterior given
        everything LBR has seen) and, when the betting ended all-in before the board is complete,
        over the board cards still to come (every completion when there are at most
        ``max_exact_boards``, else ``samples`` of them, as for the decisions' equity): the same
        expectation as the dealt hand's payoff, less variance."""
        eq = self._runout_equity(state, seat, weights, seed)
        m = float(min(state.betting.spent))
        return float(weights @ (2.0 * eq - 1.0)) / float(weights.sum()) * m

    # -- a run ------------------------------------------------------------------------------------
    def log_header(self, hands: int, seed: int, opponent_spec: str | None = None) -> dict[str, Any]:
        """What names a run in its log (:mod:`mccfr.evaluation.lbr_log`): a log continues only
        a run with all of these the same."""
        g = self.g
        opp: dict[str, Any] = {"name": getattr(self.opp, "name", "?"), "spec": opponent_spec}
        for k in ("method", "from_round", "iterations"):
            if hasattr(self.opp, k):
                opp[k] = getattr(self.opp, k)
        bets = getattr(self.opp, "bets", None)
        if bets is not None:
            opp["bets"] = getattr(bets, "name", str(bets))
        bp = getattr(self.opp, "bp", None)
        if isinstance(bp, Blueprint):
            opp["blueprint"] = {"iteration": bp.iteration, "config_hash": bp.config_hash}
        return {
            "game": g.name or hashlib.sha256(g.to_acpc().encode()).hexdigest()[:16],
            "opponent": opp,
            "menu": self.menu_name,
            "preflop": self.preflop,
            "call_rounds": sorted(self.call_rounds),
            "reraise": self.reraise,
            "samples": self.samples,
            "max_exact_boards": self.max_exact,
            "rao_blackwell": self.rao_blackwell,
            "seed": int(seed),
            "hands": 2 * ((int(hands) + 1) // 2),
        }

    def play_pair(self, j: int, deal: Sequence[int], seed: int) -> dict[str, Any]:
        """Deal ``j`` (its cards ``deal``) with LBR in seat 0, then in seat 1: its log record
        (:func:`mccfr.evaluation.lbr_log.pair_record`). The pair's two random streams (the
        opponent's choices, LBR's equity samples) come from ``SeedSequence([seed, j])`` alone, so
        a pair's values do not depend on which pairs were played before it, or where."""
        rng_opp, rng_lbr = (np.random.default_rng(s) for s in np.random.SeedSequence([seed, j]).spawn(2))
        before = {k: getattr(self.opp, k) for k in COUNTERS if hasattr(self.opp, k)}
        d0 = self.decisions
        t0, c0 = time.perf_counter(), time.process_time()
        chips = (
            self.play_hand(deal, 0, rng_opp, rng_lbr, 2 * j),
            self.play_hand(deal, 1, rng_opp, rng_lbr, 2 * j + 1),
        )
        counters = {k: getattr(self.opp, k) - v for k, v in before.items()}
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        return pair_record(j, chips, self.decisions - d0, wall, counters, cpu)

    def run(
        self,
        hands: int,
        seed: int = 0,
        progress: Callable[[int, int], None] | None = None,
        jobs: int | None = None,
        log: str | os.PathLike | None = None,
        opponent_spec: str | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> LBRResult:
        """LBR over ``hands`` hands (whole duplicate pairs: each deal with LBR in both seats).

        Pair ``j`` is dealt the ``j``-th draw of the seed's deal stream and plays with its own
        random streams (:meth:`play_pair`): a run's values are the same whatever the order of its
        pairs. ``jobs``: worker processes that play pairs at once (default: every core this
        process may use; 1: in this process). They are forked, so they start with this process's
        blueprint and opponent, and each solves on one thread. ``log``: the run's log
        (:mod:`mccfr.evaluation.lbr_log`), a header then a line per finished pair, written as
        they finish; given again, the run plays only the pairs the log does not have, and its
        result is the unbroken run's. ``opponent_spec`` goes into the log's header (how the
        opponent was named, e.g. a run directory). ``warn``: told of a damaged last log line
        (default :func:`warnings.warn`). ``progress(done, total)``: hands finished so far."""
        if isinstance(hands, bool) or not isinstance(hands, (int, np.integer)):
            raise LBRError(f"hands must be a whole number, got {hands!r}")
        if hands < 2:
            raise LBRError(f"LBR needs at least 2 hands (one duplicate pair), got {hands}")
        if hands > MAX_HANDS:
            raise LBRError(f"LBR plays at most {MAX_HANDS:,} hands in one run, got {hands:,}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise LBRError(f"the seed must be a whole number >= 0, got {seed!r}")
        jobs = default_jobs() if jobs is None else jobs
        if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or not 1 <= jobs <= MAX_JOBS:
            raise LBRError(f"jobs must be a number of processes from 1 to {MAX_JOBS}, got {jobs!r}")
        pairs = (hands + 1) // 2
        g = self.g
        deal_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[0])
        deals = np.empty((pairs, g.cards_per_deal), np.int8)
        for j in range(pairs):
            deals[j] = deal_rng.choice(g.deck_size, g.cards_per_deal, replace=False)
        book = (
            open_log(log, self.log_header(hands, seed, opponent_spec), pairs, warn or _warn)
            if log is not None
            else None
        )
        try:
            done: dict[int, dict] = dict(book.done) if book is not None else {}
            todo = [j for j in range(pairs) if j not in done]
            jobs = max(1, min(int(jobs), len(todo)))
            every = max(1, pairs // 100)
            t0 = time.perf_counter()

            def finished(rec: dict) -> None:
                done[rec["pair"]] = rec
                if book is not None:
                    book.write(rec)
                if progress is not None and (len(done) % every == 0 or len(done) == pairs):
                    progress(2 * len(done), 2 * pairs)

            if jobs == 1:
                for j in todo:
                    finished(self.play_pair(j, deals[j], seed))
            else:
                played = _play_in_processes(self, deals, seed, todo, jobs)
                try:
                    for rec in played:
                        finished(rec)
                finally:
                    played.close()  # an error or Ctrl-C here ends the workers at once
            seconds = time.perf_counter() - t0
        finally:
            if book is not None:
                book.close()
        recs = [done[j] for j in range(pairs)]
        net = np.array([r["chips"] for r in recs], np.float64).reshape(pairs, 2)
        counters = {k: sum(r.get(k, 0) for r in recs) for k in COUNTERS if hasattr(self.opp, k)}
        for k, v in counters.items():  # the run's totals, whichever process played the pairs
            setattr(self.opp, k, v)
        self.decisions = sum(r["decisions"] for r in recs)
        per_pair = net.mean(axis=1)
        return LBRResult(
            opponent=getattr(self.opp, "name", "?"),
            game=g.name,
            menu=self.menu_name,
            hands=2 * pairs,
            pairs=pairs,
            chips_per_hand=float(per_pair.mean()),
            ci95_chips=ci95(per_pair),
            seat_chips=(float(net[:, 0].mean()), float(net[:, 1].mean())),
            seat_ci95=(ci95(net[:, 0]), ci95(net[:, 1])),
            big_blind=big_blind_of(self.game.gamedef),
            seed=seed,
            seconds=seconds,
            decisions=self.decisions,
            per_pair=per_pair,
            jobs=jobs,
            hands_played=2 * len(todo),
            pair_seconds=float(sum(r["seconds"] for r in recs)),
            cpu_seconds=float(sum(r.get("cpu_seconds", 0.0) for r in (done[j] for j in todo))),
            opponent_counters=counters,
        )


def default_jobs() -> int:
    """Every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


def _warn(msg: str) -> None:
    warnings.warn(msg, stacklevel=3)


_WORK: dict[str, Any] = {}  # what forked workers inherit: the LBR, the deals, the seed


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the parent, which ends the pool
    numba.set_num_threads(1)  # processes use the cores; each solve walks on one thread


def _worker_pair(j: int) -> dict[str, Any]:
    w = _WORK
    return w["lbr"].play_pair(j, w["deals"][j], w["seed"])


def _play_in_processes(
    lbr: LocalBestResponse, deals: np.ndarray, seed: int, todo: list[int], jobs: int
) -> Generator[dict[str, Any], None, None]:
    """Play pairs ``todo`` in ``jobs`` forked processes, yielding each record as it finishes.
    Fork (not spawn): the workers inherit the loaded blueprint and opponent; numba's default
    ``workqueue`` threading layer is fork-safe, and workers start no threads before they solve.
    At most ``2 * jobs`` pairs wait at a time. A worker that dies (killed, out of memory) is an
    :class:`LBRError`; an error or Ctrl-C in this process ends the workers at once."""
    if _WORK:
        raise LBRError("an LBR run with jobs > 1 is already running in this process")
    _WORK.update(lbr=lbr, deals=deals, seed=seed)
    ex = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"), initializer=_worker_init)
    clean = False
    try:
        left = iter(todo)
        pending: set[Future] = set()
        while True:
            for j in left:
                pending.add(ex.submit(_worker_pair, j))
                if len(pending) >= 2 * jobs:
                    break
            if not pending:
                break
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                try:
                    rec = f.result()
                except BrokenProcessPool:
                    raise LBRError(
                        "an LBR worker process died (killed, or out of memory?); the pairs finished "
                        "before it are kept in the log, if the run has one"
                    ) from None
                yield rec
        clean = True
    finally:
        if not clean:
            for proc in list((getattr(ex, "_processes", None) or {}).values()):
                proc.terminate()  # a pair can take minutes: do not wait for it
        ex.shutdown(wait=True, cancel_futures=True)
        _WORK.clear()


class LBRPlayer:
    """LBR as a :class:`mccfr.evaluation.players.Player` for match play: from the seat's view alone (its
    cards, the board, the public betting) it rebuilds the opponent's range by replaying the
    history, then decides as :meth:`LocalBestResponse.decide`. Deterministic when every equity is
    exact (small decks), so :func:`mccfr.evaluation.match.exact_value` gives LBR's exact value."""

    name = "lbr"

    def __init__(self, lbr: LocalBestResponse):
        self.lbr = lbr

    def range_of(self, view: State) -> np.ndarray:
        """The opponent's range (normalised weights over all hands) at ``view``."""
        L, g = self.lbr, self.lbr.g
        seat = view.viewer
        if seat is None:
            raise LBRError("LBRPlayer decides from a seat's view, not the dealer's")
        w = np.ones(len(L.hands))
        m = 0
        for c in tuple(view.hole_cards[seat]) + tuple(view.board_cards):
            m |= 1 << int(c)
        _remove_cards(w, L.hands.mask, np.int64(m))
        b = Betting.initial(g)
        for r, acts in enumerate(view.betting.actions):
            for (kind, size), who in zip(acts, view.betting.actors[r]):
                if who != seat:
                    prefix = State(
                        view.game,
                        b,
                        view.hole_cards,
                        view.board_cards[: g.board_cards_through(r)],
                        view.hand_id,
                        seat,
                    )
                    a = "fcr"[kind] + (str(size) if kind == 2 and not g.is_limit else "")
                    lik = L.opp.likelihood(prefix, a)
                    if lik is not None:
                        nw = w * lik
                        if nw.sum() > 0:
                            w = nw / nw.sum()
                b = b.apply(kind, size)
        return w

    def probs(self, view: State) -> dict[str, float]:
        L = self.lbr
        L._eq_cache = {}
        rng = np.random.default_rng(len(view.board_cards))  # only sampled equities use it
        return {L.decide(view, self.range_of(view), rng): 1.0}

    def act(self, view: State, rng: np.random.Generator) -> str:
        return sample(self.probs(view), rng)


def local_best_response(
    game: Game,
    opponent,
    hands: int,
    menu: str = "fcpa",
    seed: int = 0,
    preflop: str = "menu",
    progress=None,
    jobs: int | None = None,
    log: str | os.PathLike | None = None,
    **kw,
) -> LBRResult:
    """LBR of ``opponent`` (a :class:`Blueprint`, a BlueprintPlayer, or a card-blind baseline)."""
    return LocalBestResponse(game, opponent, menu=menu, preflop=preflop, **kw).run(
        hands, seed=seed, progress=progress, jobs=jobs, log=log
    )


__all__ = [
    "MENUS",
    "LBRError",
    "LBRPlayer",
    "LBRResult",
    "LocalBestResponse",
    "default_jobs",
    "equity_vs_range",
    "local_best_response",
    "parse_menu",
]
