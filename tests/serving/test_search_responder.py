"""The search responder (method ``search``: mccfr play --method search, mccfr serve --solve
search): searched answers from its first round on within the query's budget, the blueprint's
before it and when asked for, and clear errors for what it does not take."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from blueprint.blueprint import Blueprint
from mccfr.cli import cli
from mccfr.serving.query import QueryError
from mccfr.serving.responders import SearchResponder
from mccfr.serving.solving import make_responder
from subgame.multiway import SearchConfig


@pytest.fixture(scope="module")
def leduc3_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("l3") / "run"
    args = ["train", "--game", "leduc.limit.3p", "--iterations", "5000", "--threads", "1", "--out", str(run)]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    return run


def test_search_answers_from_its_round_and_the_blueprint_before(leduc3_run):
    bp = Blueprint.load(leduc3_run)
    r = SearchResponder(bp, config=SearchConfig(iterations=None, seconds=1.0))
    late = "MATCHSTATE:2:0:ccc/cr:||2d/4c"
    assert r.answer_fast(late) is None  # a search: not on the service's loop
    out = r.answer(late, time_budget_ms=300)
    assert out["source"] == "search" and out["method"] == "search" and out["iterations"] > 10
    assert set(out["strategy"]) == {"f", "c", "r"} and abs(sum(out["strategy"].values()) - 1) < 1e-9
    early = "MATCHSTATE:1:0:r:|3c|"
    fast = r.answer_fast(early)
    assert fast is not None and fast["strategy"] == bp.strategy(early)
    asked = r.answer(late, method="blueprint")
    assert asked["strategy"] == bp.strategy(late) and asked["method"] == "blueprint"
    with pytest.raises(QueryError, match="not available on this server"):
        r.answer(late, method="reach-maxmargin")


def test_make_responder_search_takes_from_round_only(leduc3_run):
    r = make_responder(leduc3_run, "search", from_round=0)
    assert isinstance(r, SearchResponder) and r.search.config.from_round == 0
    with pytest.raises(QueryError, match="solver_threads"):
        make_responder(leduc3_run, "search", solver_threads=2)


def test_serve_refuses_options_of_subgame_solving_with_search(leduc3_run):
    res = CliRunner().invoke(
        cli, ["serve", str(leduc3_run), "--solve", "search", "--solver-threads", "2", "--port", "0"]
    )
    assert res.exit_code == 2 and "solver_threads" in res.stderr


@pytest.mark.timing
def test_a_search_answers_within_its_budget(leduc3_run):
    r = SearchResponder(Blueprint.load(leduc3_run), config=SearchConfig(iterations=None, seconds=1.0))
    late = "MATCHSTATE:2:0:ccc/cr:||2d/4c"
    r.answer(late, time_budget_ms=50)  # the kernels compiled or loaded
    for budget in (100, 300):
        t = time.perf_counter()
        r.answer(late, time_budget_ms=budget)
        assert time.perf_counter() - t < budget / 1e3  # 80% searching, the rest to spare
