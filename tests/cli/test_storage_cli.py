"""``--storage`` on one process (no Ray): ``mccfr train`` writes each checkpoint into the run
directory and uploads it to the storage path, records the target in run.toml; the commands that
read a blueprint fetch the newest checkpoint from storage when the run directory has lost its own,
and accept a storage URI in place of RUN_DIR; ``resume`` goes on from storage bit for bit; bad
targets are one ``error:`` line with exit status 2. (The Ray job's side: tests/cluster/test_storage_cli_ray.py.)"""

from __future__ import annotations

import json
import shutil
import tomllib

import numpy as np
import pytest
from click.testing import CliRunner

from blueprint.checkpoints import list_checkpoints
from cluster.storage import Storage
from mccfr.cli import cli


def mccfr(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def ok(*args) -> dict:
    res = mccfr(*args)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture
def storage_cache(tmp_path, monkeypatch):
    """Storage URIs given as RUN_DIR are fetched under the test's directory, not ~/.cache."""
    import mccfr.cli.common

    cache = tmp_path / "uri-cache"
    monkeypatch.setattr(mccfr.cli.common, "storage_cache_dir", lambda target: cache)
    return cache


def test_single_process_train_resume_and_read_from_storage(tmp_path, storage_cache):
    run, store = tmp_path / "run", tmp_path / "store"
    args = ["--eval-every", "0", "--threads", "1", "--json"]  # one thread: bit for bit
    out = ok(
        "train", "--game", "leduc", "--iterations", 1000, "--seed", 2, "--out", run, "--storage", store, *args
    )
    assert out["storage"] == str(store) and out["checkpoint"].startswith(str(store))
    assert tomllib.loads((run / "run.toml").read_text())["storage"] == str(store)
    assert Storage(store).checkpoints() == [(1000, True)]
    # the run directory loses its checkpoints (another machine): resume fetches the storage's
    shutil.rmtree(run / "checkpoints")
    res = mccfr("resume", run, "--iterations", 1000, *args)
    assert res.exit_code == 0, res.stderr
    assert "from the checkpoint at iteration 1,000" in res.stderr and "fetched" in res.stderr
    assert Storage(store).checkpoints()[0] == (2000, True)
    # bit for bit as 2,000 uninterrupted iterations
    from blueprint.trainer import Trainer, make_trainer

    ref = make_trainer("leduc", seed=2)
    ref.run(2000)
    shutil.rmtree(run / "checkpoints")
    Storage(store).fetch(tmp_path / "scratch")
    got = Trainer.load(tmp_path / "scratch")
    assert got.iteration == 2000
    assert np.array_equal(got.regret, ref.regret) and np.array_equal(got.strat, ref.strat)
    # reading commands: status lists storage in place; eval/export fetch into the run directory
    st = ok("status", run, "--json")
    assert st["resume_from"] == 2000 and st["storage"] == str(store) and st["checkpoints"] == []
    assert st["storage_checkpoints"][0] == {"iteration": 2000, "complete": True}
    ev = ok("eval", run, "--exploitability", "--json")
    assert ev["iteration"] == 2000 and ev["exploitability"] > 0
    assert [i.iteration for i in list_checkpoints(run)] == [2000]
    # a storage URI where RUN_DIR goes
    uri = store.as_uri()
    ev2 = ok("eval", uri, "--exploitability", "--json")
    assert ev2["exploitability"] == ev["exploitability"]
    assert [i.iteration for i in list_checkpoints(storage_cache)] == [2000]
    assert ok("status", uri, "--json")["resume_from"] == 2000
    ok("export", uri, "--out", tmp_path / "s.parquet", "--json")
    # a player SPEC of a match may be the storage URI too
    m = ok("eval", "--game", "leduc", "--player", uri, "--vs", "random", "--hands", 20, "--json")
    assert m["hands"] == 20 and sum(m["sources"]["player"].values()) > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "--storage", "nosuchscheme://bucket/x"], "cannot open storage 'nosuchscheme://bucket/x'"),
        (["train", "--storage", "{file}/sub"], "cannot write checkpoints to"),
        (["train", "--storage", "{run}"], "is the run directory itself"),
        (["resume", "{run}", "--storage", "nosuchscheme://x"], "cannot open storage"),
        (["resume", "file:///no/such/run"], "resume needs a local run directory"),
        (["eval", "nosuchscheme://x", "--exploitability"], "cannot open storage 'nosuchscheme://x'"),
        (["status", "nosuchscheme://x"], "cannot open storage"),
        (["export", "nosuchscheme://x", "--out", "x.parquet"], "cannot open storage"),
        (
            ["eval", "file:///no/such/store", "--exploitability"],
            "no complete checkpoint in file:///no/such/store",
        ),
    ],
)
def test_bad_storage_is_one_error_line(tmp_path, storage_cache, args, message):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "run").mkdir()
    args = [a.format(file=tmp_path / "afile", run=tmp_path / "run") for a in args]
    if args[0] == "train":
        args += ["--game", "leduc", "--iterations", "10", "--out", str(tmp_path / "run")]
    res = mccfr(*args)
    assert res.exit_code == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and message in lines[-1], res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "run" / "checkpoints").exists()  # nothing was trained


def test_train_refuses_storage_with_checkpoints(tmp_path):
    store = tmp_path / "store"
    ok("train", "--game", "kuhn", "--iterations", 10, "--out", tmp_path / "a", "--storage", store, "--json")
    res = mccfr("train", "--game", "kuhn", "--iterations", 10, "--out", tmp_path / "b", "--storage", store)
    assert res.exit_code == 2 and "already has checkpoints" in res.stderr, res.stderr
