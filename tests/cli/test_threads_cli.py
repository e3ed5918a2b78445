"""``mccfr train --threads``: bad values are one clear error; a multi-threaded run killed with
SIGKILL resumes from its last checkpoint; the thread count is recorded in the metrics."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from blueprint.rundir import read_metrics
from blueprint.threads import available_cores
from mccfr.cli import cli

REPO = Path(__file__).resolve().parents[2]


def mccfr(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("value", ["0", "-1", str(available_cores() + 1), "two", "1.5"])
@pytest.mark.parametrize("command", ["train", "resume"])
def test_bad_threads_is_one_error_naming_threads(tmp_path, command, value):
    args = (
        ["--game", "leduc", "--iterations", "10", "--out", tmp_path / "r"]
        if command == "train"
        else [tmp_path]
    )
    result = mccfr(command, *args, "--threads", value)
    assert result.exit_code == 2, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "'--threads'" in last and value.lstrip("-") in last, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "r").exists()


def test_threads_are_recorded_and_not_part_of_the_config(tmp_path):
    result = mccfr(
        "train", "--game", "kuhn", "--iterations", "500", "--threads", "1", "--out", tmp_path / "r", "--json"
    )
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["threads"] == 1 and "1 thread" in result.stderr
    rows = [json.loads(line) for line in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    assert rows and all(r["threads"] == 1 for r in rows)
    toml = (tmp_path / "r" / "run.toml").read_text()
    assert "threads" not in toml
    result = mccfr(
        "resume", tmp_path / "r", "--iterations", "500", "--threads", str(available_cores()), "--json"
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["threads"] == available_cores()


def test_workers_without_a_cluster_train_in_one_process_on_threads(tmp_path):
    """--workers/--shards without --address (or --ray) on one machine: one process on every core,
    with a note saying so and how to get the Ray job; no Ray job figures in the result."""
    result = mccfr(
        "train", "--game", "leduc", "--iterations", "2000", "--workers", "2", "--shards", "2",
        "--out", tmp_path / "r", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["threads"] == available_cores() and "workers" not in out and out["iterations"] == 2000
    assert "training in one process" in result.stderr and "--ray" in result.stderr
    assert "Ray job:" not in result.stderr


def _complete_checkpoints(run: Path) -> list[int]:
    """Iterations of the checkpoints whose manifest (written last, atomically) exists."""
    return sorted(int(p.parent.name) for p in (run / "checkpoints").glob("*/manifest.msgpack"))


@pytest.mark.skipif(available_cores() < 2, reason="needs 2 cores")
def test_sigkill_of_a_threaded_run_resumes_from_its_last_checkpoint(tmp_path):
    run = tmp_path / "killed"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "mccfr", "train", "--game", "leduc", "--threads", "2", "--time", "300"]
    cmd += ["--checkpoint-every", "0.2", "--eval-every", "0", "--report-every", "0.1", "--out", str(run)]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240  # the first start may compile the kernels
        while len(_complete_checkpoints(run)) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert len(_complete_checkpoints(run)) >= 2, "no two checkpoints in time"
        time.sleep(0.3)  # well inside the run: between checkpoints or writing one
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    last = _complete_checkpoints(run)[-1]
    assert last > 0
    result = mccfr("resume", run, "--iterations", "3000", "--threads", "2", "--eval-every", "0", "--json")
    assert result.exit_code == 0, result.stderr
    assert f"from the checkpoint at iteration {last:,} (2 threads)" in result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["iterations"] == last + 3000 and out["iterations_run"] == 3000 and out["threads"] == 2
    assert _complete_checkpoints(run)[-1] == last + 3000
    its = [r["iteration"] for r in read_metrics(run)]
    assert its == sorted(its) and its[-1] == last + 3000  # rows past the checkpoint were dropped


@pytest.mark.parametrize("value", ["1", "-0.1", "x"])
def test_bad_explore_is_one_error_naming_it(tmp_path, value):
    result = mccfr(
        "train", "--game", "leduc", "--iterations", "10", "--out", tmp_path / "r", "--explore", value
    )
    assert result.exit_code == 2 and "'--explore'" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--dcfr-params", "1.5", "0.5"], "'--dcfr-params'"),  # three numbers
        (["--dcfr-params", "1.5", "x", "2"], "'--dcfr-params'"),
        (["--algo", "pluribus", "--dcfr-params", "1.5", "0.5", "2"], "applies to --algo dcfr"),
        (["--algo", "dcfr", "--dcfr-params", "1.5", "0.5", "-1"], "gamma finite and >= 0"),
        (["--algo", "dcfr", "--dcfr-params", "nan", "0.5", "2"], "must be finite"),
    ],
)
def test_bad_dcfr_params_are_one_error_naming_them(tmp_path, args, fragment):
    result = mccfr("train", "--game", "leduc", "--iterations", "10", "--out", tmp_path / "r", *args)
    assert result.exit_code != 0 and fragment in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "r").exists()


def test_dcfr_params_train_and_resume_with_them(tmp_path):
    """``--dcfr-params`` reaches the run config, and a resume continues with the run's values
    bit for bit: two halves equal one run of the whole length."""
    import tomllib

    import numpy as np

    from blueprint.checkpoints import load_latest

    def train(out, its):
        r = mccfr(
            "train", "--game", "leduc", "--algo", "dcfr", "--dcfr-params", "1.5", "0.5", "2",
            "--iterations", its, "--threads", "1", "--eval-every", "0", "--out", out, "--json",
        )  # fmt: skip
        assert r.exit_code == 0, r.stderr
        return out

    whole = train(tmp_path / "whole", 4000)
    half = train(tmp_path / "half", 2000)
    r = mccfr("resume", half, "--iterations", "2000", "--threads", "1", "--eval-every", "0", "--json")
    assert r.exit_code == 0, r.stderr
    cfg = tomllib.loads((half / "run.toml").read_text())["algo"]
    assert (cfg["name"], cfg["alpha"], cfg["beta"], cfg["gamma"]) == ("dcfr", 1.5, 0.5, 2.0)
    (ma, [(a, _)]), (mb, [(b, _)]) = load_latest(whole), load_latest(half)
    assert ma["iteration"] == mb["iteration"] == 4000 and a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])


def test_explore_is_recorded_in_the_run_config(tmp_path):
    result = mccfr(
        "train",
        "--game",
        "leduc",
        "--iterations",
        "2000",
        "--explore",
        "0.05",
        "--out",
        tmp_path / "r",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    import tomllib

    cfg = tomllib.loads((tmp_path / "r" / "run.toml").read_text())
    assert cfg["algo"]["explore"] == 0.05


def test_the_default_bets_and_algo_follow_the_budget_in_core_seconds(tmp_path, monkeypatch):
    """Without --bets a 52-card no-limit run of at least STANDARD_BETS_FROM_CORE_SECONDS of
    training (time x threads) gets ``standard`` bets, a shorter one or one counted in iterations
    ``small``; --bets always wins. Without --algo a timed run with ``small`` bets gets ``dcfr`` with
    SHORT_BUDGET_DCFR_PARAMS, any other ``pluribus``; --algo always wins. (The threshold is lowered
    here so the runs take a second.)"""
    import tomllib

    import blueprint.defaults as defaults

    assert defaults.default_nolimit_bets(52, 600.0, 2) == "standard"
    assert (
        defaults.default_nolimit_bets(52, 599.0, 2) == "small" == defaults.default_nolimit_bets(52, None, 64)
    )
    assert defaults.default_nolimit_bets(52, 180.0, 16) == "standard"  # 48 core-minutes
    assert defaults.default_nolimit_bets(20, 10_000.0, 2) == "small"  # short decks: not measured
    assert defaults.default_algo(52, False, "small", 180.0) == (
        "dcfr",
        {"alpha": 1.5, "beta": 0.75, "gamma": 2.0},
    )
    assert defaults.default_algo(52, False, "small", None) == ("pluribus", {})  # counted: not measured
    assert defaults.default_algo(52, False, "standard", 180.0) == ("pluribus", {})
    assert defaults.default_algo(52, True, None, 180.0) == ("pluribus", {})  # limit
    assert defaults.default_algo(6, False, "small", 180.0) == ("pluribus", {})  # Leduc-sized decks
    monkeypatch.setattr(defaults, "STANDARD_BETS_FROM_CORE_SECONDS", 0.6)
    base = ["train", "--game", "hunl100", "--abstraction", "rank"]
    for name, extra, bets, algo in [
        ("long", ["--time", "0.7", "--threads", "1"], "standard", "pluribus"),
        ("short", ["--time", "0.3", "--threads", "1"], "small", "dcfr"),
        ("counted", ["--iterations", "2000", "--threads", "1"], "small", "pluribus"),
        ("given", ["--time", "0.7", "--threads", "1", "--bets", "fcpa"], "fcpa", "pluribus"),
        ("chosen", ["--time", "0.3", "--threads", "1", "--algo", "pluribus"], "small", "pluribus"),
    ]:
        result = mccfr(*base, *extra, "--out", tmp_path / name)
        assert result.exit_code == 0, result.stderr
        cfg = tomllib.loads((tmp_path / name / "run.toml").read_text())
        assert cfg["bets"] == bets, (name, cfg["bets"])
        assert ("bets: standard (the default for" in result.stderr) == (name == "long")
        assert cfg["algo"]["name"] == algo, (name, cfg["algo"])
        assert ("algo: dcfr --dcfr-params 1.5 0.75 2" in result.stderr) == (algo == "dcfr")
        if algo == "dcfr":
            assert (cfg["algo"]["alpha"], cfg["algo"]["beta"], cfg["algo"]["gamma"]) == (1.5, 0.75, 2.0)
            assert cfg["algo"]["prune"] and cfg["algo"]["prune_start"] == 20_000  # the default prunes
    monkeypatch.chdir(tmp_path)  # the default --out is under ./runs
    with_default_out = mccfr(*base, "--time", "0.3", "--threads", "1", "--json")
    assert with_default_out.exit_code == 0, with_default_out.stderr
    run_dir = json.loads(with_default_out.stdout.strip().splitlines()[-1])["run_dir"]
    assert Path(run_dir).name.startswith("hunl100-dcfr-")  # named for the algorithm it trains


def test_no_prune_switches_pruning_off_and_prune_is_refused_for_full_traversal(tmp_path):
    """dcfr prunes by default (after its 20,000-iteration warm-up); ``--no-prune`` turns it off
    (recorded in the run config, nothing pruned); full-traversal CFR refuses ``--prune``."""
    import tomllib

    runs = {}
    for name, extra in [("default", []), ("off", ["--no-prune"])]:
        r = mccfr(
            "train", "--game", "leduc", "--algo", "dcfr", "--iterations", "30000", "--threads", "1",
            "--eval-every", "0", "--out", tmp_path / name, "--json", *extra,
        )  # fmt: skip
        assert r.exit_code == 0, r.stderr
        runs[name] = tomllib.loads((tmp_path / name / "run.toml").read_text())["algo"]["prune"]
        pruned = [
            json.loads(line)["pruned"]
            for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        ]
        assert (pruned[-1] > 0) == (name == "default"), (name, pruned)
    assert runs == {"default": True, "off": False}
    r = mccfr(
        "train", "--game", "kuhn", "--algo", "cfr", "--prune", "--iterations", "10", "--out", tmp_path / "c"
    )
    assert r.exit_code == 2 and "--prune: applies to sampled" in r.stderr and not (tmp_path / "c").exists()


def test_time_counts_training_and_the_compile_is_reported_apart(tmp_path, monkeypatch):
    """The kernels are compiled (or loaded from numba's cache) before the clock starts: with a
    warm-up made to take 3 s, ``--time 0.5`` still trains about half a second, and the summary
    and ``--json`` report the warm-up as ``compile_seconds``."""
    from blueprint.trainer import Trainer

    warm_up = Trainer.warm_up
    called = []

    def slow_warm_up(self):
        called.append(self.threads)
        time.sleep(3.0)
        return warm_up(self)

    monkeypatch.setattr(Trainer, "warm_up", slow_warm_up)
    r = mccfr(
        "train", "--game", "leduc", "--algo", "dcfr", "--time", "0.5", "--threads", "1", "--eval-every", "0",
        "--out", tmp_path / "r", "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert called == [1] and out["compile_seconds"] >= 3.0 and out["iterations_run"] > 1_000
    assert 0.5 <= out["wall_seconds"] < 3.0 and out["seconds"] < 3.0
    assert "compiling the kernels)" in r.stdout and "not counted in --time" in r.stderr
