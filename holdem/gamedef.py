"""ACPC game definitions: parsing, validation, presets.

An ACPC ``.game`` file (the format of the ACPC reference dealer, ``game.c``) is a block

    GAMEDEF
    nolimit
    numPlayers = 2
    numRounds = 4
    stack = 20000 20000
    blind = 100 50
    firstPlayer = 2 1 1 1
    ...
    END GAMEDEF

Keys are case-insensitive; ``#`` starts a comment line. ``firstPlayer`` is 1-based in the file and
0-based in :class:`GameDef`. Only two-player games are supported. A missing ``stack`` means an
unlimited stack (the reference code uses INT32_MAX); a missing ``maxRaises`` means no cap.

Presets (:data:`PRESETS`): ``kuhn``, ``leduc``, ``hulhe`` (heads-up limit hold'em), ``hunl``
(heads-up no-limit, 200 big blinds, blinds 100/50) and short-stack no-limit presets
``hunl100``, ``hunl50`` and ``hunl20`` (100, 50 and 20 big blinds).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

MAX_ROUNDS = 4
MAX_SUITS = 4
MAX_RANKS = 13
INT32_MAX = 2**31 - 1
NO_RAISE_CAP = 255  # the reference code's UINT8_MAX: no cap in practice


class GameDefError(ValueError):
    """A malformed or unsupported game definition; the message names the field."""


@dataclasses.dataclass(frozen=True)
class GameDef:
    """A parsed two-player ACPC game.

    Attributes:
        betting: ``"limit"`` or ``"nolimit"``.
        num_rounds: betting rounds (1..4).
        stack: chips per seat (tuple of 2).
        blind: forced bet per seat (tuple of 2).
        raise_size: fixed raise per round (limit games; zeros for no-limit).
        first_player: 0-based seat that acts first in each round.
        max_raises: raise cap per round (255 = none).
        num_suits, num_ranks: deck shape; cards are ``rank * num_suits + suit``.
        num_hole_cards: private cards per seat.
        num_board_cards: public cards dealt at the start of each round.
        name: a short label (the preset name or the file stem).
    """

    betting: str
    num_rounds: int
    stack: tuple[int, int]
    blind: tuple[int, int]
    raise_size: tuple[int, ...]
    first_player: tuple[int, ...]
    max_raises: tuple[int, ...]
    num_suits: int
    num_ranks: int
    num_hole_cards: int
    num_board_cards: tuple[int, ...]
    name: str = ""

    def __post_init__(self) -> None:
        self.validate()

    # -- derived quantities -------------------------------------------------------------------
    @property
    def is_limit(self) -> bool:
        return self.betting == "limit"

    @property
    def deck_size(self) -> int:
        return self.num_suits * self.num_ranks

    @property
    def big_blind(self) -> int:
        return max(self.blind)

    def board_cards_through(self, round_: int) -> int:
        """Total board cards visible in ``round_`` (0-based)."""
        return sum(self.num_board_cards[: round_ + 1])

    @property
    def total_board_cards(self) -> int:
        return sum(self.num_board_cards)

    @property
    def cards_per_deal(self) -> int:
        return 2 * self.num_hole_cards + self.total_board_cards

    def validate(self) -> None:
        def err(field: str, msg: str) -> GameDefError:
            return GameDefError(f"game definition field '{field}': {msg}")

        if self.betting not in ("limit", "nolimit"):
            raise err("betting", f"must be 'limit' or 'nolimit', got {self.betting!r}")
        if not 1 <= self.num_rounds <= MAX_ROUNDS:
            raise err("numRounds", f"must be 1..{MAX_ROUNDS}, got {self.num_rounds}")
        per_round = {
            "raiseSize": self.raise_size,
            "firstPlayer": self.first_player,
            "maxRaises": self.max_raises,
            "numBoardCards": self.num_board_cards,
        }
        for field, values in per_round.items():
            if len(values) != self.num_rounds:
                raise err(field, f"needs {self.num_rounds} values (one per round), got {len(values)}")
        for field, values in (("stack", self.stack), ("blind", self.blind)):
            if len(values) != 2:
                raise err(field, f"needs 2 values (one per player), got {len(values)}")
        if not 1 <= self.num_suits <= MAX_SUITS:
            raise err("numSuits", f"must be 1..{MAX_SUITS}, got {self.num_suits}")
        if not 1 <= self.num_ranks <= MAX_RANKS:
            raise err("numRanks", f"must be 1..{MAX_RANKS}, got {self.num_ranks}")
        if self.num_hole_cards < 1:
            raise err("numHoleCards", f"must be at least 1, got {self.num_hole_cards}")
        if any(b < 0 for b in self.num_board_cards):
            raise err("numBoardCards", f"must be non-negative, got {list(self.num_board_cards)}")
        if self.cards_per_deal > self.deck_size:
            raise err(
                "numBoardCards",
                f"a deal needs {self.cards_per_deal} cards but the deck has {self.deck_size}",
            )
        if any(p not in (0, 1) for p in self.first_player):
            raise err("firstPlayer", f"must be 1 or 2 for two players, got {[p + 1 for p in self.first_player]}")
        if any(b < 0 for b in self.blind):
            raise err("blind", f"must be non-negative, got {list(self.blind)}")
        if any(s <= 0 for s in self.stack):
            raise err("stack", f"must be positive, got {list(self.stack)}")
        for s, b in zip(self.stack, self.blind):
            if b > s:
                raise err("blind", f"blind {b} exceeds stack {s}")
        if self.is_limit and any(r <= 0 for r in self.raise_size):
            raise err("raiseSize", f"limit games need a positive raise size per round, got {list(self.raise_size)}")
        if any(m < 0 for m in self.max_raises):
            raise err("maxRaises", f"must be non-negative, got {list(self.max_raises)}")

    # -- ACPC text ----------------------------------------------------------------------------
    def to_acpc(self) -> str:
        lines = ["GAMEDEF", self.betting, "numPlayers = 2", f"numRounds = {self.num_rounds}"]
        if any(s != INT32_MAX for s in self.stack):
            lines.append("stack = " + " ".join(map(str, self.stack)))
        lines.append("blind = " + " ".join(map(str, self.blind)))
        if self.is_limit:
            lines.append("raiseSize = " + " ".join(map(str, self.raise_size)))
        lines.append("firstPlayer = " + " ".join(str(p + 1) for p in self.first_player))
        if any(m != NO_RAISE_CAP for m in self.max_raises):
            lines.append("maxRaises = " + " ".join(map(str, self.max_raises)))
        lines += [
            f"numSuits = {self.num_suits}",
            f"numRanks = {self.num_ranks}",
            f"numHoleCards = {self.num_hole_cards}",
            "numBoardCards = " + " ".join(map(str, self.num_board_cards)),
            "END GAMEDEF",
        ]
        return "\n".join(lines) + "\n"

    def content_hash(self) -> str:
        """A short hash of the rules (not the name): equal rules, equal hash."""
        return hashlib.blake2b(self.to_acpc().encode(), digest_size=8).hexdigest()

    def openspiel_params(self, betting_abstraction: str = "fullgame") -> dict:
        """Parameters for ``pyspiel.load_game("universal_poker", params)`` describing this game."""
        params = {
            "betting": self.betting,
            "numPlayers": 2,
            "numRounds": self.num_rounds,
            "blind": " ".join(map(str, self.blind)),
            "firstPlayer": " ".join(str(p + 1) for p in self.first_player),
            "numSuits": self.num_suits,
            "numRanks": self.num_ranks,
            "numHoleCards": self.num_hole_cards,
            "numBoardCards": " ".join(map(str, self.num_board_cards)),
            "bettingAbstraction": betting_abstraction,
        }
        if self.is_limit:
            params["raiseSize"] = " ".join(map(str, self.raise_size))
            params["maxRaises"] = " ".join(map(str, self.max_raises))
        else:
            params["stack"] = " ".join(map(str, self.stack))
        return params


_INT_FIELDS = {"numplayers", "numrounds", "numsuits", "numranks", "numholecards"}
_LIST_FIELDS = {"stack", "blind", "raisesize", "firstplayer", "maxraises", "numboardcards"}


def parse_gamedef(text: str, name: str = "") -> GameDef:
    """Parse ACPC ``.game`` text. Errors name the line and the field."""
    betting = None
    values: dict[str, list[int]] = {}
    in_block = False
    seen_end = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        low = line.lower()
        if low == "gamedef":
            in_block = True
            continue
        if low == "end gamedef":
            seen_end = True
            break
        if not in_block:
            raise GameDefError(f"line {lineno}: expected 'GAMEDEF' before {line!r}")
        if low in ("limit", "nolimit"):
            betting = low
            continue
        if "=" not in line:
            raise GameDefError(f"line {lineno}: expected 'key = values', got {line!r}")
        key, _, rhs = line.partition("=")
        key = key.strip()
        k = key.lower()
        if k not in _INT_FIELDS | _LIST_FIELDS:
            raise GameDefError(f"line {lineno}: unknown field {key!r}")
        try:
            nums = [int(tok) for tok in rhs.split()]
        except ValueError:
            raise GameDefError(f"line {lineno}: field {key!r} needs integers, got {rhs.strip()!r}") from None
        if not nums:
            raise GameDefError(f"line {lineno}: field {key!r} has no value")
        if k in _INT_FIELDS and len(nums) != 1:
            raise GameDefError(f"line {lineno}: field {key!r} takes one integer, got {rhs.strip()!r}")
        values[k] = nums
    if not in_block:
        raise GameDefError("no 'GAMEDEF' block found")
    if not seen_end:
        raise GameDefError("missing 'END GAMEDEF'")
    if betting is None:
        raise GameDefError("betting type missing: add a line 'limit' or 'nolimit'")
    for req in ("numrounds", "numsuits", "numranks", "numholecards", "blind", "numboardcards", "firstplayer"):
        if req not in values:
            raise GameDefError(f"required field {_CANON[req]!r} missing")
    if values.get("numplayers", [2])[0] != 2:
        raise GameDefError(f"field 'numPlayers': only 2-player games are supported, got {values['numplayers'][0]}")
    nr = values["numrounds"][0]
    if betting == "limit" and "raisesize" not in values:
        raise GameDefError("field 'raiseSize' is required in limit games")

    def per_round(k: str, default: int) -> tuple[int, ...]:
        return tuple(values.get(k, [default] * nr))

    return GameDef(
        betting=betting,
        num_rounds=nr,
        stack=tuple(values.get("stack", [INT32_MAX, INT32_MAX])),
        blind=tuple(values["blind"]),
        raise_size=per_round("raisesize", 0),
        first_player=tuple(p - 1 for p in values["firstplayer"]),
        max_raises=per_round("maxraises", NO_RAISE_CAP),
        num_suits=values["numsuits"][0],
        num_ranks=values["numranks"][0],
        num_hole_cards=values["numholecards"][0],
        num_board_cards=tuple(values["numboardcards"]),
        name=name,
    )


_CANON = {
    "numrounds": "numRounds",
    "numsuits": "numSuits",
    "numranks": "numRanks",
    "numholecards": "numHoleCards",
    "blind": "blind",
    "numboardcards": "numBoardCards",
    "firstplayer": "firstPlayer",
}


def _hunl(name: str, big_blinds: int) -> GameDef:
    return GameDef(
        betting="nolimit",
        num_rounds=4,
        stack=(100 * big_blinds, 100 * big_blinds),
        blind=(100, 50),
        raise_size=(0, 0, 0, 0),
        first_player=(1, 0, 0, 0),
        max_raises=(NO_RAISE_CAP,) * 4,
        num_suits=4,
        num_ranks=13,
        num_hole_cards=2,
        num_board_cards=(0, 3, 1, 1),
        name=name,
    )


PRESETS: dict[str, GameDef] = {
    "kuhn": GameDef("limit", 1, (INT32_MAX, INT32_MAX), (1, 1), (1,), (0,), (1,), 1, 3, 1, (0,), "kuhn"),
    "leduc": GameDef("limit", 2, (INT32_MAX, INT32_MAX), (1, 1), (2, 4), (0, 0), (2, 2), 2, 3, 1, (0, 1), "leduc"),
    "hulhe": GameDef(
        "limit", 4, (INT32_MAX, INT32_MAX), (10, 5), (10, 10, 20, 20), (1, 0, 0, 0), (3, 4, 4, 4), 4, 13, 2, (0, 3, 1, 1), "hulhe"
    ),
    "hunl": _hunl("hunl", 200),
    "hunl100": _hunl("hunl100", 100),
    "hunl50": _hunl("hunl50", 50),
    "hunl20": _hunl("hunl20", 20),
}


def load_gamedef(name_or_path: str | os.PathLike) -> GameDef:
    """A preset by name, or a ``.game`` file by path."""
    key = str(name_or_path)
    if key in PRESETS:
        return PRESETS[key]
    path = Path(key)
    if not path.exists():
        raise GameDefError(f"unknown game {key!r}: not a preset ({', '.join(PRESETS)}) and no such file")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise GameDefError(f"cannot read game file {key!r}: {exc}") from None
    try:
        return parse_gamedef(text, name=path.stem)
    except GameDefError as exc:
        raise GameDefError(f"{key}: {exc}") from None
