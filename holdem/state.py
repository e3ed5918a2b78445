"""One hand of an ACPC game (2..10 seats): cards plus betting, and the ACPC state strings.

A :class:`State` is immutable: :meth:`State.apply` (a betting action) and :meth:`State.deal`
(cards) return new states. The betting itself is a :class:`holdem.betting.Betting`, the single
source of truth for legality and amounts; this module adds cards, payoffs and strings.

ACPC strings (the protocol of the ACPC reference dealer, ``game.c``)
    dealer      ``STATE:<hand>:<betting>:<cards>``, e.g. ``STATE:0:r300c/cc/cc/cc:Kh2s|Ac5d/8h6c4c/Qs/6h``
    dealer log  the same plus ``:<net>:<names>``, e.g. ``...:-300|300:alice|bob``
    player      ``MATCHSTATE:<position>:<hand>:<betting>:<cards>``, ``<position>`` the 0-based seat
                of the viewer, e.g. ``MATCHSTATE:1:30:r300c/cr900:|Ah9s/8c6h2d``

``<betting>`` is ACPC betting (:func:`holdem.betting.parse_betting`): ``f``, ``c``, ``r`` (limit) or
``r<to>`` (no-limit, ``<to>`` the raiser's total commitment for the hand), one ``/`` ending each
round. ``<cards>`` is seat 0's hole cards, ``|``, seat 1's hole cards (and so on, one ``|``
between seats, for more seats), then the board of round 1 written straight after the last seat's (only games with board cards in round 1 have any), then ``/`` and the
board of each later round the betting has reached (exactly one ``/`` per round reached, as the
reference code writes them: ``AhKd|QsJc//4c`` when round 2 deals no card). A MATCHSTATE leaves
the other seats' hole cards out, except at a showdown, where the dealer shows those of every seat
that did not fold (the reference ``printPlayerHoleCards``).

Deal order (what :meth:`State.deal` fills, what a state needing cards waits for)
    1. seat 0's hole cards, then seat 1's, and so on (a MATCHSTATE: the viewer's only; the
       others' are dealt but hidden);
    2. at the start of each round, that round's board cards, before anyone acts in it;
    3. after an all-in, every remaining board, before the showdown.

This is OpenSpiel's ``universal_poker`` chance order. A state waiting for cards is
:meth:`State.is_chance`; its string writes the cards dealt so far (``STATE:0::Ah|``,
``STATE:0:cc/:AhKd|QsJc/``), which is why such strings parse too. A string's cards must be a
prefix of the deal order, and every round with an action needs its board complete.

Hole cards that are not known are an empty tuple: not dealt yet (a dealer state) or hidden (the
opponent in a MATCHSTATE).

Hostile input: parsing a string ends in a state or a :class:`StateError` naming the position,
never another exception. A string longer than :data:`MAX_STATE_CHARS` is refused before it is
scanned (legal betting is at most 4 rounds of 64 actions of ``r`` plus 10 digits, 2,819
characters); hand numbers, raise sizes and net results are checked for length before ``int``
reads them, and nothing is allocated in proportion to a number in the string.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from holdem.betting import (
    CALL,
    FOLD,
    RAISE,
    Betting,
    IllegalActionError,
    action_string,
    parse_action_token,
    parse_betting,
)
from holdem.cards import CardError, card_name, cards_str, parse_card, parse_cards
from holdem.gamedef import MAX_PLAYERS, GameDef

if TYPE_CHECKING:
    from holdem.game import Game

__all__ = ["CHANCE", "TERMINAL", "IllegalActionError", "State", "StateError"]

TERMINAL = -1  # current_player() of a finished hand
CHANCE = -2  # current_player() of a state waiting for cards

_UINT = re.compile(r"(0|[1-9][0-9]*)\Z")
_INT = re.compile(r"(0|-?[1-9][0-9]*)\Z")
_SPACE = re.compile(r"\s")
UINT32_MAX = 2**32 - 1
# per number of seats: the seats, the viewers State.initial takes, no hole cards yet
_SEATS = [tuple(range(n)) for n in range(MAX_PLAYERS + 1)]
_VIEWERS = [(None, *seats) for seats in _SEATS]
_NO_HOLES: list[tuple[tuple[int, ...], ...]] = [((),) * n for n in range(MAX_PLAYERS + 1)]
MAX_STATE_CHARS = 1 << 14  # far above any legal string (see the module docstring)
_MAX_NET_DIGITS = 11  # a sign and 10 digits: |net| <= a stack, which fits int32


class StateError(ValueError):
    """A malformed or illegal state string, or an impossible request on a state.

    Messages about a string start with ``position <i>:`` (0-based index into the string).
    """


def _err(pos: int, msg: str) -> StateError:
    return StateError(f"position {pos}: {msg}")


def _clip(text: str, limit: int = 40) -> str:
    """``text`` cut for an error message (hostile input can be long)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


@dataclasses.dataclass(frozen=True, eq=True)
class State:
    """An immutable hand: betting plus cards, optionally as seen by one seat.

    Attributes:
        game: the :class:`holdem.game.Game`.
        betting: the :class:`holdem.betting.Betting` (spent, round, actions).
        hole_cards: per seat, a tuple of card ids; ``()`` when not dealt yet or hidden.
        board_cards: the board dealt so far, flat in deal order (round 1's cards first).
        hand_id: the ACPC hand number.
        viewer: the seat whose MATCHSTATE this is, or None for the dealer's full view.
        net, names: the dealer log's ``:<net>:<names>`` suffix, when parsed from one.
    """

    game: Game
    betting: Betting
    hole_cards: tuple[tuple[int, ...], ...] = ((), ())
    board_cards: tuple[int, ...] = ()
    hand_id: int = 0
    viewer: int | None = None
    net: tuple[int, ...] | None = None
    names: tuple[str, ...] | None = None

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def initial(cls, game: Game, hand_id: int = 0, viewer: int | None = None) -> State:
        """The start of a hand: blinds posted, no card dealt (a chance state)."""
        n = len(game.gamedef.blind)
        if viewer not in _VIEWERS[n]:
            seats = "0 or 1" if n == 2 else f"0..{n - 1}"
            raise StateError(f"viewer must be None, {seats}, got {viewer!r}")
        if not 0 <= hand_id <= UINT32_MAX:
            raise StateError(f"hand number {hand_id} is outside 0..{UINT32_MAX}")
        return cls(game, Betting.initial(game.gamedef), _NO_HOLES[n], hand_id=hand_id, viewer=viewer)

    @classmethod
    def from_string(cls, game: Game, text: str) -> State:
        """Parse a ``STATE`` (optionally with the log suffix) or ``MATCHSTATE`` string."""
        return _parse(game, text)

    # -- queries ------------------------------------------------------------------------------
    @property
    def gamedef(self) -> GameDef:
        return self.game.gamedef

    @property
    def round(self) -> int:
        """0-based betting round (the last round once a showdown is reached by an all-in)."""
        return self.betting.round

    @property
    def spent(self) -> tuple[int, ...]:
        """Chips committed by each seat for the whole hand, blinds included."""
        return self.betting.spent

    def pot(self) -> int:
        return self.betting.pot()

    def _dealt_seats(self) -> tuple[int, ...]:
        """Seats whose hole cards this state deals: all, or the viewer's (the others are hidden)."""
        return _SEATS[len(self.hole_cards)] if self.viewer is None else (self.viewer,)

    def _pending(self) -> list[tuple[str, int]]:
        """``(what, missing)`` for each slot still to deal now, in deal order (computed once per
        state: legality checks ask for it many times)."""
        memo = self.__dict__.get("_pending_memo")
        if memo is None:
            memo = self.__dict__["_pending_memo"] = self._compute_pending()
        return list(memo)

    def _compute_pending(self) -> tuple[tuple[str, int], ...]:
        b = self.betting
        if b.finished and not b.showdown():
            return []
        g = self.gamedef
        out = []
        for seat in self._dealt_seats():
            missing = g.num_hole_cards - len(self.hole_cards[seat])
            if missing:
                out.append((f"seat {seat}'s hole cards", missing))
        dealt = len(self.board_cards)
        for r in range(b.round + 1):
            missing = g.board_cards_through(r) - max(dealt, g.board_cards_through(r - 1))
            if missing > 0:
                out.append((f"the board of round {r + 1}", missing))
        return tuple(out)

    def is_chance(self) -> bool:
        """True when cards must be dealt (:meth:`deal`) before the hand can go on."""
        return bool(self._pending())

    def is_terminal(self) -> bool:
        """The hand is over: a fold, or a showdown with every board card dealt."""
        return self.betting.finished and not self.is_chance()

    def current_player(self) -> int:
        """Seat to act; :data:`TERMINAL` (-1) when the hand is over, :data:`CHANCE` (-2) when
        cards are due."""
        if self.is_chance():
            return CHANCE
        if self.betting.finished:
            return TERMINAL
        return self.betting.current_player()

    def raise_range(self) -> tuple[int, int] | None:
        """``(min, max)`` raise-to (no-limit), ``(to, to)`` (limit), or None when no raise is
        legal (including chance and terminal states)."""
        if self.current_player() < 0:
            return None
        return self.betting.raise_range()

    def legal_actions(self) -> list[str]:
        """ACPC action strings in the order ``f``, ``c``, ``r`` (limit) or ``f``, ``c``,
        ``r<min>``, ``r<max>`` (no-limit; ``r<min>`` alone when min == max). ``f`` is absent when
        not facing a bet. Empty at chance and terminal states."""
        if self.current_player() < 0:
            return []
        g = self.gamedef
        out = [action_string(FOLD, 0, g)] if self.betting.can_fold() else []
        out.append(action_string(CALL, 0, g))
        rr = self.betting.raise_range()
        if rr is not None:
            out += [action_string(RAISE, size, g) for size in sorted(set(rr))]
        return out

    def _legal_text(self) -> str:
        acts = self.legal_actions()
        rr = self.raise_range()
        if rr is not None and rr[0] != rr[1]:
            acts = acts[:-2] + [f"{acts[-2]}..{acts[-1]}"]
        return ", ".join(acts) if acts else "none"

    # -- transitions --------------------------------------------------------------------------
    def apply(self, action: str) -> State:
        """The state after an ACPC action string (``f``, ``c``, ``r`` or ``r<to>``).

        Raises:
            IllegalActionError: naming the action and the legal ones.
        """
        shown = _clip(repr(action))  # (an action from outside can be long)
        who = self.current_player()
        if who == CHANCE:
            raise IllegalActionError(
                f"action {shown}: cards are due first ({self._pending_text()}); call deal()"
            )
        if who == TERMINAL:
            raise IllegalActionError(f"action {shown}: the hand is over, no action is legal")
        if not isinstance(action, str) or not action:
            raise IllegalActionError(
                f"action {shown} is not an ACPC action string; legal: {self._legal_text()}"
            )
        try:
            kind, size, end = parse_action_token(action, 0, self.gamedef)
        except ValueError:
            end = -1
        # parse_action_token also reads aliases (k, b) and leading zeros; ACPC writes neither
        if end != len(action) or action_string(kind, size, self.gamedef) != action:
            raise IllegalActionError(f"malformed action {shown}; legal: {self._legal_text()}")
        try:
            new = self.betting.apply(kind, size)
        except IllegalActionError as exc:
            raise IllegalActionError(f"illegal action {shown}: {exc}; legal: {self._legal_text()}") from None
        return dataclasses.replace(self, betting=new, net=None, names=None)

    def deal(self, cards: str | Sequence[int]) -> State:
        """Deal the next undealt cards (see the module docstring for the order).

        ``cards`` is a string of card names (``"AhKd"``) or a sequence of card ids. Several slots
        may be filled at once (``"AhKdQsJc"`` gives both seats their hands), but never beyond
        the cards due now.
        """
        g = self.gamedef
        if isinstance(cards, str):
            try:
                ids = parse_cards(cards, g.num_suits, g.num_ranks)
            except CardError as exc:
                raise StateError(f"deal: {exc}") from None
        else:
            ids = []
            try:
                it = iter(cards)
            except TypeError:
                raise StateError(
                    f"deal: cards must be a string or a sequence of card ids, got {type(cards).__name__}"
                ) from None
            for c in it:
                if len(ids) == g.deck_size:  # (stop reading an endless or huge iterable)
                    raise StateError(f"deal: more cards given than the deck holds ({g.deck_size})")
                try:
                    ids.append(operator.index(c))
                except TypeError:
                    raise StateError(f"deal: card {_clip(repr(c))} is not a card id") from None
                if isinstance(c, bool) or not 0 <= ids[-1] < g.deck_size:
                    raise StateError(
                        f"deal: card {_clip(repr(c))} is not in this game's deck (ids 0..{g.deck_size - 1})"
                    )
        if not ids:
            raise StateError("deal: no cards given")
        pending = self._pending()
        due = sum(n for _, n in pending)
        if due == 0:
            what = "the hand is over" if self.betting.finished else "the betting is not over"
            raise StateError(f"deal: no cards are due now ({what})")
        if len(ids) > due:
            raise StateError(
                f"deal: {len(ids)} cards given but only {due} are due now ({self._pending_text()})"
            )
        hole_cards = self.hole_cards
        if len(hole_cards) == 2:
            used = set(hole_cards[0]) | set(hole_cards[1]) | set(self.board_cards)
        else:
            used = set(self.board_cards).union(*hole_cards)
        for c in ids:
            if c in used:
                raise StateError(f"deal: card {card_name(c, g.num_suits)} is already dealt")
            used.add(c)
        hole = list(self.hole_cards)
        rest = tuple(ids)
        for seat in self._dealt_seats():
            take = g.num_hole_cards - len(hole[seat])
            hole[seat], rest = hole[seat] + rest[:take], rest[take:]
        hole_cards = (hole[0], hole[1]) if len(hole) == 2 else tuple(hole)
        return dataclasses.replace(self, hole_cards=hole_cards, board_cards=self.board_cards + rest)

    def _pending_text(self) -> str:
        return ", ".join(f"{n} for {what}" for what, n in self._pending())

    # -- payoffs ------------------------------------------------------------------------------
    def payoffs(self) -> tuple[float, ...]:
        """Net chips per seat of a finished hand (sum zero; with more than two seats, see
        :meth:`holdem.betting.Betting.payoffs_given_ranks`).

        Raises:
            StateError: the hand is not over, or a showdown lacks a hand (hidden in a MATCHSTATE).
        """
        b = self.betting
        if not self.is_terminal():
            why = "cards are due" if self.is_chance() else f"seat {b.current_player()} is to act"
            raise StateError(f"payoffs: the hand is not over ({why})")
        n = len(self.hole_cards)
        if n != 2:
            return self._payoffs_n()
        if not b.showdown():
            return b.payoffs_given_winner(-1)
        for seat in (0, 1):
            if not self.hole_cards[seat]:
                raise StateError(
                    f"payoffs: a showdown needs both hands, but seat {seat}'s hole cards are not known"
                    " in this MATCHSTATE"
                )
        from holdem.evaluator import rank_hand_py  # numba compile only when a showdown needs it

        g = self.gamedef
        r0, r1 = (
            rank_hand_py(list(h) + list(self.board_cards), g.num_suits, g.num_ranks) for h in self.hole_cards
        )
        return b.payoffs_given_winner(0 if r0 > r1 else 1 if r1 > r0 else -1)

    def _payoffs_n(self) -> tuple[float, ...]:
        """:meth:`payoffs` of a hand of more than two seats."""
        b = self.betting
        n = len(self.hole_cards)
        ranks = [0] * n
        if sum(b.folded) + 1 < n:  # a showdown among the seats that did not fold
            from holdem.evaluator import rank_hand_py

            g = self.gamedef
            for seat in range(n):
                if b.folded[seat]:
                    continue
                if not self.hole_cards[seat]:
                    raise StateError(
                        f"payoffs: a showdown needs every remaining hand, but seat {seat}'s hole cards"
                        " are not known in this MATCHSTATE"
                    )
                ranks[seat] = rank_hand_py(
                    list(self.hole_cards[seat]) + list(self.board_cards), g.num_suits, g.num_ranks
                )
        return b.payoffs_given_ranks(ranks)

    # -- strings ------------------------------------------------------------------------------
    def _cards_text(self, show: Sequence[bool]) -> str:
        g = self.gamedef
        hole = [cards_str(h, g.num_suits) if show[s] else "" for s, h in enumerate(self.hole_cards)]
        text = "|".join(hole)
        for r in range(self.betting.round + 1):
            seg = self.board_cards[g.board_cards_through(r - 1) : g.board_cards_through(r)]
            text += ("/" if r else "") + cards_str(seg, g.num_suits)
        return text

    def dealer_string(self) -> str:
        """The dealer's ``STATE:<hand>:<betting>:<cards>`` (without the log suffix)."""
        if self.viewer is not None:
            for other in range(len(self.hole_cards)):
                if other != self.viewer and not self.hole_cards[other]:
                    raise StateError(
                        f"dealer_string: seat {other}'s hole cards are hidden in this MATCHSTATE"
                        f" (viewer {self.viewer})"
                    )
        show = (True,) * len(self.hole_cards)
        return f"STATE:{self.hand_id}:{self.betting.betting_string()}:{self._cards_text(show)}"

    def matchstate(self, viewer: int) -> str:
        """``MATCHSTATE:<viewer>:<hand>:<betting>:<cards>`` as the dealer sends it to ``viewer``:
        the other seats' hole cards only at a showdown, and only of those that did not fold."""
        n = len(self.hole_cards)
        if viewer not in range(n):
            seats = "seat 0 or 1" if n == 2 else f"a seat 0..{n - 1}"
            raise StateError(f"matchstate: viewer must be {seats}, got {viewer!r}")
        if self.viewer is not None and viewer != self.viewer and not self.hole_cards[viewer]:
            raise StateError(f"matchstate: seat {viewer}'s hole cards are hidden in this MATCHSTATE")
        show = [_may_show(self.betting, s) for s in range(n)]
        show[viewer] = True
        return f"MATCHSTATE:{viewer}:{self.hand_id}:{self.betting.betting_string()}:{self._cards_text(show)}"

    def __str__(self) -> str:
        if self.viewer is not None:
            return self.matchstate(self.viewer)
        text = self.dealer_string()
        if self.net is not None:
            text += ":" + "|".join(map(str, self.net)) + ":" + "|".join(self.names or ())
        return text

    def __repr__(self) -> str:
        return f"State({str(self)!r})"


def _may_show(b: Betting, seat: int) -> bool:
    """Whether a MATCHSTATE shows ``seat``'s hole cards to another seat: at a showdown (the hand
    finished with at least two seats in it), when ``seat`` did not fold."""
    return b.showdown() and not b.folded[seat]


# -- parsing --------------------------------------------------------------------------------------
def _parse(game: Game, text: str) -> State:
    if not isinstance(text, str):
        raise StateError(f"a state string is a str, got {type(text).__name__}")
    g = game.gamedef
    if len(text) > MAX_STATE_CHARS:
        raise _err(
            MAX_STATE_CHARS,
            f"state string of {len(text)} characters, longer than any legal one (at most {MAX_STATE_CHARS})",
        )
    if not text.isprintable() or _SPACE.search(text):  # (both scans in C; the loop names the place)
        for i, ch in enumerate(text):
            if ch.isspace() or not ch.isprintable():
                raise _err(i, f"unexpected character {ch!r} (strip the line ending first)")
    fields = text.split(":")
    starts = [0]
    for f in fields[:-1]:
        starts.append(starts[-1] + len(f) + 1)
    header = fields[0]
    if header == "MATCHSTATE":
        names = ["MATCHSTATE", "<position>", "<hand>", "<betting>", "<cards>"]
        if len(fields) < 5:
            raise _err(
                len(text), f"a MATCHSTATE needs 5 ':'-separated fields ({':'.join(names)}), got {len(fields)}"
            )
        if len(fields) > 5:
            raise _err(starts[5] - 1, "unexpected ':' after the cards (a MATCHSTATE ends with its cards)")
        pos_text = fields[1]
        n_seats = g.num_players
        if pos_text not in [str(p) for p in range(n_seats)]:
            seats = "0 or 1" if n_seats == 2 else f"0..{n_seats - 1}"
            raise _err(
                starts[1], f"bad position {_clip(pos_text)!r}: the viewer's seat must be {seats} (0-based)"
            )
        viewer: int | None = int(pos_text)
        f_hand = 2
    elif header == "STATE":
        names = ["STATE", "<hand>", "<betting>", "<cards>"]
        if len(fields) < 4:
            raise _err(
                len(text), f"a STATE needs 4 ':'-separated fields ({':'.join(names)}), got {len(fields)}"
            )
        if len(fields) == 5:
            raise _err(len(text), "the dealer log's suffix needs both ':<net>:<names>'")
        if len(fields) > 6:
            raise _err(starts[6] - 1, "unexpected ':' after the names")
        viewer = None
        f_hand = 1
    else:
        raise _err(0, f"unknown header {_clip(header)!r}: expected 'STATE' or 'MATCHSTATE'")

    hand_text = fields[f_hand]
    # (10 digits at most before int() reads it: a huge number costs nothing)
    if len(hand_text) > len(str(UINT32_MAX)) or not _UINT.match(hand_text) or int(hand_text) > UINT32_MAX:
        raise _err(
            starts[f_hand],
            f"bad hand number {_clip(hand_text)!r}: expected an integer 0..{UINT32_MAX}"
            " without leading zeros",
        )
    hand_id = int(hand_text)
    try:
        betting = parse_betting(fields[f_hand + 1], g, offset=starts[f_hand + 1])
    except ValueError as exc:
        raise StateError(str(exc)) from None
    hole, board = _parse_cards(g, betting, viewer, fields[f_hand + 2], starts[f_hand + 2])
    state = State(game, betting, hole, board, hand_id, viewer)
    if header == "STATE" and len(fields) == 6:
        state = _parse_log_suffix(state, fields[4], starts[4], fields[5], starts[5])
    return state


def _parse_cards(
    g: GameDef, betting: Betting, viewer: int | None, text: str, off: int
) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """Cards field -> (hole cards per seat, flat board); every error names a position."""
    H, R = g.num_hole_cards, betting.round
    nb = g.num_board_cards
    n = g.num_players
    last = n - 1  # the seat whose segment also holds round 1's board
    bars: list[int] = []
    for s in range(last):
        bar = text.find("|", bars[-1] + 1 if bars else 0)
        if bar < 0:
            what = "the two seats'" if n == 2 else f"seat {s}'s and seat {s + 1}'s"
            raise _err(off + len(text), f"missing '|' between {what} hole cards")
        if "/" in text[bars[-1] + 1 if bars else 0 : bar]:
            raise _err(
                off + text.index("/", bars[-1] + 1 if bars else 0),
                f"round separator '/' among seat {s}'s hole cards",
            )
        bars.append(bar)
    bar = bars[-1]
    if "|" in text[bar + 1 :]:
        extra = (
            "a second '|': a two-player game has two hands"
            if n == 2
            else f"'|' number {n}: a {n}-player game has {n} hands"
        )
        raise _err(off + text.index("|", bar + 1), extra)

    seen: dict[int, int] = {}

    def tokens(seg_start: int, seg_end: int) -> list[tuple[int, int]]:
        seg = text[seg_start:seg_end]
        out = []
        for i in range(0, len(seg), 2):
            pos = off + seg_start + i
            tok = seg[i : i + 2]
            try:
                card = parse_card(tok, g.num_suits, g.num_ranks)
            except CardError as exc:
                if len(tok) < 2:
                    raise _err(
                        pos, f"incomplete card {tok!r}: cards are two characters, rank then suit"
                    ) from None
                raise _err(pos, f"card not in the deck: {exc}") from None
            if card in seen:
                raise _err(pos, f"duplicate card {tok!r} (also at position {seen[card]})")
            seen[card] = pos
            out.append((card, pos))
        return out

    # segments: seat 0 | seat 1 | ... | last seat + round-1 board / round-2 board / ...
    bounds = [(a + 1 if k else 0, b) for k, (a, b) in enumerate(zip([-1] + bars[:-1], bars))]
    start = bar + 1
    while True:
        j = text.find("/", start)
        if j < 0:
            bounds.append((start, len(text)))
            break
        bounds.append((start, j))
        start = j + 1
    n_sep = len(bounds) - n
    if n_sep > R:
        j = bounds[R + n][0] - 1
        shown = bounds[R + n][1] > bounds[R + n][0]
        what = "cards shown for round" if shown else "round separator '/' for round"
        raise _err(
            off + j,
            f"{what} {R + 2}, but the betting is in round {R + 1}"
            + (" (a card shown for the wrong round)" if shown else ""),
        )
    if n_sep < R:
        raise _err(
            off + len(text),
            f"the betting is in round {R + 1}, so the cards need {R} round separator(s) '/', got {n_sep}",
        )
    segs = [tokens(a, b) for a, b in bounds]

    def seg_end(k: int) -> int:
        return off + bounds[k][1]

    # split the last seat's segment into its hole cards and the round-1 board
    seat1 = segs[last]
    hidden = [viewer is not None and s != viewer for s in range(n)]
    # (the dealer shows another seat's cards only at a showdown, and not a folded seat's)
    opp = "the opponent's cards" if n == 2 else "another seat's cards"
    if hidden[last]:
        if _may_show(betting, last) and len(seat1) > nb[0]:
            hidden[last] = False  # shown at the showdown
        elif len(seat1) > nb[0]:
            raise _err(
                seat1[0][1] if nb[0] == 0 else seat1[nb[0]][1],
                f"seat {last}'s hole cards are shown, but a MATCHSTATE shows {opp} only at a showdown"
                if nb[0] == 0
                else f"wrong number of cards: seat {last}'s hand is hidden, so this part holds round 1's"
                f" board ({nb[0]} cards), got {len(seat1)}",
            )
    for s in range(last):
        if hidden[s] and segs[s]:
            if not _may_show(betting, s):
                raise _err(
                    segs[s][0][1],
                    f"seat {s}'s hole cards are shown, but a MATCHSTATE shows {opp} only at a showdown"
                    + ("" if n == 2 else " (and not a folded seat's)"),
                )
            hidden[s] = False
    n1 = 0 if hidden[last] else min(len(seat1), H)
    hole_tok = segs[:last] + [seat1[:n1]]
    board_tok = [seat1[n1:]] + segs[n:]

    # counts against the game
    for s in range(n):
        if len(hole_tok[s]) > H:
            raise _err(
                hole_tok[s][H][1],
                f"wrong number of cards: seat {s} has {len(hole_tok[s])} hole cards, the game deals {H}",
            )
        if not hidden[s] and viewer is not None and s != viewer and len(hole_tok[s]) != H:
            raise _err(
                seg_end(s),
                f"wrong number of cards: seat {s}'s shown hand has {len(hole_tok[s])} cards, the game deals {H}",
            )
    for r, toks in enumerate(board_tok):
        if len(toks) > nb[r]:
            where = (
                f"seat {last}'s hole cards and round 1's board"
                if r == 0 and not hidden[last]
                else f"the board cards of round {r + 1}"
            )
            got = len(toks) + (n1 if r == 0 and not hidden[last] else 0)
            want = nb[r] + (H if r == 0 and not hidden[last] else 0)
            raise _err(toks[nb[r]][1], f"wrong number of cards: {where} take {want} cards, got {got}")

    # the deal-order prefix, and complete cards for every round with an action
    slots = []  # (label, have, needed, position where the next card would go)
    for s in range(n):
        if not hidden[s]:
            slots.append(
                (
                    f"seat {s}'s hole cards",
                    len(hole_tok[s]),
                    H,
                    off + bounds[s][0] + 2 * len(hole_tok[s]),
                )
            )
    for r, toks in enumerate(board_tok):
        slots.append((f"the board cards of round {r + 1}", len(toks), nb[r], seg_end(r + last)))
    last_acted = max((r for r, acts in enumerate(betting.actions) if acts), default=-1)
    # slots through the board of the last round with an action
    must_full = (n - sum(hidden)) + last_acted + 1 if last_acted >= 0 else 0
    for i, (label, have, need, pos) in enumerate(slots):
        if have < need and i < must_full:
            raise _err(
                pos,
                f"wrong number of cards: {label} must have {need} cards before the betting of round"
                f" {last_acted + 1}, got {have}",
            )
        if have < need:
            later = next((sl for sl in slots[i + 1 :] if sl[1]), None)
            if later is not None:
                raise _err(
                    pos,
                    f"wrong number of cards: {label} have {have} of {need} cards, yet {later[0]}"
                    " (dealt after them) are shown",
                )
    hole = tuple(tuple(c for c, _ in toks) for toks in hole_tok)
    board = tuple(c for toks in board_tok for c, _ in toks)
    return hole, board


def _parse_log_suffix(state: State, net_text: str, net_pos: int, names_text: str, names_pos: int) -> State:
    n = len(state.hole_cards)
    want = "'<seat 0>|<seat 1>'" if n == 2 else f"'<seat 0>|...|<seat {n - 1}>'"
    parts = net_text.split("|")
    if len(parts) != n or not all(len(p) <= _MAX_NET_DIGITS and _INT.match(p) for p in parts):
        raise _err(net_pos, f"bad net {_clip(net_text)!r}: expected {want} chip counts, e.g. '-300|300'")
    net = tuple(int(p) for p in parts)
    if not state.is_terminal():
        raise _err(net_pos, "the dealer log's net result is given but the hand is not over")
    try:
        pay = state.payoffs()
    except StateError as exc:
        raise _err(net_pos, str(exc)) from None
    if net != tuple(int(v) for v in pay):
        raise _err(
            net_pos,
            f"net {_clip(net_text)!r} contradicts the hand: the rules give {'|'.join(str(int(v)) for v in pay)}",
        )
    who = names_text.split("|")
    if len(who) != n or not all(who):
        raise _err(names_pos, f"bad names {_clip(names_text)!r}: expected {want}")
    return dataclasses.replace(state, net=net, names=tuple(who))
