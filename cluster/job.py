"""The Ray training job: one driver, N worker actors, S regret-shard actors.

:class:`RayJob` is the driver. It owns a :class:`blueprint.trainer.Trainer` for everything that
is not the tables' live contents (tree, cards, config, hashes, the schedule counters
``iteration``/``w_base``/``t_base``, visit counts, exact exploitability on an assembled copy), so a
job checkpoint has the trainer's manifest keys and ``Trainer.load`` / ``mccfr eval`` read it.

The loop runs in rounds (bulk-synchronous):

* a round covers iterations ``[t, t_end)`` with ``t_end`` the next multiple of ``N * B`` (the batch
  grid is fixed in iterations from 0), capped at the end of the run; it is split into N contiguous
  batches, worker k running ``[t0_k, t0_k + b_k)``. A round may span many discount boundaries:
  discounting is a function of the iteration count, so every party applies the round's boundaries
  itself (no synchronisation at a boundary);
* the shards first discount their slices through every boundary of the round
  (``discount_span(t, t_end)``); every worker gets the same snapshot (the shards' published slices
  at ``t``, by object reference), runs its batch on a private copy that passes the same boundaries
  (skipping the other workers' iterations), and returns per-shard compact deltas, its copy minus the
  discounted snapshot, as separate objects; the driver waits with ``ray.wait`` and forwards each
  finished worker's delta references to the shards (``apply_delta(worker, batch_seq, payload)``,
  idempotent) without fetching them;
* at the end of the round the shards publish the next snapshot. Actor calls from the driver run in
  submission order, so a shard discounts before any delta of the round and publishes only after
  applying every one.

With linear weighting (``linear``, ``pluribus``) a boundary multiplies the whole table by one
factor, so a delta discounted on the worker and added to the discounted table is exactly what one
process would have; ``dcfr``'s sign-dependent factors make it approximate for more than one worker
(as staleness is).

Staleness: a worker's delta is computed against the snapshot of the start of its round; the deltas
of other workers applied before it in the round are what it did not see. ``staleness`` reports that
lag in iterations, averaged over batches (0 with one worker; at most ``(N - 1) * B``).

Determinism: with one worker, a fixed seed and a fixed batch size, the result depends only on the
iteration grid, so training N iterations and resuming for N more gives the same tables, bit for
bit, as 2N uninterrupted, provided N is a multiple of the batch size (a run that ends mid-batch
cuts that batch in two).

Faults: a worker whose actor dies (``ray.kill``, kill -9 of its process, a lost node) makes its
result raise ``RayActorError``; the driver records the lost batch (its iterations were allocated
but never applied), re-creates the actor from the worker's last known RNG state, and the worker
rejoins in the next round from the latest snapshot. A shard that dies is restored: the driver keeps
the log of every call it made to the shards since the last complete checkpoint (the round spans and
the references of the delta objects, which stay in the object store while referenced); a new shard
actor loads its slice from that checkpoint (or from the job's starting tables) and replays the log,
which reproduces its state exactly (the deltas are idempotent and applied in the same order). The
log is capped at ``max_replay_bytes``; past that, or if the restore itself fails, the job stops with
:class:`JobError` naming the shard and the checkpoint to resume from.
"""

from __future__ import annotations

import contextlib
import os
import signal
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import numpy as np

from blueprint import checkpoint as ckpt
from blueprint.numerics import seed_rng_state
from blueprint.trainer import Trainer, run_for
from cluster.shard import ShardCore, slice_bounds
from cluster.worker import WorkerCore


def default_batch(table_entries: int) -> int:
    """Iterations per worker per round when none is given: table entries / 25, within
    [100, 100,000]. Staleness costs exploitability in proportion to batch / iterations, and more in
    a small table, where each iteration moves a larger part of the strategy (Leduc, 2,604 entries:
    104; 2 workers at batch 100 end 4M iterations within 7% of one process, at 1,000 1.8x worse); a
    big table needs big batches to keep the per-round overhead small (hunl100 with the small
    abstractions, 116,463 entries: 4,658). See BENCHMARKS.md, "Ray job"."""
    return int(min(max(table_entries // 25, 100), 100_000))


class JobError(RuntimeError):
    """The job cannot go on (a shard died and could not be restored, ...); the message says why
    and which checkpoint to resume from."""


def worker_seed_state(seed: int, worker: int, iteration: int = 0) -> np.ndarray:
    """A worker's initial RNG state: the seed's own stream for worker 0 at iteration 0 (the
    single-process trainer's), else a stream spawned from the seed, the worker and the iteration."""
    if worker == 0 and iteration == 0:
        return seed_rng_state(np.random.SeedSequence(seed))
    return seed_rng_state(np.random.SeedSequence(seed, spawn_key=(worker, iteration)))


def split_round(total: int, workers: int) -> list[int]:
    """Split ``total`` iterations into ``workers`` contiguous batch sizes (first ones larger)."""
    q, r = divmod(total, workers)
    return [q + (1 if k < r else 0) for k in range(workers)]


class RayJob:
    """The driver of a distributed training job (see the module docstring).

    Args:
        trainer: a fresh :class:`Trainer` (or one loaded from a checkpoint): tree, cards, config,
            schedule counters and the starting tables.
        workers: N worker actors.
        shards: S shard actors.
        batch: B iterations per worker per round (default: :func:`default_batch`).
        address: ``ray.init`` address (None: join a running local Ray or start one; "auto": join
            the cluster started with ``ray start``).
        worker_cpus: CPUs each worker actor reserves (shards reserve none).
        worker_rng: per worker, a uint64[4] RNG state (a resumed job); default from the seed.
        worker_seq: per worker, the last batch sequence number used (a resumed job).
        log: called with human-readable notes (lost batches, restarts).
        ray_init: extra keyword arguments for ``ray.init``.
        max_replay_bytes: the most delta bytes kept since the last checkpoint to restore a shard
            that dies (past that a dead shard stops the job).
    """

    def __init__(
        self,
        trainer: Trainer,
        workers: int = 2,
        shards: int = 2,
        batch: int | None = None,
        address: str | None = None,
        worker_cpus: float = 1,
        worker_rng: list | None = None,
        worker_seq: list[int] | None = None,
        log: Callable[[str], Any] | None = None,
        ray_init: dict | None = None,
        max_replay_bytes: int = 1 << 30,
    ):
        import ray

        if batch is None:
            batch = default_batch(trainer.size)
        if workers < 1 or shards < 1 or batch < 1:
            raise JobError("workers, shards and batch must be >= 1")
        if trainer.config.algo.full_traversal:
            raise JobError(
                f"--algo {trainer.config.algo.name} enumerates every deal; the Ray job runs sampled MCCFR"
            )
        self.ray = ray
        self.tr = trainer
        self.num_workers, self.num_shards, self.batch = workers, shards, batch
        self.worker_cpus = worker_cpus
        self.log = log or (lambda msg: None)
        self.own_ray = False
        if not ray.is_initialized():
            kw = {"include_dashboard": False, "logging_level": "warning", "log_to_driver": False}
            kw.update(ray_init or {})
            ray.init(address=address, **kw)
            self.own_ray = True
        self.bounds = slice_bounds(trainer.row_offset, trainer.size, shards)
        seed = trainer.config.seed
        self.worker_rng = [
            np.array(worker_rng[k], np.uint64)
            if worker_rng is not None and k < len(worker_rng)
            else worker_seed_state(seed, k, trainer.iteration)
            for k in range(workers)
        ]
        self.worker_seq = [
            int(worker_seq[k]) if worker_seq is not None and k < len(worker_seq) else 0
            for k in range(workers)
        ]
        self.config_ref = ray.put(trainer.config_dict)
        self._ShardActor = ray.remote(num_cpus=0, max_restarts=0)(ShardCore)
        # what a shard that dies is rebuilt from: the starting slices (until the first checkpoint),
        # then the last complete checkpoint; plus the log of the shard calls made since
        self.base_refs: list | None = [
            (ray.put(trainer.regret[lo:hi]), ray.put(trainer.strat[lo:hi])) for lo, hi in self.bounds
        ]
        self.base_seq = list(self.worker_seq)
        self.base_dir: Path | None = None
        self.replay: list[tuple] | None = []
        self.replay_bytes = 0
        self.max_replay_bytes = max_replay_bytes
        self.shards = [self._new_shard(k) for k in range(shards)]
        self._WorkerActor = ray.remote(num_cpus=worker_cpus, max_restarts=0)(WorkerCore)
        self.workers = [self._new_worker(k) for k in range(workers)]
        self.snapshot = [s.publish.remote() for s in self.shards]
        self.version = 0
        # statistics
        self.batches = 0
        self.bytes_sent = 0
        self.touched_rows = 0
        self.staleness_sum = 0
        self.lost: list[dict[str, Any]] = []
        self.restarts = 0
        self.shard_restores = 0
        self.compute_seconds = 0.0
        self.worker_seconds = 0.0
        self.round_seconds = 0.0
        self.worker_rss: dict[int, int] = {}
        self.checkpoint_pauses: list[float] = []

    # -- actors -------------------------------------------------------------------------------
    def _new_worker(self, k: int):
        return self._WorkerActor.remote(
            k, self.config_ref, self.bounds, self.worker_rng[k], self.tr.abstraction_hash
        )

    def _new_shard(self, k: int):
        """A shard actor holding slice k as of the restore base (the starting slices, or the last
        complete checkpoint's file); the caller replays the log since."""
        lo, hi = self.bounds[k]
        seq = {w: self.base_seq[w] for w in range(self.num_workers)}
        if self.base_dir is None:
            r_ref, s_ref = self.base_refs[k]
            return self._ShardActor.remote(k, lo, hi, self.tr.config.algo, r_ref, s_ref, seq)
        actor = self._ShardActor.remote(k, lo, hi, self.tr.config.algo, None, None, seq)
        actor.load.remote(str(self.base_dir / ckpt.shard_name(k)))
        return actor

    def _restore_shards(self, exc: BaseException) -> None:
        """Re-create every dead shard from the restore base and replay the log (see the module
        docstring); raise :class:`JobError` when that is impossible."""
        ray = self.ray
        dead = []
        for k, s in enumerate(self.shards):
            try:
                ray.get(s.ping.remote(), timeout=60)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                dead.append(k)
        if not dead:
            raise JobError(f"a shard call failed: {exc}") from exc
        since = f"checkpoint {self.base_dir}" if self.base_dir is not None else "the job's start"
        stop = (
            f"shard(s) {dead} died; the job stops: resume from the last complete checkpoint "
            f"({self.base_dir or 'none written yet'}) with 'mccfr resume RUN_DIR'"
        )
        if self.replay is None:
            raise JobError(f"{stop} (the deltas since {since} were over {self.max_replay_bytes:,} bytes and not kept)") from exc
        for k in dead:
            self.log(f"shard {k} died ({type(exc).__name__}); restoring it from {since} and {len(self.replay)} logged calls")
            with contextlib.suppress(Exception):  # already gone
                ray.kill(self.shards[k], no_restart=True)
            self.shards[k] = self._new_shard(k)
        try:
            calls = []
            for op in self.replay:
                for k in dead:
                    sh = self.shards[k]
                    if op[0] == "span":
                        calls.append(sh.discount_span.remote(op[1], op[2]))
                    else:
                        calls.append(sh.apply_delta.remote(op[1], op[2], op[3][k]))
            ray.get(calls + [self.shards[k].ping.remote() for k in dead])
        except Exception as exc2:
            raise JobError(f"{stop} (restoring it failed: {exc2})") from exc2
        self.shard_restores += len(dead)

    def _log_call(self, op: tuple, nbytes: int = 0) -> None:
        if self.replay is None:
            return
        self.replay.append(op)
        self.replay_bytes += nbytes
        if self.replay_bytes > self.max_replay_bytes:
            self.replay = None  # frees the delta objects; a dead shard now stops the job
            self.log(
                f"more than {self.max_replay_bytes:,} delta bytes since the last checkpoint: a shard that "
                "dies before the next checkpoint stops the job"
            )

    def _restart_worker(self, k: int, info: dict[str, Any], exc: BaseException) -> None:
        self.lost.append(info)
        self.log(
            f"worker {k} died ({type(exc).__name__}); lost its batch {info['batch_seq']} "
            f"(iterations {info['t0']:,}..{info['t0'] + info['iterations'] - 1:,}, not applied); restarting it"
        )
        with contextlib.suppress(Exception):  # already gone
            self.ray.kill(self.workers[k], no_restart=True)
        self.workers[k] = self._new_worker(k)
        self.restarts += 1

    def kill_worker(self, k: int) -> None:
        """kill -9 worker ``k``'s process (fault drills; the worker must run on this node)."""
        os.kill(self.ray.get(self.workers[k].pid.remote()), signal.SIGKILL)

    # -- the trainer-like interface (used by the CLI's session) ---------------------------------
    def __getattr__(self, name: str) -> Any:
        if name in ("tr", "ray"):
            raise AttributeError(name)
        return getattr(self.tr, name)

    @property
    def iteration(self) -> int:
        return self.tr.iteration

    def _round_size(self, end: int) -> int:
        t = self.tr.iteration
        grid = self.num_workers * self.batch
        return min((t // grid + 1) * grid, end) - t

    def _round(self, end: int) -> None:
        ray = self.ray
        tr = self.tr
        t = tr.iteration
        total = self._round_size(end)
        t_end = t + total
        sizes = split_round(total, self.num_workers)
        t_start = time.perf_counter()
        calls = [s.discount_span.remote(t, t_end) for s in self.shards]
        self._log_call(("span", t, t_end))
        pending: dict[Any, tuple[int, dict[str, Any], list]] = {}
        t0 = t
        for k, b in enumerate(sizes):
            if b == 0:
                continue
            self.worker_seq[k] += 1
            seq = self.worker_seq[k]
            refs = (
                self.workers[k]
                .run_batch.options(num_returns=1 + self.num_shards)
                .remote(seq, t, t0, b, t_end, tr.w_base, tr.t_base, *self.snapshot)
            )
            pending[refs[0]] = (k, {"worker": k, "batch_seq": seq, "t0": t0, "iterations": b}, refs[1:])
            t0 += b
        applied_iters = 0
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                k, info, payloads = pending.pop(ref)
                try:
                    stats = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    self._restart_worker(k, info, exc)
                    continue
                for shard, payload in zip(self.shards, payloads):
                    calls.append(shard.apply_delta.remote(k, info["batch_seq"], payload))
                self._log_call(("delta", k, info["batch_seq"], payloads), stats["bytes"])
                self.worker_rng[k] = np.array(stats["rng"], np.uint64)
                self.worker_rss[k] = stats["rss_bytes"]
                tr.node_visits += stats["node_visits"]
                tr.pruned += stats["pruned"]
                self.batches += 1
                self.bytes_sent += stats["bytes"]
                self.touched_rows += stats["touched_rows"]
                self.staleness_sum += applied_iters
                self.compute_seconds += stats["compute_seconds"]
                self.worker_seconds += stats["seconds"]
                applied_iters += stats["iterations"]
        try:
            ray.get(calls)
        except ray.exceptions.RayActorError as exc:
            self._restore_shards(exc)
        tr.skip_to(t_end, tables=False)
        self.snapshot = [s.publish.remote() for s in self.shards]
        ray.wait(self.snapshot, num_returns=len(self.snapshot), fetch_local=False)
        self.version += 1
        dt = time.perf_counter() - t_start
        tr.seconds += dt
        self.round_seconds += dt

    def run(
        self, iterations: int, callback: Callable[[RayJob], bool] | None = None, report_seconds: float = 0.5
    ) -> None:
        """Advance by ``iterations`` in rounds; ``callback(self)`` after each round may return
        True to stop early. (``report_seconds`` is accepted for the trainer's interface.)"""
        end = self.tr.iteration + iterations
        while self.tr.iteration < end:
            self._round(end)
            if callback is not None and callback(self):
                break

    def run_for(self, seconds: float, callback=None, report_seconds: float = 0.5) -> None:
        run_for(self, seconds, callback, report_seconds)

    # -- tables ---------------------------------------------------------------------------------
    def sync(self) -> Trainer:
        """Copy the shards' current tables into the driver's trainer (and the RNG of worker 0)."""
        slices = self.ray.get([s.publish.remote() for s in self.shards])
        np.concatenate([s["regret"] for s in slices], out=self.tr.regret)
        np.concatenate([s["strat"] for s in slices], out=self.tr.strat)
        self.tr.rng = np.array(self.worker_rng[0], np.uint64)
        return self.tr

    def average_strategy(self) -> np.ndarray:
        return self.sync().average_strategy()

    def current_strategy(self) -> np.ndarray:
        return self.sync().current_strategy()

    def exploitability(self) -> tuple[float, list[float]]:
        return self.sync().exploitability()

    def stats(self) -> dict[str, Any]:
        """Job figures: staleness (iterations), bytes per batch, losses, restarts."""
        b = max(self.batches, 1)
        return {
            "workers": self.num_workers,
            "shard_restores": self.shard_restores,
            "worker_rss_bytes": max(self.worker_rss.values()) if self.worker_rss else None,
            "bytes_per_second": self.bytes_sent / self.round_seconds if self.round_seconds > 0 else None,
            "shards": self.num_shards,
            "batch": self.batch,
            "batches": self.batches,
            "staleness": self.staleness_sum / b,
            "bytes_per_batch": self.bytes_sent / b,
            "touched_rows_per_batch": self.touched_rows / b,
            "lost_batches": len(self.lost),
            "lost_iterations": sum(x["iterations"] for x in self.lost),
            "worker_restarts": self.restarts,
            "compute_share": self.compute_seconds / self.worker_seconds if self.worker_seconds > 0 else None,
            "checkpoint_pause_seconds": max(self.checkpoint_pauses) if self.checkpoint_pauses else None,
        }

    # -- checkpoints ------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        m = self.tr.manifest()
        m["rng_state"] = [int(x) for x in self.worker_rng[0]]
        m["job"] = {
            "workers": self.num_workers,
            "shards": self.num_shards,
            "batch": self.batch,
            "bounds": [[lo, hi] for lo, hi in self.bounds],
            "layout_size": self.tr.size,
            "worker_rng": [[int(x) for x in r] for r in self.worker_rng],
            "worker_seq": list(self.worker_seq),
            "lost_batches": len(self.lost),
            "lost_iterations": sum(x["iterations"] for x in self.lost),
        }
        return m

    def save(self, run_dir: Path, keep: int | None = None) -> Path:
        """Checkpoint: every shard writes its slice (in parallel), then the driver the manifest.

        A failed write (disk full, ...) removes the partial directory and raises
        :class:`CheckpointError` saying which checkpoint is kept; the job can go on."""
        t_start = time.perf_counter()
        run_dir = Path(run_dir)
        it = self.tr.iteration
        kept = ckpt.previous_kept(run_dir, it)
        ckpt_dir = ckpt.new_checkpoint_dir(run_dir, it, replace=True)
        try:
            files = self.ray.get([s.write.remote(str(ckpt_dir), it) for s in self.shards])
            ckpt.write_manifest(ckpt_dir, self.manifest(), files)
        except BaseException as exc:
            shutil.rmtree(ckpt_dir, ignore_errors=True)
            if isinstance(exc, Exception):
                cause = getattr(exc, "cause", None) or exc  # a shard's error comes as RayTaskError
                raise ckpt.CheckpointError(
                    f"writing checkpoint {ckpt_dir} (iteration {it}) failed: {cause}; {kept}"
                ) from exc
            raise
        # a shard that dies from now on is rebuilt from this checkpoint
        self.base_dir, self.base_refs, self.base_seq = ckpt_dir, None, list(self.worker_seq)
        self.replay, self.replay_bytes = [], 0
        if keep is not None:
            ckpt.prune_checkpoints(run_dir, keep)
        self.checkpoint_pauses.append(time.perf_counter() - t_start)
        return ckpt_dir

    @staticmethod
    def resume_kwargs(manifest: dict[str, Any], **overrides) -> dict[str, Any]:
        """Constructor keywords that continue the job of a checkpoint's manifest: its workers,
        shards, batch, worker RNG states and batch numbers (a single-process checkpoint: one
        worker continuing the trainer's RNG). ``overrides`` (None values ignored) replace them."""
        job = manifest.get("job") or {}
        kw = {
            "workers": job.get("workers", 1),
            "shards": job.get("shards", 1),
            "batch": job.get("batch"),
            "worker_rng": job.get("worker_rng", [manifest["rng_state"]]),
            "worker_seq": job.get("worker_seq"),
        }
        kw.update({k: v for k, v in overrides.items() if v is not None})
        return kw

    @classmethod
    def load(cls, run_dir: Path, log: Callable[[str], Any] | None = None, **kwargs) -> RayJob:
        """Resume from the newest complete checkpoint of ``run_dir`` (written by a job with any
        number of shards, or by the single-process trainer). ``kwargs`` as for the constructor;
        ``workers``/``shards``/``batch`` default to the checkpoint's."""
        manifest, shards = ckpt.load_latest(Path(run_dir), log=log)
        tr = Trainer.from_checkpoint(Path(run_dir), manifest, shards)
        del shards
        return cls(tr, log=log, **cls.resume_kwargs(manifest, **kwargs))

    # -- shutdown ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Kill the actors (and stop Ray if this job started it)."""
        for a in self.workers + self.shards:
            with contextlib.suppress(Exception):  # already gone
                self.ray.kill(a, no_restart=True)
        self.workers, self.shards = [], []
        if self.own_ray:
            self.ray.shutdown()
            self.own_ray = False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
