"""Faults in the Ray job: leaders that go down and come back, shards restored from the last
checkpoint plus the leaders' retained deltas, the restore base moved when retained deltas are lost.

Faults (every wait has a deadline, ``timeout``):

* a worker process that dies is restarted by Ray and its batch re-run with the same arguments
  (``max_restarts`` / ``max_task_retries``; the RNG state travels with the batch): nothing is lost
  and the tables are those of an uninterrupted run. A worker that fails for good or does not
  answer within the deadline leaves the round with a logged warning; its batch runs on another
  worker of the node;
* a node that dies (its leader's call fails, or Ray reports the node dead while the driver waits):
  its groups run again, from the same RNG states, on live leaders (the leader is restarted by Ray
  where its bundle is rescheduled, on a spare node if there is one, and gets its groups back);
  with no CPU to spare the other nodes run them (slower, same tables). A leader that is down costs
  one probe per round, not a wait;
* a shard that dies (its node died, or it was killed) is restored on a live node (the bundle of a
  leader that answers, on a node Ray reports alive): from the last complete checkpoint (or the
  job's starting tables), then the live leaders send their retained deltas since that checkpoint
  and the shard ends the logged rounds again, which reproduces its state exactly. A delta retained
  only by a leader that died with that node is lost (the job says which rounds and groups; the
  tables then differ from an uninterrupted run by that part). Retention is capped per leader at
  ``max_replay_bytes``; past that, or if the restore fails, the job stops with :class:`JobError`
  naming the shard and the checkpoint to resume from.

:class:`RecoveryMixin` holds these methods of :class:`cluster.job.RayJob` (one class, split by
concern: :mod:`cluster.placement`, :mod:`cluster.rounds`, :mod:`cluster.checkpointing`).
"""

from __future__ import annotations

import contextlib
from typing import Any

from cluster.errors import JobError

__all__ = ["RecoveryMixin"]


class RecoveryMixin:
    """Fault-recovery methods of :class:`cluster.job.RayJob` (module docstring)."""

    def _last_checkpoint(self) -> str:
        if self.base_storage is not None:
            storage, it = self.base_storage
            return storage.describe(it)
        return str(self.base_dir) if self.base_dir is not None else "none written yet"

    def _rebase(self) -> None:
        """A leader died, and with it the deltas it retained: make the tables of the round just
        ended the restore base (pulled to the driver and put back in its object store, the one
        time tables pass through the driver; a checkpoint does the same without that)."""
        slices = self._get(list(self.snapshot), what="the shards' snapshot (re-basing after a node failure)")
        self.base_refs = [(self.ray.put(s["regret"]), self.ray.put(s["strat"])) for s in slices]
        self.ckpt_round, self.round_log, self.replay_ok = self.round, [], True
        self.rebases += 1
        self.log(
            f"a node's retained deltas were lost with it: the tables of round {self.round} "
            "(iteration {:,}) are the restore base from now on".format(self.tr.iteration)
        )

    def _leader_down(self, g: int, why: str) -> None:
        if not self.group_size:  # under group leaders a node leader retains nothing
            self._lost_retention = True
        if self.leader_up[g]:
            self.leader_up[g] = False
            self.node_failures += 1
            self.log(f"node {g} is down ({why}); its groups run on the live nodes until it answers again")

    def _probe_leaders(self) -> None:
        """One ping per down leader, answered or not by the next round (never waited for)."""
        ray = self.ray
        for g, up in enumerate(self.leader_up):
            if up:
                continue
            ref = self.probes.get(g)
            if ref is None:
                self.probes[g] = self.leaders[g].ping.remote()
                self._round_calls += 1
                continue
            ready, _ = ray.wait([ref], timeout=0)
            if not ready:
                continue
            del self.probes[g]
            try:
                info = ray.get(ref)
            except Exception:
                continue
            if info["node_id"] in self._alive_node_ids():
                self.leader_up[g] = True
                self.leader_node[g] = info["node_id"]
                self.leader_workers[g] = info["workers"]
                self.log(
                    f"node {g} answers again (on node {info['node_id'][:12]}, {info['workers']} workers)"
                )

    def _gleader_down(self, j: int, why: str) -> None:
        self._lost_retention = True  # its retained deltas went with it
        if self.gleader_up[j]:
            self.gleader_up[j] = False
            self.node_failures += 1
            self.log(
                f"group leader {j} is down ({why}); its node group runs through a live group leader "
                "until it answers again"
            )

    def _probe_group_leaders(self) -> None:
        """One ping per down group leader, answered or not by the next round (never waited for)."""
        ray = self.ray
        for j, up in enumerate(self.gleader_up):
            if up:
                continue
            ref = self.gprobes.get(j)
            if ref is None:
                self.gprobes[j] = self.gleaders[j].ping.remote()
                self._round_calls += 1
                continue
            ready, _ = ray.wait([ref], timeout=0)
            if not ready:
                continue
            del self.gprobes[j]
            try:
                info = ray.get(ref)
            except Exception:
                continue
            if info["node_id"] in self._alive_node_ids():
                self.gleader_up[j] = True
                self.gleader_node[j] = info["node_id"]
                self.log(f"group leader {j} answers again (on node {info['node_id'][:12]})")

    def _shard_alive(self, k: int) -> bool:
        self.recovery_calls += 2
        s = self.shards[k]
        try:
            self.ray.get(s.ping.remote(), timeout=min(self.timeout, 30))
        except Exception:
            return False
        with contextlib.suppress(Exception):
            node = self.ray.get(s.node_id.remote(), timeout=min(self.timeout, 30))
            return node in self._alive_node_ids()
        return False

    def _restore_shards(self, why: str) -> list[int]:
        """Re-create every dead shard on a live node and replay (see the module docstring); raise
        :class:`JobError` when that is impossible. Returns the shards restored."""
        ray = self.ray
        dead = [k for k in range(self.num_shards) if not self._shard_alive(k)]
        if not dead:
            return []
        if self.base_refs is None:
            since = f"checkpoint {self._last_checkpoint()}"
        elif self.rebases:
            since = f"the driver's copy of round {self.ckpt_round}"
        else:
            since = "the job's start"
        stop = (
            f"shard(s) {dead} died; the job stops: resume from the last complete checkpoint "
            f"({self._last_checkpoint()}) with 'mccfr resume RUN_DIR'"
        )
        if not self.replay_ok:
            raise JobError(
                f"{stop} (the deltas since {since} were over {self.max_replay_bytes:,} bytes and not kept)"
            )
        alive = self._alive_node_ids()
        live = [g for g, up in enumerate(self.leader_up) if up and self.leader_node[g] in alive]
        answering = []
        self.recovery_calls += len(live) + 3 * len(dead) + len(self.round_log) * len(dead)
        for g in live:
            with contextlib.suppress(Exception):
                info = ray.get(self.leaders[g].ping.remote(), timeout=min(self.timeout, 30))
                if info["node_id"] in self._alive_node_ids():
                    answering.append(g)
        if not answering:
            raise JobError(f"{stop} (no live node to restore it on)")
        try:
            loads = []
            for k in dead:
                home = (
                    self.shard_nodes[k] if self.shard_nodes[k] in answering else answering[k % len(answering)]
                )
                self.log(
                    f"shard {k} died ({why}); restoring it on node {home} from {since} and "
                    f"{len(self.round_log)} rounds of retained deltas"
                )
                with contextlib.suppress(Exception):  # already gone
                    ray.kill(self.shards[k], no_restart=True)
                self.shards[k] = self._new_shard(k, home)
                self.shard_nodes[k] = home
                loads.append(self.shards[k].ping.remote())
            loads += self._loads
            self._loads = []
            self._get(loads, what="the restored shards to load")  # a failed load raises here
            new = {k: self.shards[k] for k in dead}
            sent = self._get(
                [r.replay.remote(new, self.ckpt_round, self.timeout) for r in self._replayers(answering)],
                what="the leaders to replay their retained deltas",
            )
            got = {(k, r, g) for lst in sent for k, r, g in lst}
            for round_id, t, t_end, groups in self.round_log:
                lost = [g for g in groups for k in dead if (k, round_id, g) not in got]
                refs = [self.shards[k].end_round_ref.remote(round_id, t, t_end, groups) for k in dead]
                for (box, missing), k in zip(self._get(refs, what="the restored shards to replay"), dead):
                    for g in missing:
                        self.lost_deltas.append({"shard": k, "round": round_id, "group": g})
                        self.log(
                            f"shard {k}: group {g}'s delta of round {round_id} (iterations {t:,}..{t_end - 1:,}) "
                            "was retained only by a leader that died; it is lost"
                        )
                del lost
            snaps = self._get(
                [self.shards[k].publish_ref.remote() for k in dead], what="the restored shards to publish"
            )
            for k, box in zip(dead, snaps):
                self.snapshot[k] = box[0]
        except JobError:
            raise
        except Exception as exc:
            raise JobError(f"{stop} (restoring it failed: {exc})") from exc
        self.shard_restores += len(dead)
        return dead

    def _replayers(self, answering: list[int]) -> list:
        """Who holds the retained deltas: the answering node leaders, or with group leaders the
        live group leaders that answer a ping."""
        if not self.group_size:
            return [self.leaders[g] for g in answering]
        alive = self._alive_node_ids()
        out = []
        for j, up in enumerate(self.gleader_up):
            if not up or self.gleader_node[j] not in alive:
                continue
            self.recovery_calls += 1
            with contextlib.suppress(Exception):
                info = self.ray.get(self.gleaders[j].ping.remote(), timeout=min(self.timeout, 30))
                if info["node_id"] in alive:
                    out.append(self.gleaders[j])
        return out

    def _restart_note(self, res: dict[str, Any], g: int) -> None:
        """Count worker restarts from a leader's cumulative count (a restarted leader starts at 0)."""
        n, prev = res.get("restarts", 0), self._leader_restarts.get(g, 0)
        self.restarts += n - prev if n >= prev else n
        self._leader_restarts[g] = n
