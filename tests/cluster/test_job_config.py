"""The Ray job's config record (:class:`cluster.config.RayJobConfig`): checked once, errors name
the field; no Ray is started here."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cluster.config import RayJobConfig
from cluster.errors import JobError


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"workers": 0}, "workers"),
        ({"shards": -1}, "shards"),
        ({"batch": 0}, "batch"),
        ({"threads": 1.5}, "threads"),
        ({"threads": True}, "threads"),
        ({"threads": "2"}, "threads"),
        ({"worker_cpus": 0}, "worker_cpus"),
        ({"group_size": -1}, "group_size"),
        ({"nodes": 0}, "nodes"),
        ({"timeout": 0}, "timeout"),
        ({"round": -1}, "round"),
        ({"worker_retries": -1}, "worker_retries"),
        ({"shard_nodes": 3}, "shard_nodes"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_a_bad_field_is_an_error_that_names_it(options, field):
    with pytest.raises(JobError, match=field):
        RayJobConfig.of(**options)


def test_defaults_and_replacing_fields():
    config = RayJobConfig()
    assert (config.workers, config.shards, config.batch, config.threads) == (2, 2, None, 1)
    other = config.with_options(workers=4, batch=None)
    assert (other.workers, other.batch) == (4, None) and config.workers == 2
    with pytest.raises(JobError, match="shards"):
        config.with_options(shards=0)
    with pytest.raises(AttributeError):
        config.workers = 3  # type: ignore[misc]


def test_resume_options_continue_the_manifest_job():
    manifest = {
        "rng_state": [1, 2, 3, 4],
        "job": {
            "workers": 3,
            "shards": 2,
            "batch": 500,
            "round": 7,
            "group_size": 2,
            "worker_seq": [1, 2, 3],
        },
    }
    options = RayJobConfig.resume_options(manifest, batch=None, shards=4)
    config = RayJobConfig.of(**options)
    assert (config.workers, config.shards, config.batch, config.round, config.group_size) == (3, 4, 500, 7, 2)
    single = RayJobConfig.resume_options({"rng_state": [5, 6, 7, 8]})
    assert single["workers"] == 1 and single["worker_rng"] == [[5, 6, 7, 8]]


def test_the_config_module_does_not_import_ray():
    code = "import sys, cluster.config; print('ray' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
