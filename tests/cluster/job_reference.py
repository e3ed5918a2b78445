"""The Ray job's arithmetic in one process (:func:`cluster.simulate.simulate_job`) on Leduc, for
the cluster tests (not a test module)."""

from __future__ import annotations

import numpy as np

from blueprint.trainer import make_trainer
from cluster.simulate import simulate_job

NODES = 4  # the simulated clusters' one-CPU nodes (tests/cluster/conftest.py)


def reference(
    seed: int, workers: int, nodes: int, shards: int, batch: int, iterations: int, group_size: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """What an uninterrupted Leduc job ends with (regrets, strategy sums): workers grouped into
    nodes, per node its workers' deltas summed in worker order, per node group of ``group_size``
    its nodes' sums in node order, groups added in order."""
    tr = make_trainer("leduc", seed=seed)
    simulate_job(tr, workers, batch, iterations, nodes=nodes, shards=shards, group_size=group_size)
    return tr.regret, tr.strat
