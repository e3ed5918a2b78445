"""A group leader: the middle level of the Ray job's two-level fan-out (``RayJob(group_size=G)``).

With ``group_size`` G the job's nodes are cut into *node groups* of G consecutive nodes (node
group ``j`` = nodes ``[jG, (j + 1)G)``), and each has a :class:`GroupLeaderCore` actor (no CPU)
in the bundle of its first node. Per round the driver makes one call per group leader,
:meth:`GroupLeaderCore.run_round`, with the round's arguments once and, per node group, which node
leader runs which of its nodes' worker groups (normally its own). The group leader

1. calls those node leaders (``LeaderCore.run_round`` with no shard handles: the node leader
   returns its per-shard sums instead of sending them, and retains nothing),
2. sums, per shard, the node group's deltas in ascending node (worker group) order
   (:func:`cluster.shard.sum_deltas`: a fixed order, whatever the timing or which node leader ran a
   group after a failure),
3. keeps the sums (the retained deltas a restored shard replays) and sends each shard one delta
   per node group, ``put_delta(round, j, payload)``: a shard receives ``nodes / G`` deltas a round,
   not ``nodes``,

and returns the node groups' statistics (a few hundred bytes per node). The worker groups' results
of the round are kept until the round's next call, so a retried call re-runs only what is missing.
At the end of the round the driver asks each group leader to end its node group's shards
(:meth:`GroupLeaderCore.end_round`), so the driver's calls per round are ``2 x groups`` instead of
``nodes + shards``.

Every wait has a deadline; a node leader that fails or does not answer is reported
(``leaders_down``) and its worker groups run again elsewhere on the driver's next call.
"""

from __future__ import annotations

import os
import time
from typing import Any

import ray

from cluster.leader import RetainedDeltas, failed_puts, node_id
from cluster.shard import sum_deltas


class GroupLeaderCore(RetainedDeltas):
    """One node group's leader (see the module docstring).

    Args:
        index: the node group's number j.
        bounds: the shards' row ranges.
        int_regret: int32 regret tables (int64 deltas).
        leaders: every node leader's actor handle (the job's, by node; fixed for the job).
    """

    def __init__(self, index: int, bounds: list[tuple[int, int]], int_regret: bool, leaders: list):
        self.ray = ray
        self.index = index
        self.bounds = [(int(a), int(b)) for a, b in bounds]
        self.int_regret = int_regret
        self.leaders = list(leaders)
        # this round's worker-group results: (round, group) -> (stats, [payload per shard])
        self.partial: dict[tuple[int, int], tuple[dict, list[bytes]]] = {}
        self._init_retention()
        self.method_cpu = 0.0

    def ping(self) -> dict[str, Any]:
        return {"node_id": node_id(), "pid": os.getpid()}

    def cpu_seconds(self) -> tuple[float, float]:
        """``(process, methods)``: this process's CPU time so far, and the part inside
        :meth:`run_round` / :meth:`end_round` (for the scale model)."""
        return time.process_time(), self.method_cpu

    def run_round(
        self,
        round_id: int,
        t: int,
        t_end: int,
        w_base: float,
        t_base: int,
        work: list[tuple[int, list[int], dict[int, list[tuple[int, list[tuple]]]]]],
        snapshot: list,
        shards: list,
        ckpt_round: int,
        retain_cap: int,
        timeout: float,
        relay: bool = True,
    ) -> dict[str, Any]:
        """Run node groups ``work`` (each ``(j, members, {leader: [(group, specs), ...]})``,
        ``members`` the worker groups of node group j in the round) of round ``round_id``, send
        each shard one summed delta per node group whose members all came in, and report:
        ``{"node_id", "done": {group: stats}, "failed": {group: reason}, "leaders": {leader:
        info}, "leaders_down": {leader: reason}, "sent": [j, ...], "shard_errors": [k, ...],
        "retaining"}``. Deadlines: ``2 x timeout + 30`` s for the node leaders, ``timeout`` for
        the shards' puts and the snapshot.

        ``relay``: the group leader fetches the snapshot's S slices (one pull per shard per node
        group, not per node) and puts them in its node's object store as one object, which its
        node leaders fetch and put again on their own node, one object per shard, for their
        workers: a shard's object is fetched by ``nodes / G`` group leaders instead of ``nodes``
        node leaders, at the price of one copy of the table per group leader and per node a
        round (the data plane)."""
        cpu = time.thread_time()
        try:
            return self._run_round(
                round_id,
                t,
                t_end,
                w_base,
                t_base,
                work,
                snapshot,
                shards,
                ckpt_round,
                retain_cap,
                timeout,
                relay,
            )
        finally:
            self.method_cpu += time.thread_time() - cpu

    def _run_round(
        self,
        round_id,
        t,
        t_end,
        w_base,
        t_base,
        work,
        snapshot,
        shards,
        ckpt_round,
        retain_cap,
        timeout,
        relay,
    ) -> dict[str, Any]:
        ray = self.ray
        self._drop_retained(ckpt_round)
        for key in [key for key in self.partial if key[0] < round_id]:
            del self.partial[key]
        calls: dict[Any, int] = {}
        by_lead: dict[int, list] = {}
        for _, _, assign in work:
            for lead, groups in assign.items():
                todo = [(g, specs) for g, specs in groups if (round_id, g) not in self.partial]
                if todo:
                    by_lead.setdefault(int(lead), []).extend(todo)
        failed: dict[int, str] = {}
        snap_arg: Any = snapshot
        if relay and by_lead:
            try:  # the snapshot as one object on this node (see run_round)
                snap_arg = {"packed": ray.put(ray.get(list(snapshot), timeout=timeout))}
            except Exception as exc:  # a slice lost with its shard's node, or no answer in time
                why = f"the snapshot could not be fetched ({type(exc).__name__})"
                for groups in by_lead.values():
                    for g, _ in groups:
                        failed[g] = why
                by_lead = {}
        for lead, groups in by_lead.items():
            ref = self.leaders[lead].run_round.remote(
                round_id, t, t_end, w_base, t_base, groups, snap_arg, None, ckpt_round, retain_cap, timeout
            )
            calls[ref] = lead
        leaders: dict[int, dict] = {}
        down: dict[int, str] = {}
        deadline = time.monotonic() + 2 * timeout + 30
        while calls:
            ready, _ = ray.wait(list(calls), num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                for lead in calls.values():
                    down[lead] = f"no answer within {2 * timeout + 30:.0f} s"
                    for g, _ in by_lead[lead]:
                        failed.setdefault(g, f"node leader {lead} did not answer")
                break
            ref = ready[0]
            lead = calls.pop(ref)
            try:
                res = ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                down[lead] = f"its leader died: {type(exc).__name__}"
                for g, _ in by_lead[lead]:
                    failed.setdefault(g, f"node leader {lead} died")
                continue
            except Exception as exc:
                for g, _ in by_lead[lead]:
                    failed.setdefault(
                        g, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                    )
                continue
            deltas = res.pop("deltas", {})
            for g, st in res.pop("done").items():
                self.partial[(round_id, int(g))] = (st, deltas[g])
            for g, why in res.pop("failed").items():
                failed[int(g)] = why
            leaders[lead] = res
        done: dict[int, dict] = {}
        sent: list[int] = []
        puts = []
        for j, members, _ in work:
            if not all((round_id, g) in self.partial for g in members):
                continue
            parts = [self.partial[(round_id, g)] for g in sorted(members)]
            for k, (lo, hi) in enumerate(self.bounds):
                payload = sum_deltas([p[1][k] for p in parts], hi - lo, self.int_regret)
                self._retain(k, (round_id, j), payload, retain_cap)
                puts.append((k, shards[k].put_delta.remote(round_id, j, payload)))
            for g, p in zip(sorted(members), parts):
                done[g] = p[0]
            sent.append(j)
        shard_errors = failed_puts(ray, puts, timeout)
        return {
            "node_id": node_id(),
            "done": done,
            "failed": {g: why for g, why in failed.items() if g not in done},
            "leaders": leaders,
            "leaders_down": down,
            "sent": sent,
            "shard_errors": sorted(shard_errors),
            "retaining": self.retaining,
        }

    def end_round(
        self, round_id: int, t: int, t_end: int, groups: list[int], shards: dict[int, Any], timeout: float
    ) -> dict[int, Any]:
        """End round ``round_id`` on ``shards`` (``{k: handle}``, ``groups`` the node groups whose
        deltas it adds): per shard ``(box, missing)`` as ``ShardCore.end_round_ref`` returns it
        (the snapshot's reference, put by the shard), or a string saying why not (within
        ``timeout``)."""
        cpu = time.thread_time()
        ray = self.ray
        refs = {s.end_round_ref.remote(round_id, t, t_end, groups): k for k, s in shards.items()}
        out: dict[int, Any] = {}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout)
        for ref in ready:
            k = refs[ref]
            try:
                out[k] = ray.get(ref)
            except Exception as exc:
                out[k] = f"{type(exc).__name__}"
        for ref, k in refs.items():
            out.setdefault(k, f"no answer within {timeout:.0f} s")
        self.method_cpu += time.thread_time() - cpu
        return out
