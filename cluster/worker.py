"""Training workers: run a batch of external-sampling iterations against a snapshot, return deltas.

:class:`WorkerCore` is a plain class (testable without Ray); the job makes it an actor with
``ray.remote(WorkerCore)``. It rebuilds the tree and the card abstraction from the run's config
(a small dict: no large arrays travel), keeps its own xoshiro RNG state, and per batch:

1. concatenates the shards' published slices into a private copy of the tables (the snapshot),
2. runs ``n`` iterations of :func:`blueprint.kernels.es_iterations` on that copy, so it sees its
   own updates,
3. finds the touched rows (where the copy differs from the snapshot) and packs, per shard, the
   differences with :func:`cluster.shard.pack_delta`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from blueprint.kernels import es_iterations
from cluster.shard import pack_delta


class WorkerCore:
    """One worker.

    Args:
        worker_id: the worker's number.
        config: the run's resolved config (``Trainer.config_dict``).
        bounds: the shards' row ranges (:func:`cluster.shard.slice_bounds`).
        rng: uint64 ``[4]`` xoshiro state to start from.
        abstraction_hash: if given, must match the rebuilt abstraction.
    """

    def __init__(
        self,
        worker_id: int,
        config: dict,
        bounds: list[tuple[int, int]],
        rng: np.ndarray,
        abstraction_hash: str | None = None,
    ):
        from blueprint.trainer import Trainer

        self.worker_id = worker_id
        self.tr = Trainer.from_manifest_config(config)
        if abstraction_hash is not None and self.tr.abstraction_hash != abstraction_hash:
            raise RuntimeError(
                f"worker {worker_id}: rebuilt abstraction {self.tr.abstraction_hash} != the job's {abstraction_hash}"
            )
        self.bounds = [(int(a), int(b)) for a, b in bounds]
        if self.bounds[-1][1] != self.tr.size:
            raise RuntimeError(
                f"worker {worker_id}: shard ranges end at {self.bounds[-1][1]}, table has {self.tr.size}"
            )
        self.tr.rng = np.array(rng, np.uint64)
        self.kargs = self.tr._kernel_args()
        self.cargs = self.tr._card_args()
        self.int_regret = self.tr.config.algo.regret_dtype == "int32"

    def rng_state(self) -> list[int]:
        return [int(x) for x in self.tr.rng]

    def run_batch(self, batch_seq: int, t0: int, n: int, opts: np.ndarray, *slices: dict) -> list[Any]:
        """Run ``n`` iterations from iteration ``t0`` against the snapshot made of ``slices``.

        Args:
            batch_seq: this worker's batch number (for the shards' idempotency).
            t0: first iteration number.
            n: iterations.
            opts: float64 kernel options (``Trainer._opts``).
            slices: per shard, ``{"regret", "strat"}`` as published.

        Returns:
            ``[stats, payload_0, ..., payload_{S-1}]``: stats is a dict (batch_seq, iterations,
            node_visits, pruned, touched rows, bytes sent, rng after the batch, seconds);
            payload_k is the packed delta for shard k.
        """
        t_start = time.perf_counter()
        tr = self.tr
        snap_r = [s["regret"] for s in slices]
        snap_s = [s["strat"] for s in slices]
        np.concatenate(snap_r, out=tr.regret)
        np.concatenate(snap_s, out=tr.strat)
        t_run = time.perf_counter()
        st = es_iterations(n, t0, *self.kargs, *self.cargs, tr.regret, tr.strat, tr.rng, opts)
        t_delta = time.perf_counter()
        payloads = []
        touched = 0
        for (lo, hi), r0, s0 in zip(self.bounds, snap_r, snap_s):
            r1 = tr.regret[lo:hi]
            s1 = tr.strat[lo:hi]
            rows = np.flatnonzero((r1 != r0) | (s1 != s0))
            if self.int_regret:
                dr = r1[rows].astype(np.int64) - r0[rows].astype(np.int64)
            else:
                dr = r1[rows] - r0[rows]
            ds = s1[rows] - s0[rows]
            payloads.append(pack_delta(rows, dr, ds))
            touched += len(rows)
        t_end = time.perf_counter()
        stats = {
            "worker": self.worker_id,
            "batch_seq": batch_seq,
            "t0": t0,
            "iterations": n,
            "node_visits": int(st[0]),
            "pruned": int(st[1]),
            "touched_rows": touched,
            "bytes": sum(len(p) for p in payloads),
            "rng": self.rng_state(),
            "seconds": t_end - t_start,
            "compute_seconds": t_delta - t_run,
        }
        return [stats, *payloads]

    def ping(self) -> int:
        return self.worker_id
