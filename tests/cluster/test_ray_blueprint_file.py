"""A Ray job's checkpoint carries the blueprint file that queries load (the average strategy of the
shards' snapshot), so ``Blueprint.load`` of a Ray run reads no trainer checkpoint."""

from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from blueprint.blueprint import Blueprint
from blueprint.io.manifest import read_manifest
from blueprint.trainer import make_trainer
from cluster.job import RayJob


@pytest.fixture(scope="module")
def cluster():
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, logging_level="warning", log_to_driver=False
    )
    yield
    ray.shutdown()


# the default run loads a Ray checkpoint's blueprint file in
# tests/cluster/test_storage.py::test_job_checkpoints_to_storage_while_training (file-uri)
@pytest.mark.slow
def test_ray_checkpoint_has_the_blueprint_file(cluster, tmp_path):
    run = tmp_path / "run"
    with RayJob(make_trainer("leduc", seed=5), workers=2, shards=2, batch=100) as job:
        job.run(2_000)
        ckpt_dir = job.save(run)
        expected = job.average_strategy()
    names = {f["file"] for f in read_manifest(ckpt_dir)["files"]}
    assert "blueprint.msgpack.lz4" in names
    bp = Blueprint.load(run)
    assert str(bp.source).endswith("blueprint.msgpack.lz4")
    assert bp.iteration == 2_000
    np.testing.assert_allclose(bp.probs, expected, atol=1e-6)
    s = bp.strategy("MATCHSTATE:0:0::4d|")
    assert abs(sum(s.values()) - 1) < 1e-6
