"""scripts/experiments/lbr_decompose.py's report: paired per-group contributions on records of
two opponents (no play)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from scripts.experiments.lbr_decompose import (
    complete_pairs,
    g_end,
    g_raise_coarse,
    group_matrix,
    load_jsonl,
    make_g_unsafe,
    report,
)


def hand(pair, seat, value, last_raise=None, src=None, sources=(), end=(3, "showdown")):
    return {
        "hand": 2 * pair + seat,
        "pair": pair,
        "seat": seat,
        "last_raise": last_raise,
        "last_action": None if last_raise is None else [last_raise[0], last_raise[1]],
        "after": None,
        "src_last_raise": src,
        "sources": [list(s) for s in sources],
        "answers": [],
        "end": list(end),
        "value": value,
    }


A = [
    hand(0, 0, 100.0),
    hand(0, 1, -50.0, [2, "allin", 0], "blueprint", [(2, "blueprint")], (2, "opponent folded")),
]
A += [hand(1, 0, 300.0), hand(1, 1, 0.0), hand(2, 0, 10.0)]  # pair 2 is not complete
B = [hand(0, 0, 100.0), hand(0, 1, -20.0, [2, "allin", 0], "subgame new", [(2, "subgame new")])]
B += [hand(1, 0, 200.0, None, None, [(3, "subgame new (unsafe: off-tree earlier)")]), hand(1, 1, 0.0)]


def test_groups_add_up_to_the_total():
    pairs = complete_pairs(A)
    assert sorted(pairs) == [0, 1]
    order = [0, 1]
    for key in (g_end, g_raise_coarse, make_g_unsafe(2)):
        m = group_matrix(pairs, order, key, 1.0)
        total = sum(m.values())
        assert np.allclose(total, [25.0, 150.0])  # each deal's two seats averaged


def test_report_pairs_the_common_deals(capsys, tmp_path):
    f = tmp_path / "b.jsonl"
    f.write_text("".join(json.dumps(h) + "\n" for h in B) + '{"cut short')
    out = report({"a": A, "b": load_jsonl(f)}, 1.0)
    assert out["deals"] == 2
    assert out["a"]["lbr"] == 87.5 and out["b"]["lbr"] == 70.0
    assert out["b"]["paired"] == -17.5
    text = capsys.readouterr().out
    assert "some answer from a subgame rooted at the state (solved unsafe)" in text
    assert "| turn allin |" in text


def test_jobs_write_the_records_of_one_process(tmp_path, capsys):
    """--jobs 2: forked workers append their hands' records to the run's file, the same records as
    one process plays (each hand's samples come from its own generators), one complete line each;
    --jobs without --out is refused."""
    import pytest

    from blueprint.trainer import make_trainer
    from scripts.experiments.lbr_decompose import main

    game = str(Path(__file__).resolve().parents[1] / "data" / "leduc_nolimit.game")
    tr = make_trainer(game, bets="fcpa", algo="cfr+")
    tr.run(20)
    run = tmp_path / "nl"
    tr.save(run)
    got = {}
    for jobs in (1, 2):
        out = tmp_path / f"j{jobs}"
        main(
            [
                str(run),
                "--hands",
                "24",
                "--seed",
                "3",
                "--lbr-setting",
                "menu/menu",
                "--out",
                str(out),
                "--jobs",
                str(jobs),
            ]
        )
        lines = (out / "nl-blueprint.jsonl").read_text().splitlines()
        assert len(lines) == 24  # one whole line a hand
        got[jobs] = sorted((json.loads(x) for x in lines), key=lambda h: h["hand"])
    assert got[1] == got[2]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main([str(run), "--hands", "4", "--jobs", "2"])
    assert "--out" in capsys.readouterr().err
