"""The Ray job's rounds: how iterations are cut into rounds and batches, and the driver's calls
that run a round on the node (or group) leaders and end it on the shards.

A round (bulk-synchronous) covers iterations ``[t, t_end)``, ``t_end`` the next multiple of
``N * B`` (the batch grid is fixed in iterations from 0), capped at the end of the run; it is split
into N contiguous batches, worker ``k`` running ``[t0_k, t0_k + b_k)`` from its RNG state. The
workers form *groups*, one per node (group ``g`` = node ``g``'s workers). The driver makes

* one call per node, ``leader.run_round``, with the groups the leader runs (its own; a dead node's
  group goes to a live leader), the batch specs (worker, batch number, RNG state, span) and the
  snapshot's object references. The leader runs the batches on its workers, each against the
  snapshot (read zero-copy from the node's object store) on a private copy passing every discount
  boundary of the round; sums the group's deltas per shard in worker order; keeps the sums since
  the last checkpoint (the retained deltas); sends each shard one delta per group
  (``put_delta(round, group)``, buffered there); and returns a few hundred bytes (statistics, the
  workers' RNG states). Deltas and snapshots never pass through the driver;
* one call per shard, ``end_round``, once every group is in: the shard discounts its slice through
  the round's boundaries (discounting is a function of the iteration count), adds the buffered
  group deltas in ascending group order (the merge order is fixed: two runs with one seed give the
  same tables, whatever the timing) and puts its next snapshot in its node's object store.

So a round costs the driver at most ``nodes + shards`` calls (``2 x groups`` with group leaders, below) (counted: ``stats()["driver_calls_per_round"]``;
finding and restoring a dead shard is counted apart, ``recovery_calls``) and about 0.5 KB per node
of results (``driver_bytes_per_round``: the leaders' results, the shards' references).

Two-level fan-out (``group_size`` G, ``mccfr train --group-size G``; off by default). The nodes
are cut into node groups of G consecutive nodes, each with a group leader
(:class:`cluster.group.GroupLeaderCore`, no CPU, in the bundle of the group's first node). The
driver then makes one ``run_round`` call per group leader, with the round's arguments once; the
group leader calls its node leaders (which return their per-shard sums instead of sending them),
sums its node group's deltas per shard in ascending node order, retains the sums (what a restored
shard replays) and sends each shard one delta per node group (``put_delta(round, j)``: a shard
receives ``nodes / G`` deltas, not ``nodes``). It also relays the snapshot (``relay_snapshot``):
it fetches the S slices once and puts them as one object that its node leaders fetch and put
again on their node for their workers, so a shard's object is fetched by the group leaders, not
by every node. The shards are ended through the group leaders too (one ``end_round`` call each,
for the shards of its nodes), so a round costs the driver ``2 x ceil(nodes / G)`` calls. The
tables depend on the node grouping as well (the node sums are added before they reach a shard,
a fixed float order: two runs with one seed are identical, and differ from the flat job's only in
the rounding of those additions). A group leader that dies (its node gone, or no answer within
the deadline) hands its node group to a live group leader until it answers again (Ray restarts it
where its bundle is rescheduled); its retained deltas are gone, so the round's tables become the
restore base (as when a flat leader dies). A node leader that dies under a group leader is
reported by it and its worker groups run on live node leaders, from the same RNG states.

With linear weighting (``linear``, ``pluribus``) a boundary multiplies the whole table by one
factor, so a delta discounted on the worker and added to the discounted table is exactly what one
process would have; ``dcfr``'s sign-dependent factors make it approximate for more than one worker
(as staleness is).

Staleness: every worker trains against the snapshot of the start of its round; a batch's staleness
is the iterations of the round's batches added before it (in the fixed order), averaged over
batches ((N - 1) B / 2 with full rounds; 0 with one worker). Its cost in exploitability grows
with the round's length, N x B, whatever the run's length (BENCHMARKS.md, "Staleness with 2, 8
and 28 workers"), while short rounds spend the time in round trips: :func:`default_batch` is
chosen by exploitability per second.

Determinism: the tables depend only on the seed, the batch size, the number of workers and their
grouping into nodes (not on timing, nor on which node ran a group after a failure). With one
worker, training N iterations and resuming for N more gives the same tables, bit for bit, as 2N
uninterrupted, provided N is a multiple of the batch size.

:class:`RoundsMixin` holds these methods of :class:`cluster.job.RayJob` (one class, split by
concern: :mod:`cluster.placement`, :mod:`cluster.recovery`, :mod:`cluster.checkpointing`); its
functions (the arithmetic of rounds and batches) are shared with :mod:`cluster.simulate`.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from blueprint.numerics import seed_rng_state
from blueprint.trainer import run_for
from cluster.errors import JobError

__all__ = ["RoundsMixin", "default_batch", "round_end", "split_round", "worker_seed_state"]


def default_batch(table_entries: int) -> int:
    """Iterations per worker per round when none is given: table entries / 10, within [1,000,
    100,000], whatever the number of workers.

    Chosen by exploitability per second of training, not per iteration (BENCHMARKS.md, "Ray
    job"): short rounds spend the time in round trips, long ones in staleness (every worker
    starts a round from the same snapshot and sees only its own updates). On Leduc (2 workers,
    10 s) batch 1,000 came closest to one process of batches 100 to 100,000; on hunl100 (the
    distance to a long reference run after 20 s) 10,000 beat 4,658 and 100,000, and the earlier
    staleness-bounded 422 ran at 0.155x one process's iterations/s. Pass ``batch`` to choose."""
    return int(min(max(table_entries // 10, 1_000), 100_000))


def worker_seed_state(seed: int, worker: int, iteration: int = 0) -> np.ndarray:
    """A worker's initial RNG state: the seed's own stream for worker 0 at iteration 0 (the
    single-process trainer's), else a stream spawned from the seed, the worker and the iteration."""
    if worker == 0 and iteration == 0:
        return seed_rng_state(np.random.SeedSequence(seed))
    return seed_rng_state(np.random.SeedSequence(seed, spawn_key=(worker, iteration)))


def round_end(t: int, workers: int, batch: int, end: int) -> int:
    """Where the round starting at iteration ``t`` ends: the next multiple of ``workers x batch``
    (the batch grid, fixed from iteration 0), capped at ``end``."""
    grid = workers * batch
    return min((t // grid + 1) * grid, end)


def split_round(total: int, workers: int) -> list[int]:
    """Split ``total`` iterations into ``workers`` contiguous batch sizes (first ones larger)."""
    q, r = divmod(total, workers)
    return [q + (1 if k < r else 0) for k in range(workers)]


class RoundsMixin:
    """Round-driving methods of :class:`cluster.job.RayJob` (module docstring)."""

    def _round_args(self) -> tuple[Any, Any]:
        """The snapshot's references and the shards' handles for the leaders' calls. Boxed
        (``box_round_args``): each list is put in the object store once (the handles once per change of
        shards, the references once per round) and every call carries one reference, which Ray
        resolves to the list on the leader; the driver serializes S references and handles a
        round instead of S per node, but owns one more object a round that every node fetches.
        Unboxed (the default): the lists in every call (nodes x 2S elements at about 7 us each on
        the driver, see BENCHMARKS.md, "Scale model")."""
        if not self.box_round_args:
            return list(self.snapshot), list(self.shards)
        if self._shards_box is None or self._shards_box[0] != self.shards:
            self._shards_box = (list(self.shards), self.ray.put(list(self.shards)))
        return self.ray.put(list(self.snapshot)), self._shards_box[1]

    def _run_groups(
        self, round_id: int, t: int, t_end: int, specs: dict[int, list[tuple]]
    ) -> dict[int, dict]:
        """Run every group of the round to completion (retrying failed ones on live leaders)."""
        tr = self.tr
        todo = dict(specs)
        done: dict[int, dict] = {}
        attempts: dict[int, int] = {}
        give_up = time.monotonic() + 10 * self.timeout + 60
        while todo:
            if time.monotonic() > give_up:
                raise JobError(
                    f"round {round_id} did not complete within {10 * self.timeout + 60:.0f} s (groups {sorted(todo)} "
                    f"left); resume from the last complete checkpoint ({self._last_checkpoint()}) "
                    "with 'mccfr resume RUN_DIR'"
                )
            self._probe_leaders()
            assign = self._assign(sorted(todo))
            snapshot_arg, shards_arg = self._round_args()
            refs = {}
            for lead, gs in assign.items():
                args = (
                    round_id,
                    t,
                    t_end,
                    tr.w_base,
                    tr.t_base,
                    [(g, todo[g]) for g in gs],
                    snapshot_arg,
                    shards_arg,
                    self.ckpt_round,
                    self.max_replay_bytes,
                    self.timeout,
                )
                # packed: one argument (a tuple) instead of eleven (BENCHMARKS.md, "Scale model")
                ref = (
                    self.leaders[lead].run_round.remote(args)
                    if self.pack_round_args
                    else self.leaders[lead].run_round.remote(*args)
                )
                self._round_calls += 1
                refs[ref] = lead
            trouble: list[str] = []
            for lead, res in self._answers(
                refs, self.leader_node, self._leader_down, 2 * self.timeout + 30, "its leader died"
            ):
                self.leader_node[lead] = res["node_id"]
                self.leader_workers[lead] = res["workers"]
                self._restart_note(res, lead)
                for note in res["notes"]:
                    self.log(note)
                self._take_result(res, f"node {lead}", round_id, done, todo, attempts, trouble)
            self._end_attempt(round_id, todo, attempts, trouble)
        return done

    def _run_node_groups(
        self, round_id: int, t: int, t_end: int, specs: dict[int, list[tuple]]
    ) -> dict[int, dict]:
        """:meth:`_run_groups` through the group leaders (``group_size``): one call per node group
        (worker groups assigned to live node leaders, node groups to live group leaders), until
        every node group's summed deltas reached the shards."""
        tr = self.tr
        todo = dict(specs)
        done: dict[int, dict] = {}
        attempts: dict[int, int] = {}
        give_up = time.monotonic() + 10 * self.timeout + 60
        while todo:
            if time.monotonic() > give_up:
                raise JobError(
                    f"round {round_id} did not complete within {10 * self.timeout + 60:.0f} s (groups {sorted(todo)} "
                    f"left); resume from the last complete checkpoint ({self._last_checkpoint()}) "
                    "with 'mccfr resume RUN_DIR'"
                )
            self._probe_leaders()
            self._probe_group_leaders()
            lead_of = {g: lead for lead, gs in self._assign(sorted(todo)).items() for g in gs}
            js = sorted({self.ngroup_of[g] for g in todo})
            snapshot_arg, shards_arg = list(self.snapshot), list(self.shards)
            refs = {}
            for gl, jl in self._assign_groups(js).items():
                work = []
                for j in jl:
                    members = [g for g in self.ngroups[j] if g in specs]
                    assign: dict[int, list] = {}
                    for g in members:
                        if g in todo:
                            assign.setdefault(lead_of[g], []).append((g, todo[g]))
                    work.append((j, members, assign))
                ref = self.gleaders[gl].run_round.remote(
                    round_id,
                    t,
                    t_end,
                    tr.w_base,
                    tr.t_base,
                    work,
                    snapshot_arg,
                    shards_arg,
                    self.ckpt_round,
                    self.max_replay_bytes,
                    self.timeout,
                    self.relay_snapshot,
                )
                self._round_calls += 1
                refs[ref] = gl
            # the group leader waits up to timeout for the snapshot (relay), 2 x timeout + 30 for
            # its node leaders, then timeout for the puts
            trouble: list[str] = []
            for gl, res in self._answers(
                refs, self.gleader_node, self._gleader_down, 4 * self.timeout + 60, "it died"
            ):
                self.gleader_node[gl] = res["node_id"]
                for lead, info in res["leaders"].items():
                    self.leader_node[lead] = info["node_id"]
                    self.leader_workers[lead] = info["workers"]
                    self._restart_note(info, lead)
                    for note in info["notes"]:
                        self.log(note)
                for lead, why in res["leaders_down"].items():
                    self._leader_down(lead, why)
                self._take_result(res, f"group leader {gl}", round_id, done, todo, attempts, trouble)
            self._end_attempt(round_id, todo, attempts, trouble)
        return done

    def _answers(self, refs: dict, node_of: dict, down, wait_s: float, died: str):
        """Yield ``(key, result)`` of each call in ``refs`` (``{ref: key}``, emptied) as it returns,
        counting its bytes; a key whose node Ray reports dead, whose actor died (``died``: the
        reason's words) or that has not answered within ``wait_s`` seconds goes to
        ``down(key, reason)`` instead."""
        ray = self.ray
        deadline = time.monotonic() + wait_s
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=1.0)
            if not ready:
                alive = self._alive_node_ids()
                for ref, key in list(refs.items()):
                    if node_of[key] not in alive:
                        down(key, "Ray reports its node dead")
                        del refs[ref]
                if time.monotonic() > deadline:
                    for key in refs.values():
                        down(key, f"no answer within {wait_s:.0f} s")
                    refs.clear()
                continue
            ref = ready[0]
            key = refs.pop(ref)
            try:
                res = ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                down(key, f"{died}: {type(exc).__name__}")
                continue
            self._round_bytes += len(pickle.dumps(res))
            yield key, res

    def _take_result(
        self, res: dict, where: str, round_id: int, done: dict, todo: dict, attempts: dict, trouble: list
    ) -> None:
        """A round call's result from ``where`` (a node or group leader): retention, the worker
        groups done (out of ``todo``) and failed (counted in ``attempts``, their reasons and any
        shard errors in ``trouble``)."""
        if not res["retaining"]:
            self._replay_resume = None
        if not res["retaining"] and self.replay_ok:
            self.replay_ok = False
            self.log(
                f"more than {self.max_replay_bytes:,} delta bytes retained by {where} since the last "
                "checkpoint: a shard that dies before the next checkpoint stops the job"
            )
        for g, st in res["done"].items():
            done[g] = st
            todo.pop(g, None)
        for g, why in res["failed"].items():
            attempts[g] = attempts.get(g, 0) + 1
            self.log(f"group {g} of round {round_id} failed on {where} ({why}); it runs again")
            trouble.append(why)
        if res["shard_errors"]:
            trouble.append(f"a delta could not be sent to shard(s) {res['shard_errors']}")

    def _end_attempt(self, round_id: int, todo: dict, attempts: dict, trouble: list) -> None:
        """After one attempt at a round's groups: count the reruns, restore shards after trouble,
        give up on a group that failed 4 times."""
        if todo:
            self.group_reruns += len(todo)
        if trouble or todo:
            self._restore_shards("; ".join(trouble) or "a node died")
        for g in [g for g in todo if attempts.get(g, 0) >= 4]:
            raise JobError(
                f"group {g} of round {round_id} failed {attempts[g]} times; resume from the last complete "
                f"checkpoint ({self._last_checkpoint()}) with 'mccfr resume RUN_DIR'"
            )

    def _end_node_groups(self, round_id: int, t: int, t_end: int, groups: list[int]) -> None:
        """:meth:`_end_round` through the group leaders: each ends the shards of its node group's
        nodes (a dead one's go to a live one); a shard that does not come back is ended by the
        driver directly (restoring it if it died)."""
        ray = self.ray
        by_j: dict[int, list[int]] = {}
        for k in range(self.num_shards):
            by_j.setdefault(self.ngroup_of[self.shard_nodes[k]], []).append(k)
        refs = {}
        for gl, jl in self._assign_groups(sorted(by_j)).items():
            ks = [k for j in jl for k in by_j[j]]
            ref = self.gleaders[gl].end_round.remote(
                round_id, t, t_end, groups, {k: self.shards[k] for k in ks}, self.timeout
            )
            self._round_calls += 1
            refs[ref] = (gl, ks)
        left: list[int] = []
        for ref, (gl, ks) in refs.items():
            try:
                out = ray.get(ref, timeout=2 * self.timeout + 30)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
                self._gleader_down(gl, f"ending round {round_id}: {type(exc).__name__}")
                left += ks
                continue
            self._round_bytes += len(pickle.dumps(out))
            for k in ks:
                r = out.get(k)
                if not isinstance(r, tuple):
                    left.append(k)
                    continue
                box, missing = r
                self.snapshot[k] = box[0]
                for g in missing:
                    self.lost_deltas.append({"shard": k, "round": round_id, "group": g})
                    self.log(f"shard {k}: node group {g}'s delta of round {round_id} is missing; it is lost")
        if left:
            self._end_round(round_id, t, t_end, groups, only=sorted(left))

    def _end_round(
        self, round_id: int, t: int, t_end: int, groups: list[int], only: list[int] | None = None
    ) -> None:
        ray = self.ray
        ks = range(self.num_shards) if only is None else only
        refs = {k: self.shards[k].end_round_ref.remote(round_id, t, t_end, groups) for k in ks}
        self._round_calls += len(refs)
        for attempt in range(3):
            failed = []
            for k, ref in refs.items():
                try:
                    box, missing = ray.get(ref, timeout=self.timeout)
                except (
                    ray.exceptions.RayActorError,
                    ray.exceptions.GetTimeoutError,
                    ray.exceptions.RayTaskError,
                ) as exc:
                    failed.append((k, exc))
                    continue
                self.snapshot[k] = box[0]
                # what came back: a reference (id and owner address) and the missing groups
                self._round_bytes += (
                    len(box[0].binary()) + len(box[0].owner_address()) + len(pickle.dumps(missing))
                )
                for g in missing:
                    self.lost_deltas.append({"shard": k, "round": round_id, "group": g})
                    self.log(f"shard {k}: group {g}'s delta of round {round_id} is missing; it is lost")
            if not failed:
                return
            restored = self._restore_shards(f"{type(failed[0][1]).__name__} at the end of round {round_id}")
            if not restored:
                raise JobError(f"a shard call failed: {failed[0][1]}")
            # the restored shards have the round's deltas again (replayed): end it there
            refs = {k: self.shards[k].end_round_ref.remote(round_id, t, t_end, groups) for k in restored}
        raise JobError(f"round {round_id} could not be ended on every shard")

    def _round_size(self, end: int) -> int:
        t = self.tr.iteration
        return round_end(t, self.num_workers, self.batch, end) - t

    def _round(self, end: int) -> None:
        tr = self.tr
        t = tr.iteration
        total = self._round_size(end)
        t_end = t + total
        sizes = split_round(total, self.num_workers)
        if self._save_pending is not None:
            self._poll_save(block=False)
        t_start = time.perf_counter()
        cpu_start = time.thread_time()
        self._round_calls = 0
        self._round_bytes = 0
        round_id = self.round + 1
        self._alive_cache = None  # asked once a round (and again while waiting on a failure)
        specs: dict[int, list[tuple]] = {}
        t0 = t
        order = []
        for k, b in enumerate(sizes):
            if b == 0:
                continue
            seq = self.worker_seq[k] + 1
            specs.setdefault(self.group_of[k], []).append(
                (k, seq, [int(x) for x in self.worker_rng[k]], t0, b)
            )
            order.append((k, b))
            t0 += b
        if self.group_size:
            done = self._run_node_groups(round_id, t, t_end, specs)
            groups = sorted(done)
            shard_groups = sorted({self.ngroup_of[g] for g in groups})  # what a shard receives
            self._end_node_groups(round_id, t, t_end, shard_groups)
        else:
            done = self._run_groups(round_id, t, t_end, specs)
            groups = sorted(done)
            shard_groups = groups
            self._end_round(round_id, t, t_end, groups)
        self.round = round_id
        self.round_log.append((round_id, t, t_end, shard_groups))
        # the round's figures
        applied = 0
        for k, b in sorted(order, key=lambda kb: (self.group_of[kb[0]], kb[0])):
            self.worker_seq[k] += 1
            self.staleness_sum += applied
            applied += b
        self.batches += len(order)
        for g in groups:
            st = done[g]
            for k, rng in st["rng"].items():
                self.worker_rng[int(k)] = np.array(rng, np.uint64)
            tr.node_visits += st["node_visits"]
            tr.pruned += st["pruned"]
            self.bytes_sent += st["bytes"]
            self.worker_bytes += st["worker_bytes"]
            self.touched_rows += st["touched_rows"]
            self.compute_seconds += st["compute_seconds"]
            self.worker_seconds += st["seconds"]
            self.worker_rss[g], self.worker_pss[g], self.worker_uss[g] = st["rss"], st["pss"], st["uss"]
        tr.skip_to(t_end, tables=False)
        if self._lost_retention:
            self._lost_retention = False
            self._rebase()
        self.version += 1
        self.rounds += 1
        self.driver_calls += self._round_calls
        self.driver_bytes += self._round_bytes
        self.max_round_calls = max(self.max_round_calls, self._round_calls)
        self.max_round_bytes = max(self.max_round_bytes, self._round_bytes)
        cpu = time.thread_time() - cpu_start
        self.driver_cpu_seconds += cpu
        self.max_round_cpu = max(self.max_round_cpu, cpu)
        dt = time.perf_counter() - t_start
        tr.seconds += dt
        self.round_seconds += dt

    def run(
        self, iterations: int, callback: Callable[[Any], bool] | None = None, report_seconds: float = 0.5
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
