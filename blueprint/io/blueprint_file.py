"""Blueprint files: the average strategy a checkpoint holds for queries (``blueprint.msgpack.lz4``,
the container format with magic ``MCCFRBPF``; :mod:`blueprint.io.container` has the format and its
header fields), what a trainer's file holds, and its reader's checks."""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from abstraction.tree import KIND_DECISION
from blueprint.io.codec import is_int, normalized
from blueprint.io.container import (
    MAX_ITERATION,
    ArraySpec,
    FileFormat,
    check_values,
    decode_container,
    read_container,
    write_container,
)
from blueprint.io.errors import CheckpointError
from blueprint.tables import average_strategy32
from mccfr_util.files import BoundedReader

__all__ = [
    "BLUEPRINT_ARRAYS",
    "BLUEPRINT_FORMAT",
    "BLUEPRINT_FORMAT_NAME",
    "BLUEPRINT_FORMAT_VERSION",
    "BLUEPRINT_MAGIC",
    "BLUEPRINT_NAME",
    "BLUEPRINT_ROW_TOLERANCE",
    "abstraction_hash",
    "blueprint_file_payload",
    "fuzz_read_blueprint_bytes",
    "read_blueprint",
    "read_blueprint_bytes",
    "write_blueprint",
    "write_blueprint_file",
]

BLUEPRINT_MAGIC = b"MCCFRBPF"
BLUEPRINT_FORMAT_VERSION = 1
BLUEPRINT_FORMAT_NAME = "mccfr-blueprint"
BLUEPRINT_NAME = "blueprint.msgpack.lz4"

# 1 MiB chunks: a query server reads the file once, and the reader's buffers beyond the strategy
# itself stay about 2 MiB
BLUEPRINT_FORMAT = FileFormat(
    BLUEPRINT_MAGIC, BLUEPRINT_FORMAT_VERSION, "blueprint file", "blueprint", None, 1 << 20
)


# The arrays of a blueprint file, in order: name -> dtype (little-endian, whatever the machine).
BLUEPRINT_ARRAYS = {
    "probs": np.dtype("<f4"),  # [table entries]: P(action) per (node, bucket, action), table layout
    "row_offset": np.dtype("<i8"),  # [nodes]: a decision node's first entry, -1 for other nodes
    "num_buckets": np.dtype("<i8"),  # [rounds]: card buckets per round
    "node_round": np.dtype("|i1"),  # [nodes]: each node's round
    "num_actions": np.dtype("<i2"),  # [nodes]: each node's actions (0 for terminals)
}
BLUEPRINT_ROW_TOLERANCE = 1e-5  # |sum of a row - 1| allowed, plus 1e-6 per action of the row
_BLUEPRINT_MAX_NODES = 50_000_000  # abstraction.tree.MAX_NODES: no betting tree is larger
_BLUEPRINT_MAX_ROUNDS = 64
_BLUEPRINT_MAX_BUCKETS = 1 << 31
_BLUEPRINT_ROW_BLOCK = 1 << 18  # entries per pass of the row-sum check (bounds its temporaries)


def _blueprint_spec(meta: Mapping[str, Any], where: str) -> dict[str, ArraySpec]:
    """The exact arrays a blueprint file with header ``meta`` holds (checked before any array is
    allocated); CheckpointError naming the field when the header is malformed."""

    def bad(what: str) -> CheckpointError:
        return CheckpointError(f"blueprint file {where}: {what}")

    if meta.get("format") != BLUEPRINT_FORMAT_NAME:
        raise bad(f"format {meta.get('format')!r} is not {BLUEPRINT_FORMAT_NAME!r}")
    if meta.get("format_version") != BLUEPRINT_FORMAT_VERSION:
        raise bad(
            f"format version {meta.get('format_version')!r}; this build reads version {BLUEPRINT_FORMAT_VERSION}"
        )
    it = meta.get("iteration")
    if not is_int(it) or not 0 <= it <= MAX_ITERATION:
        raise bad(f"iteration {it!r} is not an iteration count (an int in [0, 2**53])")
    for key in ("config_hash", "abstraction_hash"):
        if not isinstance(meta.get(key), str):
            raise bad(f"{key} {meta.get(key)!r} is not a string")
    game, bets, cards, tree = (meta.get(k) for k in ("game", "bets", "cards", "tree"))
    if not (
        isinstance(game, dict) and isinstance(game.get("acpc"), str) and isinstance(game.get("name"), str)
    ):
        raise bad("malformed game (needs its name and ACPC text)")
    if not (
        isinstance(bets, dict)
        and all(isinstance(bets.get(k), (str, type(None))) for k in ("name", "toml"))
        and isinstance(bets.get("hash"), str)
    ):
        raise bad("malformed bet abstraction (needs its name, TOML and hash)")
    if not (
        isinstance(cards, dict)
        and isinstance(cards.get("name"), str)
        and isinstance(cards.get("hash"), str)
        and isinstance(cards.get("num_buckets"), list)
    ):
        raise bad("malformed card abstraction (needs its name, hash and bucket counts)")
    nb = cards["num_buckets"]
    if not 1 <= len(nb) <= _BLUEPRINT_MAX_ROUNDS or not all(
        is_int(b) and 1 <= b <= _BLUEPRINT_MAX_BUCKETS for b in nb
    ):
        raise bad(f"card bucket counts {nb!r} are not 1 to {_BLUEPRINT_MAX_ROUNDS} counts in [1, 2**31]")
    if not (isinstance(tree, dict) and isinstance(tree.get("hash"), str)):
        raise bad("malformed tree (needs its hash and node count)")
    nodes, size = tree.get("num_nodes"), meta.get("table_entries")
    if not is_int(nodes) or not 1 <= nodes <= _BLUEPRINT_MAX_NODES:
        raise bad(f"tree node count {nodes!r} is not in [1, {_BLUEPRINT_MAX_NODES:,}]")
    if not is_int(size) or not 0 <= size <= MAX_ITERATION:
        raise bad(f"table entries {size!r} is not a count")
    shapes = {
        "probs": (size,),
        "row_offset": (nodes,),
        "num_buckets": (len(nb),),
        "node_round": (nodes,),
        "num_actions": (nodes,),
    }
    return {
        k: ArraySpec(dt, shapes[k], min=0.0 if k == "probs" else None) for k, dt in BLUEPRINT_ARRAYS.items()
    }


def _check_blueprint_arrays(meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray], where: str) -> None:
    """The layout the arrays describe is consistent and every row of ``probs`` is a probability
    distribution (entries in [0, 1], sum 1 within :data:`BLUEPRINT_ROW_TOLERANCE`)."""

    def bad(what: str) -> CheckpointError:
        return CheckpointError(f"blueprint file {where}: {what}")

    nb, rnd, na, off, probs = (
        arrays[k] for k in ("num_buckets", "node_round", "num_actions", "row_offset", "probs")
    )
    if nb.tolist() != list(meta["cards"]["num_buckets"]):
        raise bad(f"bucket counts {nb.tolist()} differ from the header's {meta['cards']['num_buckets']}")
    if rnd.size and (int(rnd.min()) < 0 or int(rnd.max()) >= nb.size):
        raise bad(f"node rounds outside [0, {nb.size})")
    dec = off >= 0
    if off.size and int(off.min()) < -1:
        raise bad("a row offset below -1")
    if na.size and (int(na.min()) < 0 or (dec.any() and int(na[dec].min()) < 1)):
        raise bad("a negative action count, or a decision node without actions")
    rows = nb[rnd[dec].astype(np.int64)]  # rows of each decision node (one per bucket)
    k = na[dec].astype(np.int64)
    if float(np.dot(rows.astype(np.float64), k.astype(np.float64))) != float(probs.size):
        raise bad(
            f"the layout covers {float(np.dot(rows.astype(np.float64), k.astype(np.float64))):.0f} entries, "
            f"the strategy has {probs.size:,}"
        )
    block = rows * k  # no overflow: the total equals probs.size (checked in float64 above)
    ends = np.cumsum(block)
    if not np.array_equal(off[dec], ends - block):
        raise bad("row offsets do not follow the table layout (blocks of buckets x actions in node order)")
    # every row (one per decision node and bucket) is a distribution: in blocks of nodes, so the
    # temporaries stay small next to the strategy itself
    first, starts_all = 0, ends - block
    while first < block.size:
        last = int(np.searchsorted(ends, starts_all[first] + _BLUEPRINT_ROW_BLOCK, side="right"))
        last = max(last, first + 1)
        lo, hi = int(starts_all[first]), int(ends[last - 1])
        part = probs[lo:hi]
        if part.size:
            if float(part.max()) > 1.0 + BLUEPRINT_ROW_TOLERANCE:
                i = lo + int(np.argmax(part > 1.0 + BLUEPRINT_ROW_TOLERANCE))
                raise bad(f"probability {probs[i]} > 1 at entry {i}")
            row_len = np.repeat(k[first:last], rows[first:last])  # the rows of these nodes, in table order
            starts = np.cumsum(row_len) - row_len
            sums = np.add.reduceat(part, starts, dtype=np.float64)
            err = np.abs(sums - 1.0) > BLUEPRINT_ROW_TOLERANCE + 1e-6 * row_len
            if err.any():
                i = int(np.argmax(err))
                raise bad(
                    f"a row of the strategy does not sum to 1 (entries {lo + int(starts[i])} to "
                    f"{lo + int(starts[i] + row_len[i]) - 1}: {sums[i]!r}); a blueprint row is a probability distribution"
                )
        first = last


def _blueprint_reader_spec(path: str, layout: Callable[[dict[str, Any]], Any] | None) -> Callable:
    def spec(meta: dict[str, Any]) -> dict[str, ArraySpec]:
        out = _blueprint_spec(meta, path)
        if layout is not None:
            layout(meta)
        return out

    return spec


def write_blueprint(
    ckpt_dir: str | os.PathLike[str], meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> dict[str, Any]:
    """Write ``ckpt_dir/blueprint.msgpack.lz4`` atomically (before the manifest, which lists it).

    Args:
        ckpt_dir: the checkpoint directory.
        meta: the header (see :func:`blueprint_file_payload`); ``format``
            and ``format_version`` are filled in.
        arrays: :data:`BLUEPRINT_ARRAYS` (converted to those dtypes).

    Returns:
        The manifest entry of the file.

    Raises:
        ValueError: a header or arrays that a reader would refuse (nothing is written).
        CheckpointError: the write failed (the temporary file is removed).
    """
    ckpt_dir = Path(ckpt_dir)
    meta = {**dict(meta), "format": BLUEPRINT_FORMAT_NAME, "format_version": BLUEPRINT_FORMAT_VERSION}
    if set(arrays) != set(BLUEPRINT_ARRAYS):
        raise ValueError(
            f"a blueprint file holds exactly the arrays {list(BLUEPRINT_ARRAYS)}, got {sorted(arrays)}"
        )
    out = {k: np.ascontiguousarray(arrays[k], dtype=dt) for k, dt in BLUEPRINT_ARRAYS.items()}
    where = f"{ckpt_dir / BLUEPRINT_NAME} (being written)"
    try:
        norm = normalized(meta)
        spec = _blueprint_spec(norm, where)
        for k, s in spec.items():
            if out[k].shape != s.shape:
                raise CheckpointError(
                    f"blueprint file {where}: array {k!r} has shape {out[k].shape}, not {s.shape}"
                )
            check_values(out[k], where, k, s, BLUEPRINT_FORMAT)
        _check_blueprint_arrays(norm, out, where)
    except CheckpointError as exc:
        raise ValueError(f"refusing to write a blueprint file no reader would accept: {exc}") from None
    return write_container(ckpt_dir, BLUEPRINT_NAME, BLUEPRINT_FORMAT, {}, out, meta, "the blueprint file")


def read_blueprint(
    path: str | os.PathLike[str],
    expected: Mapping[str, Any] | None = None,
    *,
    verify: bool = True,
    layout: Callable[[dict[str, Any]], Any] | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a blueprint file with every rule of :mod:`blueprint.io.container`, plus its own.

    Args:
        path: the file (``CKPT_DIR/blueprint.msgpack.lz4``).
        expected: its manifest entry: the size must match, no byte past it is read, and with
            ``verify`` the blake2b digest too.
        layout: called with the header once it is well formed, before any array is allocated
            (the caller checks it against what it rebuilt: tree, card abstraction); a
            :class:`CheckpointError` it raises refuses the file, any other exception propagates.

    Returns:
        ``(header, arrays)``: the header map and :data:`BLUEPRINT_ARRAYS`, checked: the layout
        the arrays describe is consistent and every strategy row is a probability distribution.
    """
    path = Path(path)
    arrays, meta, _ = read_container(
        path, expected, verify=verify, spec=_blueprint_reader_spec(str(path), layout), fmt=BLUEPRINT_FORMAT
    )
    _check_blueprint_arrays(meta, arrays, str(path))
    return meta, arrays


def read_blueprint_bytes(data: bytes, name: str = "<bytes>") -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Parse a whole blueprint file from memory with every check :func:`read_blueprint` makes."""
    data = bytes(data)
    src = BoundedReader(io.BytesIO(data), len(data))
    arrays, meta, _ = decode_container(
        src, name, len(data), _blueprint_reader_spec(name, None), BLUEPRINT_FORMAT
    )
    _check_blueprint_arrays(meta, arrays, name)
    return meta, arrays


def fuzz_read_blueprint_bytes(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """Fuzz entry point: parse ``data`` as a blueprint file; None when it is refused (only
    :class:`CheckpointError` counts as a refusal: any other exception escaping is a bug)."""
    try:
        return read_blueprint_bytes(data, "<fuzz>")
    except CheckpointError:
        return None


# ---------------------------------------------------------------------------------------------
# a trainer's blueprint file


def abstraction_hash(tree_hash: str, cards_hash: str) -> str:
    """A run's abstraction hash (``Trainer.abstraction_hash``, in every manifest and blueprint file)
    from its betting tree's and its card abstraction's content hashes."""
    return hashlib.blake2b((tree_hash + cards_hash).encode(), digest_size=8).hexdigest()


def blueprint_file_payload(trainer, probs: np.ndarray | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """``(header, arrays)`` of the blueprint file for ``trainer`` (a :class:`blueprint.trainer.Trainer`)
    at its iteration, for :func:`write_blueprint` (:mod:`blueprint.io.container` has the format). ``probs``: the average
    strategy in the table layout if already computed (default: from the trainer's strategy sums
    with every row through its pending discount boundaries, ``trainer.settled_tables()``, as
    ``trainer.average_strategy()`` computes it, by :func:`average_strategy32`)."""
    tr = trainer
    t = tr.tree
    cfg = tr.config_dict
    cards = tr.cards
    if probs is None:
        strat = tr.settled_tables()[1] if hasattr(tr, "settled_tables") else tr.strat
        probs = average_strategy32(t, tr.row_offset, tr.num_buckets, strat)
    header = {
        "iteration": int(tr.iteration),
        "config_hash": tr.config_hash,
        "abstraction_hash": tr.abstraction_hash,
        "game": {"name": str(cfg["game"]), "acpc": tr.game.to_acpc()},
        "bets": {
            "name": cfg.get("bets"),
            "toml": cfg.get("bets_toml"),
            "hash": tr.bets.content_hash() if tr.bets is not None else "limit",
        },
        "cards": {
            "name": cards.name,
            "kind": int(cards.kind),
            "num_buckets": [int(b) for b in cards.num_buckets],
            "hash": cards.content_hash(),
            "source_hash": cards.source_hash,
            "method": cards.method,
        },
        "tree": {
            "hash": t.content_hash(),
            "num_nodes": int(t.num_nodes),
            "decision_nodes": int((t.kind == KIND_DECISION).sum()),
        },
        "table_entries": int(tr.size),
        "config": cfg,
    }
    arrays = {
        "probs": np.asarray(probs, np.float32),
        "row_offset": tr.row_offset,
        "num_buckets": tr.num_buckets,
        "node_round": t.round,
        "num_actions": t.num_actions,
    }
    return header, arrays


def write_blueprint_file(ckpt_dir, trainer, probs: np.ndarray | None = None) -> dict:
    """Write ``ckpt_dir/blueprint.msgpack.lz4`` for ``trainer`` (before the checkpoint's manifest);
    returns its manifest entry. For writers that assemble a checkpoint themselves (the Ray job):
    ``files.append(write_blueprint_file(ckpt_dir, trainer, probs))`` before ``write_manifest``."""
    return write_blueprint(ckpt_dir, *blueprint_file_payload(trainer, probs))
