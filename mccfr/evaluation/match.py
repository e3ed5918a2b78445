"""Head-to-head matches with duplicate deals, and the exact expected value of a pairing.

Duplicate play. A match of ``hands`` hands is ``pairs = ceil(hands / 2)`` duplicate pairs. For each
pair one deal is drawn (every card of the hand: both hole hands and all boards, in the deal order
of :mod:`holdem.state`); it is played twice with the *same cards per seat*, once with player A in
seat 0 and once with A in seat 1. Each player thus holds both hands of the deal, which removes
most of the card luck from the comparison.

Randomness: ``SeedSequence(seed).spawn(3)`` gives three ``numpy.random.Generator`` streams, for the
deals, for player A and for player B, so the deals do not depend on the players and the same seed
replays the same match. With ``common_random=True`` each hand's players draw instead from streams
of their own, seeded by the seed and the hand's number: two players that differ only in some
decisions (the blueprint player, and the same blueprint with subgame solving) then play every
hand those decisions do not reach identically, so the difference of their results over the same
seed has a far smaller variance than either result (common random numbers).

Results are from player A's side. ``chips_per_hand`` is A's mean net chips per hand; its 95%
confidence interval is ``1.96 * s / sqrt(pairs)`` (:func:`mccfr_util.reporting.ci95`) with ``s`` the standard deviation of the
per-pair means (the pairs are independent; the two hands of a pair are not). Games with a big
blind (blinds that differ, as in hold'em) also report milli-big-blinds per game (``mbb/game``,
``1000 * chips / big blind``); ante games such as Kuhn and Leduc report chips per hand. The win
rate is the fraction of hands A won (net > 0); ties (split pots) are counted apart.

All-in expectation (``play_match(..., allin_ev=True)``): a duplicate pair is scored by its expected
result given the board cards that either of its two hands depends on (:func:`decided_at`: the cards
dealt before a fold or before both players were all-in; every card after a showdown without an
all-in). When both hands were decided before the river, each showdown is scored by its expected
payoff over the board cards after that point (:func:`allin_expectation`: every completion where
there are at most :data:`ALLIN_EXACT_MAX`, else the mean of :data:`ALLIN_SAMPLES` completions drawn
with a generator seeded by the cards), not by the cards that came. No decision depends on the cards
averaged over, so the mean is unchanged (unbiased) and the luck of those cards is gone; scoring the
pair given the same cards keeps the duplicate's cancellation of the board's luck between its hands
(each hand scored on its own all-in point alone would lose it, and measured a wider interval).

Exact value (:func:`exact_value`): for games small enough, the expected chips of A per hand in each
seat, computed from the game tree by enumerating every deal (one card at a time, uniformly among
the cards left) and both players' action probabilities (players must have ``probs(state)``; see
:mod:`mccfr.evaluation.players`). Matches do not need it; tables print it beside the sampled figures.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

import numpy as np

from blueprint.player import ExactPlayer, Player
from holdem.betting import IllegalActionError
from holdem.evaluator import showdown_odds
from holdem.game import Game
from holdem.gamedef import require_two_players
from holdem.state import CHANCE, TERMINAL, State
from mccfr_util.reporting import big_blind_of, ci95, mbb_per_chip


class MatchError(RuntimeError):
    """A player broke the rules (an illegal or malformed action)."""


def view_of(state: State, seat: int) -> State:
    """``seat``'s view of a dealer state of any number of seats: its MATCHSTATE as a State (every
    other seat's hole cards hidden)."""
    hole = tuple(h if s == seat else () for s, h in enumerate(state.hole_cards))
    return State(state.game, state.betting, hole, state.board_cards, state.hand_id, seat)


class Event(NamedTuple):
    """One step of a hand: ``before`` -> ``after`` by ``action`` (an ACPC action string) with the
    distribution the player drew it from (``dist``: ``{action: probability}``), or a chance deal
    (``action`` and ``dist`` None)."""

    before: State
    after: State
    action: str | None
    dist: dict[str, float] | None


class HandScorer(Protocol):
    """Scores a finished hand from its events (:class:`mccfr.evaluation.aivat.AIVAT`): seat 0's
    value, with ``seats`` the players in seat 0 and 1 and ``pair`` the duplicate pair's index."""

    def score(self, events: Sequence[Event], seats: Sequence[Player], pair: int) -> float: ...


def play_hand(
    game: Game,
    seats: Sequence[Player],
    rngs: Sequence[np.random.Generator],
    deal: Sequence[int] | np.ndarray,
    hand_id: int = 0,
    events: list[Event] | None = None,
) -> State:
    """Play one hand of any number of seats: ``seats[s]`` sits in seat ``s`` and draws from
    ``rngs[s]``; ``deal`` lists the cards in deal order (every seat's hole cards, then the boards).

    Returns the terminal state. Raises :class:`MatchError` naming the player, its seat, its view
    and the action when an action is illegal or malformed.
    ``events``: when given, every step of the hand is appended to it (:class:`Event`),
    with each decision's distribution, which the players must then tell
    (:class:`~blueprint.player.KnownPlayer`).
    """
    g = game.gamedef
    state = game.initial_state(hand_id=hand_id)
    i = 0
    while True:
        who = state.current_player()
        if who == TERMINAL:
            return state
        if who == CHANCE:
            # everything due now in one call: every seat's hole hand, or the boards up to this
            # round (all remaining boards after an all-in, when the round is already the last)
            if i == 0:
                k = g.num_players * g.num_hole_cards
            else:
                k = max(1, g.board_cards_through(state.round) - len(state.board_cards))
            before, state = state, state.deal([int(c) for c in deal[i : i + k]])
            i += k
            if events is not None:
                events.append(Event(before, state, None, None))
            continue
        view = view_of(state, who)
        dist = None
        if events is None:
            action = seats[who].act(view, rngs[who])
        else:
            action, dist = seats[who].decide(view, rngs[who])  # type: ignore[attr-defined]
        try:
            before, state = state, state.apply(action)
        except (IllegalActionError, ValueError, TypeError) as exc:
            raise MatchError(
                f"player {seats[who].name!r} in seat {who} at {view}: illegal action {action!r}: {exc}"
            ) from None
        if events is not None:
            events.append(Event(before, state, action, dist))


ALLIN_EXACT_MAX = 5_000  # board completions enumerated exactly up to this many (a flop all-in: 990)
ALLIN_SAMPLES = 2_000  # else this many sampled (a pre-flop all-in: 1.7M completions)


def decided_at(end: State) -> int:
    """How many board cards the result of the finished hand ``end`` depends on: after a fold, the
    cards dealt by then; after both players were all-in before the last round, the cards dealt
    before the all-in (the rest only decide the showdown); else every board card."""
    b = end.betting
    g = end.gamedef
    if not b.showdown():
        return len(end.board_cards)
    acted = [r for r, acts in enumerate(b.actions) if acts]
    last = acted[-1] if acted else 0
    return g.board_cards_through(last) if last < g.num_rounds - 1 else g.total_board_cards


def allin_expectation(
    end: State, known: int | None = None, samples: int = ALLIN_SAMPLES
) -> tuple[float, float] | None:
    """Each seat's expected payoff of the finished showdown ``end`` over its board cards after the
    first ``known`` (default :func:`decided_at`: those dealt after both players were all-in), or
    None when that leaves nothing to average (a fold, or every card known). Exact over every
    completion where there are at most :data:`ALLIN_EXACT_MAX`, else the mean over ``samples``
    completions from a generator seeded by the hole and known board cards (both hands of a
    duplicate pair get the same estimate). ``known`` must be at least :func:`decided_at` (no
    decision may depend on the cards averaged over): a :class:`ValueError` otherwise."""
    b = end.betting
    g = end.gamedef
    if not b.showdown():
        return None
    first = decided_at(end)
    if known is None:
        known = first
    if known < first:
        raise ValueError(f"the hand's result depends on its first {first} board cards, not {known}")
    if known >= g.total_board_cards:
        return None
    shown = tuple(int(c) for c in end.board_cards[:known])
    holes = [tuple(int(c) for c in h) for h in end.hole_cards]
    # seeded by the cards: both hands of a duplicate pair get the same estimate
    seed = zlib.crc32(bytes([*holes[0], *holes[1], *shown, 0x41]))
    p0, p1 = showdown_odds(
        holes,
        shown,
        g.deck_size,
        g.total_board_cards,
        g.num_suits,
        g.num_ranks,
        samples,
        seed,
        ALLIN_EXACT_MAX,
    )
    w0, w1, tie = (b.payoffs_given_winner(w) for w in (0, 1, -1))
    pt = 1.0 - p0 - p1
    return tuple(p0 * w0[s] + p1 * w1[s] + pt * tie[s] for s in (0, 1))  # type: ignore[return-value]


class InBigBlinds:
    """Unit of a result with a ``big_blind`` (None for ante games): mbb/game or chips/hand."""

    big_blind: int | None

    @property
    def unit(self) -> str:
        return "mbb/game" if self.big_blind else "chips/hand"

    def scale(self) -> float:
        """Chips -> :attr:`unit` (:func:`mccfr_util.reporting.mbb_per_chip`)."""
        return mbb_per_chip(self.big_blind)


@dataclasses.dataclass(frozen=True)
class MatchResult(InBigBlinds):
    """A duplicate match from player A's side (see the module docstring).

    ``seat_chips``: A's mean chips per hand in seat 0 and in seat 1; ``seat_ci95`` their 95%
    half-widths (over the pairs).
    """

    player: str
    opponent: str
    game: str
    hands: int
    pairs: int
    chips_per_hand: float
    ci95_chips: float
    seat_chips: tuple[float, float]
    seat_ci95: tuple[float, float]
    win_rate: float
    tie_rate: float
    big_blind: int | None
    seed: int
    # decisions of each player (A, B) by where their answers came from (blueprint.blueprint.SOURCES),
    # for players that label their answers (the blueprint and solving players); empty otherwise
    sources: tuple[dict, dict] = ({}, {})
    # allin_ev: hands ending all-in before the last card were scored by their expectation
    # (allin_expectation); allin_hands: how many
    allin_ev: bool = False
    allin_hands: int = 0
    # A's mean chips per duplicate pair, in order (for paired comparisons of two matches on the
    # same seed: mccfr.evaluation.match.paired_difference); not in to_json
    pair_chips: tuple[float, ...] = dataclasses.field(default=(), repr=False)
    # aivat: each hand also scored by its AIVAT value (mccfr.evaluation.aivat): A's mean chips per
    # hand and 95% half-width by it, and its per-pair means (not in to_json)
    aivat: bool = False
    aivat_chips_per_hand: float = math.nan
    aivat_ci95_chips: float = math.nan
    aivat_pair_chips: tuple[float, ...] = dataclasses.field(default=(), repr=False)

    @property
    def mean(self) -> float:
        """A's result in :attr:`unit`."""
        return self.chips_per_hand * self.scale()

    @property
    def ci95(self) -> float:
        """Half-width of the 95% confidence interval of :attr:`mean`."""
        return self.ci95_chips * self.scale()

    @property
    def aivat_mean(self) -> float:
        """A's AIVAT result in :attr:`unit` (NaN unless the match was played with ``aivat``)."""
        return self.aivat_chips_per_hand * self.scale()

    @property
    def aivat_ci95(self) -> float:
        """Half-width of the 95% confidence interval of :attr:`aivat_mean`."""
        return self.aivat_ci95_chips * self.scale()

    @property
    def aivat_hands_factor(self) -> float:
        """How many times more hands the plain mean needs for AIVAT's interval: the ratio of the
        variances, ``(ci95 / aivat_ci95) ** 2``."""
        if not self.aivat or not self.aivat_ci95_chips > 0:
            return math.nan
        return (self.ci95_chips / self.aivat_ci95_chips) ** 2

    def to_json(self) -> dict:
        """JSON-ready figures; ``mean``, ``ci95``, ``seat_means`` and ``seat_ci95`` in :attr:`unit`
        (and with ``aivat``: ``aivat_mean``, ``aivat_ci95``, ``aivat_hands_factor``)."""
        k = self.scale()
        aivat = (
            {
                "aivat_mean": self.aivat_mean,
                "aivat_ci95": self.aivat_ci95,
                "aivat_hands_factor": self.aivat_hands_factor,
            }
            if self.aivat
            else {}
        )
        return {
            **aivat,
            "player": self.player,
            "opponent": self.opponent,
            "game": self.game,
            "mean": self.mean,
            "ci95": self.ci95,
            "hands": self.hands,
            "unit": self.unit,
            "win_rate": self.win_rate,
            "tie_rate": self.tie_rate,
            "seat_means": [v * k for v in self.seat_chips],
            "seat_ci95": [v * k for v in self.seat_ci95],
            "pairs": self.pairs,
            "chips_per_hand": self.chips_per_hand,
            "ci95_chips": self.ci95_chips,
            "seed": self.seed,
            "sources": {"player": dict(self.sources[0]), "opponent": dict(self.sources[1])},
            "allin_ev": self.allin_ev,
            "allin_hands": self.allin_hands,
        }


def play_match(
    game: Game,
    a: Player,
    b: Player,
    hands: int,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    common_random: bool = False,
    allin_ev: bool = False,
    aivat: HandScorer | None = None,
) -> MatchResult:
    """Play ``hands`` hands (rounded up to whole duplicate pairs) of A against B.

    ``progress(hands_done, hands_total)`` is called now and then; ``common_random``: per-hand
    player streams; ``allin_ev``: hands ending all-in before the last card scored by their
    expectation (module docstring); ``aivat``: each hand also scored by it
    (:class:`mccfr.evaluation.aivat.AIVAT`, built for these players), A's mean and interval by it
    reported beside the plain ones.
    """
    require_two_players(game.gamedef, "play_match (N seats: mccfr.evaluation.match_n.play_match_n)")
    if hands < 2:
        raise ValueError(f"a duplicate match needs at least 2 hands, got {hands}")
    pairs = (hands + 1) // 2
    g = game.gamedef
    deal_rng, rng_a, rng_b = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    net = np.zeros((pairs, 2))  # A's net chips with A in seat 0, in seat 1
    before = [dict(getattr(p, "sources", {})) for p in (a, b)]
    every = max(1, pairs // 100)
    adjusted = 0
    corrected = np.zeros((pairs, 2))  # A's AIVAT values, as net
    for j in range(pairs):
        deal = deal_rng.choice(g.deck_size, g.cards_per_deal, replace=False)
        ends: list[State] = []
        for half in (0, 1):
            if common_random:
                rng_a, rng_b = (
                    np.random.default_rng(s) for s in np.random.SeedSequence([seed, 2 * j + half]).spawn(2)
                )
            seats, rngs = ((a, b), (rng_a, rng_b)) if half == 0 else ((b, a), (rng_b, rng_a))
            events: list[Event] | None = [] if aivat is not None else None
            ends.append(play_hand(game, seats, rngs, deal, 2 * j + half, events))
            if aivat is not None and events is not None:
                v0 = aivat.score(events, seats, j)
                corrected[j, half] = v0 if half == 0 else -v0
        # both hands of a pair share the board: scored given the cards either result depends on,
        # so that the luck of the board still cancels between them (the duplicate's point)
        known = max(decided_at(e) for e in ends) if allin_ev else g.total_board_cards
        for half, end in enumerate(ends):
            ev = allin_expectation(end, known) if known < g.total_board_cards else None
            if ev is None:
                net[j, half] = end.payoffs()[half]
            else:
                net[j, half] = ev[half]
                adjusted += 1
        if progress is not None and (j + 1) % every == 0:
            progress(2 * (j + 1), 2 * pairs)
    per_pair = net.mean(axis=1)
    return MatchResult(
        player=a.name,
        opponent=b.name,
        game=g.name,
        hands=2 * pairs,
        pairs=pairs,
        chips_per_hand=float(per_pair.mean()),
        ci95_chips=ci95(per_pair),
        seat_chips=(float(net[:, 0].mean()), float(net[:, 1].mean())),
        seat_ci95=(ci95(net[:, 0]), ci95(net[:, 1])),
        win_rate=float((net > 0).mean()),
        tie_rate=float((net == 0).mean()),
        big_blind=big_blind_of(game.gamedef),
        seed=seed,
        sources=tuple(_counted(p, was) for p, was in zip((a, b), before)),  # type: ignore[arg-type]
        pair_chips=tuple(float(x) for x in per_pair),
        allin_ev=allin_ev,
        allin_hands=adjusted,
        **(_aivat_fields(corrected.mean(axis=1)) if aivat is not None else {}),
    )


def _aivat_fields(per_pair: np.ndarray) -> dict:
    return {
        "aivat": True,
        "aivat_chips_per_hand": float(per_pair.mean()),
        "aivat_ci95_chips": ci95(per_pair),
        "aivat_pair_chips": tuple(float(x) for x in per_pair),
    }


def paired_difference(x: MatchResult, y: MatchResult, aivat: bool = False) -> tuple[float, float]:
    """``(mean, ci95)`` in ``x``'s unit of ``x - y`` per duplicate pair, for two matches played on
    the same deals (same seed and hands; ``common_random=True`` for a small variance); ``aivat``:
    of their AIVAT values (both played with it). Against a match of B against itself (whose
    expectation is 0), the difference is A's result against B with the hands where A plays as B
    taken out: a solving player against its own blueprint."""
    if x.pairs != y.pairs or x.seed != y.seed or len(x.pair_chips) != x.pairs or len(y.pair_chips) != y.pairs:
        raise ValueError("a paired difference needs two matches of the same seed and number of hands")
    if aivat and not (x.aivat and y.aivat):
        raise ValueError("an AIVAT paired difference needs two matches played with AIVAT")
    px, py = (x.aivat_pair_chips, y.aivat_pair_chips) if aivat else (x.pair_chips, y.pair_chips)
    d = np.asarray(px) - np.asarray(py)
    return float(d.mean()) * x.scale(), ci95(d) * x.scale()


def _counted(player: Player, before: dict) -> dict:
    """The decisions ``player`` labelled by source during the match (its ``sources`` counter)."""
    now = getattr(player, "sources", {})
    return {k: v - before.get(k, 0) for k, v in now.items() if v - before.get(k, 0)}


@dataclasses.dataclass(frozen=True)
class ExactValue:
    """A's exact expected chips per hand in seat 0, in seat 1, and over a duplicate pair."""

    seat_chips: tuple[float, float]

    @property
    def chips_per_hand(self) -> float:
        return (self.seat_chips[0] + self.seat_chips[1]) / 2.0


def exact_value(
    game: Game, a: Player, b: Player, max_states: int = 2_000_000, max_deals: int = 100_000
) -> ExactValue:
    """A's exact expected value against B (see the module docstring).

    Raises:
        TypeError: a player has no ``probs(state)``.
        ValueError: the game has more than ``max_deals`` ordered deals, or its tree under these
            players more than ``max_states`` states: too large for an exact value.
    """
    if not isinstance(a, ExactPlayer) or not isinstance(b, ExactPlayer):
        p = b if isinstance(a, ExactPlayer) else a
        raise TypeError(f"player {p.name!r} has no probs(state): its exact value is unknown")
    g = game.gamedef
    deals = math.perm(g.deck_size, g.cards_per_deal)
    if deals > max_deals:
        raise ValueError(f"{g.name or 'this game'} has {deals:,} deals: too large for an exact value")
    count = [0]

    def ev(state: State, seats: Sequence[ExactPlayer]) -> float:
        """Seat 0's expected payoff from ``state``."""
        count[0] += 1
        if count[0] > max_states:
            raise ValueError(
                f"{g.name or 'this game'} with these players has more than {max_states:,} states: "
                "too large for an exact value"
            )
        who = state.current_player()
        if who == TERMINAL:
            return state.payoffs()[0]
        if who == CHANCE:
            used = set(state.hole_cards[0]) | set(state.hole_cards[1]) | set(state.board_cards)
            left = [c for c in range(g.deck_size) if c not in used]
            return sum(ev(state.deal([c]), seats) for c in left) / len(left)
        total = 0.0
        for act, p in seats[who].probs(view_of(state, who)).items():
            if p > 0.0:
                total += p * ev(state.apply(act), seats)
        return total

    root = game.initial_state()
    v0 = ev(root, (a, b))
    v1 = -ev(root, (b, a))
    return ExactValue((v0, v1))


__all__ = [
    "ALLIN_EXACT_MAX",
    "ALLIN_SAMPLES",
    "Event",
    "ExactValue",
    "HandScorer",
    "InBigBlinds",
    "MatchError",
    "MatchResult",
    "allin_expectation",
    "decided_at",
    "exact_value",
    "play_hand",
    "play_match",
    "view_of",
]
