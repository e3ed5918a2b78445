"""``mccfr matrix`` and ``mccfr eval --player/--vs``: the classic examples through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mccfr.cli import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def mccfr(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def ok(*args) -> tuple[dict, str]:
    r = mccfr(*args)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    return json.loads(lines[-1]), r.stdout


def error(*args) -> str:
    r = mccfr(*args)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "Traceback" not in r.stderr
    return last


# -- matrix ----------------------------------------------------------------------------------------
def test_matrix_rps_variant_converges_with_progress():
    out, text = ok("matrix", EXAMPLES / "rps_variant.csv", "--iterations", 200_000, "--json")
    assert {"row", "column", "value", "exploitability"} <= set(out)
    assert out["row"] == pytest.approx([1 / 5, 7 / 15, 1 / 3], abs=0.01)
    assert out["column"] == pytest.approx([1 / 3, 7 / 15, 1 / 5], abs=0.01)
    assert out["value"] == pytest.approx(2 / 15, abs=0.003)
    assert out["exploitability"] < 0.005
    progress = [ln for ln in text.splitlines() if ln.strip()[:1].isdigit()]
    assert len(progress) >= 10  # 1, 2, 5, 10, ... 200,000
    first, last = float(progress[0].split()[-1]), float(progress[-1].split()[-1])
    assert last < first


def test_matrix_rps_and_options():
    out, _ = ok("matrix", EXAMPLES / "rps.csv", "--iterations", 1000, "--json")
    assert out["row"] == pytest.approx([1 / 3] * 3) and out["value"] == pytest.approx(0.0)
    out, _ = ok(
        "matrix", EXAMPLES / "rps.csv", "--fixed-column", "0.4,0.3,0.3", "--iterations", 10_000, "--json"
    )
    assert out["row"][1] > 0.999 and out["value"] == pytest.approx(0.1, abs=1e-3)
    out, _ = ok("matrix", EXAMPLES / "rps_variant.csv", "--positive-only", "--iterations", 100, "--json")
    assert out["positive_only"] is True and out["iterations"] == 100


def test_matrix_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("0,1,2\n1,2\n")
    msg = error("matrix", bad)
    assert "row 2" in msg and "2 entries" in msg and str(bad) in msg
    bad.write_text("0,1\n1,two\n")
    msg = error("matrix", bad)
    assert "row 2" in msg and "column 2" in msg and "'two'" in msg
    bad.write_text("")
    assert "empty" in error("matrix", bad)
    assert "cannot read" in error("matrix", tmp_path / "missing.csv")
    assert "--fixed-column" in error("matrix", EXAMPLES / "rps.csv", "--fixed-column", "a,b,c")
    assert "3 probabilities" in error("matrix", EXAMPLES / "rps.csv", "--fixed-row", "0.5,0.5")


# -- eval: matches -------------------------------------------------------------------------------
def test_eval_kuhn_match_with_exact_value():
    out, text = ok(
        "eval",
        "--game",
        "kuhn",
        "--player",
        "kuhn-fixed",
        "--vs",
        "random",
        "--hands",
        3000,
        "--seed",
        2,
        "--json",
    )
    assert {"mean", "ci95", "hands", "unit", "win_rate", "exact"} <= set(out)
    assert out["hands"] == 3000 and out["unit"] == "chips/hand"
    assert out["exact"] == pytest.approx(0.125, abs=1e-12)
    assert abs(out["mean"] - out["exact"]) < 1.5 * out["ci95"]
    assert out["exact_seats"] == pytest.approx([1 / 6, 1 / 12], abs=1e-12)
    assert "kuhn-fixed vs random" in text and "exact +0.125" in text
    again, _ = ok(
        "eval",
        "--game",
        "kuhn",
        "--player",
        "kuhn-fixed",
        "--vs",
        "random",
        "--hands",
        3000,
        "--seed",
        2,
        "--json",
    )
    assert again["mean"] == out["mean"]  # seeded


def test_eval_run_dir_as_player(tmp_path):
    from blueprint.trainer import make_trainer

    run = tmp_path / "kuhn"
    tr = make_trainer("kuhn", algo="cfr+")
    tr.run(300)
    tr.save(run)  # the run-directory format of `mccfr train` (tested in test_cli.py)
    out, _ = ok("eval", run, "--vs", "kuhn-greedy", "--hands", 1000, "--json")
    assert out["player"] == "kuhn" and out["opponent"] == "kuhn-greedy"
    assert out["exact"] > 0  # the equilibrium beats the greedy player
    both, _ = ok("eval", run, "--exploitability", "--vs", "always-call", "--hands", 200, "--json")
    assert both["exploitability"] < 0.02 and "mean" in both and "exact" in both
    assert both["exploitability_unit"] == "chips" and both["unit"] == "chips/hand"
    out, _ = ok("eval", "--game", "kuhn", "--player", "random", "--vs", run, "--hands", 200, "--json")
    assert out["opponent"] == "kuhn"
    # the game comes from a run directory among the players when neither --game nor RUN_DIR is given
    for a, b in ((run, "kuhn-greedy"), ("kuhn-greedy", run)):
        out, _ = ok("eval", "--player", a, "--vs", b, "--hands", 200, "--seed", 1, "--json")
        assert {out["player"], out["opponent"]} == {"kuhn", "kuhn-greedy"} and "exact" in out
    msg = error("eval", "--game", "leduc", "--player", "random", "--vs", run)
    assert "trained on kuhn, not leduc" in msg
    # blueprint + subgame solving (Kuhn has one round: every decision is re-solved), exact value too
    out, _ = ok("eval", run, "--vs", f"{run}+solve:resolve", "--hands", 10, "--json")
    assert out["opponent"] == "kuhn+solve:resolve" and "exact" in out
    # ... whose run directory gives the game as well
    out, _ = ok("eval", "--player", f"{run}+solve:resolve", "--vs", "kuhn-greedy", "--hands", 10, "--json")
    assert out["player"] == "kuhn+solve:resolve"


def test_eval_several_opponents_one_match_each(tmp_path):
    """--vs A --vs B: one match per opponent on the same deals (each equals its single match), a
    table row per opponent, and the results as a list under "matches" in --json."""
    args = ("eval", "--game", "kuhn", "--player", "kuhn-fixed", "--hands", 400, "--seed", 3)
    out, text = ok(*args, "--vs", "random", "--vs", "always-call", "--vs", "kuhn-greedy", "--json")
    assert [m["vs"] for m in out["matches"]] == ["random", "always-call", "kuhn-greedy"]
    assert [m["opponent"] for m in out["matches"]] == ["random", "always-call", "kuhn-greedy"]
    assert out["unit"] == "chips/hand" and all(m["hands"] == 400 for m in out["matches"])
    for m in out["matches"]:
        single, _ = ok(*args, "--vs", m["vs"], "--json")
        assert "vs" not in single and "matches" not in single  # one --vs: the shape of one match
        assert single["mean"] == m["mean"] and single["exact"] == m["exact"]
    assert out["matches"][1]["exact"] == pytest.approx(1 / 3, abs=1e-12)  # kuhn-fixed vs always-call
    table = text[text.index("\nvs ") + 1 :].splitlines()
    assert "kuhn-fixed (chips/hand)" in table[0] and "exact" in table[0]
    rows = {line.split()[0]: line.split() for line in table[1:4]}
    assert set(rows) == {"random", "always-call", "kuhn-greedy"}
    assert float(rows["always-call"][1]) == pytest.approx(out["matches"][1]["mean"], rel=1e-5)
    # a run directory among the opponents, beside the exploitability of the run
    from blueprint.trainer import make_trainer

    run = tmp_path / "kuhn"
    tr = make_trainer("kuhn", algo="cfr+")
    tr.run(50)
    tr.save(run)
    both, _ = ok(
        "eval", run, "--exploitability", "--vs", "random", "--vs", "always-call", "--hands", 20, "--json"
    )
    assert both["exploitability_unit"] == "chips" and both["exploitability"] > 0
    assert [m["player"] for m in both["matches"]] == ["kuhn", "kuhn"] and len(both["matches"]) == 2
    assert "drop --vs" in error("eval", run, "--lbr", "--vs", "random", "--vs", "always-call")


def test_eval_hold_em_match_in_mbb_without_exact():
    out, _ = ok(
        "eval", "--game", "hunl", "--player", "random", "--vs", "always-call", "--hands", 20, "--json"
    )
    assert out["unit"] == "mbb/game" and "exact" not in out and out["hands"] == 20


@pytest.mark.parametrize(
    "args, message",
    [
        (["eval"], "nothing to evaluate"),
        (["eval", "--game", "kuhn", "--player", "random"], "needs --vs"),
        (["eval", "--player", "random", "--vs", "random"], "needs a game"),
        (["eval", "--game", "kuhn", "--vs", "random"], "needs player A"),
        (["eval", "--game", "kuhn", "--player", "nobody", "--vs", "random"], "unknown player 'nobody'"),
        (["eval", "--game", "leduc", "--player", "kuhn-fixed", "--vs", "random"], "plays Kuhn poker"),
        (["eval", "--game", "nosuchgame", "--player", "random", "--vs", "random"], "unknown game"),
        (["eval", "--game", "kuhn", "--player", "random", "--vs", "random", "--hands", "1"], "--hands"),
    ],
)
def test_eval_match_errors(args, message):
    assert message in error(*args)


def test_eval_match_scored_by_the_allin_expectation():
    args = (
        "eval",
        "--game",
        "hunl20",
        "--player",
        "always-raise",
        "--vs",
        "random",
        "--hands",
        600,
        "--seed",
        2,
    )
    plain, _ = ok(*args, "--json")
    ev, _ = ok(*args, "--allin-ev", "--json")
    assert not plain["allin_ev"] and plain["allin_hands"] == 0
    assert ev["allin_ev"] and ev["allin_hands"] > 50 and ev["ci95"] < plain["ci95"]
    r = mccfr(*args, "--allin-ev")
    assert r.exit_code == 0 and "hands scored by their all-in expectation" in r.stdout
