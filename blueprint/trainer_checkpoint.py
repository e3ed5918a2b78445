"""Restoring a :class:`~blueprint.trainer.Trainer` from a checkpoint: the arrays a checkpoint of
the run must hold (:func:`checkpoint_layout`, checked before the tables are read) and loading a
read checkpoint into a trainer built from its config (:func:`restore`: the config and abstraction
hashes, the Ray job's slices assembled, the RNG state, the rows' epochs)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from blueprint.io.container import ArraySpec
from blueprint.io.errors import CheckpointError
from blueprint.numerics import BF16_MAX_BITS

if TYPE_CHECKING:
    from blueprint.trainer import Trainer


#: what a single-process checkpoint's shard holds: 1, the tables settled (every row through every
#: boundary so far) and the RNG; 2 (the manifest's ``tables_format``), also the rows' epochs
#: (``epoch``, int32 ``[information sets, 2]``: the discount boundaries each row's regrets and its
#: strategy sums have been through, between the window's first and the iteration's), the tables
#: as the run held them. Both are read. The Ray job's checkpoints (a ``job`` in the manifest) hold
#: settled slices under either. 3: format 2 with 16-bit tables (``table_bits`` 16: regret and
#: strat as bfloat16 bits, ``uint16``); a 32-bit run still writes 2, which builds from before read.
TABLES_FORMAT = 3


def tables_format(manifest: dict) -> int:
    """The manifest's ``tables_format`` (:data:`TABLES_FORMAT`; 1 when absent)."""
    fmt = manifest.get("tables_format", 1)
    if type(fmt) is not int or not 1 <= fmt <= TABLES_FORMAT:
        raise CheckpointError(
            f"manifest: tables_format {fmt!r} is not one this build reads (1 to {TABLES_FORMAT})"
        )
    return fmt


def checkpoint_layout(self: Trainer, manifest: dict) -> list[dict[str, ArraySpec]]:
    """Per shard, the arrays a checkpoint of this run must hold (``layout`` of
    ``load_latest``): the trainer's one shard (regret, strat, rng), or the Ray job's
    slices of regret and strat at the row bounds its manifest records, which must cover
    ``[0, size)`` in order. Strategy sums are never negative (16-bit tables: unsigned mantissas,
    and each row's exponent, ``strat_exp``). A checkpoint whose table width (``tables_format`` 3:
    16 bits) is not its config's is refused first, naming both."""
    check_table_bits(self, manifest)
    regret, strat = self.regret.dtype, self.strat.dtype
    job = manifest.get("job")
    if not job:
        spec = {
            "regret": ArraySpec(regret, (self.size,)),
            "strat": ArraySpec(strat, (self.size,), min=0.0),
            "rng": ArraySpec(self.rng.dtype, self.rng.shape),
        }
        if tables_format(manifest) >= 2:
            lo, hi = self.epoch_bounds(manifest["iteration"])
            spec["epoch"] = ArraySpec(np.dtype(np.int32), (self.num_rows, 2), min=lo, max=hi)
        if self.table_bits == 16:
            spec["strat_exp"] = ArraySpec(np.dtype(np.int8), (self.num_rows,))
        return [spec]
    bounds = job.get("bounds") if isinstance(job, dict) else None
    ok = isinstance(bounds, list) and len(bounds) > 0
    at = 0
    for b in bounds if ok else []:
        if not (
            isinstance(b, list) and len(b) == 2 and all(type(x) is int for x in b) and b[0] == at <= b[1]
        ):
            ok = False
            break
        at = b[1]
    if not ok or at != self.size:
        raise CheckpointError(
            f"manifest: job row bounds {bounds!r} do not cover this run's {self.size:,} table rows"
        )
    return [
        {
            "regret": ArraySpec(regret, (hi - lo,)),
            "strat": ArraySpec(strat, (hi - lo,), min=0.0),
        }
        for lo, hi in bounds
    ]


def manifest_table_bits(manifest: dict) -> int:
    """The table width a checkpoint's manifest says its shard holds: 16 for ``tables_format`` 3,
    else 32."""
    return 16 if manifest.get("tables_format") == 3 else 32


def check_table_bits(tr: Trainer, manifest: dict) -> None:
    """Refuse a checkpoint whose tables' width is not the one of ``tr`` (built from its config):
    nothing is silently mixed or converted."""
    have = manifest_table_bits(manifest)
    if have != tr.table_bits:
        raise CheckpointError(
            f"manifest: tables_format {manifest.get('tables_format')!r} holds {have}-bit tables, but "
            f"its config asks for {tr.table_bits}-bit tables (--table-bits {tr.table_bits})"
        )


def restore(run_dir: Path, manifest: dict, shards: list, tr: Trainer) -> Trainer:
    """Load a checkpoint (``load_latest``'s result) into ``tr``, a trainer built from
    ``manifest["config"]`` (its tables are replaced), after checking it against the config.

    A checkpoint of the Ray job (several shards, each a contiguous slice of the tables, the
    RNG state in the manifest) is assembled into the full tables.
    """
    if tr.config_hash != manifest["config_hash"]:
        raise CheckpointError(
            f"{run_dir}: config hash {manifest['config_hash']} does not match its config ({tr.config_hash})"
        )
    if tr.abstraction_hash != manifest["abstraction_hash"]:
        raise CheckpointError(
            f"{run_dir}: abstraction hash {manifest['abstraction_hash']} does not match the rebuilt "
            f"abstraction ({tr.abstraction_hash}); the checkpoint was made with other abstractions"
        )
    arrays, meta = shards[0]
    fmt = tables_format(manifest)
    try:
        check_table_bits(tr, manifest)
    except CheckpointError as exc:
        raise CheckpointError(f"{run_dir}: {exc}") from None
    job = bool(manifest.get("job"))  # the Ray job's shards hold settled slices, whatever fmt
    epochs = None if job else arrays.get("epoch")
    if not job and (epochs is not None) != (fmt >= 2):
        raise CheckpointError(
            f"{run_dir}: tables_format {fmt} "
            + (
                "needs the rows' epochs, which the shard lacks"
                if fmt >= 2
                else "has no rows' epochs, but the shard holds some"
            )
        )
    if len(shards) > 1 or "rng" not in arrays:
        rng = manifest.get("rng_state")
        if not (
            isinstance(rng, list)
            and len(rng) == tr.rng.size
            and all(type(x) is int and 0 <= x < 2**64 for x in rng)
        ):
            raise CheckpointError(
                f"{run_dir}: the manifest's rng_state {rng!r} is not {tr.rng.size} uint64 words"
            )
        arrays = {
            "regret": np.concatenate([a["regret"] for a, _ in shards]),
            "strat": np.concatenate([a["strat"] for a, _ in shards]),
            "rng": np.array(rng, np.uint64),
        }
    names = ("regret", "strat", "rng") + (("strat_exp",) if tr.table_bits == 16 else ())
    for name in names:
        if name not in arrays:
            raise CheckpointError(f"{run_dir}: the shard lacks array {name!r}")
        have = getattr(tr, name)
        got = arrays[name]
        if got.shape != have.shape or got.dtype != have.dtype:
            raise CheckpointError(
                f"{run_dir}: array {name!r} is {got.dtype}{list(got.shape)}, expected {have.dtype}{list(have.shape)}"
            )
        setattr(tr, name, got)
    if tr.table_bits == 16:
        bad = (tr.regret & np.uint16(0x7FFF)) > np.uint16(BF16_MAX_BITS)
        if bad.any():
            raise CheckpointError(
                f"{run_dir}: array 'regret' holds {int(bad.sum()):,} non-finite bfloat16 values "
                f"(the first at index {int(np.argmax(bad))}); checkpoint tables are always finite"
            )
    if not tr.rng.any():  # xoshiro256** never reaches the all-zero state
        raise CheckpointError(f"{run_dir}: the checkpoint's RNG state is all zero, which no run reaches")
    tr.iteration = int(manifest["iteration"])
    tr.w_base = float(manifest["w_base"])
    tr.t_base = int(manifest["t_base"])
    tr.node_visits = int(manifest["node_visits"])
    tr.pruned = int(manifest["pruned"])
    tr.seconds = float(manifest["seconds"])
    tr.saturated = int(manifest.get("saturated", 0))
    tr.underflowed = int(manifest.get("underflowed", 0))
    tr._window = None  # format 1: the tables are settled at the iteration
    if epochs is not None:
        lo, hi = tr.epoch_bounds(tr.iteration)
        if epochs.shape != (tr.num_rows, 2) or epochs.dtype != np.int32:
            raise CheckpointError(
                f"{run_dir}: array 'epoch' is {epochs.dtype}{list(epochs.shape)}, "
                f"expected int32[{tr.num_rows}, 2]"
            )
        if len(epochs) and (int(epochs.min()) < lo or int(epochs.max()) > hi):
            raise CheckpointError(
                f"{run_dir}: array 'epoch' holds epochs in [{int(epochs.min())}, {int(epochs.max())}], "
                f"outside [{lo}, {hi}] at iteration {tr.iteration}"
            )
        tr._open_window(epochs)
    return tr


__all__ = ["TABLES_FORMAT", "checkpoint_layout", "restore", "tables_format"]
