"""Fault drill on the real command line: the driver of a Ray run killed with kill -9 loses nothing
older than its last complete checkpoint, and ``mccfr resume`` continues it as a Ray run; then
``mccfr status`` summarises the run's metrics and draws its exploitability curve."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from blueprint import checkpoint as ckpt

REPO = Path(__file__).resolve().parents[2]


def env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in e.get("PYTHONPATH", "").split(os.pathsep) if p])
    e.pop("RAY_ADDRESS", None)
    return e


def mccfr(*args) -> list[str]:
    return [sys.executable, "-c", "from cluster.cli import main; main()", *map(str, args)]


def test_driver_kill_9_then_resume_as_ray_run(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen(
        mccfr("train", "--game", "leduc", "--workers", "2", "--shards", "2", "--batch", "2000",
              "--time", "120", "--checkpoint-every", "0.5", "--eval-every", "0.5", "--report-every", "0.2",
              "--keep", "2", "--out", run),
        env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    try:
        deadline = time.time() + 150
        while time.time() < deadline:
            done = [c for c in ckpt.list_checkpoints(run) if c.complete]
            if len(done) >= 2:
                break
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.2)
        else:
            pytest.fail("no two checkpoints within 150 s")
        os.kill(proc.pid, signal.SIGKILL)  # the driver only
        proc.wait()
        newest = max(c.iteration for c in ckpt.list_checkpoints(run) if c.complete)
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the Ray processes it started
    assert newest >= 2 * 2000
    out = subprocess.run(
        mccfr("resume", run, "--iterations", "4000", "--json", "--eval-every", "0.5"),
        env=env(), capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    # it resumed from a checkpoint at least as new as the newest complete one at the kill
    assert res["iterations"] - res["iterations_run"] >= newest
    assert res["workers"] == 2 and res["shards"] == 2 and res["batch"] == 2000
    assert "Ray job: 2 workers, 2 shards, batch 2000" in out.stderr
    manifest, shards = ckpt.load_latest(run)
    assert manifest["iteration"] == res["iterations"] and len(shards) == 2

    png = tmp_path / "curve.png"
    st = subprocess.run(mccfr("status", run, "--plot", png, "--json"), env=env(), capture_output=True,
                        text=True, timeout=120)
    assert st.returncode == 0, st.stderr
    summary = json.loads(st.stdout.strip().splitlines()[-1])
    assert summary["iterations"] == res["iterations"] and summary["workers"] == 2
    assert summary["staleness"] > 0 and summary["bytes_per_batch"] > 0 and summary["worker_rss_bytes"] > 0
    assert summary["checkpoint_pause_seconds"] > 0 and summary["exploitability"] > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert "Ray job: 2 workers" in st.stdout and "exploitability curve" in st.stdout
    # rows from before the kill that lie past the resumed checkpoint were dropped
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    its = [r["iteration"] for r in rows]
    assert its == sorted(its)


def test_plot_without_exploitability_is_a_clear_error(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text(json.dumps({"iteration": 10, "exploitability": None}) + "\n")
    out = subprocess.run(mccfr("status", run, "--plot", tmp_path / "x.png"), env=env(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2
    assert "has no exploitability in its metrics" in out.stderr
