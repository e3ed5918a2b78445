"""Fixtures of the cluster tests: simulated Ray clusters of one-CPU nodes
(``ray.cluster_utils.Cluster``: a head without CPUs for the driver), one per test module."""

from __future__ import annotations

import pytest
from job_reference import NODES

# fast failure detection, for the drills that remove a node while a job runs
FAST_HEALTH = {
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
    "health_check_initial_delay_ms": 0,
    "health_check_timeout_ms": 500,
}


def _cluster(num_nodes: int, system_config: dict | None = None):
    """A simulated cluster of ``num_nodes`` one-CPU nodes with this process's Ray connected to it;
    a generator for a fixture (shut down after the module)."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    head: dict = {"num_cpus": 0, "object_store_memory": 80 << 20}
    if system_config:
        head["_system_config"] = system_config
    c = Cluster(initialize_head=True, head_node_args=head)
    for _ in range(num_nodes):
        c.add_node(num_cpus=1, object_store_memory=80 << 20)
    c.wait_for_nodes()
    ray.init(address=c.address, include_dashboard=False, logging_level="warning", log_to_driver=False)
    yield c
    ray.shutdown()
    c.shutdown()


@pytest.fixture(scope="module")
def nodes():
    """:data:`job_reference.NODES` nodes, failures detected within about 2 s."""
    yield from _cluster(NODES, FAST_HEALTH)


@pytest.fixture(scope="module")
def two_nodes():
    """Two nodes, Ray's default health checks."""
    yield from _cluster(2)
