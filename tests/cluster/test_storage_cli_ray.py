"""``mccfr train --workers 2 --shards 2 --storage TARGET`` on a local Ray cluster, TARGET a
directory apart from the run directory or a ``file://`` URI: the job writes its checkpoints
there from the published snapshot (nothing in the run directory), ``mccfr resume`` goes on from
storage as a Ray run and ends with the tables of an uninterrupted job, and the blueprint-reading
commands work on a run directory without checkpoints of its own."""

from __future__ import annotations

import json
import shutil
import tomllib

import pytest

ray = pytest.importorskip("ray")

from click.testing import CliRunner
from job_reference import reference

from blueprint.checkpoints import list_checkpoints
from blueprint.trainer import Trainer
from cluster.storage import Storage
from mccfr.cli import cli

SEED, BATCH = 5, 250


@pytest.fixture(scope="module")
def cluster():
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, logging_level="warning", log_to_driver=False
    )
    yield
    ray.shutdown()


def ok(*args) -> dict:
    res = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1]) | {"_stderr": res.stderr}


# slow: the default run covers its parts faster: storage through the CLI in one process
# (tests/cli/test_storage_cli.py), the CLI with Ray workers (tests/cluster/test_ray_job.py::
# test_cli_train_with_workers) and a Ray job checkpointing to storage and restoring from it
# (tests/cluster/test_storage.py)
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["directory", "file-uri"])
def test_ray_train_resume_and_read_from_storage(cluster, tmp_path, kind):
    run = tmp_path / "run"
    target = str(tmp_path / "store") if kind == "directory" else (tmp_path / "store").as_uri()
    ray_args = ["--workers", 2, "--shards", 2, "--ray", "--batch", BATCH, "--eval-every", 0, "--json"]
    out = ok(
        "train",
        "--game",
        "leduc",
        "--iterations",
        1000,
        "--seed",
        SEED,
        "--out",
        run,
        "--storage",
        target,
        *ray_args,
    )
    assert out["iterations"] == 1000 and out["workers"] == 2 and out["storage"] == target
    # submitted, not written: the rounds pause for the snapshot only (a few ms idle; 0.05 s was
    # once exceeded on 2 loaded cores); the timing test in tests/cluster/test_storage.py bounds it
    # against the write's own time
    assert out["checkpoint_pause_seconds"] < 0.15, out["checkpoint_pause_seconds"]
    assert Storage(target).checkpoints() == [(1000, True)]
    assert not list_checkpoints(run)  # nothing written in the run directory
    assert tomllib.loads((run / "run.toml").read_text())["storage"] == target
    # resume from run.toml's storage: a Ray run again, from the storage checkpoint
    out = ok("resume", run, "--iterations", 1000, "--eval-every", 0, "--json")
    assert "from the checkpoint at iteration 1,000" in out["_stderr"]
    assert (out["iterations"], out["workers"], out["shards"], out["batch"]) == (2000, 2, 2, BATCH)
    assert Storage(target).checkpoints()[0] == (2000, True)
    # exact: the tables of an uninterrupted 2,000-iteration job (2 workers on one node, 2 shards)
    Storage(target).fetch(tmp_path / "scratch")
    got = Trainer.load(tmp_path / "scratch")
    ref_r, ref_s = reference(SEED, 2, 1, 2, BATCH, 2000)
    assert got.regret.tobytes() == ref_r.tobytes() and got.strat.tobytes() == ref_s.tobytes()
    # the run directory without checkpoints of its own: status lists storage, eval fetches from it
    shutil.rmtree(run / "checkpoints", ignore_errors=True)
    st = ok("status", run, "--json")
    assert st["resume_from"] == 2000 and st["workers"] == 2
    ev = ok("eval", run, "--exploitability", "--json")
    assert ev["iteration"] == 2000 and ev["exploitability"] > 0
    if kind == "file-uri":
        # another machine: a fresh run directory resumes a run kept in storage (one worker now)
        fresh = tmp_path / "elsewhere"
        out = ok(
            "resume",
            fresh,
            "--storage",
            target,
            "--iterations",
            500,
            "--workers",
            1,
            "--eval-every",
            0,
            "--json",
        )
        assert out["iterations"] == 2500 and out["workers"] == 1
        assert tomllib.loads((fresh / "run.toml").read_text())["storage"] == target
        assert Storage(target).checkpoints()[0] == (2500, True)
