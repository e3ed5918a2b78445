"""Training workers: run a batch of external-sampling iterations against a snapshot, return deltas.

:class:`WorkerCore` is a plain class (testable without Ray); the job makes it an actor with
``ray.remote(WorkerCore)``. It rebuilds the betting tree from the run's config (a small dict) and
takes the card abstraction as built by the driver (``cards``: in the Ray job one object in the
node's object store, its arrays read zero-copy by the kernels); it never builds or loads an
abstraction itself. Per batch (the xoshiro RNG state can come with the batch, so a retried batch,
on this worker or another, draws the same deals):

1. concatenates the shards' published slices into a private copy of the tables (the snapshot),
2. runs its ``n`` iterations with the trainer's own loop (:meth:`Trainer.run`) on that copy, so it
   sees its own updates, passing every discount boundary of the round (a batch may span many),
3. finds the touched rows (where the copy differs from the snapshot discounted through the round)
   and packs, per shard, the differences with :func:`cluster.shard.pack_delta`.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np

from blueprint.memory import memory_bytes
from blueprint.trainer import Trainer, discount_span
from cluster.shard import pack_delta

MEMORY_EVERY_S = 2.0
"""A batch's memory figures are at most this old (seconds)."""


class WorkerCore:
    """One worker.

    Args:
        worker_id: the worker's number.
        config: the run's resolved config (``Trainer.config_dict``).
        bounds: the shards' row ranges (:func:`cluster.shard.slice_bounds`).
        rng: uint64 ``[4]`` xoshiro state to start from (or None: each batch brings its own).
        abstraction_hash: if given, must match the abstraction.
        cards: the driver's :class:`abstraction.cards.CardAbstraction` (None: build it from the
            config, as one process does; the Ray job always passes it).
        private_cards: copy ``cards``' arrays into this process (what a worker that loads its own
            table holds; for memory measurements) instead of reading the shared copy.
        threads: threads training each batch on this worker's copy of the tables
            (:mod:`blueprint.threads`: on copies merged into it, or lock-free on it; 1 is
            bit-exact, the Ray job's reference). Thread 0 runs the worker's own RNG stream; the others' are this worker's.
    """

    def __init__(
        self,
        worker_id: int,
        config: dict,
        bounds: list[tuple[int, int]],
        rng: np.ndarray | None = None,
        abstraction_hash: str | None = None,
        cards=None,
        private_cards: bool = False,
        threads: int = 1,
    ):
        if cards is not None and private_cards:
            cards = dataclasses.replace(
                cards,
                **{
                    f: np.array(getattr(cards, f))
                    for f in ("iso", "table", "offsets")
                    if getattr(cards, f) is not None
                },
            )
        self.worker_id = worker_id
        self.tr = Trainer.from_manifest_config(config, cards=cards)
        self.tr.stream_worker = worker_id
        self.tr.set_threads(threads)
        if abstraction_hash is not None and self.tr.abstraction_hash != abstraction_hash:
            raise RuntimeError(
                f"worker {worker_id}: rebuilt abstraction {self.tr.abstraction_hash} != the job's {abstraction_hash}"
            )
        self.bounds = [(int(a), int(b)) for a, b in bounds]
        if self.bounds[-1][1] != self.tr.size:
            raise RuntimeError(
                f"worker {worker_id}: shard ranges end at {self.bounds[-1][1]}, table has {self.tr.size}"
            )
        if rng is not None:
            self.tr.rng = np.array(rng, np.uint64)
        self.int_regret = self.tr.config.algo.regret_dtype == "int32"
        self._base_r = np.empty_like(self.tr.regret)  # the snapshot through a round's discounting
        self._base_s = np.empty_like(self.tr.strat)
        self._mem: dict[str, int] | None = None
        self._mem_at = 0.0

    def rng_state(self) -> list[int]:
        return [int(x) for x in self.tr.rng]

    def run_batch(
        self,
        batch_seq: int,
        t: int,
        t0: int,
        n: int,
        t_end: int,
        w_base: float,
        t_base: int,
        *slices: dict,
        rng: np.ndarray | None = None,
        worker: int | None = None,
    ) -> list[Any]:
        """Run iterations ``[t0, t0 + n)`` of the round ``[t, t_end)`` against the snapshot ``slices``
        (the tables at iteration ``t``, schedule state ``w_base``/``t_base``).

        The worker's copy goes through every discount boundary of the round in order: those before
        its batch (the other workers' iterations, skipped), those inside it, and those after it, so
        its delta is ``copy - D(snapshot)`` with ``D`` the round's discounting, the very sweep the
        shards apply before adding the deltas. With one worker the shards end with the copy.

        Args:
            batch_seq: this worker's batch number (for the shards' idempotency).
            t, t_end: the round.
            t0, n: this batch (``t <= t0``, ``t0 + n <= t_end``).
            w_base, t_base: the schedule state at ``t`` (``Trainer.w_base``/``t_base``).
            slices: per shard, ``{"regret", "strat"}`` as published.
            rng: the RNG state to run the batch from (None: this worker's own, continued).
            worker: whose batch this is (for the stats; default this worker).

        Returns:
            ``[stats, payload_0, ..., payload_{S-1}]``: stats is a dict (batch_seq, iterations,
            node_visits, pruned, touched rows, bytes sent, rng after the batch, seconds, rss);
            payload_k is the packed delta for shard k.
        """
        if not t <= t0 <= t0 + n <= t_end:
            raise ValueError(
                f"worker {self.worker_id}: batch [{t0}, {t0 + n}) outside the round [{t}, {t_end})"
            )
        t_start = time.perf_counter()
        tr = self.tr
        if rng is not None:
            tr.rng = np.array(rng, np.uint64)
        snap_r = [s["regret"] for s in slices]
        snap_s = [s["strat"] for s in slices]
        np.concatenate(snap_r, out=tr.regret)
        np.concatenate(snap_s, out=tr.strat)
        visits, pruned = tr.node_visits, tr.pruned
        tr.iteration, tr.w_base, tr.t_base = t, w_base, t_base
        tr.skip_to(t0)
        t_run = time.perf_counter()
        tr.run(n)
        t_delta = time.perf_counter()
        tr.skip_to(t_end)
        # the reference each delta is taken against: the snapshot through the round's discounting
        base_r, base_s = snap_r, snap_s
        if self._discounts(t, t_end):
            np.concatenate(snap_r, out=self._base_r)
            np.concatenate(snap_s, out=self._base_s)
            discount_span(tr.config.algo, self._base_r, self._base_s, t, t_end)
            base_r = [self._base_r[lo:hi] for lo, hi in self.bounds]
            base_s = [self._base_s[lo:hi] for lo, hi in self.bounds]
        payloads = []
        touched = 0
        for (lo, hi), r0, s0 in zip(self.bounds, base_r, base_s):
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
        t_end_s = time.perf_counter()
        mem = self._memory(t_end_s)
        stats = {
            "worker": self.worker_id if worker is None else worker,
            "batch_seq": batch_seq,
            "t0": t0,
            "iterations": n,
            "node_visits": tr.node_visits - visits,
            "pruned": tr.pruned - pruned,
            "touched_rows": touched,
            "bytes": sum(len(p) for p in payloads),
            "rng": self.rng_state(),
            "seconds": t_end_s - t_start,
            "compute_seconds": t_delta - t_run,
            "rss_bytes": mem["rss"],
            "pss_bytes": mem["pss"],
            "uss_bytes": mem["uss"],
            "pid": os.getpid(),
        }
        return [stats, *payloads]

    def _memory(self, now: float) -> dict[str, int]:
        """:func:`blueprint.memory.memory_bytes`, read at most every ``MEMORY_EVERY_S`` seconds: reading
        /proc/self/smaps_rollup takes about 3 ms, more than a small batch's whole compute."""
        if self._mem is None or now - self._mem_at >= MEMORY_EVERY_S:
            self._mem, self._mem_at = memory_bytes(), now
        return self._mem

    def _discounts(self, t: int, t_end: int) -> bool:
        a = self.tr.config.algo
        if a.discount == "none":
            return False
        first = (t // a.discount_every + 1) * a.discount_every
        return first <= t_end and a.discounts_at(first)

    def ping(self) -> int:
        return self.worker_id

    def pid(self) -> int:
        return os.getpid()

    def memory(self) -> dict[str, int]:
        return memory_bytes()

    def node_id(self) -> str | None:
        import ray  # lazily: this class runs without Ray too (cluster.simulate, tests)

        return ray.get_runtime_context().get_node_id()

    def cards_zero_copy(self) -> bool:
        """Whether the card abstraction's arrays are read-only views (an object-store copy shared
        by the node's workers) rather than this process's own (LOSSLESS/RANK: nothing to share)."""
        c = self.tr.cards
        arrays = [a for a in (c.iso, c.table, c.offsets) if a is not None]
        return bool(arrays) and all(not a.flags.writeable and not a.flags.owndata for a in arrays)
