"""The Ray training job: one driver; per node a leader, its workers and its regret shard(s).

:class:`RayJob` is the driver. It owns a :class:`blueprint.trainer.Trainer` for everything that
is not the tables' live contents (tree, cards, config, hashes, the schedule counters
``iteration``/``w_base``/``t_base``, visit counts, exact exploitability on an assembled copy), so a
job checkpoint has the trainer's manifest keys and ``Trainer.load`` / ``mccfr eval`` read it.

The job is one class split by concern into modules (as a Rust type's ``impl`` blocks): this one
holds its construction, the trainer-like interface the CLI's session drives, figures and shutdown;
:mod:`cluster.placement` where the actors run, :mod:`cluster.rounds` the rounds (and the
arithmetic of rounds and batches), :mod:`cluster.recovery` what happens when a worker, a node or a
shard dies, :mod:`cluster.checkpointing` its checkpoints and resuming from one. Each module's
docstring describes its part of the design.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import numpy as np
import ray
from ray.util.placement_group import placement_group, remove_placement_group

from blueprint.trainer import Trainer
from cluster.checkpointing import CheckpointingMixin
from cluster.config import RayJobConfig
from cluster.errors import JobError
from cluster.group import GroupLeaderCore
from cluster.leader import LeaderCore
from cluster.placement import PlacementMixin, alive_cpu_nodes
from cluster.ray_logs import RayLogFile
from cluster.recovery import RecoveryMixin
from cluster.rounds import RoundsMixin, default_batch, split_round, worker_seed_state
from cluster.shard import ShardCore, slice_bounds
from mccfr_util.numba_cache import ray_runtime_env

__all__ = ["RayJob"]


class RayJob(PlacementMixin, RoundsMixin, RecoveryMixin, CheckpointingMixin):
    """The driver of a distributed training job (see the module docstring).

    Args:
        trainer: a fresh :class:`Trainer` (or one loaded from a checkpoint): tree, cards, config,
            schedule counters and the starting tables.
        config: the job's shape and knobs (:class:`cluster.config.RayJobConfig`, its fields
            described there). Or give its fields as keywords instead (``RayJob(trainer,
            workers=4, shards=2)``), which build one; not both.
        log: called with human-readable notes (warnings: workers leaving a round, restores, ...).
    """

    def __init__(
        self,
        trainer: Trainer,
        config: RayJobConfig | None = None,
        *,
        log: Callable[[str], Any] | None = None,
        **options: Any,
    ):
        if config is None:
            config = RayJobConfig.of(**options)
        elif options:
            raise TypeError(
                f"RayJob takes a config or its fields as keywords, not both ({', '.join(options)})"
            )
        self.job_config = config  # (a job is also trainer-like: `config` would read as the run's)
        self.threads = int(config.threads) if config.threads is not None else 0  # 0: chosen once Ray is up
        self.group_size = int(config.group_size or 0)
        self.relay_snapshot = config.relay_snapshot
        self.gleaders: list = []
        batch = config.batch if config.batch is not None else default_batch(trainer.size)
        if trainer.config.algo.full_traversal:
            raise JobError(
                f"--algo {trainer.config.algo.name} enumerates every deal; the Ray job runs sampled MCCFR"
            )
        self.ray = ray
        self.tr = trainer
        self.num_workers, self.num_shards, self.batch = config.workers, config.shards, batch
        self._worker_cpus = config.worker_cpus
        self.timeout = float(config.timeout)
        self.share_cards = config.share_cards
        self.box_round_args = config.box_round_args
        self.pack_round_args = config.pack_round_args
        self._shards_box: tuple[list, Any] | None = None
        self.worker_retries = config.worker_retries
        self.log = log or (lambda msg: None)
        self.own_ray = False
        self.pg = None
        self.leaders: list = []
        self.shards: list = []
        self.ray_log = RayLogFile(config.ray_log) if config.ray_log is not None else None
        try:
            if not ray.is_initialized():
                kw = {"include_dashboard": False, "logging_level": "warning", "log_to_driver": False}
                kw.update(config.ray_init or {})
                kw["runtime_env"] = ray_runtime_env(kw.get("runtime_env"))  # workers set the numba cache
                context = ray.init(address=config.address, **kw)
                self.own_ray = True
                session = getattr(context, "address_info", {}).get("session_dir")
                if self.ray_log is not None and session:
                    self.ray_log.write(f"Ray's own logs of this job: {os.path.join(session, 'logs')}")
            self._start(trainer, config)
        except BaseException:
            self.close()
            raise

    def _start(self, trainer: Trainer, config: RayJobConfig) -> None:
        ray = self.ray
        worker_rng, worker_seq, nodes, shard_nodes = (
            config.worker_rng,
            config.worker_seq,
            config.nodes,
            config.shard_nodes,
        )
        workers, shards = self.num_workers, self.num_shards
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
        alive = alive_cpu_nodes(ray)
        if nodes is None:
            nodes = max(1, min(len(alive), workers))
        if nodes < 1:
            raise JobError("nodes must be >= 1")
        self.num_nodes = nodes
        per_node = split_round(workers, nodes)
        if self.share_cards is None:
            self.share_cards = max(per_node) > 1
        if not self.threads:  # every core of the smallest node, shared among a node's workers
            cpus = min((int(n["Resources"].get("CPU", 1)) for n in alive), default=1)
            self.threads = max(1, cpus // max(per_node))
        self.worker_cpus = float(self.threads if self._worker_cpus is None else self._worker_cpus)
        starts = np.cumsum([0] + per_node)
        self.groups = [list(range(int(starts[g]), int(starts[g + 1]))) for g in range(nodes)]
        self.group_of = {k: g for g, ws in enumerate(self.groups) for k in ws}
        bundles = [{"CPU": len(ws) * self.worker_cpus if ws else 0.001} for ws in self.groups]
        self.pg = placement_group(bundles, strategy="STRICT_SPREAD" if nodes > 1 else "PACK")
        ready, _ = ray.wait([self.pg.ready()], timeout=self.timeout)
        if not ready:
            have = ", ".join(
                f"{n['NodeManagerAddress']} ({n['Resources'].get('CPU', 0):g} CPU)" for n in alive
            )
            raise JobError(
                f"cannot place {nodes} node bundles ({', '.join(str(b['CPU']) for b in bundles)} CPUs, one node each) "
                f"within {self.timeout:.0f} s; alive nodes: {have or 'none'}. Use fewer --workers or more nodes"
            )
        self.shard_nodes = (
            list(shard_nodes) if shard_nodes is not None else [k % nodes for k in range(shards)]
        )
        if len(self.shard_nodes) != shards or not all(0 <= x < nodes for x in self.shard_nodes):
            raise JobError(f"shard_nodes must name one of the {nodes} nodes per shard")
        # the card abstraction: one object, one copy per node, read zero-copy by the workers
        self.cards_ref = ray.put(trainer.cards)
        self._ShardActor = ray.remote(ShardCore)
        # what a shard that dies is rebuilt from: the starting slices (until the first checkpoint),
        # then the last complete checkpoint; plus the leaders' retained deltas and the round log
        self.base_refs: list | None = [
            (ray.put(trainer.regret[lo:hi]), ray.put(trainer.strat[lo:hi])) for lo, hi in self.bounds
        ]
        self.base_dir: Path | None = None
        self.base_storage: tuple[Any, int] | None = (
            None  # (Storage, iteration) of the last complete one there
        )
        self._save_pending: dict[str, Any] | None = None
        self._alive_cache: set[str] | None = None
        self._blueprint_static = None  # ref: (header, arrays, tree) of the blueprint file, no probs
        self._replay_resume: int | None = None
        self.round = int(config.round)
        self.ckpt_round = self.round
        self.round_log: list[tuple[int, int, int, list[int]]] = []
        self.replay_ok = True
        self.max_replay_bytes = config.max_replay_bytes
        self._loads: list = []
        self.shards = [self._new_shard(k, self.shard_nodes[k]) for k in range(shards)]
        self._LeaderActor = ray.remote(LeaderCore)
        self.leaders = [self._new_leader(g) for g in range(nodes)]
        infos = self._get([lead.ping.remote() for lead in self.leaders], what="the node leaders to start")
        self.leader_node = [i["node_id"] for i in infos]
        self.leader_workers = [i["workers"] for i in infos]
        self.leader_up = [True] * nodes
        self.probes: dict[int, Any] = {}
        # the two-level fan-out: node groups of group_size consecutive nodes, a group leader each
        G = self.group_size
        self.ngroups = [list(range(s, min(s + G, nodes))) for s in range(0, nodes, G)] if G else []
        self.ngroup_of = {g: j for j, gs in enumerate(self.ngroups) for g in gs}
        self.gprobes: dict[int, Any] = {}
        if G:
            self._GroupActor = ray.remote(GroupLeaderCore)
            self.gleaders = [self._new_group_leader(j) for j in range(len(self.ngroups))]
            ginfos = self._get([gl.ping.remote() for gl in self.gleaders], what="the group leaders to start")
            self.gleader_node = [i["node_id"] for i in ginfos]
            self.gleader_up = [True] * len(self.gleaders)
        for g, i in enumerate(infos):
            if self.groups[g] and i["workers"] < len(self.groups[g]):
                self.log(
                    f"node {g}: {len(self.groups[g]) - i['workers']} of its workers did not start; "
                    "the others run their batches"
                )
        snaps = self._get([s.publish_ref.remote() for s in self.shards], what="the shards to start")
        self.snapshot = [box[0] for box in snaps]
        self.version = 0
        # statistics
        self.batches = 0
        self.bytes_sent = 0  # the leaders' summed deltas (what crosses to the shards)
        self.worker_bytes = 0  # the workers' own deltas (what reaches their leader)
        self.touched_rows = 0
        self.staleness_sum = 0
        self.lost: list[dict[str, Any]] = []
        self.lost_deltas: list[dict[str, Any]] = []
        self.restarts = 0
        self._leader_restarts: dict[int, int] = {}
        self.shard_restores = 0
        self.node_failures = 0
        self.group_reruns = 0
        self.compute_seconds = 0.0
        self.worker_seconds = 0.0
        self.round_seconds = 0.0
        self.worker_rss: dict[int, int] = {}
        self.worker_pss: dict[int, int] = {}
        self.worker_uss: dict[int, int] = {}
        self.checkpoint_pauses: list[float] = []
        self.storage_save_seconds: list[float] = []  # submit to manifest seen, per storage checkpoint
        self.rounds = 0
        self.driver_calls = 0  # actor calls made by rounds (leaders, probes, shards)
        self.driver_bytes = 0  # bytes of the round results that reached the driver
        self.max_round_calls = 0
        self.max_round_bytes = 0
        self._round_calls = 0
        self._round_bytes = 0
        self._lost_retention = False
        self.rebases = 0
        self.recovery_calls = 0  # calls made to find and restore dead shards (not in the per-round figures)
        self.driver_cpu_seconds = 0.0  # the driver thread's CPU time in rounds (its control work)
        self.max_round_cpu = 0.0

    def _get(self, refs: list, what: str, timeout: float | None = None) -> list:
        """``ray.get`` with the job's deadline; :class:`JobError` saying what did not answer."""
        try:
            return self.ray.get(refs, timeout=self.timeout if timeout is None else timeout)
        except self.ray.exceptions.GetTimeoutError:
            raise JobError(f"timed out after {self.timeout:.0f} s waiting for {what}") from None

    # -- the trainer-like interface (what the CLI's session reads) --------------------------------
    # The schedule and counters live in the driver's trainer; the tables there are the shards'
    # as of the last sync().
    @property
    def iteration(self) -> int:
        return self.tr.iteration

    @property
    def seconds(self) -> float:
        """Wall seconds of the job's rounds, across resumes (``Trainer.seconds``)."""
        return self.tr.seconds

    @property
    def node_visits(self) -> int:
        return self.tr.node_visits

    @property
    def pruned(self) -> int:
        return self.tr.pruned

    @property
    def game(self):
        """The game definition (:class:`holdem.gamedef.GameDef`)."""
        return self.tr.game

    @property
    def regret(self) -> np.ndarray:
        """The driver's copy of the regret table (current after :meth:`sync`)."""
        return self.tr.regret

    @property
    def strat(self) -> np.ndarray:
        """The driver's copy of the strategy sums (current after :meth:`sync`)."""
        return self.tr.strat

    # -- tables ---------------------------------------------------------------------------------
    def sync(self) -> Trainer:
        """Copy the shards' current snapshot into the driver's trainer (and the RNG of worker 0)."""
        slices = self._get(list(self.snapshot), what="the shards' snapshot")
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
        """Job figures: staleness (iterations), bytes per batch, losses, restarts, driver load."""
        b = max(self.batches, 1)
        r = max(self.rounds, 1)
        return {
            "workers": self.num_workers,
            "threads_per_worker": self.threads,
            "nodes": self.num_nodes,
            "group_size": self.group_size,
            "node_groups": len(self.ngroups),
            "shard_restores": self.shard_restores,
            "worker_rss_bytes": max(self.worker_rss.values()) if self.worker_rss else None,
            "worker_pss_bytes": max(self.worker_pss.values()) if self.worker_pss else None,
            "worker_uss_bytes": max(self.worker_uss.values()) if self.worker_uss else None,
            "bytes_per_second": self.bytes_sent / self.round_seconds if self.round_seconds > 0 else None,
            "shards": self.num_shards,
            "batch": self.batch,
            "batches": self.batches,
            "rounds": self.rounds,
            "staleness": self.staleness_sum / b,
            "stale_fraction": self.num_workers * self.batch / max(self.tr.iteration, 1),
            "bytes_per_batch": self.worker_bytes / b,
            "leader_bytes_per_round": self.bytes_sent / r,
            "touched_rows_per_batch": self.touched_rows / b,
            "driver_calls_per_round": self.driver_calls / r,
            "driver_calls_max_round": self.max_round_calls,
            "driver_bytes_per_round": self.driver_bytes / r,
            "driver_bytes_max_round": self.max_round_bytes,
            # the driver's own work per round (its thread's CPU: building and sending the calls,
            # reading the results, asking Ray which nodes are alive), not its waiting
            "driver_cpu_seconds_per_round": self.driver_cpu_seconds / r,
            "driver_cpu_seconds_max_round": self.max_round_cpu,
            "round_seconds_per_round": self.round_seconds / r,
            "lost_batches": len(self.lost),
            "lost_iterations": sum(x["iterations"] for x in self.lost),
            "lost_deltas": len(self.lost_deltas),
            "worker_restarts": self.restarts,
            "node_failures": self.node_failures,
            "group_reruns": self.group_reruns,
            "rebases": self.rebases,
            "recovery_calls": self.recovery_calls,
            "compute_share": self.compute_seconds / self.worker_seconds if self.worker_seconds > 0 else None,
            "checkpoint_pause_seconds": max(self.checkpoint_pauses) if self.checkpoint_pauses else None,
            "storage_checkpoint_seconds": max(self.storage_save_seconds)
            if self.storage_save_seconds
            else None,
        }

    # -- shutdown ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Kill the actors, remove the placement group (and stop Ray if this job started it); a
        storage checkpoint still being written is waited for first (within the deadline)."""
        if getattr(self, "_save_pending", None) is not None:
            with contextlib.suppress(Exception):
                self._poll_save(block=True)
        for a in self.gleaders + self.leaders + self.shards:
            with contextlib.suppress(Exception):  # already gone
                self.ray.kill(a, no_restart=True)
        self.gleaders, self.leaders, self.shards = [], [], []
        if self.pg is not None:
            with contextlib.suppress(Exception):
                remove_placement_group(self.pg)
            self.pg = None
        if self.own_ray:
            self.ray.shutdown()
            self.own_ray = False
        if self.ray_log is not None:
            self.ray_log.close()
            self.ray_log = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
