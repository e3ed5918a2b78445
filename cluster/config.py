"""What a Ray training job is asked to be: :class:`RayJobConfig`, one frozen record checked once.

:class:`cluster.job.RayJob` takes one (``RayJob(trainer, config)``), or the same fields as
keywords (``RayJob(trainer, workers=4, shards=2)``), which build one. This module imports neither
Ray nor numpy, so the command line builds and checks a config before Ray starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from numbers import Integral
from typing import Any, Self

from cluster.errors import JobError

__all__ = ["RayJobConfig"]


def _whole(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class RayJobConfig:
    """The shape and the knobs of a Ray job; every field is checked in ``__post_init__`` and a bad
    one raises :class:`cluster.errors.JobError` naming it.

    Fields:
        workers: N worker actors.
        shards: S shard actors.
        batch: B iterations per worker per round (None: :func:`cluster.rounds.default_batch` of
            the trainer's table size).
        address: ``ray.init`` address (None: join a running local Ray or start one; "auto": join
            the cluster started with ``ray start``).
        worker_cpus: CPUs each worker actor reserves (leaders and shards reserve none; None: its
            ``threads``).
        threads: T threads per worker, training each batch on the worker's one copy of the
            tables (:mod:`blueprint.threads`): one worker per node with a thread per core keeps
            rounds, snapshots and deltas between nodes only. 1 (the default) is bit-exact; None:
            the CPUs of the smallest alive node shared among a node's workers.
        worker_rng: per worker, a uint64[4] RNG state (a resumed job); None: from the seed.
        worker_seq: per worker, the last batch sequence number used (a resumed job).
        ray_init: extra keyword arguments for ``ray.init``.
        max_replay_bytes: the most retained delta bytes per leader since the last checkpoint (what
            a dead shard is restored from; past that a dead shard stops the job).
        nodes: placement-group bundles, one per node (None: the alive nodes with CPUs, at most
            ``workers``); the workers are split evenly over them (first nodes get more).
        shard_nodes: per shard, the node (bundle) it starts on (None: ``k mod nodes``).
        timeout: seconds any wait may take (start, a round's batches, a shard call) before the
            job acts on it (a worker leaves the round, a node is counted down, a shard restored).
        round: the last round ended (a resumed job).
        share_cards: the workers read the node's one copy of the card table in Ray's object store
            (False: each copies it into its own memory). None (the default): shared where a node
            runs several workers (one copy instead of one each), private where each node runs one
            worker (the default layout: one worker of many threads per node), since the object
            store's shared memory gets no huge pages and the lookups then cost 12% more.
        worker_retries: Ray's ``max_restarts`` / ``max_task_retries`` of each worker (past them a
            worker is gone for good and its batches run on the node's other workers).
        box_round_args: the leaders' calls carry one reference to the list of snapshot references
            and one to the list of shard handles instead of the lists (S of each per call);
            measured dearer up to 5 simulated nodes (the driver owns one more object a round,
            fetched by every node), see :meth:`cluster.rounds.RoundsMixin._round_args`.
        pack_round_args: a leader's call carries its eleven arguments as one tuple instead of
            apart (measured no cheaper on 2 to 5 simulated nodes; for measurements).
        group_size: the two-level fan-out (:mod:`cluster.group`): nodes per node group, each with
            a group leader that the driver calls instead of the node leaders, which pre-sums its
            nodes' deltas per shard and ends its nodes' shards; a round then costs the driver
            ``2 x ceil(nodes / group_size)`` calls and a shard receives one delta per node group.
            None or 0 (the default): off, the driver calls every node leader and every shard.
            The tables depend on the grouping (the deltas of a node group are summed before they
            reach a shard), not on timing or failures.
        relay_snapshot: with group leaders, each fetches the round's snapshot once and relays it
            to its nodes as one object (a shard's object is fetched by the group leaders, not by
            every node; one more copy of the table per node a round). False: every node leader
            fetches every shard's object (for measurements).
        ray_log: a file that takes Ray's own messages in this process while the job runs (its
            Python logger's and the lines its C++ core writes to standard error; our output stays
            on the terminal), with the path of Ray's session logs (:mod:`cluster.ray_logs`). None
            (the default): Ray prints them to the terminal, as it does.
    """

    workers: int = 2
    shards: int = 2
    batch: int | None = None
    address: str | None = None
    worker_cpus: float | None = None
    threads: int | None = 1
    worker_rng: list | None = None
    worker_seq: list[int] | None = None
    ray_init: dict | None = None
    max_replay_bytes: int = 1 << 30
    nodes: int | None = None
    shard_nodes: list[int] | None = None
    timeout: float = 300.0
    round: int = 0
    share_cards: bool | None = None
    worker_retries: int = 3
    box_round_args: bool = False
    pack_round_args: bool = False
    group_size: int | None = None
    relay_snapshot: bool = True
    ray_log: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        for name in ("workers", "shards"):
            value = getattr(self, name)
            if not _whole(value) or value < 1:
                raise JobError(f"{name} must be a whole number >= 1, got {value!r}")
        if self.batch is not None and (not _whole(self.batch) or self.batch < 1):
            raise JobError(
                f"batch must be a whole number >= 1 (or None: chosen from the table size), got {self.batch!r}"
            )
        if self.threads is not None and (not _whole(self.threads) or self.threads < 1):
            raise JobError(f"threads (per worker) must be a whole number >= 1, got {self.threads!r}")
        if self.worker_cpus is not None and not (
            isinstance(self.worker_cpus, (int, float))
            and not isinstance(self.worker_cpus, bool)
            and self.worker_cpus > 0
        ):
            raise JobError(
                f"worker_cpus must be a number > 0 (or None: the worker's threads), got {self.worker_cpus!r}"
            )
        if self.group_size is not None and (not _whole(self.group_size) or self.group_size < 0):
            raise JobError(f"group_size must be >= 1 (or 0/None: no group leaders), got {self.group_size!r}")
        if self.nodes is not None and (not _whole(self.nodes) or self.nodes < 1):
            raise JobError(f"nodes must be a whole number >= 1, got {self.nodes!r}")
        if not isinstance(self.timeout, (int, float)) or isinstance(self.timeout, bool) or self.timeout <= 0:
            raise JobError(f"timeout must be a number of seconds > 0, got {self.timeout!r}")
        for name in ("max_replay_bytes", "round", "worker_retries"):
            value = getattr(self, name)
            if not _whole(value) or value < 0:
                raise JobError(f"{name} must be a whole number >= 0, got {value!r}")
        for name in ("worker_rng", "worker_seq", "shard_nodes"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, (list, tuple)):
                raise JobError(
                    f"{name} must be a list (one entry per worker or shard), got {type(value).__name__}"
                )

    @classmethod
    def of(cls, **options: Any) -> Self:
        """A config from keywords; an unknown one is a :class:`JobError` that names it."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise JobError(
                f"unknown Ray job option(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
        return cls(**options)

    def with_options(self, **options: Any) -> Self:
        """A copy with ``options`` replaced (None values ignored), checked again."""
        return replace(self, **{k: v for k, v in options.items() if v is not None})

    @staticmethod
    def resume_options(manifest: dict[str, Any], **overrides: Any) -> dict[str, Any]:
        """The fields that continue the job of a checkpoint's manifest: its workers, shards,
        batch, round, group size, worker RNG states and batch numbers (a single-process
        checkpoint: one worker continuing the trainer's RNG). ``overrides`` (None values ignored)
        replace them."""
        job = manifest.get("job") or {}
        kw: dict[str, Any] = {
            "workers": job.get("workers", 1),
            "shards": job.get("shards", 1),
            "batch": job.get("batch"),
            "worker_rng": job.get("worker_rng", [manifest["rng_state"]]),
            "worker_seq": job.get("worker_seq"),
            "round": job.get("round", 0),
        }
        if job.get("group_size"):
            kw["group_size"] = job["group_size"]
        kw.update({k: v for k, v in overrides.items() if v is not None})
        return kw
