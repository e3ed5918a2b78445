"""The Ray job's arithmetic in one process: what an uninterrupted job ends with, without Ray.

:func:`simulate_job` runs exactly the rounds :class:`cluster.job.RayJob` runs (the same batch grid,
the same worker RNG streams, :class:`cluster.worker.WorkerCore` batches against each round's
snapshot, deltas summed per node in worker order and per node group in node order,
:class:`cluster.shard.ShardCore` ending each round), one batch after another. The cluster tests
check the Ray job against it bit for bit; ``scripts/benchmarks/bench_cluster.py staleness`` uses it to measure
what staleness costs with many workers (28 simulated workers on 2 cores in minutes, where the Ray
job's per-batch overhead makes that hours).
"""

from __future__ import annotations

import numpy as np

from blueprint.trainer import Trainer
from cluster.rounds import round_end, split_round, worker_seed_state
from cluster.shard import ShardCore, slice_bounds, sum_deltas
from cluster.worker import WorkerCore


def simulate_job(
    tr: Trainer,
    workers: int,
    batch: int,
    iterations: int,
    nodes: int = 1,
    shards: int = 1,
    group_size: int = 1,
) -> dict[str, float]:
    """Train the fresh trainer ``tr`` for ``iterations`` as a Ray job with ``workers`` workers on
    ``nodes`` nodes (workers split as the job splits them), ``shards`` shards and node groups of
    ``group_size`` nodes would; ``tr``'s tables and schedule end as the job's.

    Returns the job's staleness figures: ``staleness`` (mean iterations of a round added before a
    batch's, :meth:`RayJob.stats`), ``rounds`` and ``batches``."""
    if tr.iteration != 0:
        raise ValueError("simulate_job starts from a fresh trainer (iteration 0)")
    if min(workers, batch, nodes, shards, group_size) < 1:
        raise ValueError("workers, batch, nodes, shards and group_size must be >= 1")
    seed = tr.config.seed
    bounds = slice_bounds(tr.row_offset, tr.size, shards)
    sh = [ShardCore(k, lo, hi, tr.config.algo) for k, (lo, hi) in enumerate(bounds)]
    w = WorkerCore(0, tr.config_dict, bounds, None, tr.abstraction_hash, cards=tr.cards)
    int_regret = tr.config.algo.regret_dtype == "int32"
    rng = [worker_seed_state(seed, k) for k in range(workers)]
    node_of = [g for g, n in enumerate(split_round(workers, nodes)) for _ in range(n)]
    seq, round_id, t = [0] * workers, 0, 0
    stale_sum, batches = 0, 0
    while t < iterations:
        t_end = round_end(t, workers, batch, iterations)
        snap = [s.publish() for s in sh]
        round_id += 1
        outs: dict[int, list] = {}
        t0 = t
        for k, b in enumerate(split_round(t_end - t, workers)):
            if b == 0:
                continue
            seq[k] += 1
            out = w.run_batch(seq[k], t, t0, b, t_end, tr.w_base, tr.t_base, *snap, rng=rng[k], worker=k)
            rng[k] = np.array(out[0]["rng"], np.uint64)
            outs.setdefault(node_of[k], []).append(out)
            stale_sum += t0 - t
            batches += 1
            t0 += b
        node_sums = {
            g: [
                sum_deltas([o[1 + k] for o in group], hi - lo, int_regret)
                for k, (lo, hi) in enumerate(bounds)
            ]
            for g, group in outs.items()
        }
        by_group: dict[int, list[int]] = {}
        for g in sorted(node_sums):
            by_group.setdefault(g // group_size, []).append(g)
        for j, gs in by_group.items():
            for k, (lo, hi) in enumerate(bounds):
                sh[k].put_delta(round_id, j, sum_deltas([node_sums[g][k] for g in gs], hi - lo, int_regret))
        for s in sh:
            s.end_round(round_id, t, t_end, sorted(by_group))
        tr.skip_to(t_end, tables=False)
        t = t_end
    tr.regret[:] = np.concatenate([s.regret for s in sh])
    tr.strat[:] = np.concatenate([s.strat for s in sh])
    tr.rng = rng[0]
    return {"staleness": stale_sum / max(batches, 1), "rounds": round_id, "batches": batches}
