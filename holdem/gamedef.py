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
0-based in :class:`GameDef`. ``numPlayers`` is 2..10 (the reference dealer's ``MAX_PLAYERS``);
``blind`` and ``stack`` hold one value per seat. The rules (:mod:`holdem.betting`,
:mod:`holdem.state`) play any of them; everything else in the project (the trainer, the betting
tree, subgame solving, LBR, the servers) is two-player only and says so at its entry
(:func:`require_two_players`). A missing ``stack`` means an unlimited stack (the reference code
uses INT32_MAX); a missing ``maxRaises`` means no cap.

Hostile input: every definition is held to the ACPC reference limits (``game.h``: at most
:data:`MAX_ROUNDS` rounds, :data:`MAX_PLAYERS` players, :data:`MAX_BOARD_CARDS` board cards,
:data:`MAX_HOLE_CARDS` hole cards, :data:`MAX_SUITS` suits, :data:`MAX_RANKS` ranks; stacks, blinds
and raise sizes fit int32, ``maxRaises`` fits uint8) and a violation is a :class:`GameDefError`
naming the field and the limit. The reader checks counts and magnitudes before it allocates
anything sized by a number in the file, reads at most :data:`MAX_GAME_FILE_BYTES` of a regular
file (a device, FIFO or directory is refused without reading) in at most
:data:`MAX_GAME_FILE_LINES` lines, and wants UTF-8.

Presets (:data:`PRESETS`): ``kuhn``, ``leduc``, ``hulhe`` (heads-up limit hold'em), ``hunl``
(heads-up no-limit, 200 big blinds, blinds 100/50) and short-stack no-limit presets
``hunl100``, ``hunl50`` and ``hunl20`` (100, 50 and 20 big blinds). Three-player games as the
ACPC dealer ships them (:data:`MULTIWAY_PRESETS`, for the rules and the trainer): ``kuhn.limit.3p``,
``holdem.limit.3p`` and ``holdem.nolimit.3p``; ``leduc.limit.3p``, OpenSpiel's
``leduc_poker(players=3)`` (8 cards: 4 ranks of 2 suits); and ``nl6max``, six seats of no-limit
hold'em at 100 big blinds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import operator
import os
import re
import stat
from pathlib import Path

# the ACPC reference code's limits (game.h)
MAX_ROUNDS = 4
MAX_PLAYERS = 10
MAX_BOARD_CARDS = 7
MAX_HOLE_CARDS = 3
MAX_NUM_ACTIONS = 64  # per round; enforced by holdem.betting, not a field of the file
MAX_SUITS = 4
MAX_RANKS = 13
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
UINT8_MAX = 255
NO_RAISE_CAP = UINT8_MAX  # the reference code's UINT8_MAX: no cap in practice

# the reader's own caps: real .game files are a few hundred bytes
MAX_GAME_FILE_BYTES = 1 << 20  # 1 MiB
MAX_GAME_FILE_LINES = 10_000  # (a 1 MiB file of blank lines would take seconds of Python per line)
_MAX_NUMBER_DIGITS = 10  # int32 has 10 digits: a longer number (leading zeros aside) is out of range
_NUMBER = re.compile(r"[+-]?[0-9]+\Z")


class GameDefError(ValueError):
    """A malformed or unsupported game definition; the message names the field."""


@dataclasses.dataclass(frozen=True)
class GameDef:
    """A parsed ACPC game of 2..10 seats (``len(blind)``).

    Attributes:
        betting: ``"limit"`` or ``"nolimit"``.
        num_rounds: betting rounds (1..4).
        stack: chips per seat (one per seat).
        blind: forced bet per seat (one per seat; its length is the number of players).
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
    stack: tuple[int, ...]
    blind: tuple[int, ...]
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
    def num_players(self) -> int:
        return len(self.blind)

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
        return self.num_players * self.num_hole_cards + self.total_board_cards

    def validate(self) -> None:
        def err(field: str, msg: str) -> GameDefError:
            return GameDefError(f"game definition field '{field}': {msg}")

        def is_int(v) -> bool:  # an int or numpy integer, not a bool, str or float
            try:
                operator.index(v)
            except TypeError:
                return False
            return not isinstance(v, bool)

        if self.betting not in ("limit", "nolimit"):
            raise err("betting", f"must be 'limit' or 'nolimit', got {_clip(repr(self.betting))}")
        scalars = {
            "numRounds": self.num_rounds,
            "numSuits": self.num_suits,
            "numRanks": self.num_ranks,
            "numHoleCards": self.num_hole_cards,
        }
        for field, v in scalars.items():
            if not is_int(v):
                raise err(field, f"must be an integer, got {_clip(repr(v))}")
        if not 1 <= self.num_rounds <= MAX_ROUNDS:
            raise err(
                "numRounds", f"must be 1..{MAX_ROUNDS} (the ACPC limit MAX_ROUNDS), got {self.num_rounds}"
            )
        per_round = {
            "raiseSize": self.raise_size,
            "firstPlayer": self.first_player,
            "maxRaises": self.max_raises,
            "numBoardCards": self.num_board_cards,
        }
        lists = {**per_round, "stack": self.stack, "blind": self.blind}
        for field, values in lists.items():
            if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
                raise err(field, f"must be a sequence of integers, got {type(values).__name__}")
        for field, values in per_round.items():
            if len(values) != self.num_rounds:
                raise err(field, f"needs {self.num_rounds} values (one per round), got {len(values)}")
        n = len(self.blind)
        if not 2 <= n <= MAX_PLAYERS:
            raise err(
                "blind",
                f"needs one value per player, 2..{MAX_PLAYERS} players (the ACPC limit MAX_PLAYERS), got {n}",
            )
        if len(self.stack) != n:
            raise err("stack", f"needs {n} values (one per player, as 'blind' has), got {len(self.stack)}")
        for field, values in lists.items():  # (short now: at most MAX_ROUNDS values each)
            if not all(is_int(v) for v in values):
                raise err(field, f"must be a sequence of integers, got {_clip(repr(values))}")
        if not 1 <= self.num_suits <= MAX_SUITS:
            raise err("numSuits", f"must be 1..{MAX_SUITS}, got {self.num_suits}")
        if not 1 <= self.num_ranks <= MAX_RANKS:
            raise err("numRanks", f"must be 1..{MAX_RANKS}, got {self.num_ranks}")
        if self.num_hole_cards < 1:
            raise err("numHoleCards", f"must be at least 1, got {self.num_hole_cards}")
        if self.num_hole_cards > MAX_HOLE_CARDS:
            raise err(
                "numHoleCards",
                f"must be at most {MAX_HOLE_CARDS} (the ACPC limit MAX_HOLE_CARDS),"
                f" got {self.num_hole_cards}",
            )
        if any(b < 0 for b in self.num_board_cards):
            raise err("numBoardCards", f"must be non-negative, got {list(self.num_board_cards)}")
        if self.total_board_cards > MAX_BOARD_CARDS:
            raise err(
                "numBoardCards",
                f"{self.total_board_cards} board cards in all, at most {MAX_BOARD_CARDS}"
                f" (the ACPC limit MAX_BOARD_CARDS), got {list(self.num_board_cards)}",
            )
        if self.cards_per_deal > self.deck_size:
            raise err(
                "numBoardCards",
                f"a deal needs {self.cards_per_deal} cards but the deck has {self.deck_size}",
            )
        if any(not 0 <= p < n for p in self.first_player):
            seats = "1 or 2 for two players" if n == 2 else f"1..{n} for {n} players"
            raise err("firstPlayer", f"must be {seats}, got {[p + 1 for p in self.first_player]}")
        for field, values in (("stack", self.stack), ("blind", self.blind), ("raiseSize", self.raise_size)):
            if any(not INT32_MIN <= v <= INT32_MAX for v in values):
                raise err(
                    field, f"must fit a 32-bit signed integer (at most {INT32_MAX}), got {list(values)}"
                )
        if any(b < 0 for b in self.blind):
            raise err("blind", f"must be non-negative, got {list(self.blind)}")
        if any(s <= 0 for s in self.stack):
            raise err("stack", f"must be positive, got {list(self.stack)}")
        for s, b in zip(self.stack, self.blind):
            if b > s:
                raise err("blind", f"blind {b} exceeds stack {s}")
        if self.is_limit and any(r <= 0 for r in self.raise_size):
            raise err(
                "raiseSize", f"limit games need a positive raise size per round, got {list(self.raise_size)}"
            )
        if any(m < 0 for m in self.max_raises):
            raise err("maxRaises", f"must be non-negative, got {list(self.max_raises)}")
        if any(m > UINT8_MAX for m in self.max_raises):
            raise err(
                "maxRaises",
                f"must be at most {UINT8_MAX} (the ACPC reference code reads it as uint8; {NO_RAISE_CAP}"
                f" means no cap), got {list(self.max_raises)}",
            )

    # -- ACPC text ----------------------------------------------------------------------------
    def to_acpc(self) -> str:
        lines = [
            "GAMEDEF",
            self.betting,
            f"numPlayers = {self.num_players}",
            f"numRounds = {self.num_rounds}",
        ]
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
            "numPlayers": self.num_players,
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
        if not self.is_limit:
            params["stack"] = " ".join(map(str, self.stack))
        elif self.num_players > 2:
            # OpenSpiel's default stack has too few seats, and its reader takes at most 4
            # values of 2147483647 a line: an unlimited stack is given as a stack no limit
            # hand can reach (the blind plus every raise of every round)
            reach = max(self.blind) + sum(
                min(m, MAX_NUM_ACTIONS) * r for m, r in zip(self.max_raises, self.raise_size)
            )
            params["stack"] = " ".join(str(s if s != INT32_MAX else reach + 1) for s in self.stack)
        return params


_INT_FIELDS = {"numplayers", "numrounds", "numsuits", "numranks", "numholecards"}
_LIST_FIELDS = {"stack", "blind", "raisesize", "firstplayer", "maxraises", "numboardcards"}
# the most values a list field may hold, checked before any value is converted (ACPC's limits)
_LIST_LIMITS = {
    "stack": (MAX_PLAYERS, "MAX_PLAYERS, one per player"),
    "blind": (MAX_PLAYERS, "MAX_PLAYERS, one per player"),
    "raisesize": (MAX_ROUNDS, "MAX_ROUNDS, one per round"),
    "firstplayer": (MAX_ROUNDS, "MAX_ROUNDS, one per round"),
    "maxraises": (MAX_ROUNDS, "MAX_ROUNDS, one per round"),
    "numboardcards": (MAX_ROUNDS, "MAX_ROUNDS, one per round"),
}


def _clip(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters for an error message (hostile input can be long)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _parse_number(tok: str, lineno: int, key: str, rhs: str) -> int:
    """One ASCII integer (optional sign); a number too long for int32 is refused before
    conversion, so a million-digit value costs nothing."""
    if not _NUMBER.match(tok):
        raise GameDefError(f"line {lineno}: field {key!r} needs integers, got {_clip(rhs.strip())!r}")
    digits = tok.lstrip("+-").lstrip("0")  # (leading zeros can be many: int() would refuse them)
    if len(digits) > _MAX_NUMBER_DIGITS:
        raise GameDefError(
            f"line {lineno}: field {key!r}: value {_clip(tok, 30)} does not fit a 32-bit integer"
            f" (the ACPC reference code reads every value as at most int32, {INT32_MAX})"
        )
    return -int(digits or "0") if tok.startswith("-") else int(digits or "0")


def _per_seat(v: list[int]) -> tuple[int, ...]:
    """A per-player value as the tuple :class:`GameDef` takes; its length is checked there (a
    clear error naming the field when it is not one value per player)."""
    return tuple(int(x) for x in v)


def parse_gamedef(text: str, name: str = "") -> GameDef:
    """Parse ACPC ``.game`` text. Errors name the line and the field."""
    if not isinstance(text, str):
        raise GameDefError(f"game definition text must be a str, got {type(text).__name__}")
    if len(text) > MAX_GAME_FILE_BYTES:
        raise GameDefError(
            f"game definition is {len(text)} characters, more than the {MAX_GAME_FILE_BYTES} allowed"
        )
    betting = None
    values: dict[str, list[int]] = {}
    in_block = False
    seen_end = False
    lines = text.splitlines()
    if len(lines) > MAX_GAME_FILE_LINES:
        raise GameDefError(
            f"game definition has {len(lines)} lines, more than the {MAX_GAME_FILE_LINES} allowed"
        )
    for lineno, raw in enumerate(lines, start=1):
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
            raise GameDefError(f"line {lineno}: expected 'GAMEDEF' before {_clip(line)!r}")
        if low in ("limit", "nolimit"):
            betting = low
            continue
        if "=" not in line:
            raise GameDefError(f"line {lineno}: expected 'key = values', got {_clip(line)!r}")
        key, _, rhs = line.partition("=")
        key = key.strip()
        k = key.lower()
        if k not in _INT_FIELDS | _LIST_FIELDS:
            raise GameDefError(f"line {lineno}: unknown field {_clip(key)!r}")
        toks = rhs.split()
        if not toks:
            raise GameDefError(f"line {lineno}: field {key!r} has no value")
        if k in _INT_FIELDS and len(toks) != 1:
            if len(toks) > MAX_ROUNDS or all(_NUMBER.match(t) for t in toks):
                raise GameDefError(
                    f"line {lineno}: field {key!r} takes one integer, got {_clip(rhs.strip())!r}"
                )
            raise GameDefError(f"line {lineno}: field {key!r} needs integers, got {_clip(rhs.strip())!r}")
        if k in _LIST_LIMITS and len(toks) > _LIST_LIMITS[k][0]:
            limit, why = _LIST_LIMITS[k]
            raise GameDefError(
                f"line {lineno}: field {key!r} has {len(toks)} values, at most {limit} (the ACPC limit {why})"
            )
        values[k] = [_parse_number(tok, lineno, key, rhs) for tok in toks]
    if not in_block:
        raise GameDefError("no 'GAMEDEF' block found")
    if not seen_end:
        raise GameDefError("missing 'END GAMEDEF'")
    if betting is None:
        raise GameDefError("betting type missing: add a line 'limit' or 'nolimit'")
    for req in ("numrounds", "numsuits", "numranks", "numholecards", "blind", "numboardcards", "firstplayer"):
        if req not in values:
            raise GameDefError(f"required field {_CANON[req]!r} missing")
    n_players = values.get("numplayers", [2])[0]
    if not 2 <= n_players <= MAX_PLAYERS:
        raise GameDefError(
            f"game definition field 'numPlayers': must be 2..{MAX_PLAYERS} (the ACPC limit MAX_PLAYERS),"
            f" got {n_players}"
        )
    for k in ("blind", "stack"):
        if k in values and len(values[k]) != n_players:
            raise GameDefError(
                f"game definition field {k!r}: needs {n_players} values (one per player, numPlayers ="
                f" {n_players}), got {len(values[k])}"
            )
    nr = values["numrounds"][0]
    if not 1 <= nr <= MAX_ROUNDS:  # before anything below is sized by it
        raise GameDefError(
            f"game definition field 'numRounds': must be 1..{MAX_ROUNDS} (the ACPC limit MAX_ROUNDS),"
            f" got {nr}"
        )
    if betting == "limit" and "raisesize" not in values:
        raise GameDefError("field 'raiseSize' is required in limit games")

    def per_round(k: str, default: int) -> tuple[int, ...]:
        return tuple(values.get(k, [default] * nr))

    gd = GameDef(
        betting=betting,
        num_rounds=nr,
        stack=_per_seat(values.get("stack", [INT32_MAX] * n_players)),
        blind=_per_seat(values["blind"]),
        raise_size=per_round("raisesize", 0),
        first_player=tuple(p - 1 for p in values["firstplayer"]),
        max_raises=per_round("maxraises", NO_RAISE_CAP),
        num_suits=values["numsuits"][0],
        num_ranks=values["numranks"][0],
        num_hole_cards=values["numholecards"][0],
        num_board_cards=tuple(values["numboardcards"]),
        name=name,
    )
    if not gd.is_limit and any(gd.raise_size):
        # a no-limit game has no raise size (the reference code reads it and never uses it, and
        # to_acpc() does not write it): checked like any field, then dropped, so that the parse
        # equals the parse of its own ACPC text
        gd = dataclasses.replace(gd, raise_size=(0,) * nr)
    return gd


def parse_gamedef_bytes(data: bytes, name: str = "") -> GameDef:
    """Parse the bytes of a ``.game`` file: at most :data:`MAX_GAME_FILE_BYTES`, UTF-8."""
    if len(data) > MAX_GAME_FILE_BYTES:
        raise GameDefError(f"game file is {len(data)} bytes, more than the {MAX_GAME_FILE_BYTES} allowed")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GameDefError(
            f"game file is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} ({exc.reason})"
        ) from None
    return parse_gamedef(text, name=name)


def _os_reason(exc: Exception) -> str:
    """An OSError's reason without the file name (the caller names it, clipped)."""
    return getattr(exc, "strerror", None) or str(exc)


def read_game_file(path: str | os.PathLike) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_GAME_FILE_BYTES`, read without blocking
    on a FIFO and without reading a device or directory at all.

    Raises:
        FileNotFoundError: no such file (the caller words it).
        GameDefError: anything else, naming the path and the problem.
    """
    shown = _clip(repr(str(path)), 200)
    flags = os.O_RDONLY
    for extra in ("O_NONBLOCK", "O_NOCTTY", "O_BINARY"):  # O_NONBLOCK: opening a FIFO must not wait
        flags |= getattr(os, extra, 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(path) from None
    except IsADirectoryError:  # (Windows; Linux opens a directory and fstat says so below)
        raise GameDefError(f"cannot read game file {shown}: it is a directory") from None
    except (OSError, ValueError) as exc:  # permissions, name too long, embedded NUL, a socket...
        raise GameDefError(f"cannot read game file {shown}: {_os_reason(exc)}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise GameDefError(f"cannot read game file {shown}: it is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise GameDefError(
                f"cannot read game file {shown}: not a regular file (a device, FIFO or socket)"
            )
        if st.st_size > MAX_GAME_FILE_BYTES:
            raise GameDefError(
                f"cannot read game file {shown}: {st.st_size} bytes,"
                f" more than the {MAX_GAME_FILE_BYTES} allowed"
            )
        chunks, size = [], 0
        while size <= MAX_GAME_FILE_BYTES:  # st_size can lie (/proc, a file still growing)
            chunk = os.read(fd, MAX_GAME_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_GAME_FILE_BYTES:
            raise GameDefError(
                f"cannot read game file {shown}: more than the {MAX_GAME_FILE_BYTES} bytes allowed"
            )
        return b"".join(chunks)
    except OSError as exc:
        raise GameDefError(f"cannot read game file {shown}: {_os_reason(exc)}") from None
    finally:
        os.close(fd)


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
    "leduc": GameDef(
        "limit", 2, (INT32_MAX, INT32_MAX), (1, 1), (2, 4), (0, 0), (2, 2), 2, 3, 1, (0, 1), "leduc"
    ),
    "hulhe": GameDef(
        "limit",
        4,
        (INT32_MAX, INT32_MAX),
        (10, 5),
        (10, 10, 20, 20),
        (1, 0, 0, 0),
        (3, 4, 4, 4),
        4,
        13,
        2,
        (0, 3, 1, 1),
        "hulhe",
    ),
    "hunl": _hunl("hunl", 200),
    "hunl100": _hunl("hunl100", 100),
    "hunl50": _hunl("hunl50", 50),
    "hunl20": _hunl("hunl20", 20),
}

# Games of more than two seats: as the ACPC dealer ships them (kuhn.limit.3p.game,
# holdem.*.3p.game), OpenSpiel's 3-player Leduc and six-max no-limit. The rules and the trainer
# play them; the two-player parts refuse them (:func:`require_two_players`). Apart from
# :data:`PRESETS`, whose games every part takes.
MULTIWAY_PRESETS: dict[str, GameDef] = {
    "kuhn.limit.3p": GameDef(
        "limit", 1, (INT32_MAX,) * 3, (1, 1, 1), (1,), (0,), (1,), 1, 4, 1, (0,), "kuhn.limit.3p"
    ),
    # OpenSpiel's leduc_poker(players=3): 2 suits of numPlayers + 1 = 4 ranks (8 cards), antes of 1,
    # raises 2 then 4, at most 2 a round, seat 0 first in both rounds
    "leduc.limit.3p": GameDef(
        "limit", 2, (INT32_MAX,) * 3, (1, 1, 1), (2, 4), (0, 0), (2, 2), 2, 4, 1, (0, 1), "leduc.limit.3p"
    ),
    "holdem.limit.3p": GameDef(
        "limit",
        4,
        (INT32_MAX,) * 3,
        (5, 10, 0),
        (10, 10, 20, 20),
        (2, 0, 0, 0),
        (3, 4, 4, 4),
        4,
        13,
        2,
        (0, 3, 1, 1),
        "holdem.limit.3p",
    ),
    "holdem.nolimit.3p": GameDef(
        "nolimit",
        4,
        (20000,) * 3,
        (50, 100, 0),
        (0, 0, 0, 0),
        (2, 0, 0, 0),
        (NO_RAISE_CAP,) * 4,
        4,
        13,
        2,
        (0, 3, 1, 1),
        "holdem.nolimit.3p",
    ),
    # six-max no-limit hold'em at 100 big blinds (blinds 50/100, stacks 10,000), the seat after the
    # big blind first pre-flop, seat 1 (the small blind) after: the game Pluribus played
    "nl6max": GameDef(
        "nolimit",
        4,
        (10000,) * 6,
        (50, 100, 0, 0, 0, 0),
        (0, 0, 0, 0),
        (2, 0, 0, 0),
        (NO_RAISE_CAP,) * 4,
        4,
        13,
        2,
        (0, 3, 1, 1),
        "nl6max",
    ),
}


def require_two_players(gamedef: GameDef, what: str) -> None:
    """Refuse a game of more than two seats at the entry of ``what`` (the trainer, the betting
    tree, subgame solving, LBR, the servers: everything but the rules is two-player only).

    Raises:
        GameDefError: naming ``numPlayers``, the game and ``what``.
    """
    n = gamedef.num_players
    if n != 2:
        label = f" {gamedef.name!r}" if gamedef.name else ""
        raise GameDefError(
            f"{what} supports only 2-player games: game{label} has numPlayers = {n}"
            " (the rules play 2..10 seats; training, solving and serving are two-player only)"
        )


def small_deck_game(ranks: int, max_raises: int = 2, flop: int = 2) -> GameDef:
    """The three-round small-deck limit hold'em of the abstraction-quality experiment and of the
    threads' exploitability benchmark, where :mod:`blueprint.vector_cfr` measures exploitability
    exactly: ``ranks`` x 4 suits, 2 hole cards, a ``flop``-card flop and a 1-card turn, blinds
    10/5, raises 10/20/20, ``max_raises`` a round; named ``lim3r{ranks}f{flop}[m{max_raises}]``."""
    return GameDef(
        "limit",
        3,
        (2000, 2000),
        (10, 5),
        (10, 20, 20),
        (1, 0, 0),
        (max_raises,) * 3,
        4,
        ranks,
        2,
        (0, flop, 1),
        f"lim3r{ranks}f{flop}" + ("" if max_raises == 2 else f"m{max_raises}"),
    )


def load_gamedef(name_or_path: str | os.PathLike) -> GameDef:
    """A preset by name, or a ``.game`` file by path."""
    key = str(name_or_path)
    if key in PRESETS:
        return PRESETS[key]
    if key in MULTIWAY_PRESETS:
        return MULTIWAY_PRESETS[key]
    try:
        data = read_game_file(key)
    except FileNotFoundError:
        raise GameDefError(
            f"unknown game {_clip(key, 200)!r}: not a preset ({', '.join([*PRESETS, *MULTIWAY_PRESETS])})"
            " and no such file"
        ) from None
    try:
        return parse_gamedef_bytes(data, name=Path(key).stem)
    except GameDefError as exc:
        raise GameDefError(f"{_clip(key, 200)}: {exc}") from None
