"""What the benchmark scripts share: the machine row every result starts with, the JSON row
printer (:func:`emit`) and a simulated Ray cluster on this machine (:func:`simulated_cluster`).

The scripts run against the installed package (``pip install -e .``) from the repository root,
``python scripts/benchmarks/bench_x.py``; a script imports this module as a sibling (``from harness
import machine_row``: the script's folder is ``sys.path[0]``).

Helpers that scripts in other folders need too live in the package: starting ``mccfr serve`` and
waiting for it in :mod:`mccfr.serving.launch`, nearest-rank percentiles in
:func:`mccfr_util.reporting.percentile`, self-play match states in
:func:`blueprint.player.self_play_states`.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import time


def emit(row: dict) -> None:
    """Print one result row as a line of JSON, flushed."""
    print(json.dumps(row), flush=True)


def cpu_model() -> str:
    """The CPU's model name (Linux: ``/proc/cpuinfo``), else what :mod:`platform` says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine() -> str:
    """One line for a table's caption: ``"<nproc> cores, <CPU model>"``."""
    return f"{os.cpu_count()} cores, {cpu_model()}"


def load() -> float:
    """The 1-minute load average (a shared machine's other work, next to each figure)."""
    return os.getloadavg()[0]


def machine_row() -> dict:
    """The first row of a result: the machine (cores, CPU model), its load, the date and the
    versions that move the figures (Python, numpy, numba)."""
    import numba  # the versions are part of the row; both are dependencies of the package
    import numpy

    return {
        "machine": machine(),
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "load_average": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
    }


class ReferenceDistance:
    """How far a trainer's average strategy is from a long reference run's, where exact
    exploitability is out of reach (hunl100): the mean absolute difference per first-round table
    entry, and over every entry weighted by the reference's strategy sums (where the play goes).
    A proxy: of two runs after equal training time, the closer one is further along."""

    def __init__(self, reference):
        import numpy as np

        self.avg = reference.average_strategy()
        self.iterations = reference.iteration
        self.first = reference.first_round_entries()
        self.weight = reference.strat.astype(np.float64)

    def __call__(self, trainer) -> tuple[float, float]:
        import numpy as np

        avg = trainer.average_strategy()
        first = float(np.abs(avg[self.first] - self.avg[self.first]).mean())
        weighted = float((np.abs(avg - self.avg) * self.weight).sum() / self.weight.sum())
        return first, weighted


@contextlib.contextmanager
def simulated_cluster(n_nodes: int, node_store: int = 80 << 20, head_store: int = 80 << 20):
    """A simulated cluster (``ray.cluster_utils.Cluster``): a head without CPUs plus ``n_nodes``
    one-CPU nodes with ``node_store`` bytes of object store each, with this process connected; shut
    down on exit."""
    import ray  # the Ray benchmarks' dependency, not every script's
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": head_store})
    try:
        for _ in range(n_nodes):
            c.add_node(num_cpus=1, object_store_memory=node_store)
        c.wait_for_nodes()
        ray.init(address=c.address, include_dashboard=False, logging_level="warning", log_to_driver=False)
        yield c
    finally:
        ray.shutdown()
        c.shutdown()
