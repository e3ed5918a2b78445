"""A node's leader: runs its workers' batches, sums their deltas, sends one delta per shard.

:class:`LeaderCore` is a Ray actor (``ray.remote(LeaderCore)``, no CPU of its own) placed in its
node's placement-group bundle. It creates that node's worker actors in the same bundle (so it owns
them: they end with it), with Ray's ``max_restarts`` / ``max_task_retries``: a worker process that
dies is restarted and its batch re-run by Ray with the same arguments, RNG state included, so the
result is the one the first try would have given.

Per round the driver sends it one call, :meth:`LeaderCore.run_round`, with the *groups* to run (a
group is a fixed list of worker batches, normally this node's; a dead node's group goes to another
leader) and the snapshot's object references. For each group the leader

1. runs the batches on its workers (batch ``j`` on worker ``j mod W``; a worker that fails or does
   not answer within the deadline leaves the round with a warning and its batch goes to another),
2. sums the batches' deltas per shard in worker order (:func:`cluster.shard.sum_deltas`),
3. keeps the sums (the *retained deltas*, until the driver reports a newer checkpoint: what a
   restored shard replays) and sends each shard its sum with ``put_delta(round, group, payload)``,

and returns only small per-group statistics and the workers' RNG states (a few hundred bytes):
deltas and snapshots never pass through the driver.

Ray's facilities do the placement (the bundle), the restarts and the retries; the dispatch is a
few lines of ``ray.wait`` rather than :class:`ray.util.ActorPool`, because the batch-to-worker
assignment must not matter (it does not: every batch carries its RNG state and the sums are in
worker order) while a batch stuck past its deadline must move to another worker, which ActorPool's
``get_next(timeout)`` cannot do (it leaves the stuck task holding its actor).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, NamedTuple

import numpy as np
import ray
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from cluster.shard import sum_deltas
from cluster.worker import WorkerCore


def node_id() -> str | None:
    """The Ray node this process runs on (None outside a Ray worker)."""
    try:
        return ray.get_runtime_context().get_node_id()
    except Exception:
        return None


def failed_puts(ray, puts: list[tuple[int, Any]], timeout: float) -> set[int]:
    """The shards (of ``puts``, ``[(shard, put_delta ref)]``) whose delta did not arrive within
    ``timeout`` seconds or raised."""
    errors: set[int] = set()
    if puts:
        ready = set(ray.wait([r for _, r in puts], num_returns=len(puts), timeout=timeout)[0])
        for k, r in puts:
            if r not in ready:
                errors.add(k)
                continue
            try:
                ray.get(r)
            except Exception:
                errors.add(k)
    return errors


class RetainedDeltas:
    """The deltas a leader (node or group) sent since the last checkpoint, per shard, kept to
    replay to a restored shard; all dropped, and retention off until the next checkpoint, once
    they pass the cap."""

    ray: Any

    def _init_retention(self) -> None:
        # shard -> {(round, group): payload}
        self.retained: dict[int, dict[tuple[int, int], bytes]] = {}
        self.retained_bytes = 0
        self.retaining = True
        self.ckpt_round = 0

    def _drop_retained(self, ckpt_round: int) -> None:
        if ckpt_round > self.ckpt_round:
            self.ckpt_round = ckpt_round
            self.retaining = True
        for d in self.retained.values():
            for key in [key for key in d if key[0] <= ckpt_round]:
                self.retained_bytes -= len(d.pop(key))

    def _retain(self, k: int, key: tuple[int, int], payload: bytes, cap: int) -> None:
        if not self.retaining:
            return
        old = self.retained.setdefault(k, {}).get(key)
        self.retained[k][key] = payload
        self.retained_bytes += len(payload) - (len(old) if old is not None else 0)
        if self.retained_bytes > cap:
            self.retained, self.retained_bytes, self.retaining = {}, 0, False

    def replay(self, shards: dict[int, Any], since_round: int, timeout: float) -> list[tuple[int, int, int]]:
        """Send restored shards (``{index: handle}``) every retained delta of a round after
        ``since_round``; returns the ``(shard, round, group)`` sent (a worker group for a node
        leader, a node group for a group leader)."""
        sent, refs = [], []
        for k, handle in shards.items():
            for (r, g), payload in sorted(self.retained.get(k, {}).items()):
                if r > since_round:
                    refs.append(handle.put_delta.remote(r, g, payload))
                    sent.append((k, r, g))
        if refs:
            self.ray.get(refs, timeout=timeout)
        return sent


class WorkerSettings(NamedTuple):
    """How a node's leader starts its workers (the job's settings, the same on every node)."""

    cpus: float = 1  # CPUs per worker
    start_timeout: float = 300.0  # seconds to wait for the workers to start; one that does not is left out
    retries: int = 3  # Ray's ``max_restarts`` and ``max_task_retries`` for the workers
    # each worker copies the card table into its own memory (the job's default where a node runs one
    # worker: :class:`cluster.job.RayJob`'s ``share_cards``)
    private_cards: bool = False
    threads: int = 1  # threads per worker (:class:`cluster.worker.WorkerCore`)


class LeaderCore(RetainedDeltas):
    """One node's leader (see the module docstring).

    Args:
        node: the node's index in the job (its bundle).
        config: the run's resolved config (``Trainer.config_dict``).
        bounds: the shards' row ranges.
        cards_box: ``[ref]``, the object reference of the driver's card abstraction (in a list so
            that Ray hands the reference, not the value, to the leader; each worker gets the value,
            read zero-copy from this node's object store).
        abstraction_hash: the job's abstraction hash (checked by each worker).
        worker_ids: the job's numbers of this node's workers.
        placement: ``(placement_group, bundle_index)`` or None (no placement group).
        workers: how the workers start (:class:`WorkerSettings`).
    """

    def __init__(
        self,
        node: int,
        config: dict,
        bounds: list[tuple[int, int]],
        cards_box: list,
        abstraction_hash: str | None,
        worker_ids: list[int],
        placement: tuple | None = None,
        workers: WorkerSettings = WorkerSettings(),
    ):
        self.ray = ray
        self.node = node
        self.bounds = [(int(a), int(b)) for a, b in bounds]
        self.int_regret = config["algo"].get("regret_dtype") == "int32"
        self.worker_ids = list(worker_ids)
        self.notes: list[str] = []
        opts: dict[str, Any] = {
            "num_cpus": workers.cpus,
            "max_restarts": workers.retries,
            "max_task_retries": workers.retries,
        }
        if placement is not None:
            pg, bundle = placement
            opts["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                pg, placement_group_bundle_index=bundle
            )
        actor = ray.remote(WorkerCore).options(**opts)
        self.workers = [
            actor.remote(
                w,
                config,
                self.bounds,
                None,
                abstraction_hash,
                cards_box[0],
                workers.private_cards,
                workers.threads,
            )
            for w in worker_ids
        ]
        self.live = [False] * len(self.workers)
        self.pids: list[int | None] = [None] * len(self.workers)
        if self.workers:
            pings = {w.pid.remote(): i for i, w in enumerate(self.workers)}
            ready, _ = ray.wait(list(pings), num_returns=len(pings), timeout=workers.start_timeout)
            for ref in ready:
                i = pings[ref]
                try:
                    self.pids[i] = ray.get(ref)
                    self.live[i] = True
                except Exception as exc:  # could not start: left out
                    self.notes.append(
                        f"node {node}: worker {worker_ids[i]} failed to start ({type(exc).__name__}: {exc})"
                    )
            for ref, i in pings.items():
                if not self.live[i] and ref not in ready:
                    self.notes.append(
                        f"node {node}: worker {worker_ids[i]} did not start within {workers.start_timeout:.0f} s; "
                        "it is left out"
                    )
        self._init_retention()
        self.method_cpu = 0.0  # CPU time inside run_round (the scale model)
        self.restarts = 0

    # -- small calls ------------------------------------------------------------------------------
    def ping(self) -> dict[str, Any]:
        return {"node_id": node_id(), "workers": sum(self.live), "pid": os.getpid()}

    def cpu_seconds(self) -> tuple[float, float]:
        """``(process, methods)``: this process's CPU time so far (Ray's threads included), and the
        part spent inside :meth:`run_round` (for the scale model)."""
        return time.process_time(), self.method_cpu

    def placement(self) -> dict[str, Any]:
        """Where this leader and its workers run (node ids)."""
        nodes = self.ray.get([w.node_id.remote() for w in self.workers], timeout=60) if self.workers else []
        return {"leader": node_id(), "workers": nodes}

    def worker_pid(self, i: int) -> int:
        return self.ray.get(self.workers[i].pid.remote(), timeout=60)

    def cards_zero_copy(self) -> list[bool]:
        """Per worker: whether it reads the card table zero-copy from the object store."""
        return self.ray.get([w.cards_zero_copy.remote() for w in self.workers], timeout=60)

    def worker_memory(self) -> list[dict[str, int]]:
        return self.ray.get([w.memory.remote() for w in self.workers], timeout=60)

    # -- the round --------------------------------------------------------------------------------
    def _recheck_workers(self, notes: list[str]) -> None:
        """A worker that left a round (stuck, or not scheduled) rejoins once it answers a ping
        (one ping in flight per such worker, never waited for)."""
        probes = getattr(self, "_probes", {})
        self._probes = probes
        for i, ok in enumerate(self.live):
            if ok:
                probes.pop(i, None)
                continue
            ref = probes.get(i)
            if ref is None:
                probes[i] = self.workers[i].pid.remote()
                continue
            ready, _ = self.ray.wait([ref], timeout=0)
            if ready:
                del probes[i]
                with contextlib.suppress(Exception):
                    self.pids[i] = self.ray.get(ref)
                    self.live[i] = True
                    notes.append(f"node {self.node}: worker {self.worker_ids[i]} answers again and rejoins")

    def run_round(self, *args, **kwargs) -> dict[str, Any]:
        """:meth:`_run_round`, its thread's CPU time counted (``cpu_seconds``). The driver sends
        the arguments as one tuple (one serialization instead of eleven)."""
        cpu = time.thread_time()
        if len(args) == 1 and not kwargs and isinstance(args[0], tuple):
            args = list(args[0])
            for i in (6, 7):  # boxed snapshot references / shard handles (RayJob._round_args)
                if isinstance(args[i], self.ray.ObjectRef):
                    args[i] = self.ray.get(args[i], timeout=args[10])
        try:
            return self._run_round(*args, **kwargs)
        finally:
            self.method_cpu += time.thread_time() - cpu

    def _run_round(
        self,
        round_id: int,
        t: int,
        t_end: int,
        w_base: float,
        t_base: int,
        groups: list[tuple[int, list[tuple]]],
        snapshot: list | dict,
        shards: list | None,
        ckpt_round: int,
        retain_cap: int,
        timeout: float,
    ) -> dict[str, Any]:
        """Run ``groups`` (each ``(group, [(worker, batch_seq, rng, t0, n), ...])``) of round
        ``round_id`` = iterations ``[t, t_end)`` against ``snapshot`` (per shard the reference of its
        published slice), send each shard one summed delta per group, and report. With ``shards``
        None (called by a group leader, :mod:`cluster.group`) the sums are returned instead
        (``"deltas": {group: [payload per shard]}``) and not retained; ``snapshot`` may then be
        ``{"packed": ref}``, one object holding every slice (the group leader's relay).

        Every wait has a deadline (``timeout`` seconds for the batches, then as long again for the
        batches moved off workers that did not answer). Returns ``{"node_id", "done": {group:
        stats}, "failed": {group: reason}, "shard_errors": [shard, ...], "notes": [...],
        "retaining": bool, "workers": live workers}``.
        """
        ray = self.ray
        self._drop_retained(ckpt_round)
        notes, self.notes = self.notes, []
        self._recheck_workers(notes)
        batches = [(g, spec) for g, specs in groups for spec in specs]
        results: dict[int, list] = {}
        failed: dict[int, str] = {}
        live = [i for i, ok in enumerate(self.live) if ok]
        if isinstance(snapshot, dict) and live:
            # relayed by a group leader as one object: put again on this node, one per shard, for
            # the workers (they read their slices zero-copy from this node's object store)
            try:
                slices = ray.get(snapshot["packed"], timeout=timeout)
                snapshot = [ray.put(s) for s in slices]
                del slices
            except Exception as exc:
                why = f"the relayed snapshot could not be fetched ({type(exc).__name__})"
                return {
                    "node_id": node_id(),
                    "done": {},
                    "failed": {g: why for g, _ in groups},
                    "shard_errors": [],
                    "notes": notes,
                    "retaining": self.retaining,
                    "workers": len(live),
                    "restarts": self.restarts,
                }
        if not live:
            return {
                "node_id": node_id(),
                "done": {},
                "failed": {g: "no live worker on this node" for g, _ in groups},
                "shard_errors": [],
                "notes": notes,
                "retaining": self.retaining,
                "workers": 0,
            }

        def submit(j: int, i: int):
            _, (worker, seq, rng, t0, n) = batches[j]
            ref = self.workers[i].run_batch.remote(
                seq, t, t0, n, t_end, w_base, t_base, *snapshot, rng=np.array(rng, np.uint64), worker=worker
            )
            return ref

        pending = {submit(j, live[j % len(live)]): (j, live[j % len(live)]) for j in range(len(batches))}
        for phase in (0, 1):
            deadline = time.monotonic() + timeout
            while pending:
                ready, _ = ray.wait(
                    list(pending), num_returns=1, timeout=max(0.0, deadline - time.monotonic())
                )
                if not ready:
                    break
                ref = ready[0]
                j, i = pending.pop(ref)
                g, spec = batches[j]
                try:
                    results[j] = ray.get(ref)
                except ray.exceptions.RayActorError as exc:  # Ray's restarts and retries ran out
                    self.live[i] = False
                    notes.append(
                        f"node {self.node}: worker {self.worker_ids[i]} died ({type(exc).__name__}); "
                        f"it leaves the round, its batch {spec[1]} of worker {spec[0]} runs on another"
                    )
                    others = [x for x in range(len(self.workers)) if self.live[x]]
                    if others:
                        i2 = others[j % len(others)]
                        pending[submit(j, i2)] = (j, i2)
                    else:
                        failed[g] = (
                            f"worker {self.worker_ids[i]} died and no worker is left on node {self.node}"
                        )
                except Exception as exc:  # an input lost (a shard's node died), ...
                    failed[g] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            if not pending or phase == 1:
                break
            # the deadline passed: the workers still busy leave the round, their batches move
            stuck = {i for _, i in pending.values()}
            for i in stuck:
                self.live[i] = False
                notes.append(
                    f"node {self.node}: worker {self.worker_ids[i]} did not finish within {timeout:.0f} s "
                    "(not scheduled, or stuck); it leaves the round, its batch runs on another worker"
                )
            others = [x for x in range(len(self.workers)) if self.live[x]]
            moved = {}
            for ref, (j, i) in pending.items():
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
                if others:
                    i2 = others[j % len(others)]
                    moved[submit(j, i2)] = (j, i2)
                else:  # nowhere to move it: the group fails here (and runs again elsewhere)
                    failed.setdefault(
                        batches[j][0],
                        f"worker {self.worker_ids[i]} did not finish within {timeout:.0f} s and no worker "
                        f"is left on node {self.node}",
                    )
            pending = moved
        for _, (j, i) in pending.items():
            failed.setdefault(
                batches[j][0], f"batch of worker {batches[j][1][0]} got no answer within the deadline"
            )
        # sum per group (worker order), retain, send (under a group leader, ``shards`` is None:
        # the sums go back to it in the result, and it retains and sends its node group's sums)
        done: dict[int, dict[str, Any]] = {}
        deltas: dict[int, list[bytes]] = {}
        puts = []
        for g, specs in groups:
            if g in failed:
                continue
            js = [j for j, (gj, _) in enumerate(batches) if gj == g]
            outs = [results[j] for j in js]
            sent = 0
            for k, (lo, hi) in enumerate(self.bounds):
                payload = sum_deltas([o[1 + k] for o in outs], hi - lo, self.int_regret)
                sent += len(payload)
                if shards is None:
                    deltas.setdefault(g, []).append(payload)
                    continue
                self._retain(k, (round_id, g), payload, retain_cap)
                puts.append((k, shards[k].put_delta.remote(round_id, g, payload)))
            st = [o[0] for o in outs]
            for s in st:
                i = self.worker_ids.index(s["worker"]) if s["worker"] in self.worker_ids else None
                if i is not None and self.pids[i] is not None and s["pid"] != self.pids[i]:
                    self.restarts += 1
                    notes.append(
                        f"node {self.node}: worker {s['worker']} was restarted by Ray (pid {self.pids[i]} -> "
                        f"{s['pid']}); its batch ran again from the same RNG state"
                    )
                if i is not None:
                    self.pids[i] = s["pid"]
            done[g] = {
                "iterations": sum(s["iterations"] for s in st),
                "node_visits": sum(s["node_visits"] for s in st),
                "pruned": sum(s["pruned"] for s in st),
                "touched_rows": sum(s["touched_rows"] for s in st),
                "worker_bytes": sum(s["bytes"] for s in st),
                "bytes": sent,
                "compute_seconds": sum(s["compute_seconds"] for s in st),
                "seconds": sum(s["seconds"] for s in st),
                "rss": max(s["rss_bytes"] for s in st),
                "pss": max(s["pss_bytes"] for s in st),
                "uss": max(s["uss_bytes"] for s in st),
                "rng": {s["worker"]: s["rng"] for s in st},
            }
        shard_errors = failed_puts(ray, puts, timeout)
        out = {
            "node_id": node_id(),
            "done": done,
            "failed": failed,
            "shard_errors": sorted(shard_errors),
            "notes": notes,
            "retaining": self.retaining,
            "workers": sum(self.live),
            "restarts": self.restarts,
        }
        if shards is None:
            out["deltas"] = deltas
        return out
