"""The ``mccfr`` CLI: train / resume / status / eval / export on Leduc, errors, import cost.

Most commands run in-process through click's CliRunner, so the numba kernels compile once for
the module; one test runs the real console entry point in a subprocess to deliver a SIGINT.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mccfr.cli import cli
from mccfr.cli.common import example_matchstate

REPO = Path(__file__).resolve().parents[2]
TRAIN_KEYS = {
    "iterations",
    "seconds",
    "iterations_per_second",
    "node_visits_per_second",
    "exploitability",
    "run_dir",
}
FULL = 25_000  # crosses pluribus's prune_start (20,000) after the resume point below
HALF = 15_000


def mccfr(*args: str):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result


def last_json(result) -> dict:
    lines = result.stdout.strip().splitlines()
    assert lines, result.stderr
    return json.loads(lines[-1])


def ok(*args: str) -> dict:
    result = mccfr(*args)
    assert result.exit_code == 0, result.stderr
    return last_json(result)


def subprocess_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    return env


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run = tmp_path_factory.mktemp("cli") / "full"
    out = ok(
        "train",
        "--game",
        "leduc",
        "--iterations",
        FULL,
        "--seed",
        "3",
        "--threads",
        "1",
        "--out",
        run,
        "--json",
    )
    return run, out


@pytest.fixture(scope="module")
def resumed(tmp_path_factory, trained):
    run = tmp_path_factory.mktemp("cli") / "halves"
    first = ok(
        "train",
        "--game",
        "leduc",
        "--iterations",
        HALF,
        "--seed",
        "3",
        "--threads",
        "1",
        "--out",
        run,
        "--json",
        "--eval-every",
        "0",
    )
    second = mccfr("resume", run, "--iterations", FULL - HALF, "--threads", "1", "--json")
    assert second.exit_code == 0, second.stderr
    return run, first, second


def test_train_writes_a_complete_run(trained):
    run, out = trained
    assert TRAIN_KEYS <= out.keys()
    assert out["iterations"] == FULL and out["run_dir"] == str(run)
    assert out["iterations_per_second"] > 0 and out["node_visits_per_second"] > 0
    assert 0 < out["exploitability"] < 0.5  # uniform play is 4.75 chips
    assert (run / "checkpoints" / f"{FULL:012d}" / "manifest.msgpack").exists()
    cfg = tomllib.loads((run / "run.toml").read_text())
    assert cfg["game"] == "leduc" and cfg["seed"] == 3 and cfg["algo"]["name"] == "pluribus"
    assert "GAMEDEF" in cfg["gamedef"] and len(cfg["config_hash"]) == 16 and cfg["abstraction_hash"]
    import pyarrow.parquet as pq

    rows = pq.read_table(run / "metrics.parquet").to_pylist()
    assert rows and rows[-1]["iteration"] == FULL
    assert rows[-1]["exploitability"] == pytest.approx(out["exploitability"])
    assert {
        "seconds",
        "iterations_per_second",
        "node_visits_per_second",
        "pruned",
        "table_bytes",
        "rss_bytes",
    } <= rows[-1].keys()
    assert rows[-1]["pruned"] > 0  # pluribus prunes after 20,000 iterations
    assert len((run / "metrics.jsonl").read_text().splitlines()) == len(rows)


def test_train_prints_how_to_query_the_blueprint(trained):
    run, _ = trained
    # a fresh short run to see the human output (the fixture's stdout ends in JSON)
    result = mccfr("train", "--game", "leduc", "--iterations", "200", "--out", run.parent / "short")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "mccfr eval" in text and "--exploitability" in text and "mccfr export" in text
    assert 'strategy("MATCHSTATE:0:0::4d|")' in text and "Blueprint.load(" in text


def test_train_progress_is_plain_lines_when_stderr_is_not_a_terminal(tmp_path):
    # CliRunner's stderr is not a terminal: no tqdm frames, one plain line per interval (20 s, far
    # longer than this run, however often it reports) plus the last one
    result = mccfr(
        "train", "--game", "leduc", "--iterations", "3000", "--report-every", "0.05", "--out", tmp_path / "r"
    )
    assert result.exit_code == 0, result.stderr
    assert "\r" not in result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("leduc: ")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("leduc: 3,000/3,000 it (100%), ") and "visits/s" in lines[0], lines


def test_example_matchstate_is_valid_for_every_preset():
    from holdem.game import Game
    from holdem.gamedef import PRESETS

    for name, gd in PRESETS.items():
        ms = example_matchstate(gd)
        state = Game(gd).state(ms)
        assert not state.is_terminal() and state.current_player() == int(ms.split(":")[1]), (name, ms)


def test_resume_is_bit_identical_to_an_uninterrupted_run(trained, resumed):
    from blueprint.trainer import Trainer

    full_run, full_out = trained
    run, first, second = resumed
    assert first["iterations"] == HALF
    out = last_json(second)
    assert out["iterations"] == FULL and out["iterations_run"] == FULL - HALF
    assert "from the checkpoint at iteration 15,000" in second.stderr
    a, b = Trainer.load(full_run), Trainer.load(run)
    assert a.iteration == b.iteration == FULL
    assert np.array_equal(a.regret, b.regret) and np.array_equal(a.strat, b.strat)
    assert np.array_equal(a.rng, b.rng)
    assert out["exploitability"] == full_out["exploitability"]


def test_status_json(resumed):
    run, _, _ = resumed
    out = ok("status", run, "--json")
    assert {
        "iterations",
        "seconds",
        "iterations_per_second",
        "node_visits_per_second",
        "exploitability",
        "checkpoints",
    } <= out.keys()
    assert out["iterations"] == FULL and out["exploitability"] > 0
    assert [(c["iteration"], c["complete"]) for c in out["checkpoints"]] == [(FULL, True), (HALF, True)]
    assert all(c["problem"] is None and c["bytes"] > 0 for c in out["checkpoints"])


def test_eval_json(trained):
    run, train_out = trained
    out = ok("eval", run, "--exploitability", "--json")
    assert {"exploitability", "unit", "br_values"} <= out.keys()
    assert out["unit"] == "chips"  # Leduc has antes, not a big blind
    assert out["exploitability"] == pytest.approx(train_out["exploitability"])
    assert out["exploitability"] == pytest.approx(sum(out["br_values"]) / 2)


def test_export(trained):
    run, _ = trained
    dest = run.parent / "strategy.parquet"
    out = ok("export", run, "--out", dest, "--json")
    import pyarrow.parquet as pq

    assert dest.exists() and out["rows"] == pq.ParquetFile(dest).metadata.num_rows > 0


def test_target_exploitability_stops_early(tmp_path):
    out = ok(
        "train",
        "--game",
        "leduc",
        "--iterations",
        "2000000",
        "--target-exploitability",
        "0.3",
        "--eval-every",
        "0",
        "--report-every",
        "0.05",
        "--out",
        tmp_path / "t",
        "--json",
    )
    assert out["stopped"] == "target"
    assert out["exploitability"] <= 0.3 and out["iterations"] < 2_000_000


def test_train_refuses_a_run_dir_with_checkpoints(trained):
    run, _ = trained
    result = mccfr("train", "--game", "leduc", "--iterations", "10", "--out", run)
    assert (
        result.exit_code == 2
        and "already has checkpoints" in result.stderr
        and "mccfr resume" in result.stderr
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "--game", "nosuchgame"], "unknown game 'nosuchgame'"),
        (["train", "--algo", "sgd"], "unknown algorithm 'sgd'"),
        (["train", "--abstraction", "fancy"], "unknown card abstraction 'fancy'"),
        (["train", "--game", "hunl", "--bets", "nosuchbets"], "unknown bet abstraction 'nosuchbets'"),
        (["train", "--iterations", "5", "--time", "5"], "--iterations or --time"),
        (["train", "--algo", "cfr", "--game", "hulhe"], "enumerates every deal"),
        (["resume", "no/such/run"], "run directory 'no/such/run' does not exist"),
        (["status", "no/such/run"], "does not exist"),
        (["eval", "no/such/run", "--exploitability"], "does not exist"),
        (["export", "no/such/run", "--out", "x.parquet"], "does not exist"),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(args, message):
    result = mccfr(*args)
    assert result.exit_code == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and message in lines[-1], result.stderr
    assert "Traceback" not in result.stderr


def test_bad_files_name_the_problem(tmp_path):
    bets = tmp_path / "bets.toml"
    bets.write_text('name = "x"\n[[round]]\nsizes = "big"\n')
    result = mccfr("train", "--game", "hunl", "--bets", bets)
    assert result.exit_code == 2 and "'sizes' must be a list" in result.stderr and str(bets) in result.stderr
    game = tmp_path / "broken.game"
    game.write_text("GAMEDEF\nlimit\nnumPlayers = 2\nEND GAMEDEF\n")
    result = mccfr("train", "--game", game)
    assert result.exit_code == 2 and "numRounds" in result.stderr and "broken.game" in result.stderr


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(data)


def test_corrupt_checkpoint_falls_back_then_errors(resumed, tmp_path):
    src, _, _ = resumed
    run = tmp_path / "run"
    shutil.copytree(src, run)
    _flip_byte(run / "checkpoints" / f"{FULL:012d}" / "shard-0.msgpack.lz4")
    result = mccfr("resume", run, "--iterations", "10", "--json")
    assert result.exit_code == 0, result.stderr
    assert "skipping checkpoint" in result.stderr and "checksum mismatch" in result.stderr
    assert last_json(result)["iterations"] == HALF + 10
    assert not (run / "checkpoints" / f"{FULL:012d}").exists()  # moved aside, not pruned into
    assert list((run / "corrupt-checkpoints").iterdir())
    for d in (run / "checkpoints").iterdir():
        _flip_byte(d / "shard-0.msgpack.lz4")
    for cmd in (["resume", run, "--iterations", "10"], ["eval", run, "--exploitability"]):
        result = mccfr(*cmd)
        assert result.exit_code == 2
        assert result.stderr.strip().splitlines()[-1].startswith("error: no complete checkpoint")


def test_sigint_checkpoints_and_exits_cleanly(tmp_path):
    run = tmp_path / "sig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mccfr",
            "train",
            "--game",
            "leduc",
            "--time",
            "120",
            "--out",
            str(run),
            "--json",
            "--report-every",
            "0.1",
        ],
        cwd=tmp_path,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (run / "metrics.jsonl").exists() or not (run / "metrics.jsonl").read_text().strip():
            assert proc.poll() is None and time.monotonic() < deadline, (
                proc.stderr.read() if proc.poll() else "slow"
            )
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out["stopped"] == "signal" and "stopped by SIGINT" in stderr and "mccfr resume" in stderr
    assert (run / "checkpoints" / f"{out['iterations']:012d}" / "manifest.msgpack").exists()


def test_import_is_light():
    code = (
        "import sys, mccfr.cli.main; "
        "print([m for m in ('numba', 'ray', 'pyarrow', 'numpy', 'tqdm') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"


def test_status_plot_without_exploitability_is_a_clear_error(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text(json.dumps({"iteration": 10, "exploitability": None}) + "\n")
    result = mccfr("status", run, "--plot", tmp_path / "x.png")
    assert result.exit_code == 2
    assert "has no exploitability in its metrics" in result.stderr
    assert not (tmp_path / "x.png").exists()


def test_failed_periodic_checkpoint_warns_and_training_goes_on(tmp_path, monkeypatch):
    """Disk full at a periodic checkpoint: a warning naming what is kept, training goes on, the
    final checkpoint is written."""
    from blueprint.checkpoints import load_latest
    from blueprint.io.errors import CheckpointError
    from blueprint.trainer import Trainer

    real = Trainer.save
    calls = []

    def flaky(self, run_dir, keep=None):
        calls.append(self.iteration)
        if len(calls) == 1:
            raise CheckpointError(
                "writing checkpoint X failed: [Errno 28] No space left on device; "
                "there is no earlier complete checkpoint"
            )
        return real(self, run_dir, keep=keep)

    monkeypatch.setattr(Trainer, "save", flaky)
    run = tmp_path / "run"
    result = mccfr(
        "train",
        "--game",
        "leduc",
        "--time",
        "1.5",
        "--checkpoint-every",
        "0.3",
        "--eval-every",
        "0",
        "--out",
        run,
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    assert "warning: writing checkpoint X failed: [Errno 28] No space left on device" in result.stderr
    assert "training goes on" in result.stderr
    assert len(calls) >= 2
    assert load_latest(run)[0]["iteration"] == last_json(result)["iterations"]


def test_training_leduc_imports_no_scipy_ray_or_web_stack(tmp_path):
    """The training path loads numba without scipy (mccfr_util.numba_cache), and nothing of Ray or
    the query service."""
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['mccfr', 'train', '--game', 'leduc', '--iterations', '200', '--out', {str(tmp_path / 'r')!r}]\n"
        "try:\n"
        "    runpy.run_module('mccfr', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print([m for m in ('scipy', 'ray', 'fastapi', 'uvicorn') if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr
    assert (tmp_path / "r" / "checkpoints" / f"{200:012d}" / "manifest.msgpack").exists()


def test_the_command_list_agrees_with_the_commands():
    """``mccfr --help`` lists the commands from ``COMMANDS`` without importing them: each entry
    names a click command whose short help is the one listed, and every command is there."""
    import importlib

    import click

    from mccfr.cli.main import COMMANDS

    for name, (module, attr, short) in COMMANDS.items():
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command) and command.name == name
        assert command.get_short_help_str(limit=1000) == short, name
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    listed = result.output.split("Commands:")[1]
    assert all(f"  {name} " in listed for name in COMMANDS)
