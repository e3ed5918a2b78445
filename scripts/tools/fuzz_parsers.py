"""Long-run fuzzer for the parsers that read hostile input (game definitions, state strings, ...).

Each target has a corpus of valid inputs, a runner and the exceptions that count as a clean
error. The fuzzer mutates corpus inputs at random (insert, delete, replace, repeat, truncate,
splice, dictionary tokens, huge numbers; some inputs fully random), runs each under a per-input
wall-time watchdog and sorts the outcome into

* right answer: the runner accepted the input and checked the answer (a game definition that
  round-trips through its ACPC text; a state string that ``str()`` writes back unchanged);
* clean error: the runner raised one of the target's clean exceptions (``GameDefError``,
  ``StateError``: ``ValueError`` subclasses naming the field or position);
* escape: anything else: another exception, a wrong answer, or an input slower than
  ``--hang-s`` (a hang). The first few escapes are saved under ``--out`` (input + traceback).

Targets (``TARGETS`` below): ``gamedef`` (bytes of a ``.game`` file through
``holdem.gamedef.parse_gamedef_bytes``: size cap, UTF-8, ACPC limits), ``matchstate``
(``STATE``/``MATCHSTATE`` strings through ``Game.state`` on kuhn, leduc, hulhe, hunl, hunl20, a
no-limit leduc and two odd test games; corpus from random legal play), ``checkpoint`` (shard files
and manifests through ``blueprint.io.shard_file.fuzz_read_shard_bytes`` / ``blueprint.io.manifest.fuzz_read_manifest_bytes``,
and shard files against their run's layout as ``Trainer.load`` reads them: an accepted file holds
the layout's arrays, the rows' epochs of the right length and in range),
``blueprint`` (blueprint files through ``fuzz_read_blueprint_bytes``), ``saved`` (saved solves
through ``subgame.saved.fuzz_read_saved_bytes``) and ``abstraction`` (built card-abstraction
files, ``abstraction.bin``, through ``abstraction.storage.fuzz_read_abstraction_bytes``, with and
without the game; corpus: small-deck builds made on the spot, a 24-card three-round hold'em and
leduc). ``checkpoint`` and ``blueprint`` build their
corpus from small runs trained on the spot (kuhn, leduc, no-limit leduc) and mutate each file two
ways: its raw bytes (mostly caught by the lz4 checksums or the manifest digest) and "resealed"
(the decompressed msgpack stream of a shard or blueprint file is mutated and compressed again
with fresh checksums; a mutated manifest gets a fresh digest), so the mutations reach the
header, size, layout and value checks behind the checksums (abstraction files likewise: raw, or
their stream resealed). For them a refusal (the entry point returns None) is the clean error, an
accepted file is checked (finite tables, probability rows in [0, 1]; abstraction tables of the
deal's class counts, buckets below their counts, the content hash), and any exception escaping
the entry point is an escape. Usage::

    python scripts/tools/fuzz_parsers.py --target all --count 1000000 --seed 0
    python scripts/tools/fuzz_parsers.py --target matchstate --time-limit 600
    python scripts/tools/fuzz_parsers.py --target blueprint --count 1000000 --time-limit 600
    python scripts/tools/fuzz_parsers.py --target abstraction --count 1000000 --time-limit 600

prints a progress line every 10 s and, per target, one summary line and a JSON line; the exit
status is 1 when anything escaped. No dependency beyond the project (no Hypothesis).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import resource
import signal
import struct
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lz4.frame
import msgpack
import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.io.blueprint_file import (
    BLUEPRINT_FORMAT_NAME,
    BLUEPRINT_MAGIC,
    BLUEPRINT_NAME,
    BLUEPRINT_ROW_TOLERANCE,
    fuzz_read_blueprint_bytes,
)
from blueprint.io.errors import CheckpointError
from blueprint.io.manifest import MANIFEST_NAME, fuzz_read_manifest_bytes, manifest_digest, read_manifest
from blueprint.io.shard_file import SHARD_MAGIC, fuzz_read_shard_bytes, read_shard_bytes, shard_name
from holdem import Game, GameDefError, StateError
from holdem.gamedef import PRESETS, parse_gamedef, parse_gamedef_bytes
from subgame.saved import SAVED_MAGIC, fuzz_read_saved_bytes

if __package__:  # imported as scripts.tools.fuzz_parsers (the tests)
    from .fuzz_games import ODD_LIMIT, ODD_NOLIMIT, fuzz_games, random_play, state_strings
else:  # run as a script: this folder is sys.path[0]
    from fuzz_games import ODD_LIMIT, ODD_NOLIMIT, fuzz_games, random_play, state_strings

ROOT = Path(__file__).resolve().parents[2]

Data = Any  # str or bytes: the mutated part of an input
Seed = tuple[Any, Data]  # (context passed to the runner unchanged, data to mutate)


class WrongAnswer(Exception):
    """A parse that succeeded with a wrong answer: an escape."""


class Hang(BaseException):
    """Raised by the watchdog's SIGALRM in the middle of a slow input (BaseException so that no
    ``except Exception`` in the code under test can swallow it)."""


@dataclasses.dataclass(frozen=True)
class Target:
    """One parser to fuzz.

    build_corpus: ``rng -> [(context, data), ...]`` valid (or interesting) inputs; ``data`` is
        str or bytes, all of one type per target.
    run: ``(context, data) -> None``: returns on a right answer (checking it; raise
        :class:`WrongAnswer` for a wrong one), raises a ``clean`` exception on a clean error.
    clean: the exceptions that are a clean error.
    tokens: dictionary words (of the data's type) the mutator inserts or swaps in.
    focus: optional ``data -> index`` where the interesting part starts (after a fixed header);
        most edits then land at or after it, so that fewer inputs die on the header.
    """

    build_corpus: Callable[[random.Random], list[Seed]]
    run: Callable[[Any, Data], None]
    clean: tuple[type[BaseException], ...]
    tokens: tuple = ()
    focus: Callable[[Data], int] | None = None


# -- mutation ----------------------------------------------------------------------------------------
# fmt: off
HUGE_NUMBERS = (
    "0", "1", "-1", "2", "3", "4", "5", "7", "8", "10", "13", "64", "255", "256", "65536", "2147483647",
    "2147483648", "-2147483648", "-2147483649", "4294967295", "4294967296", "499999999", "42147483648",
    "99999999999999999999", "00000000000001", "1" + "0" * 40, "9" * 5000,
)
# fmt: on
ODD_CHARS = "\x00\t\n\r\x0b\x0c\x1c\x85\u2028\u00a0\u00b2\u0663\uff11\ud800\U0001f0a1 #=:|/"


def _chunk(data: Data, rng: random.Random, alphabet: Data) -> Data:
    """A short random run of ``data``'s type."""
    n = rng.choice((1, 1, 1, 2, 3, 8))
    if isinstance(data, bytes):
        if rng.random() < 0.3:
            return bytes(rng.randrange(256) for _ in range(n))
        return bytes(rng.choice(alphabet) for _ in range(n))
    if rng.random() < 0.15:
        return "".join(
            rng.choice(ODD_CHARS) if rng.random() < 0.7 else chr(rng.randrange(0x110000)) for _ in range(n)
        )
    return "".join(rng.choice(alphabet) for _ in range(n))


def mutate(
    data: Data, rng: random.Random, corpus_data: list[Data], alphabet: Data, tokens: tuple, focus=None
) -> Data:
    """One to four random edits of ``data`` (most at or after ``focus(data)`` when given)."""
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        n = len(data)
        lo = min(focus(data), n) if focus is not None and rng.random() < 0.85 else 0
        i = rng.randint(lo, n)
        j = min(n, i + rng.choice((1, 1, 2, 3, 5, 10, 40)))
        op = rng.randrange(11)
        if op == 0:  # insert
            data = data[:i] + _chunk(data, rng, alphabet) + data[i:]
        elif op == 1:  # delete a span
            data = data[:i] + data[j:]
        elif op == 2:  # replace a span
            data = data[:i] + _chunk(data, rng, alphabet) + data[j:]
        elif op == 3:  # truncate
            data = data[:i]
        elif op == 4:  # splice with another seed
            other = rng.choice(corpus_data)
            data = data[:i] + other[rng.randint(0, len(other)) :]
        elif op in (5, 6) and tokens:  # a dictionary token in, or over a span
            tok = rng.choice(tokens)
            data = data[:i] + tok + (data[i:] if op == 5 else data[j:])
        elif op == 7:  # a number in, or a number's digits changed
            num = rng.choice(HUGE_NUMBERS)
            tok = num.encode() if isinstance(data, bytes) else num
            data = data[:i] + tok + data[j if rng.random() < 0.5 else i :]
        elif op == 8:  # repeat a span (now and then into a big input)
            k = rng.choice((2, 3, 10, 100)) if rng.random() < 0.97 else rng.choice((10_000, 300_000))
            data = data[:i] + data[i:j] * k + data[j:]
        elif op == 9:  # swap two spans
            a, b = sorted((rng.randint(0, n), rng.randint(0, n)))
            data = data[:i] + data[a:b] + data[j:] if a >= j or b <= i else data
        else:  # flip one character / byte
            if n:
                k = rng.randrange(n)
                if isinstance(data, bytes):
                    data = data[:k] + bytes([data[k] ^ (1 << rng.randrange(8))]) + data[k + 1 :]
                else:
                    data = data[:k] + chr(ord(data[k]) ^ (1 << rng.randrange(7))) + data[k + 1 :]
    return data


def random_input(kind: type, rng: random.Random, alphabet: Data) -> Data:
    n = rng.choice((0, 1, 2, 5, 10, 30, 100, 300))
    if kind is bytes:
        return bytes(rng.choice(alphabet) if rng.random() < 0.8 else rng.randrange(256) for _ in range(n))
    return "".join(rng.choice(alphabet) if rng.random() < 0.9 else rng.choice(ODD_CHARS) for _ in range(n))


# -- target: gamedef ------------------------------------------------------------------------------------


def game_files() -> list[Path]:
    dirs = [ROOT.parent / "shared" / "games", ROOT / "tests" / "data" / "games", ROOT / "tests" / "data"]
    return sorted({p.resolve() for d in dirs if d.is_dir() for p in d.glob("*.game")})


def gamedef_corpus(rng: random.Random) -> list[Seed]:
    texts = [p.read_bytes() for p in game_files()]
    texts += [gd.to_acpc().encode() for gd in PRESETS.values()]
    texts += [ODD_LIMIT.encode(), ODD_NOLIMIT.encode()]
    texts += [b"# comment\n" + t.lower() for t in texts[:3]]
    return [("fuzz", t) for t in texts]


# fmt: off
GAMEDEF_TOKENS = tuple(
    t.encode()
    for t in (
        "GAMEDEF\n", "END GAMEDEF\n", "\nlimit\n", "\nnolimit\n", "numPlayers = ", "numRounds = ",
        "stack = ", "blind = ", "raiseSize = ", "firstPlayer = ", "maxRaises = ", "numSuits = ",
        "numRanks = ", "numHoleCards = ", "numBoardCards = ", "\nnumRounds = 499999999\n",
        "\nnumRounds = 42147483648\n", "\nnumBoardCards = 1 1 1 1 1 1 1 1\n",
        "\nfirstPlayer = " + "1 " * 1000 + "\n", " = ", "#", "\n", "\r\n", " 1", " 0", " -1",
        " 2147483648", "\nnumHoleCards = 4\n", "\nnumSuits = 5\n", "\nmaxRaises = 256\n",
        "\nstack = 1 1\n", "\nblind = 0 0\n", "\xff", "\u00e9",
    )
) + (b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80")
# fmt: on
GAMEDEF_ALPHABET = b"0123456789 =\n#-+abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def gamedef_focus(data: bytes) -> int:
    return data.find(b"\n") + 1


def run_gamedef(name: str, data: bytes) -> None:
    gd = parse_gamedef_bytes(data, name=name)
    if parse_gamedef(gd.to_acpc(), name=name) != gd:
        raise WrongAnswer(f"parse(to_acpc()) differs from the parse: {gd!r}")


# -- target: matchstate ---------------------------------------------------------------------------------
def matchstate_corpus(rng: random.Random, hands_per_game: int = 40) -> list[Seed]:
    seeds = []
    for game in fuzz_games([ROOT / "tests" / "data" / "leduc_nolimit.game"]).values():
        for _ in range(hands_per_game):
            for s in random_play(game, rng):
                seeds += [(game, t) for t in state_strings(s)]
    return seeds


# fmt: off
MATCHSTATE_TOKENS = (
    "MATCHSTATE:", "STATE:", "MATCHSTATE:0:0:", "MATCHSTATE:1:", ":", "|", "/", "//", "r", "c", "f", "cc/",
    "r20000", "r99999999999999999999", "r" + "9" * 5000, "4294967296", "4294967295", "-300|300", ":a|b",
    "Ah", "Kd", "2c", "Xx", "A", "k", "b", "r0", "r01", "\r\n", " ", "r300c/", "/" * 10, "c" * 70,
)
# fmt: on
MATCHSTATE_ALPHABET = "0123456789rcf/|:AKQJT98765432cdhsMATCHSTE-ab"


def matchstate_focus(text: str) -> int:
    """The start of the betting (after ``MATCHSTATE:<pos>:<hand>:`` or ``STATE:<hand>:``)."""
    k = 3 if text.startswith("MATCHSTATE:") else 2
    i = -1
    for _ in range(k):
        i = text.find(":", i + 1)
        if i < 0:
            return 0
    return i + 1


def run_matchstate(game: Game, text: str) -> None:
    s = game.state(text)
    again = str(s)
    if again != text:
        raise WrongAnswer(f"str(state) is {again!r}")
    s.legal_actions()  # the parsed state answers its queries
    s.current_player()


# -- targets: checkpoint, blueprint (the binary files of blueprint/io/) -------------------------
class Refused(Exception):
    """The fuzz entry point returned None: the file was refused (a clean error)."""


_FILE_HEADER = struct.Struct("<8sII")  # magic, format version, codec (1: one lz4 frame)


def _wrap(magic: bytes, stream: bytes) -> bytes:
    """A shard or blueprint file around a (mutated) decompressed stream, checksums recomputed."""
    return _FILE_HEADER.pack(magic, 1, 1) + lz4.frame.compress(
        stream, block_checksum=True, content_checksum=True
    )


def _stream(data: bytes) -> bytes:
    return lz4.frame.decompress(data[_FILE_HEADER.size :])


def _reseal_manifest(data: bytes) -> bytes:
    """A mutated manifest with its digest recomputed (as a forger would), when it still unpacks to a
    map; else the bytes as they are. Unpacked with limits: the harness must not blow up either."""
    n = len(data)
    try:
        fields = msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=False,
            max_str_len=n,
            max_bin_len=n,
            max_array_len=n,
            max_map_len=n,
            max_ext_len=0,
        )
        if not isinstance(fields, dict):
            return data
        fields.pop("manifest_blake2b", None)
        fields["manifest_blake2b"] = manifest_digest(fields)
        return msgpack.packb(fields, use_bin_type=True)
    except Exception:  # noqa: BLE001 - not a map any more: the reader sees the mutated bytes
        return data


_RUNS: dict[str, list[Path]] = {}


def _small_run_checkpoints() -> list[Path]:
    """Checkpoint directories of small runs trained here (once per process)."""
    if "dirs" not in _RUNS:
        import tempfile

        from blueprint.trainer import make_trainer

        root = Path(tempfile.mkdtemp(prefix="fuzz-runs-"))
        dirs = []
        for i, kw in enumerate(
            (
                dict(game="kuhn", algo="cfr+"),
                dict(game="leduc", algo="pluribus", seed=1),
                dict(game=str(ROOT / "tests" / "data" / "leduc_nolimit.game"), bets="fcpa"),
                dict(game="leduc", algo="dcfr", seed=2, discount_every=10),  # rows' epochs 0 to 5
            )
        ):
            tr = make_trainer(**kw)
            tr.run(50)
            dirs.append(tr.save(root / f"run{i}"))
            # the shard's layout as Trainer.load checks it (the rows' epochs' length and range)
            _LAYOUTS.append(tr.checkpoint_layout(read_manifest(dirs[-1]))[0])
        _RUNS["dirs"] = dirs
    return _RUNS["dirs"]


_LAYOUTS: list[dict] = []  # per small run, its shard's layout (ArraySpec by name)


def checkpoint_corpus(rng: random.Random) -> list[Seed]:
    seeds: list[Seed] = []
    for d in _small_run_checkpoints():
        shard = (d / shard_name(0)).read_bytes()
        manifest = (d / MANIFEST_NAME).read_bytes()
        seeds += [
            (("shard", "raw"), shard),
            (("shard", "stream"), _stream(shard)),
            (("manifest", "raw"), manifest),
            (("manifest", "reseal"), manifest),
        ]
    for k, d in enumerate(_small_run_checkpoints()):
        shard = (d / shard_name(0)).read_bytes()
        seeds += [(("layout", "raw", k), shard), (("layout", "stream", k), _stream(shard))]
    return seeds


def blueprint_corpus(rng: random.Random) -> list[Seed]:
    seeds: list[Seed] = []
    for d in _small_run_checkpoints():
        data = (d / BLUEPRINT_NAME).read_bytes()
        seeds += [
            (("blueprint", "raw"), data),
            (("blueprint", "stream"), _stream(data)),
            (("blueprint", "stream"), _stream(data)),
        ]  # resealed twice as often: it gets further
    return seeds


def _check_arrays(arrays: Any) -> None:
    if not isinstance(arrays, dict) or not all(isinstance(a, np.ndarray) for a in arrays.values()):
        raise WrongAnswer(f"accepted, but the arrays are {type(arrays).__name__}")
    for name, a in arrays.items():
        if a.dtype.kind in "fc" and not np.isfinite(a).all():
            raise WrongAnswer(f"accepted array {name!r} with non-finite values")


def run_checkpoint(context: tuple, data: bytes) -> None:
    kind, mode = context[:2]
    if kind == "layout":  # read against the run's layout, as Trainer.load does
        spec = _LAYOUTS[context[2]]
        try:
            arrays, _ = read_shard_bytes(
                _wrap(SHARD_MAGIC, data) if mode == "stream" else data, "<fuzz>", spec
            )
        except CheckpointError:
            raise Refused() from None
        _check_arrays(arrays)
        for name, want in spec.items():
            a = arrays.get(name)
            if a is None or a.dtype != want.dtype or a.shape != want.shape:
                raise WrongAnswer(f"accepted array {name!r} off the layout: {None if a is None else a.dtype}")
            if a.size and want.min is not None and a.min() < want.min:
                raise WrongAnswer(f"accepted array {name!r} below {want.min}")
            if a.size and want.max is not None and a.max() > want.max:
                raise WrongAnswer(f"accepted array {name!r} above {want.max}")
        return
    if kind == "shard":
        got = fuzz_read_shard_bytes(_wrap(SHARD_MAGIC, data) if mode == "stream" else data)
        if got is None:
            raise Refused()
        arrays, meta = got
        _check_arrays(arrays)
        if not isinstance(meta, dict):
            raise WrongAnswer(f"accepted shard meta {meta!r}")
        return
    got = fuzz_read_manifest_bytes(_reseal_manifest(data) if mode == "reseal" else data)
    if got is None:
        raise Refused()
    if not isinstance(got, dict) or not isinstance(got.get("files"), list):
        raise WrongAnswer(f"accepted manifest without a file list: {str(got)[:200]}")


def run_blueprint(context: tuple[str, str], data: bytes) -> None:
    _, mode = context
    got = fuzz_read_blueprint_bytes(_wrap(BLUEPRINT_MAGIC, data) if mode == "stream" else data)
    if got is None:
        raise Refused()
    meta, arrays = got
    _check_arrays(arrays)
    probs = arrays["probs"]
    if probs.size and (float(probs.min()) < 0.0 or float(probs.max()) > 1.0 + BLUEPRINT_ROW_TOLERANCE):
        raise WrongAnswer("accepted a strategy outside [0, 1]")
    if not isinstance(meta, dict) or meta.get("format") != BLUEPRINT_FORMAT_NAME:
        raise WrongAnswer(f"accepted a blueprint header {str(meta)[:200]}")


#: the blueprint the depth-limited saved solves of the corpus were solved with (their reader needs it)
_SAVED_BP: list = []


def saved_corpus(rng: random.Random) -> list[Seed]:
    """Saved solves (subgame.saved) of a no-limit Leduc flop subgame, solved here: unsafe with a
    lock, and resolve (gadget tables) with random alternative values; and from a Leduc blueprint
    trained here, a depth-limited pre-flop solve (resolve: leaf tables, generator state) and a
    nested one after an off-tree raise (its real path)."""
    import tempfile

    from abstraction.bets import load_bets
    from blueprint.blueprint import Blueprint
    from blueprint.trainer import make_trainer
    from holdem.betting import CALL, Betting
    from holdem.gamedef import load_gamedef
    from subgame.construct import from_matchstate
    from subgame.depth import DepthLimit
    from subgame.nested import solve_state
    from subgame.saved import save_solve
    from subgame.solver import solve
    from subgame.tree import board_hands, build_subgame_tree
    from subgame.types import Subgame

    game = load_gamedef(str(ROOT / "tests" / "data" / "leduc_nolimit.game"))
    root = Betting.initial(game).apply(CALL).apply(CALL)
    bets = load_bets("fcpa")
    tree = build_subgame_tree(game, root, (0,), bets)
    ranges = np.stack([board_hands(tree).valid[tree.board[0]]] * 2).astype(float)
    out = Path(tempfile.mkdtemp(prefix="fuzz-saved-"))
    seeds: list[Seed] = []
    for i, (method, locks) in enumerate(
        (("unsafe", {"": {"c": 0.5, tree.action_labels(0)[-1]: 0.5}}), ("resolve", None))
    ):
        sub = Subgame(game, root, (0,), ranges, bets, tree=tree, alt=np.linspace(-1, 1, ranges.shape[1]))
        path = out / f"s{i}.msgpack.lz4"
        save_solve(path, solve(sub, method, iterations=3, locks=locks, keep_state=True))
    tr = make_trainer(str(ROOT / "tests" / "data" / "leduc_nolimit.game"), bets="fcpa", algo="dcfr")
    tr.run(2000)
    bp = Blueprint(tr)
    _SAVED_BP[:] = [bp]
    sub, _ = from_matchstate(bp, "MATCHSTATE:1:0::|4c")
    sub.depth_limit = DepthLimit(bp, samples=2)
    save_solve(out / "s2.msgpack.lz4", solve(sub, "resolve", iterations=3, keep_state=True))
    nested, _ = solve_state(
        bp, bp.game.state("MATCHSTATE:0:0:r333:4c|"), "unsafe", iterations=3, keep_state=True
    )
    save_solve(out / "s3.msgpack.lz4", nested)
    for path in sorted(out.glob("s*.msgpack.lz4")):
        data = path.read_bytes()
        seeds += [
            (("saved", "raw"), data),
            (("saved", "stream"), _stream(data)),
            (("saved", "stream"), _stream(data)),
        ]
    return seeds


def run_saved(context: tuple[str, str], data: bytes) -> None:
    _, mode = context
    got = fuzz_read_saved_bytes(_wrap(SAVED_MAGIC, data) if mode == "stream" else data, _SAVED_BP[0])
    if got is None:
        raise Refused()
    if got.state.regret.dtype != np.float32 or not np.isfinite(got.state.regret).all():
        raise WrongAnswer("accepted a saved solve with bad regrets")
    if (got.subgame.ranges < 0).any() or (got.state.strat_sum < 0).any():
        raise WrongAnswer("accepted negative ranges or strategy sums")


# -- target: abstraction (built card-abstraction files, abstraction/storage.py) ---------------------------
_ABS: dict[str, Any] = {}


def _abstraction_games() -> dict[str, Any]:
    from holdem.gamedef import GameDef

    tiny = GameDef(  # a 24-card, three-round hold'em (as tests/abstraction)
        "nolimit",
        3,
        (2000, 2000),
        (100, 50),
        (0, 0, 0),
        (1, 0, 0),
        (255, 255, 255),
        4,
        6,
        2,
        (0, 3, 1),
        "tiny",
    )
    return {"tiny": (tiny, (10, 8, 8)), "leduc": (PRESETS["leduc"], (3, 4))}


def abstraction_corpus(rng: random.Random) -> list[Seed]:
    import tempfile

    from abstraction.buckets import build_buckets

    if "files" not in _ABS:
        root = Path(tempfile.mkdtemp(prefix="fuzz-abstractions-"))
        _ABS["files"] = {}
        for key, (game, counts) in _abstraction_games().items():
            build_buckets(game, counts, "ehs2", root / key, progress=False, log=lambda m: None)
            _ABS["files"][key] = (root / key / "abstraction.bin").read_bytes()
    seeds: list[Seed] = []
    for key, data in _ABS["files"].items():
        for with_game in (True, False):
            seeds += [
                ((key, with_game, "raw"), data),
                ((key, with_game, "stream"), lz4.frame.decompress(data[12:])),
                ((key, with_game, "stream"), lz4.frame.decompress(data[12:])),
            ]  # resealed twice as often: it gets further
    return seeds


def run_abstraction(context: tuple[str, bool, str], data: bytes) -> None:
    from abstraction.isomorphism import HandIndexer
    from abstraction.storage import MAGIC, VERSION, content_hash, fuzz_read_abstraction_bytes

    key, with_game, mode = context
    game = _abstraction_games()[key][0]
    if mode == "stream":
        data = MAGIC + struct.pack("<I", VERSION) + lz4.frame.compress(data)
    got = fuzz_read_abstraction_bytes(data, game if with_game else None)
    if got is None:
        raise Refused()
    header, tables = got
    sizes = [len(t) for t in tables]
    if with_game:
        ix = HandIndexer.for_game(game)
        if sizes != [ix.size(r) for r in range(game.num_rounds)]:
            raise WrongAnswer(f"accepted tables of {sizes} classes for {key}")
    if sizes != header["sizes"] or any(t.dtype != np.uint16 for t in tables):
        raise WrongAnswer(f"accepted tables of {sizes} classes, the header says {header['sizes']}")
    if any(len(t) and int(t.max()) >= b for t, b in zip(tables, header["buckets"])):
        raise WrongAnswer("accepted a bucket beyond its round's count")
    if content_hash(header["cards"], header["method"], header["buckets"], tables) != header["hash"]:
        raise WrongAnswer("accepted tables whose content hash is not the header's")


# fmt: off
MSGPACK_TOKENS = (
    b"\xdd\x0f\xff\xff\xff", b"\xdf\x0f\xff\xff\xff", b"\xc6\xff\xff\xff\xff", b"\xc6\x00\x00\x00\x04",
    b"\xdb\xff\xff\xff\xff", b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff", b"\xd3\x80\x00\x00\x00\x00\x00\x00\x00",
    b"\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00", b"\xcb\x7f\xf0\x00\x00\x00\x00\x00\x00", b"\xca\x7f\xc0\x00\x00",
    b"\xd4\x01\x00", b"\xc7\x01\x05\x00", b"\xc0", b"\xc2", b"\xc3", b"\x90", b"\x80", b"\x91\x00", b"\xff",
    b"\xa5probs", b"\xa5shape", b"\xa6nbytes", b"\xa6chunks", b"\xa5dtype", b"\xa4meta", b"\xa6arrays",
    b"\xa3<f4", b"\xa3<f8", b"\xa3>f4", b"\xa3|b1", b"\xa3<c8", b"\xa3<i8", b"\xa3|O8", b"\xa4<U10",
    b"\xa9iteration", b"\xa7seconds", b"\xa6t_base", b"\xa6w_base", b"\xa5files", b"\xa5bytes",
    b"\xa9num_nodes", b"\xaetable_entries", b"\xabnum_buckets", b"\xa4tree", b"\xa5cards", b"\xa4hash",
    b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f", b"\x00\x00\x80\xbf", b"\x00\x00\x00\x40",
    b"MCCFRSHD", b"MCCFRBPF", b"MCCFRMAN", b"\x04\x22\x4d\x18",
    b"MCCFRSLV", b"\xa6regret", b"\xa9strat_sum", b"\xa4root", b"\xa5board", b"\xa9tree_hash",
)
ABSTRACTION_TOKENS = MSGPACK_TOKENS[:19] + (
    b"\xa6header", b"\xa6tables", b"\xa7version", b"\xa5cards", b"\xa6method", b"\xa7buckets", b"\xa5sizes",
    b"\xa4hash", b"\xc4\x48", b"\xc5\x00\x48", b"\xc6\x00\x00\x00\x48", b"\xa4ehs2", b"\xa9potential",
    b"MCCFRABS", b"\x04\x22\x4d\x18",
)
# fmt: on


# -- the registry -------------------------------------------------------------------------------------
# -- target: request (HTTP request bodies of the query service, serving/) ------------------------
class Rejected(Exception):
    """The service answered the body with a JSON 4xx (a clean error)."""


_APP = None


def _request_app():
    """The query service's app in this process (no sockets) over a small hold'em blueprint
    (hunl20, `small` bets, `rank` buckets, 1,000 iterations: the service tests' blueprint)."""
    global _APP
    if _APP is None:
        from blueprint.blueprint import Blueprint
        from blueprint.trainer import make_trainer
        from mccfr.serving.responders import BlueprintResponder
        from mccfr.serving.service import create_app

        tr = make_trainer("hunl20", bets="small", cards="rank", algo="pluribus", seed=1)
        tr.run(1000)
        responder = BlueprintResponder(Blueprint(tr))
        responder.warm_up()
        _APP = create_app(responder, max_body_bytes=4096)
    return _APP


def request_corpus(rng: random.Random, hands: int = 60) -> list[Seed]:
    game = Game.load("hunl20")
    seeds: list[Seed] = []
    for h in range(hands):
        for st in random_play(game, rng):
            if st.is_terminal() or st.is_chance():
                continue
            ms = st.matchstate(st.current_player())
            body = {"matchstate": ms}
            if h % 3 == 1:
                body["session"] = f"hand-{h}"
            if h % 3 == 2:
                body.update(time_budget_ms=rng.choice((1, 50, 2000)), method="blueprint")
            seeds.append((None, json.dumps(body).encode()))
    return seeds


def run_request(context, data: bytes) -> None:
    from mccfr.serving.fuzz import check_body

    status, _ = check_body(_request_app(), data)  # raises FuzzFailure (an escape) on a 5xx or a bad answer
    if 400 <= status < 500:
        raise Rejected()


REQUEST_TOKENS = (
    b'{"matchstate": ',
    b'"session": ',
    b'"time_budget_ms": ',
    b'"method": ',
    b'"blueprint"',
    b'"resolve"',
    b"null",
    b"true",
    b"1e309",
    b"-1",
    b"99999999999999999999999",
    b"[",
    b"]",
    b"{",
    b"}",
    b",",
    b":",
    b'"\\ud800"',
    b"\\u0000",
    b"\\",
    b'"',
    b"\xff",
    b"MATCHSTATE:",
    b"r20000",
    b"|",
    b"/",
    b"\n",
)


# name -> Target(corpus builder, runner, clean exceptions, dictionary tokens, focus).
# To fuzz another parser, add an entry here, e.g.
#   "request":    HTTP request bodies of the query service (serving/): corpus = recorded valid JSON
#                 bodies (bytes), run = the app's request validation/parsing, clean = its 4xx error
#                 type(s).
# Nothing else in this file needs to change: the mutator works on any str or bytes data.
TARGETS: dict[str, Target] = {
    "gamedef": Target(gamedef_corpus, run_gamedef, (GameDefError,), GAMEDEF_TOKENS, gamedef_focus),
    "matchstate": Target(
        matchstate_corpus, run_matchstate, (StateError,), MATCHSTATE_TOKENS, matchstate_focus
    ),
    # shard files (raw, or their msgpack stream resealed) and manifests (raw, or with a fresh digest)
    "checkpoint": Target(checkpoint_corpus, run_checkpoint, (Refused,), MSGPACK_TOKENS),
    # blueprint files (raw, or their msgpack stream resealed)
    "blueprint": Target(blueprint_corpus, run_blueprint, (Refused,), MSGPACK_TOKENS),
    # abstraction.bin files (raw, or their msgpack stream resealed), with and without the game
    "abstraction": Target(abstraction_corpus, run_abstraction, (Refused,), ABSTRACTION_TOKENS),
    # POST /v1/strategy bodies through the app in-process (mccfr.serving.fuzz.check_body)
    "request": Target(request_corpus, run_request, (Rejected,), REQUEST_TOKENS),
    # saved solves (subgame/saved.py; raw, or their msgpack stream resealed)
    "saved": Target(saved_corpus, run_saved, (Refused,), MSGPACK_TOKENS),
}
ALPHABETS = {"gamedef": GAMEDEF_ALPHABET, "matchstate": MATCHSTATE_ALPHABET}


# -- the loop -------------------------------------------------------------------------------------------
def _on_alarm(signum, frame):
    raise Hang()


def _save(out_dir: Path, target: str, k: int, context: Any, data: Data, what: str) -> None:
    d = out_dir / target
    d.mkdir(parents=True, exist_ok=True)
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    (d / f"escape-{k:03d}.input").write_bytes(raw)
    ctx = getattr(context, "name", None) or str(context)
    (d / f"escape-{k:03d}.txt").write_text(f"context: {ctx}\ninput: {data[:2000]!r}\n\n{what}\n")


def _run_one(target: Target, context: Any, data: Data, hard_s: float) -> tuple[str, str, str, float]:
    """``(outcome, details, signature, seconds)`` of one input, interrupted after ``hard_s``."""
    outcome, what, sig = "", "", ""
    start = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, hard_s)
    try:
        target.run(context, data)
        outcome = "right"
    except target.clean:
        outcome = "clean"
    except Hang:
        outcome, what, sig = "escape", f"hang: still running after {hard_s} s", "hang (interrupted)"
    except Exception as exc:  # noqa: BLE001 - anything else is exactly what we look for
        outcome, what = "escape", "".join(traceback.format_exception(exc))
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        sig = f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return outcome, what, sig, time.perf_counter() - start


def fuzz_target(name: str, args) -> dict:
    target = TARGETS[name]
    rng = random.Random(f"{args.seed}:{name}")
    corpus = target.build_corpus(rng)
    corpus_data = [d for _, d in corpus]
    kind = type(corpus_data[0])
    alphabet = ALPHABETS.get(name) or (b"" if kind is bytes else "").join(
        sorted({c for d in corpus_data for c in (d if kind is str else [bytes([b]) for b in d])})
    )
    corpus_right = 0
    for context, data in corpus:  # the corpus itself must not escape (and this warms up lazy compiles)
        try:
            target.run(context, data)
            corpus_right += 1
        except target.clean:
            pass
    counts = Counter()
    signatures: Counter = Counter()
    slowest = (0.0, None)
    saved = 0
    out_dir = Path(args.out)
    t0 = last = time.perf_counter()
    deadline = t0 + args.time_limit if args.time_limit else float("inf")
    n = 0
    while n < args.count and time.perf_counter() < deadline:
        n += 1
        if rng.random() < 0.05:
            context, data = rng.choice(corpus)[0], random_input(kind, rng, alphabet)
        else:
            context, data = rng.choice(corpus)
            data = mutate(data, rng, corpus_data, alphabet, target.tokens, target.focus)
        outcome, what, sig, took = _run_one(target, context, data, args.hard_s)
        if took > slowest[0]:
            slowest = (took, data[:80])
        if outcome != "escape" and took > args.hang_s:
            # wall time on a loaded machine can stall: a hang is an input slow twice in a row
            again = _run_one(target, context, data, args.hard_s)
            if again[0] == "escape" or again[3] > args.hang_s:
                what = f"hang: {took:.2f} s then {again[3]:.2f} s (limit {args.hang_s} s); outcome {outcome}"
                outcome = "escape"
                sig = f"hang (slower than {args.hang_s} s twice)"
            else:
                counts["slow_once"] += 1
        counts[outcome] += 1
        if outcome == "escape":
            signatures[sig] += 1
            if saved < args.save:
                _save(out_dir, name, saved, context, data, what)
                saved += 1
        now = time.perf_counter()
        if now - last >= 10:
            last = now
            print(
                f"[{name}] {n:,} inputs, {counts['escape']} escapes, {n / (now - t0):,.0f}/s, {now - t0:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    wall = time.perf_counter() - t0
    return {
        "target": name,
        "inputs": n,
        "right": counts["right"],
        "clean": counts["clean"],
        "escapes": counts["escape"],
        "slow_once": counts["slow_once"],  # slower than --hang-s once, fast on the re-run: load, not a hang
        "escape_kinds": dict(signatures.most_common(10)),
        "inputs_per_s": round(n / wall, 1) if wall else None,
        "wall_s": round(wall, 1),
        "slowest_s": round(slowest[0], 4),
        "slowest_input": repr(slowest[1]),
        "corpus": len(corpus),
        "corpus_right": corpus_right,
        "seed": args.seed,
        "saved_to": str(out_dir / name) if saved else None,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--target", default="all", choices=[*TARGETS, "all"])
    ap.add_argument("--count", type=int, default=1_000_000, help="inputs per target (default 1,000,000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=0, help="seconds per target (0: none)")
    ap.add_argument(
        "--hang-s",
        type=float,
        default=1.0,
        help="an input slower than this twice in a row is a hang (escape)",
    )
    ap.add_argument("--hard-s", type=float, default=10.0, help="interrupt an input after this long")
    ap.add_argument(
        "--max-memory-mb",
        type=int,
        default=4096,
        help="address-space cap (0: none): a runaway allocation is a MemoryError escape",
    )
    ap.add_argument("--save", type=int, default=10, help="escaping inputs saved per target")
    ap.add_argument(
        "--out", default="runs/fuzz-escapes", help="directory for the saved escapes (runs/ is git-ignored)"
    )
    args = ap.parse_args(argv)
    if args.max_memory_mb:
        cap = args.max_memory_mb << 20
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or hard > cap:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    signal.signal(signal.SIGALRM, _on_alarm)
    names = list(TARGETS) if args.target == "all" else [args.target]
    results = []
    for name in names:
        r = fuzz_target(name, args)
        results.append(r)
        print(
            f"{name}: {r['inputs']:,} inputs, {r['right']:,} right answers, {r['clean']:,} clean errors,"
            f" {r['escapes']} escapes; {r['inputs_per_s']:,.0f} inputs/s, {r['wall_s']} s wall,"
            f" slowest input {r['slowest_s']} s ({r['slow_once']} slow once, fast on re-run)",
            flush=True,
        )
        print(json.dumps(r), flush=True)
    return 1 if any(r["escapes"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
