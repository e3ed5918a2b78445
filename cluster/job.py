"""The Ray training job: one driver; per node a leader, its workers and its regret shard(s).

:class:`RayJob` is the driver. It owns a :class:`blueprint.trainer.Trainer` for everything that
is not the tables' live contents (tree, cards, config, hashes, the schedule counters
``iteration``/``w_base``/``t_base``, visit counts, exact exploitability on an assembled copy), so a
job checkpoint has the trainer's manifest keys and ``Trainer.load`` / ``mccfr eval`` read it.

Placement. The job takes one placement-group bundle per node (``STRICT_SPREAD``: a node each; a
bundle reserves its node's workers' CPUs) and puts in bundle ``g`` the node's leader
(:class:`cluster.leader.LeaderCore`, no CPU), its workers (created by the leader, in the same
bundle) and its shard(s) (shard ``k`` on node ``k mod nodes`` unless ``shard_nodes`` says
otherwise; no CPU). The driver puts the card abstraction in the object store once; each node keeps
one copy that its workers read zero-copy (the kernels get read-only views); no worker builds or
loads an abstraction (a missing one was built by the driver's ``Trainer`` before the job started,
or that failed with its error before any worker started).

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

Checkpoints: :meth:`RayJob.save` writes into the run directory (every shard writes its slice
there, then the driver the manifest: the job pauses for the write, and the directory must be one
every node reaches). :meth:`RayJob.save_to_storage` writes into a storage path every node reaches
(a directory or a pyarrow URI such as ``s3://``, :mod:`cluster.storage`) from the published
snapshot: per shard a task on its node writes the slice through the node's own temporary
directory and uploads it, and a last task uploads the manifest once they all returned; the driver
only submits them (the pause: ``stats()["checkpoint_pause_seconds"]``), and the checkpoint becomes
the restore base when a later round sees it complete. ``RayJob.load(run_dir, storage=...)`` fetches
the newest complete one into ``run_dir/checkpoints`` and resumes. ``mccfr train --storage TARGET``
checkpoints this way (``mccfr/cli/session.py``; the target is recorded in ``run.toml``, where ``mccfr
resume`` and the commands that read a run find it).

With linear weighting (``linear``, ``pluribus``) a boundary multiplies the whole table by one
factor, so a delta discounted on the worker and added to the discounted table is exactly what one
process would have; ``dcfr``'s sign-dependent factors make it approximate for more than one worker
(as staleness is).

Staleness: every worker trains against the snapshot of the start of its round; a batch's staleness
is the iterations of the round's batches added before it (in the fixed order), averaged over
batches ((N - 1) B / 2 with full rounds; 0 with one worker). Its cost in exploitability grows
with the round's length, N x B, whatever the run's length; with several workers
:func:`default_batch` keeps rounds at or under ``ROUND_VISITS`` times the first round's bucket count
(BENCHMARKS.md, "Staleness with 2, 8 and 28 workers").

Determinism: the tables depend only on the seed, the batch size, the number of workers and their
grouping into nodes (not on timing, nor on which node ran a group after a failure). With one
worker, training N iterations and resuming for N more gives the same tables, bit for bit, as 2N
uninterrupted, provided N is a multiple of the batch size.

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
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import numpy as np

from blueprint.checkpoints import load_latest, new_checkpoint_dir, previous_kept, prune_checkpoints
from blueprint.io.errors import CheckpointError
from blueprint.io.manifest import write_manifest
from blueprint.io.shard_file import shard_name
from blueprint.numerics import seed_rng_state
from blueprint.trainer import Trainer, run_for
from cluster.group import GroupLeaderCore
from cluster.leader import LeaderCore
from cluster.shard import ShardCore, slice_bounds

ROUND_VISITS = 5
"""With several workers the default batch keeps a round, ``workers x batch`` iterations, at or under
``ROUND_VISITS x`` the first round's bucket count: each first-round information set is visited in
about one iteration in that count, so a round updates it about ``ROUND_VISITS`` times from one
snapshot. On Leduc (6 first-round buckets: rounds of 30) that is 2 workers at batch 15, 8 at 3 and
28 at 1 (BENCHMARKS.md, "Staleness with 2, 8 and 28 workers"); other games are scaled by their
bucket count, an assumption not measured."""


def default_batch(table_entries: int, workers: int = 1, first_round_buckets: int | None = None) -> int:
    """Iterations per worker per round when none is given: table entries / 25, within
    [100, 100,000], and with several workers at most ``ROUND_VISITS x first_round_buckets /
    workers`` (at least 1).

    What staleness costs depends on the round's length in iterations (every worker starts from the
    round's snapshot and sees only its own updates), not on the run's length: on Leduc, 2 workers at
    batch 100 end 11-13% above one process both at 100,000 and at 4M iterations, at batch 10 level
    with it, and 28 workers at batch 1 (rounds of 28) level with it at 4M. One worker sees all its
    own updates, so its batch is never bounded. A big table needs big batches to keep the per-round
    overhead small (hunl100 with the small abstractions, 116,463 entries: 4,658), which this bound
    undoes with several workers (hunl100, 169 first-round buckets: 422 for 2 workers): pass
    ``batch`` to choose throughput over staleness."""
    b = int(min(max(table_entries // 25, 100), 100_000))
    if workers > 1 and first_round_buckets:
        b = min(b, max(1, int(ROUND_VISITS * first_round_buckets) // workers))
    return b


class JobError(RuntimeError):
    """The job cannot go on (a shard died and could not be restored, no node left, ...); the
    message says why and which checkpoint to resume from."""


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


def _alive_cpu_nodes(ray) -> list[dict]:
    return [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]


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
        worker_cpus: CPUs each worker actor reserves (leaders and shards reserve none).
        worker_rng: per worker, a uint64[4] RNG state (a resumed job); default from the seed.
        worker_seq: per worker, the last batch sequence number used (a resumed job).
        log: called with human-readable notes (warnings: workers leaving a round, restores, ...).
        ray_init: extra keyword arguments for ``ray.init``.
        max_replay_bytes: the most retained delta bytes per leader since the last checkpoint (what
            a dead shard is restored from; past that a dead shard stops the job).
        nodes: placement-group bundles, one per node (default: the alive nodes with CPUs, at most
            ``workers``); the workers are split evenly over them (first nodes get more).
        shard_nodes: per shard, the node (bundle) it starts on (default ``k mod nodes``).
        timeout: seconds any wait may take (start, a round's batches, a shard call) before the
            job acts on it (a worker leaves the round, a node is counted down, a shard restored).
        round: the last round ended (a resumed job).
        share_cards: the workers read the node's one copy of the card table (False: each copies
            it into its own memory, as when every worker loaded its own; for measurements).
        worker_retries: Ray's ``max_restarts`` / ``max_task_retries`` of each worker (past them a
            worker is gone for good and its batches run on the node's other workers).
        box_round_args: the leaders' calls carry one reference to the list of snapshot references
            and one to the list of shard handles instead of the lists (S of each per call); measured
            dearer up to 5 simulated nodes (the driver owns one more object a round, fetched by
            every node), see :meth:`_round_args`.
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
        nodes: int | None = None,
        shard_nodes: list[int] | None = None,
        timeout: float = 300.0,
        round: int = 0,
        share_cards: bool = True,
        worker_retries: int = 3,
        box_round_args: bool = False,
        pack_round_args: bool = False,
        group_size: int | None = None,
        relay_snapshot: bool = True,
    ):
        import ray

        if workers < 1 or shards < 1 or (batch is not None and batch < 1):
            raise JobError("workers, shards and batch must be >= 1")
        if group_size is not None and group_size < 0:
            raise JobError("group_size must be >= 1 (or 0/None: no group leaders)")
        self.group_size = int(group_size or 0)
        self.relay_snapshot = relay_snapshot
        self.gleaders: list = []
        short_rounds = None
        if batch is None:
            batch = default_batch(trainer.size, workers, int(trainer.cards.num_buckets[0]))
            if batch < default_batch(trainer.size):
                short_rounds = (
                    f"default batch {batch}: rounds of {workers * batch} iterations keep the staleness "
                    "as low as small games need; on a big game pass --batch (e.g. 20000) for throughput"
                )
        if trainer.config.algo.full_traversal:
            raise JobError(
                f"--algo {trainer.config.algo.name} enumerates every deal; the Ray job runs sampled MCCFR"
            )
        self.ray = ray
        self.tr = trainer
        self.num_workers, self.num_shards, self.batch = workers, shards, batch
        self.worker_cpus = worker_cpus
        self.timeout = float(timeout)
        self.share_cards = share_cards
        self.box_round_args = box_round_args
        self.pack_round_args = pack_round_args
        self._shards_box: tuple[list, Any] | None = None
        self.worker_retries = worker_retries
        self.log = log or (lambda msg: None)
        if short_rounds:
            self.log(short_rounds)
        self.own_ray = False
        self.pg = None
        self.leaders: list = []
        self.shards: list = []
        if not ray.is_initialized():
            kw = {"include_dashboard": False, "logging_level": "warning", "log_to_driver": False}
            kw.update(ray_init or {})
            ray.init(address=address, **kw)
            self.own_ray = True
        try:
            self._start(trainer, worker_rng, worker_seq, max_replay_bytes, nodes, shard_nodes, round)
        except BaseException:
            self.close()
            raise

    def _start(self, trainer, worker_rng, worker_seq, max_replay_bytes, nodes, shard_nodes, round_id) -> None:
        ray = self.ray
        from ray.util.placement_group import placement_group

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
        alive = _alive_cpu_nodes(ray)
        if nodes is None:
            nodes = max(1, min(len(alive), workers))
        if nodes < 1:
            raise JobError("nodes must be >= 1")
        self.num_nodes = nodes
        per_node = split_round(workers, nodes)
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
        self.round = int(round_id)
        self.ckpt_round = self.round
        self.round_log: list[tuple[int, int, int, list[int]]] = []
        self.replay_ok = True
        self.max_replay_bytes = max_replay_bytes
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

    # -- actors -------------------------------------------------------------------------------
    def _in_bundle(self, g: int) -> dict[str, Any]:
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

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
            self.worker_cpus,
            (self.pg, g),
            self.timeout,
            self.worker_retries,
            not self.share_cards,
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

    def _last_checkpoint(self) -> str:
        if self.base_storage is not None:
            storage, it = self.base_storage
            return storage.describe(it)
        return str(self.base_dir) if self.base_dir is not None else "none written yet"

    def _get(self, refs: list, what: str, timeout: float | None = None) -> list:
        """``ray.get`` with the job's deadline; :class:`JobError` saying what did not answer."""
        try:
            return self.ray.get(refs, timeout=self.timeout if timeout is None else timeout)
        except self.ray.exceptions.GetTimeoutError:
            raise JobError(f"timed out after {self.timeout:.0f} s waiting for {what}") from None

    def _alive_node_ids(self, cached: bool = False) -> set[str]:
        """The alive nodes' ids (``ray.nodes()``, a GCS call whose answer grows with the cluster);
        ``cached``: the answer already fetched in this round, if any (the round's assignments)."""
        if cached and self._alive_cache is not None:
            return self._alive_cache
        self._alive_cache = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        return self._alive_cache

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

    def kill_worker(self, k: int) -> None:
        """kill -9 worker ``k``'s process (fault drills; the worker must run on this machine)."""
        g = self.group_of[k]
        pid = self.ray.get(self.leaders[g].worker_pid.remote(self.groups[g].index(k)), timeout=self.timeout)
        os.kill(pid, signal.SIGKILL)

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

    # -- checkpoints ------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        m = self.tr.manifest()
        m["rng_state"] = [int(x) for x in self.worker_rng[0]]
        m["job"] = {
            "workers": self.num_workers,
            "shards": self.num_shards,
            "batch": self.batch,
            "nodes": self.num_nodes,
            "group_size": self.group_size,
            "round": self.round,
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
        if self._save_pending is not None:
            self._poll_save(block=True)
        run_dir = Path(run_dir)
        it = self.tr.iteration
        kept = previous_kept(run_dir, it)
        ckpt_dir = new_checkpoint_dir(run_dir, it, replace=True)
        try:
            files = self._get(
                [s.write.remote(str(ckpt_dir), it) for s in self.shards], what="the shards to write"
            )
            files.append(self._write_blueprint(ckpt_dir))
            write_manifest(ckpt_dir, self.manifest(), files)
        except BaseException as exc:
            shutil.rmtree(ckpt_dir, ignore_errors=True)
            if isinstance(exc, Exception):
                cause = getattr(exc, "cause", None) or exc  # a shard's error comes as RayTaskError
                raise CheckpointError(
                    f"writing checkpoint {ckpt_dir} (iteration {it}) failed: {cause}; {kept}"
                ) from exc
            raise
        # a shard that dies from now on is rebuilt from this checkpoint (the leaders drop their
        # retained deltas up to this round with the next round's call)
        self.base_dir, self.base_refs, self.base_storage = ckpt_dir, None, None
        self.ckpt_round, self.round_log, self.replay_ok = self.round, [], True
        if keep is not None:
            prune_checkpoints(run_dir, keep)
        self.checkpoint_pauses.append(time.perf_counter() - t_start)
        return ckpt_dir

    def _write_blueprint(self, ckpt_dir: Path) -> dict[str, Any]:
        """The checkpoint's blueprint file (what queries load): the average strategy of the
        shards' published snapshot, which is their state between rounds; only the strategy sums
        are used."""
        from blueprint.blueprint import average_strategy32, write_blueprint_file

        slices = self._get(list(self.snapshot), what="the shards' snapshot")
        strat = np.concatenate([s["strat"] for s in slices])
        probs = average_strategy32(self.tr.tree, self.tr.row_offset, self.tr.num_buckets, strat)
        return write_blueprint_file(ckpt_dir, self.tr, probs=probs)

    def save_to_storage(self, storage, keep: int | None = None, wait: bool = False) -> int:
        """Checkpoint into ``storage`` (a :class:`cluster.storage.Storage`, a directory or a pyarrow
        URI) from the published snapshot, without stopping the rounds: one task per shard on its
        node writes the slice it published at the end of the last round (immutable in the object
        store) and uploads it, one writes the blueprint file from the slices' strategy sums; a
        last task, started by Ray once they all returned, uploads the manifest and prunes to
        ``keep``. The driver only submits them (the pause,
        ``stats()["checkpoint_pause_seconds"]``) and sees the result at a later round (or now with
        ``wait``); until then the previous complete checkpoint stays the restore base. A save
        while one is still being written waits for it first. Returns the iteration saved; a failed
        write is logged at completion (raised with ``wait``) and leaves the previous one.
        """
        from cluster.storage import Storage, write_blueprint_task, write_manifest_task, write_slice_task

        t_start = time.perf_counter()
        if not isinstance(storage, Storage):
            storage = Storage(storage)
        if self._save_pending is not None:
            self._poll_save(block=True)
        ray = self.ray
        it = self.tr.iteration
        manifest = self.manifest()
        slice_task = ray.remote(write_slice_task)
        refs = []
        for k, (lo, hi) in enumerate(self.bounds):
            meta = {
                "shard": k,
                "row_lo": lo,
                "row_hi": hi,
                "iteration": it,
                "last_seq": {},
                "round": self.round,
            }
            opts = {"num_cpus": 0, "max_retries": 2, **self._in_bundle(self.shard_nodes[k])}
            refs.append(slice_task.options(**opts).remote(storage, it, k, meta, self.snapshot[k]))
        if self._blueprint_static is None:  # the blueprint file's header and layout: once per job
            from blueprint.blueprint import blueprint_file_payload

            header, arrays = blueprint_file_payload(self.tr, probs=np.zeros(0, np.float32))
            arrays.pop("probs")
            self._blueprint_static = ray.put((header, arrays, self.tr.tree))
        refs.append(
            ray.remote(write_blueprint_task)
            .options(num_cpus=0, max_retries=2)
            .remote(storage, it, self._blueprint_static, *self.snapshot)
        )
        mref = (
            ray.remote(write_manifest_task)
            .options(num_cpus=0, max_retries=2)
            .remote(storage, it, manifest, keep, *refs)
        )
        self._save_pending = {
            "storage": storage,
            "iteration": it,
            "round": self.round,
            "ref": mref,
            "started": t_start,
        }
        self.checkpoint_pauses.append(time.perf_counter() - t_start)
        if wait:
            self._poll_save(block=True, raise_errors=True)
        return it

    def _poll_save(self, block: bool, raise_errors: bool = False) -> bool:
        """Take in a storage checkpoint that has finished (``block``: wait for it, within the
        job's deadline). Returns True if none is pending any more."""
        pending = self._save_pending
        if pending is None:
            return True
        ready, _ = self.ray.wait([pending["ref"]], timeout=self.timeout if block else 0)
        if not ready:
            if block:
                self._save_pending = None
                msg = (
                    f"checkpoint {pending['storage'].describe(pending['iteration'])} was not written within "
                    f"{self.timeout:.0f} s; the last complete one is {self._last_checkpoint()}"
                )
                self.log(msg)
                if raise_errors:
                    raise CheckpointError(msg)
            return not block
        self._save_pending = None
        storage, it, saved_round = pending["storage"], pending["iteration"], pending["round"]
        try:
            self.ray.get(pending["ref"])
        except Exception as exc:
            cause = getattr(exc, "cause", None) or exc
            msg = (
                f"writing checkpoint {storage.describe(it)} (iteration {it}) failed: {cause}; "
                f"the last complete one is {self._last_checkpoint()}"
            )
            self.log(msg)
            if raise_errors:
                raise CheckpointError(msg) from exc
            return True
        self.storage_save_seconds.append(time.perf_counter() - pending["started"])
        if saved_round < self.ckpt_round:  # a newer base came meanwhile (a re-base after a node died)
            return True
        # the restore base from now on; the leaders drop their deltas up to that round with the
        # next call, the rounds after it stay in the log (they ran while the checkpoint was written)
        self.base_storage, self.base_dir, self.base_refs = (storage, it), None, None
        self.ckpt_round = saved_round
        self.round_log = [e for e in self.round_log if e[0] > saved_round]
        if not self.replay_ok:
            # a leader stopped retaining: deltas after this checkpoint may be gone; its retention
            # restarts with the next round, so a checkpoint of that round or later restores it
            if self._replay_resume is not None and saved_round >= self._replay_resume - 1:
                self.replay_ok = True
            elif self._replay_resume is None:
                self._replay_resume = self.round + 1
        return True

    def wait_saves(self) -> None:
        """Wait for a storage checkpoint still being written (raises :class:`CheckpointError` if it
        failed)."""
        self._poll_save(block=True, raise_errors=True)

    @staticmethod
    def resume_kwargs(manifest: dict[str, Any], **overrides) -> dict[str, Any]:
        """Constructor keywords that continue the job of a checkpoint's manifest: its workers,
        shards, batch, nodes, round, worker RNG states and batch numbers (a single-process
        checkpoint: one worker continuing the trainer's RNG). ``overrides`` (None values ignored)
        replace them."""
        job = manifest.get("job") or {}
        kw = {
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

    @classmethod
    def load(cls, run_dir: Path, log: Callable[[str], Any] | None = None, storage=None, **kwargs) -> RayJob:
        """Resume from the newest complete checkpoint of ``run_dir`` (written by a job with any
        number of shards, or by the single-process trainer), or of ``storage`` (a directory or
        pyarrow URI, fetched into ``run_dir/checkpoints`` first). ``kwargs`` as for the
        constructor; ``workers``/``shards``/``batch`` default to the checkpoint's."""
        if storage is not None:
            from cluster.storage import Storage

            storage = storage if isinstance(storage, Storage) else Storage(storage)
            manifest, shards = storage.load_latest(Path(run_dir), log=log)
        else:
            manifest, shards = load_latest(Path(run_dir), log=log)
        tr = Trainer.from_checkpoint(Path(run_dir), manifest, shards)
        del shards
        return cls(tr, log=log, **cls.resume_kwargs(manifest, **kwargs))

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
            from ray.util.placement_group import remove_placement_group

            with contextlib.suppress(Exception):
                remove_placement_group(self.pg)
            self.pg = None
        if self.own_ray:
            self.ray.shutdown()
            self.own_ray = False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
