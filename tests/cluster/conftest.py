"""Fixtures of the cluster tests: a simulated Ray cluster of :data:`job_reference.NODES` one-CPU
nodes (``ray.cluster_utils.Cluster``: a head without CPUs for the driver), one per test module."""

from __future__ import annotations

import pytest
from job_reference import NODES


@pytest.fixture(scope="module")
def nodes():
    ray = pytest.importorskip("ray")
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
