"""The Ray job on a simulated multi-node cluster (``ray.cluster_utils.Cluster``: a head without
CPUs for the driver, four nodes of one CPU): placement (one bundle per node holding its leader,
workers and shards), the driver's calls and bytes per round, the deterministic merge order, the
shared card table, and the fault drills (a node removed while the job runs)."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")

from job_reference import NODES, reference

from blueprint.trainer import make_trainer
from cluster.job import RayJob


@pytest.fixture
def drill_nodes(nodes):
    """The module's cluster with NODES alive one-CPU nodes before and after a drill."""
    _top_up(nodes)
    yield nodes
    _top_up(nodes)


def _top_up(c) -> None:
    """Back to NODES alive one-CPU nodes after a drill removed some."""
    alive = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0]
    for _ in range(NODES - len(alive)):
        c.add_node(num_cpus=1, object_store_memory=80 << 20)
    c.wait_for_nodes()


def _remove_bundle_node(c, job, g: int) -> str:
    node_id = job.leader_node[g]
    (node,) = [n for n in c.worker_nodes if n.node_id == node_id]
    c.remove_node(node, allow_graceful=False)
    return node_id


def _same(job, ref) -> bool:
    tr = job.sync()
    return tr.regret.tobytes() == ref[0].tobytes() and tr.strat.tobytes() == ref[1].tobytes()


def _check_placement(job) -> None:
    where = job.placement()
    assert len(where) == NODES
    assert len({p["leader"] for p in where}) == NODES  # one bundle per node
    for p in where:  # each node runs its leader, its workers and its shards
        assert p["workers"] and set(p["workers"]) == {p["leader"]}
        assert set(p["shards"]) <= {p["leader"]}
    assert sum(len(p["shards"]) for p in where) == job.num_shards


@pytest.mark.slow  # three jobs
def test_placement_calls_bytes_and_determinism(nodes):
    """4 nodes, 4 workers, 4 shards: each node holds its leader, worker and shard; a round costs
    the driver at most nodes + shards calls and well under 1 KB per node; the tables equal the
    in-process reference of the same arithmetic. Two 2-worker runs with one seed give the same
    tables (the merge order is fixed)."""
    it, batch = 2_000, 100
    with RayJob(make_trainer("leduc", seed=11), workers=4, shards=4, batch=batch, timeout=60) as job:
        assert job.num_nodes == NODES
        _check_placement(job)
        job.run(it)
        st = job.stats()
        assert _same(job, reference(11, 4, 4, 4, batch, it))
    assert st["rounds"] == it // (4 * batch)
    assert st["driver_calls_max_round"] <= NODES + 2 * 4 and st["driver_calls_per_round"] == NODES + 4
    assert st["driver_bytes_max_round"] <= 1024 * NODES
    tables = []
    for _ in range(2):
        with RayJob(make_trainer("leduc", seed=12), workers=2, shards=2, batch=100, timeout=60) as job:
            assert job.num_nodes == 2
            job.run(1_000)
            tr = job.sync()
            tables.append((tr.regret.tobytes(), tr.strat.tobytes()))
    assert tables[0] == tables[1]


@pytest.mark.slow
def test_placement_ten_starts(nodes):
    """10 of 10 starts on 4 nodes place one bundle per node with its leader, worker and shard."""
    for _ in range(10):
        with RayJob(make_trainer("leduc", seed=1), workers=4, shards=4, batch=100, timeout=60) as job:
            _check_placement(job)


def _drill(c, notes, remove: dict[int, int], **kw):
    """Run a job, removing node bundle ``g`` after round ``r`` for each ``r: g`` of ``remove``."""
    seen = []

    def cb(j):
        seen.append(j.iteration)
        g = remove.get(len(seen))
        if g is not None:
            notes.append(f"drill: removing node {g} ({_remove_bundle_node(c, j, g)[:12]})")
        return False

    job = RayJob(make_trainer("leduc", seed=kw.pop("seed")), log=notes.append, timeout=60, **kw)
    return job, cb


@pytest.mark.slow  # a long fault drill
def test_drills_one_worker_exact(drill_nodes):
    """One worker; the nodes removed while the job runs: the worker's node (a worker-only node;
    spare nodes are left: Ray moves its bundle, the leader and worker start again there), then the
    node holding both shards, then, on a second job, a node holding one shard. Each job completes with the tables of an
    uninterrupted run, bit for bit (the lost batch re-runs from its RNG state; a shard is restored
    on a live node from the job's start or its checkpoint plus the leaders' retained deltas)."""
    nodes = drill_nodes
    it, batch = 4_000, 500
    ref = reference(21, 1, 2, 2, batch, it)
    notes: list[str] = []
    # both shards on node 1 (no worker), the worker on node 0
    job, cb = _drill(
        nodes, notes, {2: 0, 5: 1}, seed=21, workers=1, shards=2, batch=batch, nodes=2, shard_nodes=[1, 1]
    )
    with job:
        job.run(it, cb)
        st = job.stats()
        assert job.iteration == it and _same(job, ref), "\n".join(notes)
    assert st["shard_restores"] == 2 and st["node_failures"] >= 1 and st["lost_deltas"] == 0, (st, notes)
    assert any("shard 0 died" in m for m in notes) and any("shard 1 died" in m for m in notes)
    _top_up(nodes)
    # one shard on each node; the shard node goes, after a checkpoint
    notes.clear()
    job, cb0 = _drill(
        nodes, notes, {4: 1}, seed=21, workers=1, shards=2, batch=batch, nodes=2, shard_nodes=[0, 1]
    )

    def cb(j, tmp=__import__("tempfile").mkdtemp()):
        if j.iteration == 1_000:
            j.save(tmp)
        return cb0(j)

    with job:
        job.run(it, cb)
        st = job.stats()
        assert _same(job, ref), "\n".join(notes)
    assert st["shard_restores"] == 1 and st["lost_deltas"] == 0, (st, notes)
    assert any("shard 1 died" in m and "000000001000" in m for m in notes), notes


@pytest.mark.slow  # a long fault drill
def test_drill_no_spare_cpu(drill_nodes):
    """4 workers on the 4 nodes (no CPU to spare): a worker-only node goes, its group runs on the
    live nodes from the same RNG states (tables still those of an uninterrupted run, bit for bit);
    then a node holding a worker and a shard goes: the shard is restored on a live node, the
    deltas its leader alone retained are lost and said so; the job completes within Leduc's
    convergence bound of the uninterrupted run."""
    nodes = drill_nodes
    it, batch = 6_000, 100
    notes: list[str] = []
    job, cb = _drill(nodes, notes, {3: 3}, seed=31, workers=4, shards=2, batch=batch, shard_nodes=[0, 1])
    with job:
        job.run(2_000, cb)
        assert _same(job, reference(31, 4, 4, 2, batch, 2_000)), notes
        assert any("node 3 is down" in m for m in notes), notes
        seen = []

        def cb2(j):
            seen.append(1)
            if len(seen) == 2:
                notes.append(f"drill: removing node 1 ({_remove_bundle_node(nodes, j, 1)[:12]})")
            return False

        job.run(it - 2_000, cb2)
        st = job.stats()
        expl, _ = job.exploitability()
    assert st["shard_restores"] == 1 and st["node_failures"] >= 2, (st, notes)
    ref = make_trainer("leduc", seed=31)
    ref.regret[:], ref.strat[:] = reference(31, 4, 4, 2, batch, it)
    ref_expl = ref.exploitability()[0]
    assert expl < 1.5 * ref_expl, (expl, ref_expl, "\n".join(notes))
    print(
        f"no-spare drill: exploitability {expl:.4f} vs uninterrupted {ref_expl:.4f}; lost deltas "
        f"{st['lost_deltas']}; notes:\n" + "\n".join(notes)
    )
