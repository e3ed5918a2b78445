"""The Ray job's two-level fan-out (``RayJob(group_size=G)``, :mod:`cluster.group`) on a simulated
cluster (``ray.cluster_utils.Cluster``: a head without CPUs, four one-CPU nodes, group size 2: two
group leaders): the tables are those of the grouped arithmetic run in one process, bit for bit (so
two runs are identical), close to the flat job's, the driver makes 2 calls per node group a round,
and a node that holds a group leader can die without stopping the job."""

from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from job_reference import NODES, reference

from blueprint.trainer import make_trainer
from cluster.job import RayJob


def _tables(job) -> tuple[bytes, bytes]:
    tr = job.sync()
    return tr.regret.tobytes(), tr.strat.tobytes()


@pytest.mark.slow  # two jobs and a cluster of its own
def test_groups_exact_deterministic_and_two_calls_per_group(nodes):
    """4 nodes, 4 workers, 4 shards, group size 2: the driver makes 2 x 2 calls a round (run and
    end through the 2 group leaders); two runs give the same tables, those of the grouped
    arithmetic in one process, bit for bit; they differ from the flat job's only by the float32
    order of the additions: exploitability within 5% of it."""
    it, batch = 2_000, 100
    ref = reference(11, 4, 4, 4, batch, it, 2)
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


@pytest.mark.slow  # a long fault drill
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
        assert _tables(job) == tuple(a.tobytes() for a in reference(31, 4, 4, 2, batch, it, 2)), notes
    assert st["node_failures"] >= 2 and st["lost_deltas"] == 0 and st["shard_restores"] == 1, (st, notes)
    assert st["rebases"] == 1, (st, notes)
    assert any("group leader 1 is down" in m for m in notes), notes
    assert any("shard 1 died" in m for m in notes), notes
