"""Saved solves: a subgame, its solver's tables and its schedule in one file, to reopen, browse or
continue (``mccfr solve ... --save FILE``, ``mccfr solve --load FILE``).

File format (version 1): the checkpoint container of :mod:`blueprint.io.container` (magic
``b"MCCFRSLV"``, format version 1, codec 1: one lz4 frame, array data in chunks of at most 1 MiB),
read with its rules: regular files only, every declared size checked against the file and the
layout before anything is allocated, decompression bounded. The header's ``meta``:

``format`` ``"mccfr-saved-solve"``, ``format_version`` 1, ``method``, ``algo``, ``precision``,
``iterations`` (done so far), ``schedule`` ``{"next_check": int, "prev": [iteration, gap % pot] or
None}`` (the exploitability-check schedule of a solve with a target), ``locks`` (the
:data:`subgame.locking.LockSpec` or None), ``subgame`` ``{"game": ACPC text, "root": the betting
string from the start of the hand, "board": [card ids], "bets": TOML or None (limit games),
"refine": seat, "tree_hash": the public tree's content hash, "num_hands": H, "table_entries": E,
"values": the names of the optional value arrays present}`` and ``report`` (the solution's
diagnostics when saved: JSON-able, for display only).

Arrays: ``ranges`` ``<f8[2, H]``; each of ``alt``, ``estimate``, ``gifts``, ``estimate_gifts``
that the subgame has, ``<f8[H]``; ``regret`` and ``strat_sum`` ``<f4[E]`` (the compact tables of
:mod:`subgame.kernels`; strategy sums at least 0); ``gadget_regret`` and ``gadget_sum`` ``<f8[H, 2]``
(``resolve``) or ``<f8[H]`` (the other safe methods), absent for ``unsafe``.

The reader rebuilds the public tree from ``game``, ``root``, ``board`` and ``bets`` and checks its
hash before any array is allocated, and requires ``E <= rows x H``; continuing a solve
(:func:`subgame.solver.solve` with ``resume=``) checks ``E`` against the engine it builds.
Depth-limited subgames (whose leaves come from a blueprint) and nested subgames (an off-tree
action in the tree) are not saved.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from abstraction.bets import BetAbstractionError, parse_bets
from blueprint.io.container import ArraySpec, FileFormat, decode_container, read_container, write_container
from blueprint.io.errors import CheckpointError
from holdem.betting import parse_betting
from holdem.files import BoundedReader
from holdem.gamedef import GameDefError, parse_gamedef
from subgame.locking import check_lock_spec
from subgame.solver import ALGOS, METHODS
from subgame.tree import MAX_NODES, SubgameError, build_subgame_tree
from subgame.types import Solution, SolveState, Subgame

__all__ = [
    "SAVED_FORMAT_NAME",
    "SAVED_FORMAT_VERSION",
    "SAVED_MAGIC",
    "SavedSolve",
    "fuzz_read_saved_bytes",
    "read_saved",
    "read_saved_bytes",
    "save_solve",
]

SAVED_MAGIC = b"MCCFRSLV"
SAVED_FORMAT_VERSION = 1
SAVED_FORMAT_NAME = "mccfr-saved-solve"
_FORMAT = FileFormat(SAVED_MAGIC, SAVED_FORMAT_VERSION, "saved solve", "saved solve", None, 1 << 20)
_VALUES = ("alt", "estimate", "gifts", "estimate_gifts")
_F8, _F4 = np.dtype("<f8"), np.dtype("<f4")
_MAX_GAME_CHARS = 1 << 16
_MAX_BETS_CHARS = 1 << 20
_MAX_ROOT_CHARS = 1 << 12


@dataclasses.dataclass
class SavedSolve:
    """A saved solve as read back: its subgame (tree built), method, algorithm, precision, the
    solver's state to continue from, the locks (as given) and the header (``report`` included)."""

    subgame: Subgame
    method: str
    algo: str
    precision: str
    state: SolveState
    locks: Optional[dict]
    meta: dict


def save_solve(path: str | os.PathLike[str], sol: Solution) -> int:
    """Write ``sol`` (solved with ``keep_state=True``, or continued) to ``path`` atomically;
    returns the file's size in bytes. :class:`SubgameError` for a solution without its solver
    state, or of a depth-limited or nested subgame."""
    st = sol.state
    if st is None:
        raise SubgameError("this solution kept no solver state: solve with keep_state=True to save it")
    sub = sol.subgame
    if sub.depth_limit is not None:
        raise SubgameError("a depth-limited subgame cannot be saved: its leaves come from the blueprint")
    if sub.action_filter is not None:
        raise SubgameError("a nested subgame (an off-tree action in its tree) cannot be saved")
    t = sol.tree
    H = sub.ranges.shape[1]
    values = [k for k in _VALUES if getattr(sub, k) is not None]
    meta = {
        "format": SAVED_FORMAT_NAME,
        "format_version": SAVED_FORMAT_VERSION,
        "method": sol.method,
        "algo": st.algo,
        "precision": st.precision,
        "iterations": int(st.iterations),
        "schedule": {"next_check": int(st.next_check), "prev": None if st.prev is None else list(st.prev)},
        "locks": sol.locks.spec if sol.locks is not None else None,
        "subgame": {
            "game": sub.game.to_acpc(),
            "root": sub.root.betting_string(),
            "board": [int(c) for c in sub.board],
            "bets": None if sub.game.is_limit or sub.bets is None else sub.bets.to_toml(),
            "refine": int(sub.seat),
            "tree_hash": t.content_hash(),
            "num_hands": int(H),
            "table_entries": int(st.regret.size),
            "values": values,
        },
        "report": _jsonable(sol.diagnostics()),
    }
    arrays: dict[str, np.ndarray] = {"ranges": np.asarray(sub.ranges, np.float64)}
    for k in values:
        arrays[k] = np.asarray(getattr(sub, k), np.float64)
    arrays["regret"] = st.regret
    arrays["strat_sum"] = st.strat_sum
    if sol.method != "unsafe":
        arrays["gadget_regret"] = np.asarray(st.g_reg, np.float64)
        arrays["gadget_sum"] = np.asarray(st.g_sum, np.float64)
    p = Path(path)
    entry = write_container(p.parent, p.name, _FORMAT, {}, arrays, meta, "the saved solve")
    return int(entry["bytes"])


def _jsonable(d: Mapping[str, Any]) -> dict:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, (np.floating, np.integer)):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        out[k] = v
    return out


class _Layout:
    """The header's checks and the arrays it implies (the reader's ``spec``): it keeps what it
    built (the game, root, tree) for :func:`_finish`."""

    def __init__(self, where: str):
        self.where = where
        self.built: dict[str, Any] = {}

    def fail(self, why: str) -> CheckpointError:
        return CheckpointError(f"saved solve {self.where}: {why}")

    def __call__(self, meta: dict[str, Any]) -> dict[str, ArraySpec]:
        if meta.get("format") != SAVED_FORMAT_NAME or meta.get("format_version") != SAVED_FORMAT_VERSION:
            raise self.fail(
                f"format {meta.get('format')!r} version {meta.get('format_version')!r}, expected "
                f"{SAVED_FORMAT_NAME!r} version {SAVED_FORMAT_VERSION}"
            )
        method, algo, prec = meta.get("method"), meta.get("algo"), meta.get("precision")
        if method not in METHODS or algo not in ALGOS or prec not in ("single", "double"):
            raise self.fail(f"unknown method / algorithm / precision {method!r} / {algo!r} / {prec!r}")
        its = meta.get("iterations")
        sched = meta.get("schedule")
        if (
            not _int_in(its, 0, 2**53)
            or not isinstance(sched, dict)
            or not _int_in(sched.get("next_check"), 0, 2**53)
        ):
            raise self.fail("bad iteration count or schedule")
        prev = sched.get("prev")
        if prev is not None and not (
            isinstance(prev, list)
            and len(prev) == 2
            and _int_in(prev[0], 0, 2**53)
            and isinstance(prev[1], (int, float))
        ):
            raise self.fail("bad schedule")
        if meta.get("locks") is not None:
            try:
                check_lock_spec(meta["locks"])
            except SubgameError as exc:
                raise self.fail(f"bad locks: {exc}") from None
        s = meta.get("subgame")
        if not isinstance(s, dict):
            raise self.fail("no subgame definition")
        game_text, root, board, bets = s.get("game"), s.get("root"), s.get("board"), s.get("bets")
        if not isinstance(game_text, str) or len(game_text) > _MAX_GAME_CHARS:
            raise self.fail("bad game definition")
        if not isinstance(root, str) or len(root) > _MAX_ROOT_CHARS:
            raise self.fail("bad root betting")
        if bets is not None and (not isinstance(bets, str) or len(bets) > _MAX_BETS_CHARS):
            raise self.fail("bad bet abstraction")
        if not isinstance(board, list) or len(board) > 64 or not all(_int_in(c, 0, 255) for c in board):
            raise self.fail("bad board")
        try:
            game = parse_gamedef(game_text, "saved")
            betting = parse_betting(root, game)
            ba = parse_bets(bets, "saved") if bets is not None else None
            tree = build_subgame_tree(game, betting, board, ba, max_nodes=MAX_NODES)
        except (GameDefError, BetAbstractionError, SubgameError, ValueError) as exc:
            raise self.fail(f"its subgame cannot be rebuilt: {exc}") from None
        if tree.content_hash() != s.get("tree_hash"):
            raise self.fail(
                "the rebuilt tree's hash differs from the saved one (another version of the rules?)"
            )
        H = math.comb(game.deck_size, game.num_hole_cards)
        E = s.get("table_entries")
        if s.get("num_hands") != H or not isinstance(E, int) or not _int_in(E, 0, tree.num_rows * H):
            raise self.fail(
                f"bad sizes: {s.get('num_hands')!r} hands, {E!r} table entries (at most {tree.num_rows * H:,})"
            )
        values = s.get("values")
        if not isinstance(values, list) or not set(values) <= set(_VALUES) or len(set(values)) != len(values):
            raise self.fail(f"bad value names {values!r}")
        if not _int_in(s.get("refine"), 0, 1):
            raise self.fail("bad refined seat")
        self.built = {"game": game, "root": betting, "bets": ba, "tree": tree}
        spec = {"ranges": ArraySpec(_F8, (2, H), 0.0)}
        for k in values:
            spec[k] = ArraySpec(_F8, (H,))
        spec["regret"] = ArraySpec(_F4, (E,))
        spec["strat_sum"] = ArraySpec(_F4, (E,), 0.0)
        if method != "unsafe":
            g = (H, 2) if method == "resolve" else (H,)
            spec["gadget_regret"] = ArraySpec(_F8, g)
            spec["gadget_sum"] = ArraySpec(_F8, g, 0.0)
        return spec


def _int_in(v: Any, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def _finish(layout: _Layout, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> SavedSolve:
    b = layout.built
    s = meta["subgame"]
    sub = Subgame(
        b["game"],
        b["root"],
        tuple(s["board"]),
        arrays["ranges"],
        b["bets"],
        refine=s["refine"],
        tree=b["tree"],
    )
    for k in s["values"]:
        setattr(sub, k, arrays[k])
    try:
        sub.validate()
    except SubgameError as exc:
        raise layout.fail(str(exc)) from None
    method = meta["method"]
    H = arrays["ranges"].shape[1]
    g_shape = (H, 2) if method == "resolve" else (H,)
    sched = meta["schedule"]
    state = SolveState(
        arrays["regret"],
        arrays["strat_sum"],
        arrays.get("gadget_regret", np.zeros(g_shape)),
        arrays.get("gadget_sum", np.zeros(g_shape)),
        meta["iterations"],
        sched["next_check"],
        None if sched.get("prev") is None else (int(sched["prev"][0]), float(sched["prev"][1])),
        meta["algo"],
        meta["precision"],
    )
    return SavedSolve(sub, method, meta["algo"], meta["precision"], state, meta.get("locks"), meta)


def read_saved(path: str | os.PathLike[str]) -> SavedSolve:
    """Read a saved solve with every rule of the module docstring (:class:`CheckpointError` naming
    the file and the problem)."""
    p = Path(path)
    layout = _Layout(str(p))
    arrays, meta, _ = read_container(p, fmt=_FORMAT, spec=layout)
    return _finish(layout, arrays, meta)


def read_saved_bytes(data: bytes, name: str = "<bytes>") -> SavedSolve:
    """Parse a whole saved solve from memory with every check :func:`read_saved` makes."""
    data = bytes(data)
    layout = _Layout(name)
    arrays, meta, _ = decode_container(
        BoundedReader(io.BytesIO(data), len(data)), name, len(data), layout, _FORMAT
    )
    return _finish(layout, arrays, meta)


def fuzz_read_saved_bytes(data: bytes) -> Optional[SavedSolve]:
    """Fuzz entry point: parse ``data`` as a saved solve; None when it is refused (only
    :class:`CheckpointError` counts as a refusal: any other exception escaping is a bug)."""
    try:
        return read_saved_bytes(data, "<fuzz>")
    except CheckpointError:
        return None
