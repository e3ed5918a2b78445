"""Where the Ray job's actors run: placement-group bundles (one per node), the node leaders,
group leaders and shards in them, and which live leader runs which group.

Placement. The job takes one placement-group bundle per node (``STRICT_SPREAD``: a node each; a
bundle reserves its node's workers' CPUs) and puts in bundle ``g`` the node's leader
(:class:`cluster.leader.LeaderCore`, no CPU), its workers (created by the leader, in the same
bundle) and its shard(s) (shard ``k`` on node ``k mod nodes`` unless ``shard_nodes`` says
otherwise; no CPU). The driver puts the card abstraction in the object store once; each node keeps
one copy that its workers read zero-copy (the kernels get read-only views); no worker builds or
loads an abstraction (a missing one was built by the driver's ``Trainer`` before the job started,
or that failed with its error before any worker started).

:class:`PlacementMixin` holds these methods of :class:`cluster.job.RayJob` (one class, split by
concern: :mod:`cluster.rounds`, :mod:`cluster.recovery`, :mod:`cluster.checkpointing`); the job's
state is set up in ``RayJob._start``.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from blueprint.io.shard_file import shard_name
from cluster.errors import JobError
from cluster.leader import WorkerSettings

__all__ = ["PlacementMixin", "alive_cpu_nodes"]


def alive_cpu_nodes(ray) -> list[dict]:
    """The alive nodes that have CPUs (``ray.nodes()`` entries)."""
    return [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]


class PlacementMixin:
    """Placement methods of :class:`cluster.job.RayJob` (module docstring)."""

    def _in_bundle(self, g: int) -> dict[str, Any]:
        return {
            "scheduling_strategy": PlacementGroupSchedulingStrategy(self.pg, placement_group_bundle_index=g)
        }

    def _new_leader(self, g: int):
        return self._LeaderActor.options(
            num_cpus=0, max_restarts=-1, max_task_retries=0, **self._in_bundle(g)
        ).remote(
            g,
            self.tr.config_dict,
            self.bounds,
            [self.cards_ref],
            self.tr.abstraction_hash,
            self.groups[g],
            (self.pg, g),
            WorkerSettings(
                self.worker_cpus, self.timeout, self.worker_retries, not self.share_cards, self.threads
            ),
        )

    def _new_group_leader(self, j: int):
        return self._GroupActor.options(
            num_cpus=0, max_restarts=-1, max_task_retries=0, **self._in_bundle(self.ngroups[j][0])
        ).remote(j, self.bounds, self.tr.config.algo.regret_dtype == "int32", self.leaders)

    def _new_shard(self, k: int, g: int):
        """A shard actor in node ``g``'s bundle holding slice k as of the restore base (the starting
        slices, or the last complete checkpoint's file); the caller replays the rounds since."""
        lo, hi = self.bounds[k]
        cls = self._ShardActor.options(num_cpus=0, max_restarts=0, **self._in_bundle(g))
        if self.base_refs is not None:
            r_ref, s_ref = self.base_refs[k]
            return cls.remote(k, lo, hi, self.tr.config.algo, r_ref, s_ref, None, self.ckpt_round)
        actor = cls.remote(k, lo, hi, self.tr.config.algo, None, None, None, self.ckpt_round)
        if self.base_storage is not None:
            storage, it = self.base_storage
            self._loads.append(actor.load_storage.remote(storage, it))
        else:
            self._loads.append(actor.load.remote(str(self.base_dir / shard_name(k))))
        return actor

    def _alive_node_ids(self, cached: bool = False) -> set[str]:
        """The alive nodes' ids (``ray.nodes()``, a GCS call whose answer grows with the cluster);
        ``cached``: the answer already fetched in this round, if any (the round's assignments)."""
        if cached and self._alive_cache is not None:
            return self._alive_cache
        self._alive_cache = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        return self._alive_cache

    def _assign_groups(self, todo: list[int]) -> dict[int, list[int]]:
        """Node groups ``todo`` to live group leaders (each its own, a dead one's to a live one)."""
        alive = self._alive_node_ids(cached=True)
        for j, up in enumerate(self.gleader_up):
            if up and self.gleader_node[j] not in alive:
                self._gleader_down(j, "Ray reports its node dead")
        up = [j for j, ok in enumerate(self.gleader_up) if ok]
        deadline = time.monotonic() + self.timeout
        while not up and time.monotonic() < deadline:  # wait (bounded) for a restarted one
            time.sleep(0.5)
            self._probe_group_leaders()
            up = [j for j, ok in enumerate(self.gleader_up) if ok]
        if not up:
            raise JobError(
                "no group leader is alive; resume from the last complete checkpoint "
                f"({self._last_checkpoint()}) with 'mccfr resume RUN_DIR'"
            )
        out: dict[int, list[int]] = {}
        for j in todo:
            out.setdefault(j if j in up else up[j % len(up)], []).append(j)
        return out

    def _assign(self, todo: list[int]) -> dict[int, list[int]]:
        alive = self._alive_node_ids()
        for g, up in enumerate(self.leader_up):
            if up and self.leader_node[g] not in alive:
                self._leader_down(g, "Ray reports its node dead")
        up = [g for g, ok in enumerate(self.leader_up) if ok and self.leader_workers[g] > 0]
        deadline = time.monotonic() + self.timeout
        while not up and time.monotonic() < deadline:  # wait (bounded) for a restarted leader
            time.sleep(0.5)
            self._probe_leaders()
            up = [g for g, ok in enumerate(self.leader_up) if ok and self.leader_workers[g] > 0]
        if not up:
            raise JobError(
                "no node leader with a worker is alive; resume from the last complete checkpoint "
                f"({self._last_checkpoint()}) with 'mccfr resume RUN_DIR'"
            )
        out: dict[int, list[int]] = {}
        for g in todo:
            lead = g if g in up else up[g % len(up)]
            out.setdefault(lead, []).append(g)
        return out

    def placement(self) -> list[dict[str, Any]]:
        """Per node (bundle): the node ids of its leader, its workers and its shards."""
        infos = self._get([lead.placement.remote() for lead in self.leaders], what="the leaders' placement")
        shard_nodes = self._get([s.node_id.remote() for s in self.shards], what="the shards' placement")
        return [
            {
                "leader": info["leader"],
                "workers": info["workers"],
                "shards": [shard_nodes[k] for k in range(self.num_shards) if self.shard_nodes[k] == g],
            }
            for g, info in enumerate(infos)
        ]

    def worker_memory(self) -> list[dict[str, int]]:
        """rss / pss / uss of every worker (bytes), node by node."""
        out = self._get([lead.worker_memory.remote() for lead in self.leaders], what="the workers' memory")
        return [m for node in out for m in node]

    def kill_worker(self, k: int) -> None:
        """kill -9 worker ``k``'s process (fault drills; the worker must run on this machine)."""
        g = self.group_of[k]
        pid = self.ray.get(self.leaders[g].worker_pid.remote(self.groups[g].index(k)), timeout=self.timeout)
        os.kill(pid, signal.SIGKILL)
