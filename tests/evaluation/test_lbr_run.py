"""A long LBR run (:meth:`mccfr.evaluation.lbr.LocalBestResponse.run`): pairs played in worker
processes give the same values as in one process, and a run stopped part-way continues from its
log (:mod:`mccfr.evaluation.lbr_log`) to the unbroken run's result."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from blueprint.blueprint import Blueprint
from blueprint.trainer import make_trainer
from mccfr.evaluation.lbr import LBRError, LocalBestResponse
from mccfr.evaluation.lbr_log import LBRLogError, open_log

HANDS = 16  # 8 pairs
SEED = 3


@pytest.fixture(scope="module")
def bp() -> Blueprint:
    # hunl20 (52 cards) with the table-free `rank` buckets: cheap to train, a real hold'em LBR
    tr = make_trainer("hunl20", bets="small", cards="rank", algo="pluribus", seed=1)
    tr.run(300)
    return Blueprint(tr)


def _lbr(bp, **kw) -> LocalBestResponse:
    return LocalBestResponse(bp.game, bp, **{"menu": "fcpa", **kw})


@pytest.fixture(scope="module")
def unbroken(bp):
    return _lbr(bp).run(HANDS, seed=SEED, jobs=1)


class Stop(Exception):
    pass


def _stop_after(pairs: int):
    def progress(done: int, total: int) -> None:
        if done >= 2 * pairs:
            raise Stop

    return progress


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_processes_give_the_same_values(bp, unbroken):
    res = _lbr(bp).run(HANDS, seed=SEED, jobs=2)
    assert res.jobs == 2 and unbroken.jobs == 1
    np.testing.assert_array_equal(res.per_pair, unbroken.per_pair)
    assert res.seat_chips == unbroken.seat_chips and res.decisions == unbroken.decisions > 0
    assert np.any(res.per_pair != 0)
    assert res.hands_played == HANDS and res.hands_per_cpu_hour > 0
    assert res.cpu_seconds > 0 and unbroken.cpu_seconds > 0  # the workers' CPU time comes back
    assert res.hands_per_cpu_hour == pytest.approx(HANDS / res.cpu_seconds * 3600)  # CPU time, not wall


def test_a_pair_does_not_depend_on_the_pairs_before_it(bp, unbroken):
    """Pair j is the j-th deal of the seed's deal stream with its own random streams: played
    alone, out of order, or in a shorter run, it has the same value."""
    lbr = _lbr(bp)
    short = lbr.run(6, seed=SEED, jobs=1)
    np.testing.assert_array_equal(short.per_pair, unbroken.per_pair[:3])
    deal_rng = np.random.default_rng(np.random.SeedSequence(SEED).spawn(3)[0])
    g = bp.game.gamedef
    deals = [deal_rng.choice(g.deck_size, g.cards_per_deal, replace=False) for _ in range(HANDS // 2)]
    for j in reversed(range(HANDS // 2)):
        rec = lbr.play_pair(j, deals[j], SEED)
        assert rec["pair"] == j
        assert np.mean(rec["chips"]) == unbroken.per_pair[j]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_stopped_run_continues_from_its_log(bp, unbroken, tmp_path, jobs):
    log = tmp_path / "lbr.jsonl"
    with pytest.raises(Stop):
        _lbr(bp).run(HANDS, seed=SEED, jobs=jobs, log=log, progress=_stop_after(3))
    lines = _lines(log)
    head, recs = lines[0], lines[1:]
    assert head["lbr_log"] == 1 and head["seed"] == SEED and head["hands"] == HANDS
    assert head["menu"] == "fcpa" and head["opponent"]["name"] == "blueprint"
    assert head["opponent"]["blueprint"]["iteration"] == bp.iteration
    assert 3 <= len(recs) < HANDS // 2
    for r in recs:  # each logged pair has the unbroken run's values
        assert np.mean(r["chips"]) == unbroken.per_pair[r["pair"]]
        assert r["decisions"] > 0 and r["seconds"] >= 0 and r["cpu_seconds"] >= 0
    res = _lbr(bp).run(HANDS, seed=SEED, jobs=jobs, log=log)
    np.testing.assert_array_equal(res.per_pair, unbroken.per_pair)
    assert res.decisions == unbroken.decisions
    assert res.hands_played == HANDS - 2 * len(recs)
    assert sorted(r["pair"] for r in _lines(log)[1:]) == list(range(HANDS // 2))
    again = _lbr(bp).run(HANDS, seed=SEED, jobs=jobs, log=log)  # all done: nothing to play
    np.testing.assert_array_equal(again.per_pair, unbroken.per_pair)
    assert again.hands_played == 0 and again.hands_per_cpu_hour is None


def test_a_cut_last_line_is_dropped_and_its_pair_played_again(bp, unbroken, tmp_path):
    log = tmp_path / "lbr.jsonl"
    _lbr(bp).run(HANDS, seed=SEED, jobs=1, log=log)
    text = log.read_text()
    log.write_text(text[: len(text) - len(text.splitlines()[-1]) // 2 - 1])  # the last line cut
    warned: list[str] = []
    res = _lbr(bp).run(HANDS, seed=SEED, jobs=1, log=log, warn=warned.append)
    assert len(warned) == 1 and f"line {HANDS // 2 + 1}" in warned[0] and "played again" in warned[0]
    assert res.hands_played == 2
    np.testing.assert_array_equal(res.per_pair, unbroken.per_pair)
    assert len(_lines(log)) == 1 + HANDS // 2  # the log is whole again
    # a complete last line that only lost its newline is kept
    log.write_text(log.read_text().rstrip("\n"))
    res = _lbr(bp).run(HANDS, seed=SEED, jobs=1, log=log, warn=warned.append)
    assert res.hands_played == 0 and len(warned) == 1
    np.testing.assert_array_equal(res.per_pair, unbroken.per_pair)


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"seed": SEED + 1}, "seed"),
        ({"hands": HANDS + 2}, "hands"),
        ({"menu": "fc"}, "menu"),
        ({"preflop": "call"}, "preflop"),
        ({"reraise": True}, "reraise"),
        ({"samples": 100}, "samples"),
        ({"call_rounds": (1,)}, "call_rounds"),
        ({"opponent_spec": "elsewhere"}, "opponent"),
    ],
)
def test_a_log_of_another_run_is_refused_naming_the_field(bp, tmp_path, kw, field):
    log = tmp_path / "lbr.jsonl"
    _lbr(bp).run(4, seed=SEED, jobs=1, log=log, opponent_spec="here")
    before = log.read_bytes()
    run_kw = {k: kw.pop(k) for k in ("seed", "hands", "opponent_spec") if k in kw}
    args = {"seed": SEED, "hands": 4, "opponent_spec": "here", **run_kw}
    with pytest.raises(LBRLogError, match=f"its {field} is .*this run's is"):
        _lbr(bp, **kw).run(args.pop("hands"), jobs=1, log=log, **args)
    assert log.read_bytes() == before  # left as it was


def test_damaged_logs_are_clear_errors(bp, unbroken, tmp_path):
    log = tmp_path / "lbr.jsonl"
    _lbr(bp).run(HANDS, seed=SEED, jobs=1, log=log)
    lines = log.read_text().splitlines()

    def refused(text: str, match: str) -> None:
        log.write_text(text)
        with pytest.raises(LBRLogError, match=match):
            _lbr(bp).run(HANDS, seed=SEED, jobs=1, log=log)

    refused("\n".join(lines[:2] + ["{not json"] + lines[2:]) + "\n", "line 3: not JSON")
    bad = json.loads(lines[2])
    bad["pair"] = HANDS
    refused("\n".join(lines[:2] + [json.dumps(bad)] + lines[3:]) + "\n", "line 3: 'pair' must be")
    refused("\n".join(lines[:2] + [lines[1]] + lines[2:]) + "\n", "line 3: pair .* already")
    bad = json.loads(lines[4])
    bad["chips"] = [1.0]
    refused("\n".join(lines[:4] + [json.dumps(bad)] + lines[5:]) + "\n", "line 5: 'chips'")
    refused("hello\nworld\n", "not an LBR log: line 1")
    refused('{"lbr_log": 99}\n', "format 99")
    log.write_bytes(b"\xff\xfe garbage")  # the header alone, cut: written again
    warned: list[str] = []
    res = _lbr(bp).run(HANDS, seed=SEED, jobs=1, log=log, warn=warned.append)
    assert "line 1" in warned[0] and "header" in warned[0]
    np.testing.assert_array_equal(res.per_pair, unbroken.per_pair)
    with pytest.raises(LBRLogError, match="directory"):
        _lbr(bp).run(HANDS, seed=SEED, jobs=1, log=tmp_path)
    with pytest.raises(LBRLogError, match="cannot open"):
        _lbr(bp).run(HANDS, seed=SEED, jobs=1, log=tmp_path / "no" / "such" / "dir.jsonl")


def test_a_dead_worker_is_a_clear_error_and_the_log_keeps_the_rest(bp, unbroken, tmp_path, monkeypatch):
    log = tmp_path / "lbr.jsonl"
    lbr = _lbr(bp)
    real = lbr.play_pair

    def dying(j, deal, seed):
        if j == 5:
            os._exit(1)  # a worker killed mid-pair (the OOM killer, say)
        return real(j, deal, seed)

    monkeypatch.setattr(lbr, "play_pair", dying)  # the forked workers inherit it
    with pytest.raises(LBRError, match="worker process died"):
        lbr.run(HANDS, seed=SEED, jobs=2, log=log)
    assert 5 not in {r["pair"] for r in _lines(log)[1:]}
    res = _lbr(bp).run(HANDS, seed=SEED, jobs=2, log=log)
    np.testing.assert_array_equal(res.per_pair, unbroken.per_pair)


def test_one_log_one_writer(bp, tmp_path):
    log = tmp_path / "lbr.jsonl"
    lbr = _lbr(bp)
    with open_log(log, lbr.log_header(4, SEED), 2, warn=print):
        with pytest.raises(LBRLogError, match="another run"):
            lbr.run(4, seed=SEED, jobs=1, log=log)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"hands": -5}, "at least 2"),
        ({"hands": 0}, "at least 2"),
        ({"hands": 10**12}, "at most"),
        ({"hands": 4.5}, "whole number"),
        ({"jobs": 0}, "jobs must be"),
        ({"jobs": -2}, "jobs must be"),
        ({"jobs": 10**6}, "jobs must be"),
        ({"seed": -1}, "seed must be"),
    ],
)
def test_bad_run_arguments(bp, kw, match):
    args = {"hands": 4, "seed": 0, "jobs": 1, **kw}
    with pytest.raises(LBRError, match=match):
        _lbr(bp).run(args.pop("hands"), **args)
