"""Regret-table shards: the slicing of the flat tables, compact deltas, and the shard's state.

The flat tables of :class:`blueprint.trainer.Trainer` (``regret`` float32/int32 ``[size]``,
``strat`` float32 ``[size]``, node ``n``'s block at ``[row_offset[n], row_offset[n] + B * A_n)``)
are split into S contiguous row ranges that start and end on node-block boundaries, of about equal
size (:func:`slice_bounds`). :class:`ShardCore` owns one range; it is a plain class (testable
without Ray) that the job wraps into an actor with ``ray.remote(ShardCore)``.

A delta is what one worker's batch changed in one shard's range, packed by :func:`pack_delta`:
lz4-compressed bytes holding the touched rows (uint32, relative to the range start) and, per
touched row, the regret delta (float32, or int64 for int32 tables) and the strategy-sum delta
(float32). ``apply_delta(worker, batch_seq, payload)`` is idempotent: a shard remembers the last
batch sequence number applied per worker and ignores a repeated (or older) one, so a retried call
never adds twice.

The Ray job (:mod:`cluster.job`) uses the round form instead: each node's leader sends, per round
and per *group* (a fixed set of workers, normally one node's), one summed delta with
``put_delta(round_id, group, payload)``, which is only buffered (a repeat replaces the buffered
copy: a retried group computes the same bytes); ``end_round(round_id, t, t_end, groups)`` then
discounts the slice through the round's boundaries and adds the buffered deltas of ``groups`` in
ascending group order, whatever order they arrived in, so the tables do not depend on timing. A
round already ended is ignored (idempotent), and :func:`sum_deltas` adds deltas in a fixed order.
"""

from __future__ import annotations

import struct
import tempfile
import time
from typing import Any

import lz4.frame
import numpy as np

from blueprint.algo import AlgoConfig
from blueprint.io.errors import CheckpointError
from blueprint.io.shard_file import read_shard, shard_name, write_shard
from blueprint.numerics import regret_bounds
from blueprint.trainer import discount_span

_HEADER = struct.Struct("<4sIQ")  # magic, version, number of rows
_MAGIC = b"MCDL"
_VERSION = 1


def slice_bounds(row_offset: np.ndarray, size: int, num_shards: int) -> list[tuple[int, int]]:
    """Split rows ``[0, size)`` into ``num_shards`` contiguous ranges on node-block boundaries.

    Args:
        row_offset: int64 ``[num_nodes]``, a decision node's first row, -1 elsewhere.
        size: total rows.
        num_shards: S >= 1.

    Returns:
        S pairs ``(row_lo, row_hi)``, in order, covering ``[0, size)`` exactly once; each cut is
        the block start nearest to ``k * size / S`` (a range may be empty when there are fewer
        blocks than shards).
    """
    if num_shards < 1:
        raise ValueError(f"need at least one shard, got {num_shards}")
    starts = np.unique(row_offset[row_offset >= 0])
    starts = np.append(starts, size) if size not in starts else starts
    cuts = [0]
    for k in range(1, num_shards):
        target = k * size / num_shards
        i = int(np.searchsorted(starts, target))
        cands = [starts[j] for j in (i - 1, i) if 0 <= j < len(starts)]
        cut = int(min(cands, key=lambda s: (abs(s - target), s)))
        cuts.append(max(cut, cuts[-1]))
    cuts.append(size)
    return [(cuts[k], cuts[k + 1]) for k in range(num_shards)]


def pack_delta(rows: np.ndarray, d_regret: np.ndarray, d_strat: np.ndarray) -> bytes:
    """Pack one shard's delta: ``rows`` uint32 (relative), ``d_regret`` float32/int64, ``d_strat`` float32."""
    rows = np.ascontiguousarray(rows, np.uint32)
    kind = 1 if d_regret.dtype == np.int64 else 0
    body = (
        rows.tobytes()
        + np.ascontiguousarray(d_regret).tobytes()
        + np.ascontiguousarray(d_strat, np.float32).tobytes()
    )
    return _HEADER.pack(_MAGIC, _VERSION | (kind << 8), len(rows)) + lz4.frame.compress(body)


def sum_deltas(payloads: list[bytes], rows_in_slice: int, int_regret: bool) -> bytes:
    """The sum of several packed deltas of one slice, added in the given order (deterministic);
    a single delta is returned as is (bit for bit)."""
    if len(payloads) == 1:
        return payloads[0]
    acc_r = np.zeros(rows_in_slice, np.int64 if int_regret else np.float32)
    acc_s = np.zeros(rows_in_slice, np.float32)
    touched = np.zeros(rows_in_slice, bool)
    for p in payloads:
        rows, d_regret, d_strat = unpack_delta(p)
        acc_r[rows] += d_regret  # rows are unique within one delta
        acc_s[rows] += d_strat
        touched[rows] = True
    rows = np.flatnonzero(touched)
    return pack_delta(rows, acc_r[rows], acc_s[rows])


def unpack_delta(payload: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inverse of :func:`pack_delta`: ``(rows uint32, d_regret, d_strat float32)``."""
    magic, version, n = _HEADER.unpack_from(payload)
    if magic != _MAGIC or (version & 0xFF) != _VERSION:
        raise ValueError(f"not a delta payload (magic {magic!r}, version {version})")
    rdtype = np.int64 if version >> 8 else np.float32
    body = lz4.frame.decompress(payload[_HEADER.size :])
    rows = np.frombuffer(body, np.uint32, n, 0)
    off = 4 * n
    d_regret = np.frombuffer(body, rdtype, n, off)
    off += np.dtype(rdtype).itemsize * n
    d_strat = np.frombuffer(body, np.float32, n, off)
    return rows, d_regret, d_strat


class ShardCore:
    """One slice ``[row_lo, row_hi)`` of the regret and strategy-sum tables.

    Args:
        index: shard number k.
        row_lo, row_hi: the row range owned.
        regret: the slice's regrets (float32 or int32 ``[row_hi - row_lo]``), or None for zeros.
        strat: the slice's strategy sums (float32), or None for zeros.
        algo: the run's algorithm (its discount schedule).
        regret_dtype: "float32" or "int32" (used when ``regret`` is None).
        last_seq: worker id -> last applied batch sequence number (from a checkpoint).
        round_id: the last round ended (the round form; from a checkpoint).
    """

    def __init__(
        self,
        index: int,
        row_lo: int,
        row_hi: int,
        algo: AlgoConfig,
        regret: np.ndarray | None = None,
        strat: np.ndarray | None = None,
        last_seq: dict[int, int] | None = None,
        round_id: int = 0,
    ):
        n = row_hi - row_lo
        self.index, self.row_lo, self.row_hi = index, row_lo, row_hi
        self.algo = algo
        dtype = np.int32 if algo.regret_dtype == "int32" else np.float32
        self.regret = np.array(regret, dtype) if regret is not None else np.zeros(n, dtype)
        self.strat = np.array(strat, np.float32) if strat is not None else np.zeros(n, np.float32)
        if self.regret.shape != (n,) or self.strat.shape != (n,):
            raise ValueError(f"shard {index}: slices must have {n} rows")
        self.last_seq: dict[int, int] = {int(k): int(v) for k, v in (last_seq or {}).items()}
        self.int_regret = algo.regret_dtype == "int32"
        self.lo_bound, self.hi_bound = regret_bounds(algo.regret_dtype)
        self.applied = 0
        self.ignored = 0
        self.round = int(round_id)  # the last round ended (the round form)
        self.pending: dict[int, dict[int, bytes]] = {}  # round -> group -> buffered delta
        self.method_cpu = 0.0  # CPU time inside put_delta / end_round_ref (the scale model)
        self.put_cpu = 0.0  # the part of it in ray.put of the snapshot

    def apply_delta(self, worker: int, batch_seq: int, payload: bytes) -> bool:
        """Add a worker's delta unless ``batch_seq`` was already applied for ``worker``.

        Returns:
            True if applied, False if ignored as a repeat.
        """
        if batch_seq <= self.last_seq.get(worker, -1):
            self.ignored += 1
            return False
        self._add(payload)
        self.last_seq[worker] = batch_seq
        self.applied += 1
        return True

    def _add(self, payload: bytes) -> None:
        rows, d_regret, d_strat = unpack_delta(payload)
        if len(rows) and int(rows.max()) >= len(self.regret):
            raise ValueError(
                f"shard {self.index}: delta row {int(rows.max())} outside {len(self.regret)} rows"
            )
        if self.int_regret:
            r = self.regret[rows].astype(np.int64) + d_regret
            self.regret[rows] = np.clip(r, self.lo_bound, self.hi_bound).astype(np.int32)
        else:
            self.regret[rows] += d_regret
        self.strat[rows] += d_strat

    def put_delta(self, round_id: int, group: int, payload: bytes) -> bool:
        """Buffer group ``group``'s summed delta of round ``round_id`` (added by :meth:`end_round`).
        Returns False (and keeps nothing) for a round already ended."""
        cpu = time.thread_time()
        if round_id <= self.round:
            self.ignored += 1
            return False
        self.pending.setdefault(round_id, {})[group] = payload
        self.method_cpu += time.thread_time() - cpu
        return True

    def end_round(self, round_id: int, t: int, t_end: int, groups: list[int]) -> tuple[dict, list[int]]:
        """End round ``round_id`` (iterations ``[t, t_end)``): discount through its boundaries, add
        the buffered deltas of ``groups`` in ascending order, publish. Idempotent: a round already
        ended only publishes. Returns ``(snapshot, missing)``: :meth:`publish`'s slice, and the
        groups of ``groups`` without a buffered delta (lost with a leader that died; the caller
        says so). The job calls it with ``num_returns=2`` so that only ``missing`` reaches it."""
        missing: list[int] = []
        if round_id > self.round:
            if round_id != self.round + 1:
                raise ValueError(f"shard {self.index}: round {round_id} after round {self.round}")
            discount_span(self.algo, self.regret, self.strat, t, t_end)
            got = self.pending.pop(round_id, {})
            for g in sorted(groups):
                if g in got:
                    self._add(got[g])
                    self.applied += 1
                else:
                    missing.append(g)
            self.round = round_id
            for r in [r for r in self.pending if r <= round_id]:
                del self.pending[r]
        return self.publish(), missing

    def end_round_ref(self, round_id: int, t: int, t_end: int, groups: list[int]) -> tuple[list, list[int]]:
        """:meth:`end_round` for the Ray job: the snapshot goes into the object store (put by this
        shard, on its node) and only ``([reference], missing)`` returns to the caller, so the
        tables never pass through the driver, however small."""
        cpu = time.thread_time()
        snap, missing = self.end_round(round_id, t, t_end, groups)
        import ray  # lazily: this class runs without Ray too (cluster.simulate, tests)

        mid = time.thread_time()
        box = [ray.put(snap)]
        end = time.thread_time()
        self.method_cpu += end - cpu
        self.put_cpu += end - mid
        return box, missing

    def publish_ref(self) -> list:
        """``[reference]`` of :meth:`publish`'s slice, put in the object store by this shard."""
        import ray  # lazily, as in end_round_ref

        return [ray.put(self.publish())]

    def discount_span(self, t: int, t_end: int) -> int:
        """Discount the slice at every boundary in ``(t, t_end]`` (a round's, before its deltas)."""
        return discount_span(self.algo, self.regret, self.strat, t, t_end)

    def load(self, path: str) -> int:
        """Replace the slice by the one in shard file ``path`` (a restart after this shard died);
        returns the iteration it was written at."""
        arrays, meta = read_shard(path)
        if (meta.get("row_lo"), meta.get("row_hi")) != (self.row_lo, self.row_hi):
            raise CheckpointError(
                f"{path} holds rows [{meta.get('row_lo')}, {meta.get('row_hi')}), shard {self.index} owns "
                f"[{self.row_lo}, {self.row_hi})"
            )
        self.regret = np.array(arrays["regret"], self.regret.dtype)
        self.strat = np.array(arrays["strat"], np.float32)
        self.last_seq = {int(k): int(v) for k, v in meta["last_seq"].items()}
        self.round = int(meta.get("round", 0))
        self.pending = {r: g for r, g in self.pending.items() if r > self.round}
        return int(meta["iteration"])

    def load_storage(self, storage, iteration: int) -> int:
        """:meth:`load` of this shard's file of checkpoint ``iteration`` in ``storage`` (a
        :class:`cluster.storage.Storage`), fetched into a local temporary directory."""
        with tempfile.TemporaryDirectory(prefix="mccfr-restore-") as tmp:
            return self.load(storage.download(iteration, shard_name(self.index), tmp))

    def publish(self) -> dict[str, np.ndarray]:
        """The slice for the next snapshot (copies: the object store keeps them immutable)."""
        return {"regret": self.regret.copy(), "strat": self.strat.copy()}

    def write(self, ckpt_dir: str, iteration: int) -> dict[str, Any]:
        """Write the slice as ``shard-<k>`` of a checkpoint; returns the manifest file entry."""
        meta = {
            "shard": self.index,
            "row_lo": self.row_lo,
            "row_hi": self.row_hi,
            "iteration": iteration,
            "last_seq": {str(k): v for k, v in self.last_seq.items()},
            "round": self.round,
        }
        return write_shard(ckpt_dir, self.index, {"regret": self.regret, "strat": self.strat}, meta)

    def stats(self) -> dict[str, int]:
        return {"applied": self.applied, "ignored": self.ignored, "rows": len(self.regret)}

    def cpu_seconds(self) -> tuple[float, float]:
        """``(process, methods)``: this process's CPU time so far (Ray's threads included), and the
        part spent inside :meth:`put_delta` / :meth:`end_round_ref` (for the scale model)."""
        return time.process_time(), self.method_cpu

    def ping(self) -> int:
        return self.index

    def node_id(self) -> str | None:
        """The Ray node this shard runs on (None outside Ray)."""
        try:
            import ray  # lazily, as in end_round_ref

            return ray.get_runtime_context().get_node_id()
        except Exception:
            return None
