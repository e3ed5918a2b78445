"""The Ray job's arithmetic in one process, for the cluster tests (not a test module)."""

from __future__ import annotations

import numpy as np

from blueprint.trainer import make_trainer
from cluster.job import split_round, worker_seed_state
from cluster.shard import ShardCore, slice_bounds, sum_deltas
from cluster.worker import WorkerCore


def reference(seed: int, workers: int, nodes: int, shards: int, batch: int, iterations: int):
    """The job's arithmetic in one process (workers grouped into nodes, group deltas summed in
    worker order, groups added in order): what an uninterrupted job must end with."""
    tr = make_trainer("leduc", seed=seed)
    bounds = slice_bounds(tr.row_offset, tr.size, shards)
    sh = [ShardCore(k, lo, hi, tr.config.algo) for k, (lo, hi) in enumerate(bounds)]
    w = WorkerCore(0, tr.config_dict, bounds, None, tr.abstraction_hash)
    rng = [worker_seed_state(seed, k) for k in range(workers)]
    per = split_round(workers, nodes)
    group_of = [g for g, n in enumerate(per) for _ in range(n)]
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
            outs.setdefault(group_of[k], []).append(out)
            t0 += b
        for g, group in outs.items():
            for k, (lo, hi) in enumerate(bounds):
                sh[k].put_delta(round_id, g, sum_deltas([o[1 + k] for o in group], hi - lo, False))
        for s in sh:
            s.end_round(round_id, t, t_end, sorted(outs))
        tr.skip_to(t_end, tables=False)
        t = t_end
    return np.concatenate([s.regret for s in sh]), np.concatenate([s.strat for s in sh])
