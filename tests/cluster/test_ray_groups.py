"""The Ray job's two-level fan-out (``RayJob(group_size=G)``, :mod:`cluster.group`) on a simulated
cluster (``ray.cluster_utils.Cluster``: a head without CPUs, four one-CPU nodes, group size 2: two
group leaders): the tables are those of the grouped arithmetic run in one process, bit for bit (so
two runs are identical), close to the flat job's, the driver makes 2 calls per node group a round,
and a node that holds a group leader can die without stopping the job."""

from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from job_reference import reference

from blueprint.trainer import make_trainer
from cluster.job import RayJob, split_round, worker_seed_state
from cluster.shard import ShardCore, slice_bounds, sum_deltas
from cluster.worker import WorkerCore

NODES = 4


@pytest.fixture(scope="module")
def nodes():
    from ray.cluster_utils import Cluster

    fast_health = {
        "health_check_period_ms": 500,
        "health_check_failure_threshold": 3,
        "health_check_initial_delay_ms": 0,
        "health_check_timeout_ms": 500,
    }
    c = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "object_store_memory": 80 << 20, "_system_config": fast_health},
    )
    for _ in range(NODES):
        c.add_node(num_cpus=1, object_store_memory=80 << 20)
    c.wait_for_nodes()
    ray.init(address=c.address, include_dashboard=False, logging_level="warning", log_to_driver=False)
    yield c
    ray.shutdown()
    c.shutdown()


def grouped_reference(
    seed: int, workers: int, nodes: int, shards: int, batch: int, iterations: int, group_size: int
):
    """The grouped job's arithmetic in one process: per node its workers' deltas summed in worker
    order, per node group its nodes' sums summed in node order, node groups added in order."""
    tr = make_trainer("leduc", seed=seed)
    bounds = slice_bounds(tr.row_offset, tr.size, shards)
    sh = [ShardCore(k, lo, hi, tr.config.algo) for k, (lo, hi) in enumerate(bounds)]
    w = WorkerCore(0, tr.config_dict, bounds, None, tr.abstraction_hash)
    rng = [worker_seed_state(seed, k) for k in range(workers)]
    per = split_round(workers, nodes)
    node_of = [g for g, n in enumerate(per) for _ in range(n)]
    seq, round_id, t = [0] * workers, 0, 0
    while t < iterations:
        grid = workers * batch
        t_end = min((t // grid + 1) * grid, iterations)
        sizes = split_round(t_end - t, workers)
        snap = [s.publish() for s in sh]
        round_id += 1
        outs: dict[int, list] = {}
        t0 = t
        for k, b in enumerate(sizes):
            if b == 0:
                continue
            seq[k] += 1
            out = w.run_batch(seq[k], t, t0, b, t_end, tr.w_base, tr.t_base, *snap, rng=rng[k], worker=k)
            rng[k] = np.array(out[0]["rng"], np.uint64)
            outs.setdefault(node_of[k], []).append(out)
            t0 += b
        node_sums = {
            g: [sum_deltas([o[1 + k] for o in group], hi - lo, False) for k, (lo, hi) in enumerate(bounds)]
            for g, group in outs.items()
        }
        by_j: dict[int, list[int]] = {}
        for g in sorted(node_sums):
            by_j.setdefault(g // group_size, []).append(g)
        for j, gs in by_j.items():
            for k, (lo, hi) in enumerate(bounds):
                sh[k].put_delta(round_id, j, sum_deltas([node_sums[g][k] for g in gs], hi - lo, False))
        for s in sh:
            s.end_round(round_id, t, t_end, sorted(by_j))
        tr.skip_to(t_end, tables=False)
        t = t_end
    return np.concatenate([s.regret for s in sh]), np.concatenate([s.strat for s in sh])


def _tables(job) -> tuple[bytes, bytes]:
    tr = job.sync()
    return tr.regret.tobytes(), tr.strat.tobytes()


def test_groups_exact_deterministic_and_two_calls_per_group(nodes):
    """4 nodes, 4 workers, 4 shards, group size 2: the driver makes 2 x 2 calls a round (run and
    end through the 2 group leaders); two runs give the same tables, those of the grouped
    arithmetic in one process, bit for bit; they differ from the flat job's only by the float32
    order of the additions: exploitability within 5% of it."""
    it, batch = 2_000, 100
    ref = grouped_reference(11, 4, 4, 4, batch, it, 2)
    tables = []
    for _ in range(2):
        with RayJob(
            make_trainer("leduc", seed=11), workers=4, shards=4, batch=batch, timeout=60, group_size=2
        ) as job:
            assert job.num_nodes == NODES and len(job.gleaders) == 2
            job.run(it)
            st = job.stats()
            tables.append(_tables(job))
            expl = job.exploitability()[0]
        assert st["rounds"] == it // (4 * batch)
        assert st["driver_calls_per_round"] == 2 * 2 and st["driver_calls_max_round"] == 4, st
        assert st["node_groups"] == 2 and st["lost_deltas"] == 0 and st["node_failures"] == 0
    assert tables[0] == tables[1]
    assert tables[0] == (ref[0].tobytes(), ref[1].tobytes())
    flat = make_trainer("leduc", seed=11)
    flat.regret[:], flat.strat[:] = reference(11, 4, 4, 4, batch, it)
    flat_expl = flat.exploitability()[0]
    assert abs(expl / flat_expl - 1) < 0.05, (expl, flat_expl)
    assert np.allclose(np.frombuffer(tables[0][1], np.float32), flat.strat, rtol=1e-2, atol=1e-2)


def test_group_leader_node_dies(nodes):
    """The node holding group leader 1 (and node leader 2) is removed after round 3, with no CPU
    to spare (its bundle cannot move): node group 1 runs through group leader 0, node 2's workers'
    batches on a live node, from the same RNG states; no shard was on that node. After round 4
    shard 1 is killed: it is restored from the re-based tables plus the deltas group leader 0
    retained. The job completes with the tables of an uninterrupted grouped run, bit for bit."""
    it, batch = 2_400, 100
    notes: list[str] = []
    seen: list[int] = []

    def cb(j):
        seen.append(j.iteration)
        if len(seen) == 3:
            node_id = j.gleader_node[1]
            (node,) = [n for n in nodes.worker_nodes if n.node_id == node_id]
            notes.append(f"drill: removing node {node_id[:12]}")
            nodes.remove_node(node, allow_graceful=False)
        if len(seen) == 4:
            notes.append("drill: killing shard 1")
            ray.kill(j.shards[1], no_restart=True)
        return False

    with RayJob(
        make_trainer("leduc", seed=31),
        workers=4,
        shards=2,
        batch=batch,
        timeout=60,
        group_size=2,
        shard_nodes=[0, 1],
        log=notes.append,
    ) as job:
        assert job.gleader_node[1] == job.leader_node[2]
        job.run(it, cb)
        st = job.stats()
        assert job.iteration == it
        assert _tables(job) == tuple(a.tobytes() for a in grouped_reference(31, 4, 4, 2, batch, it, 2)), notes
    assert st["node_failures"] >= 2 and st["lost_deltas"] == 0 and st["shard_restores"] == 1, (st, notes)
    assert st["rebases"] == 1, (st, notes)
    assert any("group leader 1 is down" in m for m in notes), notes
    assert any("shard 1 died" in m for m in notes), notes
