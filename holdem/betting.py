"""The betting rules of an ACPC game of 2..10 seats, as numbers only (no cards).

This is the single source of truth for legality and amounts; :mod:`holdem.state` adds cards and
ACPC strings on top, and the abstract betting tree (:mod:`abstraction.tree`) is built by applying
these rules. It follows the ACPC reference dealer (``game.c``):

* ``spent[p]`` is the total commitment of seat ``p`` for the whole hand (blinds included);
  ``max_spent`` the largest of them.
* Fold is legal only when facing a bet (``spent[p] < max_spent``) and not all-in.
* Call (or check) is always legal; a call never exceeds the caller's stack.
* Raise: not after ``maxRaises`` raises in the round, not when fewer than two players can still act,
  and not when the round already holds ``MAX_NUM_ACTIONS - numPlayers`` actions (the reference
  code's 64-action cap). In limit games the raise adds ``raiseSize[round]`` (all-in if the stack is
  shorter). In no-limit games the raise-to must lie in ``[min_raise_to, stack]``; if the stack
  cannot reach ``min_raise_to`` but exceeds ``max_spent``, all-in is the only size.
  ``min_raise_to`` starts at ``2 * max(blinds)``; after a raise to ``x`` it becomes at least
  ``2x - previous max_spent``; at the start of each later round it is ``max_spent + max(blinds)``.
* The seat to act is the next one after the last actor (or after ``firstPlayer[round] - 1`` at the
  start of a round) that has neither folded nor gone all-in.
* A hand ends when all seats but one have folded. A round ends when every player who can still act
  has called the last bet; when fewer than two players can act, the hand jumps to the last round
  and is finished (showdown): the betting string then shows a ``/`` for every skipped round.
* Payoffs at a showdown of more than two seats (:meth:`Betting.payoffs_given_ranks`) follow the
  reference ``valueOfState``: side pots from the smallest commitment up, each shared equally
  (fractions of a chip included) by the best-ranked hands among the seats that put chips into it;
  a folded seat's chips go into the pots but it cannot win one.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Optional

from holdem.gamedef import INT32_MAX, MAX_NUM_ACTIONS, GameDef

# MAX_NUM_ACTIONS: 64 per round, as in the reference code (defined in holdem.gamedef with the
# other ACPC limits)
MAX_SIZE_DIGITS = len(str(INT32_MAX))  # a raise-to never exceeds a stack, which fits int32
_DIGITS = re.compile(r"[0-9]*")

FOLD, CALL, RAISE = 0, 1, 2
ACTION_CHARS = "fcr"


class IllegalActionError(ValueError):
    """An action that the rules do not allow in this state."""


@dataclasses.dataclass(frozen=True)
class Betting:
    """Immutable betting state of one hand.

    ``actions[r]`` is the tuple of ``(kind, size)`` taken in round ``r`` (size is the raise-to for
    no-limit raises, else 0); ``actors[r]`` the seat that took each.
    """

    game: GameDef
    round: int
    spent: tuple[int, ...]
    max_spent: int
    min_raise_to: int
    folded: tuple[bool, ...]
    finished: bool
    actions: tuple[tuple[tuple[int, int], ...], ...]
    actors: tuple[tuple[int, ...], ...]

    @classmethod
    def initial(cls, game: GameDef) -> "Betting":
        max_spent = max(game.blind)
        if game.is_limit:
            min_raise_to = 0
        else:
            min_raise_to = 2 * max_spent if max_spent else 1
        folded = (False,) * len(game.blind)
        return cls(game, 0, tuple(game.blind), max_spent, min_raise_to, folded, False, ((),), ((),))

    # -- queries --------------------------------------------------------------------------------
    def _can_act(self, p: int) -> bool:
        return not self.folded[p] and self.spent[p] < self.game.stack[p]

    def num_acting(self) -> int:
        n = 0
        for folded, spent, stack in zip(self.folded, self.spent, self.game.stack):
            if not folded and spent < stack:
                n += 1
        return n

    def current_player(self) -> int:
        """Seat to act; -1 when the hand is finished."""
        if self.finished:
            return -1
        acts = self.actors[self.round]
        seats = len(self.spent)
        start = acts[-1] if acts else self.game.first_player[self.round] + seats - 1
        n = start
        for _ in range(seats):
            n = (n + 1) % seats
            if self._can_act(n):
                return n
        return -1  # unreachable for a consistent state

    def num_raises(self) -> int:
        return sum(1 for kind, _ in self.actions[self.round] if kind == RAISE)

    def pot(self) -> int:
        return sum(self.spent)

    def to_call(self) -> int:
        p = self.current_player()
        return min(self.max_spent, self.game.stack[p]) - self.spent[p]

    def pot_raise_to(self, fraction: float) -> int:
        """The raise-to amount of a raise of ``fraction`` times the pot after calling:
        ``maxSpent + fraction * (pot + toCall)`` to the nearest chip (not clamped to the legal
        range: the caller clamps, or drops what is out of it)."""
        return self.max_spent + math.floor(fraction * (self.pot() + self.to_call()) + 0.5)

    def can_fold(self) -> bool:
        if self.finished:
            return False
        p = self.current_player()
        return self.spent[p] < self.max_spent and self.spent[p] < self.game.stack[p]

    def raise_range(self) -> Optional[tuple[int, int]]:
        """``(min, max)`` raise-to (no-limit), ``(to, to)`` in limit games, or None if no raise."""
        if self.finished:
            return None
        g = self.game
        if self.num_raises() >= g.max_raises[self.round]:
            return None
        if len(self.actions[self.round]) + len(self.spent) > MAX_NUM_ACTIONS:
            return None
        if self.num_acting() <= 1:
            return None
        p = self.current_player()
        if g.is_limit:
            to = min(self.max_spent + g.raise_size[self.round], g.stack[p])
            return (to, to)
        lo, hi = self.min_raise_to, g.stack[p]
        if lo > hi:
            if self.max_spent >= hi:
                return None
            lo = hi
        return (lo, hi)

    # -- transitions ----------------------------------------------------------------------------
    def _with(self, **changes) -> "Betting":
        """A copy with ``changes`` (``dataclasses.replace`` without its per-call field
        introspection, which cost a third of a match's time; every field is still set)."""
        new = object.__new__(Betting)
        d = new.__dict__
        d.update(self.__dict__)
        d.update(changes)
        return new

    def apply(self, kind: int, size: int = 0) -> "Betting":
        """The state after ``kind`` (FOLD/CALL/RAISE) with raise-to ``size`` (no-limit raises)."""
        if self.finished:
            raise IllegalActionError("the hand is over: no action is legal")
        g = self.game
        p = self.current_player()
        spent = list(self.spent)
        folded = list(self.folded)
        max_spent, min_raise_to = self.max_spent, self.min_raise_to
        if kind == FOLD:
            if not self.can_fold():
                raise IllegalActionError("fold is not legal when not facing a bet")
            folded[p] = True
            size = 0
        elif kind == CALL:
            spent[p] = min(max_spent, g.stack[p])
            size = 0
        elif kind == RAISE:
            rr = self.raise_range()
            if rr is None:
                raise IllegalActionError("raise is not legal here")
            if g.is_limit:
                max_spent = rr[0]
                size = 0
            else:
                if not rr[0] <= size <= rr[1]:
                    raise IllegalActionError(f"raise to {size} is outside the legal range {rr[0]}..{rr[1]}")
                min_raise_to = max(min_raise_to, 2 * size - max_spent)
                max_spent = size
            spent[p] = max_spent
        else:
            raise IllegalActionError(f"unknown action kind {kind}")
        actions = list(self.actions)
        actors = list(self.actors)
        actions[self.round] = actions[self.round] + ((kind, size),)
        actors[self.round] = actors[self.round] + (p,)
        new = self._with(
            spent=tuple(spent),
            folded=tuple(folded),
            max_spent=max_spent,
            min_raise_to=min_raise_to,
            actions=tuple(actions),
            actors=tuple(actors),
        )
        return new._advance()

    def _num_called(self) -> int:
        n = 0
        for (kind, _), p in zip(reversed(self.actions[self.round]), reversed(self.actors[self.round])):
            if kind == RAISE:
                return n + (self.spent[p] < self.game.stack[p])
            if kind == CALL and self.spent[p] < self.game.stack[p]:
                n += 1
        return n

    def _advance(self) -> "Betting":
        g = self.game
        if sum(self.folded) + 1 >= len(self.folded):  # all but one seat folded
            return self._with(finished=True)
        acting = self.num_acting()
        if self._num_called() < acting:
            return self
        if acting > 1 and self.round + 1 < g.num_rounds:
            r = self.round + 1
            return self._with(
                round=r,
                min_raise_to=self.max_spent + max(max(g.blind), 1),
                actions=self.actions + ((),),
                actors=self.actors + ((),),
            )
        last = g.num_rounds - 1
        pad = last - self.round
        return self._with(
            finished=True,
            round=last,
            actions=self.actions + ((),) * pad,
            actors=self.actors + ((),) * pad,
        )

    # -- strings --------------------------------------------------------------------------------
    def betting_string(self) -> str:
        """ACPC betting, rounds separated by ``/`` (e.g. ``r300c/cr900``)."""
        parts = []
        for acts in self.actions:
            parts.append("".join(action_string(kind, size, self.game) for kind, size in acts))
        return "/".join(parts)

    def showdown(self) -> bool:
        """The hand ended with at least two seats in it (not all but one folded)."""
        return self.finished and sum(self.folded) + 1 < len(self.folded)

    def payoffs_given_winner(self, winner: int) -> tuple[float, ...]:
        """Net chips per seat of a two-player hand; ``winner`` is 0, 1, or -1 for a tie (ignored
        after a fold). More seats: :meth:`payoffs_given_ranks`."""
        if not self.finished:
            raise ValueError("payoffs of an unfinished hand")
        if len(self.spent) != 2:
            raise ValueError("payoffs_given_winner is two-player; use payoffs_given_ranks")
        if self.folded[0] or self.folded[1]:
            loser = 0 if self.folded[0] else 1
            v = float(self.spent[loser])
            return (-v, v) if loser == 0 else (v, -v)
        # two-player side pot: only min(spent) is contested; any excess is returned
        v = float(min(self.spent))
        if winner < 0:
            return (0.0, 0.0)
        return (v, -v) if winner == 0 else (-v, v)

    def payoffs_given_ranks(self, ranks) -> tuple[float, ...]:
        """Net chips per seat given each seat's hand rank (higher wins; ignored for folded seats
        and after all but one folded), as the reference ``valueOfState`` computes them: a folded
        seat loses its chips; the last seat left wins the others'; at a showdown each side pot,
        from the smallest remaining commitment up, is shared equally by the best ranks among
        the seats with chips in it (folded seats' chips count, their hands do not). A share
        can be a fraction of a chip, as in the reference code (which works in doubles)."""
        if not self.finished:
            raise ValueError("payoffs of an unfinished hand")
        spent, folded = self.spent, self.folded
        n = len(spent)
        out = [0.0] * n
        if sum(folded) + 1 == n:
            total = sum(spent)
            for p in range(n):
                out[p] = -float(spent[p]) if folded[p] else float(total - spent[p])
            return tuple(out)
        # the seats with chips in: (remaining commitment, rank; -1 for a folded seat)
        live = [[spent[p], -1 if folded[p] else ranks[p], p] for p in range(n) if spent[p] > 0]
        while live:
            size = min(e[0] for e in live)
            win_rank = max(0, max(e[1] for e in live))
            winners = sum(1 for e in live if e[1] == win_rank)
            if not winners:  # only folded seats' chips left (no seat takes them, as in the reference)
                break
            share = float(size * (len(live) - winners)) / float(winners)
            for e in live:
                if not folded[e[2]]:
                    out[e[2]] += share if e[1] == win_rank else -float(size)
                e[0] -= size
            live = [e for e in live if e[0] > 0]
        for p in range(n):
            if folded[p]:
                out[p] = -float(spent[p])
        return tuple(out)


def action_string(kind: int, size: int, game: GameDef) -> str:
    """One action as ACPC writes it: ``f``, ``c``, ``r`` (limit) or ``r<to>`` (no-limit)."""
    return ACTION_CHARS[kind] + (str(size) if kind == RAISE and not game.is_limit else "")


def parse_action_token(text: str, pos: int, game: GameDef) -> tuple[int, int, int]:
    """Read one ACPC action at ``text[pos]``: returns ``(kind, size, next_pos)``.

    Raises ValueError naming the position on a malformed token.
    """
    ch = text[pos]
    if ch == "f":
        return FOLD, 0, pos + 1
    if ch in "ck":
        return CALL, 0, pos + 1
    if ch in "rb":
        # ASCII digits only (str.isdigit also takes '²' and other scripts' digits, which int()
        # refuses or reads); a size longer than any int32 is refused before int() reads it
        j = _DIGITS.match(text, pos + 1).end()
        digits = text[pos + 1 : j]
        if game.is_limit:
            if digits:
                raise ValueError(f"position {pos}: a limit raise takes no size, got {_clip(text[pos:j])!r}")
            return RAISE, 0, j
        if not digits:
            raise ValueError(f"position {pos}: a no-limit raise needs a size, e.g. 'r300'")
        if len(digits) > MAX_SIZE_DIGITS:
            raise ValueError(
                f"position {pos}: raise size {_clip(digits)} has {len(digits)} digits; stacks fit 32 bits"
                f" (at most {INT32_MAX})"
            )
        return RAISE, int(digits), j
    raise ValueError(f"position {pos}: unknown action character {ch!r}")


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."


def parse_betting(text: str, game: GameDef, offset: int = 0) -> Betting:
    """Replay an ACPC betting string; errors name the position (plus ``offset``) and the problem.

    Round separators must sit exactly where the rules end a round (``cc/r300``, ``r20000c///``).
    """
    b = Betting.initial(game)
    pos = 0
    while pos < len(text):
        if text[pos] == "/":
            expected = b.betting_string()
            if not expected.startswith(text[: pos + 1]):
                raise ValueError(f"position {pos + offset}: '/' but betting round {b.round + 1} is not over")
            pos += 1
            continue
        try:
            kind, size, nxt = parse_action_token(text, pos, game)
        except ValueError as exc:
            raise ValueError(str(exc).replace(f"position {pos}", f"position {pos + offset}", 1)) from None
        if b.round > text[:pos].count("/"):
            raise ValueError(
                f"position {pos + offset}: missing '/' : betting round {text[:pos].count('/') + 1} is over"
            )
        written = action_string(kind, size, game)
        if text[pos:nxt] != written:  # an alias ('k', 'b') or leading zeros: not ACPC's notation
            raise ValueError(
                f"position {pos + offset}: malformed action {text[pos:nxt]!r}: ACPC writes it {written!r}"
            )
        try:
            b = b.apply(kind, size)
        except IllegalActionError as exc:
            raise ValueError(f"position {pos + offset}: illegal action {text[pos:nxt]!r}: {exc}") from None
        pos = nxt
    if b.betting_string() != text:
        raise ValueError(
            f"position {len(text) + offset}: betting {_clip(text, 200)!r} ends early; the rules give"
            f" {_clip(b.betting_string(), 200)!r}"
        )
    return b
