"""Saved solves: a subgame, its solver's tables and its schedule in one file, to reopen, browse or
continue (``mccfr solve ... --save FILE``, ``mccfr solve --load FILE``).

File format (version 2; version 1 files, which have neither depth limits nor off-tree actions,
are read too): the checkpoint container of :mod:`blueprint.io.container` (magic ``b"MCCFRSLV"``,
container version 1, codec 1: one lz4 frame, array data in chunks of at most 1 MiB), read with its
rules: regular files only, every declared size checked against the file and the layout before
anything is allocated, decompression bounded. The header's ``meta``:

``format`` ``"mccfr-saved-solve"``, ``format_version`` 2, ``method``, ``algo``, ``precision``,
``iterations`` (done so far), ``schedule`` ``{"next_check": int, "prev": [iteration, gap % pot] or
None}`` (the exploitability-check schedule of a solve with a target), ``locks`` (the
:data:`subgame.locking.LockSpec` or None), ``subgame`` ``{"game": ACPC text, "root": the betting
string from the start of the hand, "board": [card ids], "bets": TOML or None (limit games),
"refine": seat, "tree_hash": the public tree's content hash, "num_hands": H, "table_entries": E,
"values": the names of the optional value arrays present, "real_path": None or the real hand's
betting string of a nested subgame (its off-tree action is added to the tree along it,
:class:`subgame.nested.real_path_filter`), "depth_limit": None or the
:class:`~subgame.depth.DepthLimit`'s settings (``continuations``, ``bias``, ``samples``, ``seed``,
``leaf_choice``, ``max_nodes``, ``leaf_cards``, ``leaf_deals``) and ``blueprint`` ``{"hash":
Blueprint.strategy_hash(), "iteration", "source"}``, the blueprint its leaves are valued with}``,
``leaf_rng`` (depth-limited: the card-sampling generator's state, as
:func:`blueprint.io.rng_state.encode_rng_state` writes it) and ``report`` (the
solution's diagnostics when saved: JSON-able, for display only).

Arrays: ``ranges`` ``<f8[2, H]``; each of ``alt``, ``estimate``, ``gifts``, ``estimate_gifts``
that the subgame has, ``<f8[H]``; ``regret`` and ``strat_sum`` ``<f4[E]`` (the compact tables of
:mod:`subgame.kernels`; strategy sums at least 0); ``gadget_regret`` and ``gadget_sum`` ``<f8[H, 2]``
(``resolve``) or ``<f8[H]`` (the other safe methods), absent for ``unsafe``; depth-limited:
``leaf_regret`` and ``leaf_sum`` ``<f8[L, k, H]`` (sums at least 0) and ``leaf_pick`` ``<i8[L, H]``
(the :class:`~subgame.types.LeafState` of ``L`` leaves, at least 1, and ``k`` continuations).

The reader rebuilds the public tree from ``game``, ``root``, ``board``, ``bets``, ``real_path`` and
the depth limit and checks its hash before any array is allocated, and requires ``E <= rows x H``;
continuing a solve (:func:`subgame.solver.solve` with ``resume=``) checks ``E`` against the engine
it builds. A depth-limited solve does not hold its leaves' continuations (the blueprint's strategy,
megabytes to gigabytes): the reader needs that blueprint (``blueprint=``), checks its
:meth:`~blueprint.blueprint.Blueprint.strategy_hash` before any array is allocated, and the leaves
are built again from it.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Union, cast

import numpy as np

from abstraction.bets import BetAbstractionError, parse_bets
from abstraction.tree import KIND_SHOWDOWN
from blueprint.io.container import ArraySpec, FileFormat, decode_container, read_container, write_container
from blueprint.io.errors import CheckpointError
from blueprint.io.rng_state import decode_rng_state, encode_rng_state
from holdem.betting import parse_betting
from holdem.gamedef import GameDefError, parse_gamedef
from mccfr_util.files import BoundedReader
from subgame.depth import DEFAULT_CONTINUATIONS, DepthLimit, build_depth_limited_tree
from subgame.locking import check_lock_spec
from subgame.nested import real_path_filter
from subgame.solver import ALGOS, METHODS
from subgame.tree import MAX_NODES, SubgameError, build_subgame_tree
from subgame.types import LeafState, Solution, SolveState, Subgame

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
SAVED_FORMAT_VERSION = 2
SAVED_FORMAT_NAME = "mccfr-saved-solve"
_FORMAT = FileFormat(SAVED_MAGIC, 1, "saved solve", "saved solve", None, 1 << 20)
_VALUES = ("alt", "estimate", "gifts", "estimate_gifts")
_F8, _F4, _I8 = np.dtype("<f8"), np.dtype("<f4"), np.dtype("<i8")
_MAX_GAME_CHARS = 1 << 16
_MAX_BETS_CHARS = 1 << 20
_MAX_ROOT_CHARS = 1 << 12
#: what ``read_saved``'s ``blueprint`` may be: the blueprint, or a function of the saved file's
#: blueprint record (``hash``, ``iteration``, ``source``) that returns it
BlueprintArg = Union[object, Callable[[dict], object], None]


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
    real = getattr(sub.action_filter, "real", None)
    if sub.action_filter is not None and real is None:
        raise SubgameError(
            "a subgame built with a custom action_filter cannot be saved (a nested subgame's "
            "real_path_filter can)"
        )
    dl = sub.depth_limit
    if dl is not None and st.leaf is None:
        raise SubgameError("this depth-limited solution kept no leaf state: solve with keep_state=True")
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
            "real_path": None if real is None else real.betting_string(),
            "depth_limit": None if dl is None else _depth_limit_meta(dl),
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
    if dl is not None:
        assert st.leaf is not None
        meta["leaf_rng"] = encode_rng_state(st.leaf.rng)
        arrays["leaf_regret"] = np.asarray(st.leaf.reg, np.float64)
        arrays["leaf_sum"] = np.asarray(st.leaf.sum, np.float64)
        arrays["leaf_pick"] = np.asarray(st.leaf.pick, np.int64)
    p = Path(path)
    entry = write_container(p.parent, p.name, _FORMAT, {}, arrays, meta, "the saved solve")
    return int(entry["bytes"])


def _depth_limit_meta(dl: DepthLimit) -> dict:
    bp: Any = dl.blueprint
    return {
        "continuations": list(dl.continuations),
        "bias": float(dl.bias),
        "samples": dl.samples,
        "seed": int(dl.seed),
        "leaf_choice": dl.leaf_choice,
        "max_nodes": int(dl.max_nodes),
        "leaf_cards": dl.leaf_cards,
        "leaf_deals": None if dl.leaf_deals is None else list(dl.leaf_deals),
        "blueprint": {"hash": bp.strategy_hash(), "iteration": int(bp.iteration), "source": str(bp.source)},
    }


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

    def __init__(self, where: str, blueprint: BlueprintArg = None):
        self.where = where
        self.blueprint = blueprint
        self.built: dict[str, Any] = {}

    def fail(self, why: str) -> CheckpointError:
        return CheckpointError(f"saved solve {self.where}: {why}")

    def __call__(self, meta: dict[str, Any]) -> dict[str, ArraySpec]:
        if meta.get("format") != SAVED_FORMAT_NAME or meta.get("format_version") not in (
            1,
            SAVED_FORMAT_VERSION,
        ):
            raise self.fail(
                f"format {meta.get('format')!r} version {meta.get('format_version')!r}, expected "
                f"{SAVED_FORMAT_NAME!r} version 1 to {SAVED_FORMAT_VERSION}"
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
        real, dl_meta = s.get("real_path"), s.get("depth_limit")
        if real is not None and (not isinstance(real, str) or len(real) > _MAX_ROOT_CHARS):
            raise self.fail("bad real path")
        dl = None
        try:
            game = parse_gamedef(game_text, "saved")
            if dl_meta is not None:
                dl = self._depth_limit(dl_meta, game)
                game = cast(
                    Any, dl.blueprint
                ).gamedef  # the same rules (checked), the object the leaves require
            betting = parse_betting(root, game)
            ba = parse_bets(bets, "saved") if bets is not None else None
            flt = real_path_filter(parse_betting(real, game)) if real is not None else None
            if dl is not None:
                tree = build_depth_limited_tree(game, betting, board, ba, action_filter=flt)
            else:
                tree = build_subgame_tree(game, betting, board, ba, action_filter=flt, max_nodes=MAX_NODES)
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
        self.built = {"game": game, "root": betting, "bets": ba, "tree": tree, "filter": flt, "dl": dl}
        spec = {"ranges": ArraySpec(_F8, (2, H), 0.0)}
        for k in values:
            spec[k] = ArraySpec(_F8, (H,))
        spec["regret"] = ArraySpec(_F4, (E,))
        spec["strat_sum"] = ArraySpec(_F4, (E,), 0.0)
        if method != "unsafe":
            g = (H, 2) if method == "resolve" else (H,)
            spec["gadget_regret"] = ArraySpec(_F8, g)
            spec["gadget_sum"] = ArraySpec(_F8, g, 0.0)
        if dl is not None:
            L = max(int((tree.kind == KIND_SHOWDOWN).sum()), 1)
            spec["leaf_regret"] = ArraySpec(_F8, (L, dl.k, H))
            spec["leaf_sum"] = ArraySpec(_F8, (L, dl.k, H), 0.0)
            spec["leaf_pick"] = ArraySpec(_I8, (L, H))
            rng = meta.get("leaf_rng")
            try:
                if not isinstance(rng, dict):
                    raise ValueError("not a map")
                self.built["rng"] = decode_rng_state(rng)
            except Exception as exc:  # noqa: BLE001  numpy's state setter raises many kinds on forged input
                raise self.fail(f"bad card-sampling generator state: {exc}") from None
        return spec

    def _depth_limit(self, d: Any, game) -> DepthLimit:
        """The saved :class:`DepthLimit` with its blueprint (checked against the saved hash)."""
        keys = {
            "continuations",
            "bias",
            "samples",
            "seed",
            "leaf_choice",
            "max_nodes",
            "leaf_cards",
            "leaf_deals",
            "blueprint",
        }
        if not isinstance(d, dict) or set(d) != keys:
            raise self.fail(f"bad depth limit: expected the keys {sorted(keys)}")
        conts, bias, rec = d["continuations"], d["bias"], d["blueprint"]
        deals = d["leaf_deals"]
        if (
            not isinstance(conts, list)
            or not 1 <= len(conts) <= len(DEFAULT_CONTINUATIONS)
            or not all(isinstance(c, str) for c in conts)
            or not isinstance(bias, (int, float))
            or not math.isfinite(bias)
            or not (d["samples"] is None or _int_in(d["samples"], 2, 1 << 16))
            or not _int_in(d["seed"], 0, 2**63)
            or d["leaf_choice"] not in ("regret", "best")
            or not _int_in(d["max_nodes"], 1, 1 << 40)
            or not (d["leaf_cards"] is None or _int_in(d["leaf_cards"], 3, 1 << 16))
            or not (
                deals is None
                or (
                    isinstance(deals, list)
                    and 1 <= len(deals) <= 16
                    and all(_int_in(x, 1, 1 << 20) for x in deals)
                )
            )
            or not isinstance(rec, dict)
            or not isinstance(rec.get("hash"), str)
        ):
            raise self.fail("bad depth limit settings")
        bp: Any = self.blueprint
        if callable(bp) and not hasattr(bp, "strategy_hash"):
            bp = bp(rec)
        if bp is None:
            raise self.fail(
                f"it is depth-limited: its leaves are valued with the blueprint it was solved with "
                f"(iteration {rec.get('iteration')!r}, from {str(rec.get('source'))[:200]!r}); give that blueprint"
            )
        if bp.gamedef.to_acpc() != game.to_acpc():
            raise self.fail("the blueprint given is of another game than the saved subgame")
        if bp.strategy_hash() != rec["hash"]:
            raise self.fail(
                f"the blueprint given (iteration {bp.iteration}, strategy hash {bp.strategy_hash()}) is not the "
                f"one it was solved with (iteration {rec.get('iteration')!r}, hash {rec['hash'][:40]}, from "
                f"{str(rec.get('source'))[:200]!r})"
            )
        return DepthLimit(
            bp,
            tuple(conts),
            float(bias),
            d["samples"],
            d["seed"],
            leaf_choice=d["leaf_choice"],
            max_nodes=d["max_nodes"],
            leaf_cards=d["leaf_cards"],
            leaf_deals=None if deals is None else tuple(deals),
        )


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
        action_filter=b["filter"],
        depth_limit=b["dl"],
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
    leaf = None
    if b["dl"] is not None:
        dl = b["dl"]
        leaf = LeafState(arrays["leaf_regret"], arrays["leaf_sum"], arrays["leaf_pick"], b["rng"])
        if not leaf.picks_follow(dl.k, dl.leaf_choice == "best"):
            raise layout.fail(f"leaf picks outside the {dl.leaf_choice!r} rule's values")
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
        leaf,
    )
    return SavedSolve(sub, method, meta["algo"], meta["precision"], state, meta.get("locks"), meta)


def read_saved(path: str | os.PathLike[str], blueprint: BlueprintArg = None) -> SavedSolve:
    """Read a saved solve with every rule of the module docstring (:class:`CheckpointError` naming
    the file and the problem). ``blueprint``: a depth-limited solve's blueprint, or a function of
    the file's blueprint record (``hash``, ``iteration``, ``source``) that returns it; unused for
    other solves."""
    p = Path(path)
    layout = _Layout(str(p), blueprint)
    arrays, meta, _ = read_container(p, fmt=_FORMAT, spec=layout)
    return _finish(layout, arrays, meta)


def read_saved_bytes(data: bytes, name: str = "<bytes>", blueprint: BlueprintArg = None) -> SavedSolve:
    """Parse a whole saved solve from memory with every check :func:`read_saved` makes."""
    data = bytes(data)
    layout = _Layout(name, blueprint)
    arrays, meta, _ = decode_container(
        BoundedReader(io.BytesIO(data), len(data)), name, len(data), layout, _FORMAT
    )
    return _finish(layout, arrays, meta)


def fuzz_read_saved_bytes(data: bytes, blueprint: BlueprintArg = None) -> Optional[SavedSolve]:
    """Fuzz entry point: parse ``data`` as a saved solve (``blueprint``: a depth-limited one's);
    None when it is refused (only :class:`CheckpointError` counts as a refusal: any other exception
    escaping is a bug)."""
    try:
        return read_saved_bytes(data, "<fuzz>", blueprint)
    except CheckpointError:
        return None
