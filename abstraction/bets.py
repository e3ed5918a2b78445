"""Bet abstractions: the raise sizes a betting tree offers, per round, read from TOML.

A bet abstraction lists, per betting round, the raise sizes a player may choose as pot fractions.
A fraction ``f`` raises to ``maxSpent + f * (pot + toCall)``: ``f`` of the pot after calling (so
``f = 1`` is OpenSpiel's ``fcpa`` pot raise). Optional ``first_sizes`` apply to the first raise of a
round, ``allin`` adds an all-in, and ``max_raises`` caps the raises per round (on top of the game's
own ``maxRaises``). A size below the legal minimum is raised to the minimum; a size above the
actor's stack is dropped (all-in covers it); equal sizes are merged, and all-in is omitted when it
equals another size. Limit games are their own abstraction: every legal action is in the tree.

TOML format (``abstraction/bets/*.toml`` ships ``fcpa``, ``small``, ``standard``, ``rich``, ``multiway`` and ``subgame``)::

    name = "standard"
    [[round]]              # one table per round; the last one repeats for later rounds
    first_sizes = [0.5, 1.0, 2.0]   # optional: sizes for the first raise of the round
    sizes = [1.0]
    allin = true
    max_raises = 3         # optional: no cap when absent
    raise_mults = [2.5]    # optional: re-raises to m times the last bet of the round (postflop-solver's "2.5x")

The abstraction is applied to a betting state by :meth:`BetAbstraction.raise_targets`; the betting
trees built from it (the blueprint's and the subgames') are :mod:`abstraction.tree`'s.
"""

from __future__ import annotations

import dataclasses
import hashlib
import tomllib
from pathlib import Path

import numpy as np

from holdem.betting import RAISE, Betting

BETS_DIR = Path(__file__).parent / "bets"
ALLIN = -1.0


class BetAbstractionError(ValueError):
    """A malformed bet-abstraction file or an unknown name; the message names the field."""


@dataclasses.dataclass(frozen=True)
class RoundBets:
    sizes: tuple[float, ...]
    first_sizes: tuple[float, ...]
    allin: bool
    max_raises: int  # -1: no cap
    raise_mults: tuple[float, ...] = ()  # re-raise to m x the round's current bet (after the first raise)


@dataclasses.dataclass(frozen=True)
class BetAbstraction:
    name: str
    rounds: tuple[RoundBets, ...]

    def for_round(self, r: int) -> RoundBets:
        return self.rounds[min(r, len(self.rounds) - 1)]

    def to_toml(self) -> str:
        out = [f'name = "{self.name}"']
        for rb in self.rounds:
            out += ["", "[[round]]", f"sizes = {list(rb.sizes)}", f"first_sizes = {list(rb.first_sizes)}"]
            out.append(f"allin = {'true' if rb.allin else 'false'}")
            if rb.max_raises >= 0:
                out.append(f"max_raises = {rb.max_raises}")
            if rb.raise_mults:
                out.append(f"raise_mults = {list(rb.raise_mults)}")
        return "\n".join(out) + "\n"

    def content_hash(self) -> str:
        body = tuple(
            (rb.sizes, rb.first_sizes, rb.allin, rb.max_raises)
            + ((rb.raise_mults,) if rb.raise_mults else ())
            for rb in self.rounds
        )
        return hashlib.blake2b(repr(body).encode(), digest_size=8).hexdigest()

    def raise_targets(self, b: Betting) -> list[tuple[int, float]]:
        """Abstract raise-to amounts at betting state ``b`` as ``(to, fraction)``, increasing.

        Applies this abstraction's sizes to ``b``'s real pot: below-minimum sizes become the
        minimum, above-stack sizes are dropped, duplicates merged, all-in last.
        """
        rr = b.raise_range()
        if rr is None:
            return []
        if b.game.is_limit:
            return [(rr[0], 0.0)]
        rb = self.for_round(b.round)
        n_raises = b.num_raises()
        if rb.max_raises >= 0 and n_raises >= rb.max_raises:
            return []
        lo, hi = rr
        sizes = rb.first_sizes if n_raises == 0 else rb.sizes
        out: dict[int, float] = {}
        targets = [(b.pot_raise_to(f), f) for f in sizes]
        if n_raises and rb.raise_mults:
            start = street_start(b)
            targets += [(start + int(np.floor(m * (b.max_spent - start) + 0.5)), 0.0) for m in rb.raise_mults]
        for to, f in sorted(targets, key=lambda t: t[0]):
            if to > hi:
                continue
            to = max(to, lo)
            out.setdefault(to, f)
        if rb.allin:
            out.setdefault(hi, ALLIN)
        return sorted(out.items())


def street_start(b: Betting) -> int:
    """Each seat's commitment when ``b``'s round began (the last earlier raise-to, else the big blind;
    0 in the first round, where the blinds are part of the round's bets)."""
    if b.round == 0:
        return 0
    start = max(b.game.blind)
    for acts in b.actions[: b.round]:
        for kind, size in acts:
            if kind == RAISE:
                start = size
    return start


def _round_bets(tbl: dict, where: str) -> RoundBets:
    known = {"sizes", "first_sizes", "allin", "max_raises", "raise_mults"}
    for k in tbl:
        if k not in known:
            raise BetAbstractionError(f"{where}: unknown key {k!r} (expected {sorted(known)})")

    def fracs(key: str, default):
        v = tbl.get(key, default)
        if not isinstance(v, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in v
        ):
            raise BetAbstractionError(f"{where}: {key!r} must be a list of numbers, got {v!r}")
        if any(x <= 0 for x in v):
            raise BetAbstractionError(f"{where}: {key!r} must hold positive pot fractions, got {v!r}")
        return tuple(float(x) for x in v)

    sizes = fracs("sizes", [])
    first = fracs("first_sizes", list(sizes))
    allin = tbl.get("allin", False)
    if not isinstance(allin, bool):
        raise BetAbstractionError(f"{where}: 'allin' must be true or false, got {allin!r}")
    mr = tbl.get("max_raises", -1)
    if not isinstance(mr, int) or isinstance(mr, bool) or mr < -1:
        raise BetAbstractionError(f"{where}: 'max_raises' must be a non-negative integer, got {mr!r}")
    mults = fracs("raise_mults", [])
    if any(m <= 1 for m in mults):
        raise BetAbstractionError(
            f"{where}: 'raise_mults' must be multiples above 1 of the current bet, got {list(mults)!r}"
        )
    return RoundBets(sizes, first, allin, mr, mults)


def parse_bets(text: str, source: str = "<string>") -> BetAbstraction:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BetAbstractionError(f"{source}: not valid TOML: {exc}") from None
    for k in data:
        if k not in ("name", "round"):
            raise BetAbstractionError(f"{source}: unknown key {k!r} (expected 'name' and [[round]] tables)")
    rounds = data.get("round")
    if not isinstance(rounds, list) or not rounds:
        raise BetAbstractionError(f"{source}: needs at least one [[round]] table")
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str):
        raise BetAbstractionError(f"{source}: 'name' must be a string")
    return BetAbstraction(
        name, tuple(_round_bets(t, f"{source}: round {i + 1}") for i, t in enumerate(rounds))
    )


def available_bets() -> list[str]:
    return sorted(p.stem for p in BETS_DIR.glob("*.toml"))


def load_bets(name_or_path: str) -> BetAbstraction:
    """A shipped abstraction by name (``fcpa``, ``small``, ``standard``, ``subgame``) or a TOML file."""
    path = BETS_DIR / f"{name_or_path}.toml"
    if not path.exists():
        path = Path(name_or_path)
        if not path.exists():
            raise BetAbstractionError(
                f"unknown bet abstraction {name_or_path!r}: not one of {available_bets()} and no such file"
            )
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise BetAbstractionError(f"cannot read {path}: {exc}") from None
    return parse_bets(text, str(path))


LIMIT = BetAbstraction("limit", (RoundBets((), (), False, -1),))  # limit games: every legal action
