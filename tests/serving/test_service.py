"""The query service: the Responder seam, every kind of bad input, the HTTP endpoints, metrics,
and concurrent requests that do not block each other."""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time

import numpy as np
import pytest

from mccfr.serving.query import QueryError, Responder, example_matchstates
from mccfr.serving.responders import BlueprintResponder
from mccfr.serving.service import ThreadedServer, create_app
from mccfr.serving.solving import make_responder
from subgame.nested import state_subgame
from subgame.tree import hand_index

PREFLOP = "MATCHSTATE:1:0::|AhAd"  # hunl20: seat 1 (small blind) acts first preflop
FLOP = "MATCHSTATE:0:3:cc/:AhAd|/2c3d4h"

BAD = [
    # (matchstate, keyword arguments, status, kind, fragment of the message)
    ("MATCHSTATE:0:0:cc/:AhAd|/2c3d4h4h", {}, 400, "bad_matchstate", "duplicate card '4h'"),
    ("MATCHSTATE:0:0:r30000:AhAd|", {}, 400, "bad_matchstate", "illegal action 'r30000'"),
    ("MATCHSTATE:0:0:cc:AhAd|", {}, 400, "bad_matchstate", "position"),
    ("hello", {}, 400, "bad_matchstate", "expected 'MATCHSTATE:<position>"),
    ("STATE:0::AhAd|KsKd", {}, 400, "bad_matchstate", "dealer STATE"),
    ("MATCHSTATE:0:0::Ah|", {}, 400, "bad_matchstate", "missing cards"),
    ("MATCHSTATE:1:0:r:|4d", {}, 400, "wrong_game", "parses as a leduc state"),
    ("MATCHSTATE:0:0::4c|", {}, 400, "wrong_game", "complete kuhn state"),
    ("MATCHSTATE:0:0::AhAd|", {}, 409, "not_your_turn", "seat 1 is to act"),
    ("MATCHSTATE:0:0:f:AhAd|", {}, 409, "hand_over", "the hand is over"),
    (PREFLOP, {"method": "magic"}, 422, "bad_method", "unknown method 'magic'"),
    (PREFLOP, {"method": "resolve"}, 422, "bad_method", "not available on this server"),
    (PREFLOP, {"time_budget_ms": 0}, 422, "bad_time_budget", "1..600000"),
    (PREFLOP, {"time_budget_ms": 10**9}, 422, "bad_time_budget", "got 1000000000"),
    (PREFLOP, {"session": ""}, 422, "bad_session", "printable"),
    (PREFLOP, {"session": "x" * 300}, 422, "bad_session", "1..256"),
]


# -- the responder, without HTTP -----------------------------------------------------------------
def test_a_legal_state_off_the_abstraction_is_answered_and_labelled(responder, hunl_bp):
    # three raises in a round where the 'small' abstraction allows two: no 422, the blueprint's
    # fallback (the abstract node most like the real state), labelled with its reason
    ms = "MATCHSTATE:0:0:r200r400r600:AhAd|"
    out = responder.answer(ms)
    assert out["source"] == "fallback" and "abstraction has none" in out["reason"]
    assert sum(out["strategy"].values()) == pytest.approx(1.0)
    state = responder.game.state(ms)
    for a in out["strategy"]:
        state.apply(a)  # every key is legal
    assert out["strategy"] == hunl_bp.answer(ms).strategy
    assert len(out["strategy"]) > 1  # options kept: not a fixed check/call


def test_blueprint_responder_answers_from_the_blueprint(responder, hunl_bp):
    assert isinstance(responder, Responder)
    for ms in (PREFLOP, FLOP, *example_matchstates(responder.game)):
        out = responder.answer(ms, session="s1", time_budget_ms=50)
        assert set(out) == {"strategy", "source", "method", "elapsed_ms"}
        assert out["source"] == "blueprint" and out["method"] is None and out["elapsed_ms"] >= 0
        assert out["strategy"] == hunl_bp.strategy(ms)
        assert sum(out["strategy"].values()) == pytest.approx(1.0)
        state = responder.game.state(ms)
        for a in out["strategy"]:
            state.apply(a)  # every key is legal
    assert responder.answer(PREFLOP, method="blueprint")["strategy"] == hunl_bp.strategy(PREFLOP)


@pytest.mark.parametrize("matchstate, kwargs, status, kind, fragment", BAD)
def test_every_bad_query_is_a_query_error_naming_the_problem(
    responder, matchstate, kwargs, status, kind, fragment
):
    with pytest.raises(QueryError) as info:
        responder.answer(matchstate, **kwargs)
    assert (info.value.status, info.value.kind) == (status, kind)
    assert fragment in str(info.value)


@pytest.mark.parametrize("value", [True, 2.5, "100"])
def test_time_budget_must_be_an_integer(responder, value):
    with pytest.raises(QueryError, match="integer") as info:
        responder.answer(PREFLOP, time_budget_ms=value)
    assert info.value.status == 422


def test_make_responder_seam(tmp_path):
    with pytest.raises(QueryError, match="unknown method 'nope'"):
        make_responder(tmp_path, solve_method="nope")


@pytest.mark.timing  # asserts wall-clock bounds: run alone, after the default run
def test_solving_responder_answers_the_river_from_a_subgame_and_reuses_it(hunl_bp):
    from mccfr.serving.solving import SolvingResponder

    r = SolvingResponder(hunl_bp, "unsafe", default_time_budget_ms=3000)
    r.warm_up()
    pre = "MATCHSTATE:1:3::|AsKd"
    assert r.answer_fast(pre)["source"] == "blueprint"
    river = "MATCHSTATE:0:3:cc/cc/cc/:AsKd|/2c7h9s/Td/3c"
    assert r.answer_fast(river) is None  # a solve: the service runs it in a worker thread
    a = r.answer(river, session="h3", method="resolve")
    assert a["source"] == "subgame" and a["method"] == "resolve" and not a["reused"]
    assert abs(sum(a["strategy"].values()) - 1) < 1e-5
    assert a["elapsed_ms"] < 3000 * 1.5 + 2000
    b = r.answer(river, session="h3", method="resolve")
    assert b["reused"] and b["strategy"] == a["strategy"]
    assert r.answer(river, method="blueprint")["source"] == "blueprint"
    with pytest.raises(QueryError) as info:
        r.answer("MATCHSTATE:1:3:cc/cc/cc/:|AsKd/2c7h9s/Td/3c")
    assert info.value.kind == "not_your_turn"


@pytest.mark.timing  # solves against a deadline: run alone, after the default run, with the kernel cache warm
def test_solving_responder_solves_a_dead_end_where_it_fits_and_labels_the_rest(hunl_bp, monkeypatch):
    import subgame.depth
    from mccfr.serving.solving import SolvingResponder

    r = SolvingResponder(
        hunl_bp, "reach-maxmargin", default_time_budget_ms=20000, min_iterations=3, max_solve_ms=3000
    )
    try:
        # three raises on the river (the abstraction allows two): solved from the state itself,
        # unsafe (the blueprint has no values where its tree has no node)
        river = "MATCHSTATE:1:0:r300c/cc/cc/r600r1200r1800:|AhKd/Ks9c2d/4h/5s"
        assert r.answer_fast(river) is None
        a = r.answer(river, session="d1")
        assert a["source"] == "subgame" and a["method"] == "unsafe", a
        assert abs(sum(a["strategy"].values()) - 1) < 1e-5
        # three raises pre-flop: depth-limited at the flop, along sampled runouts
        pre = "MATCHSTATE:0:0:r300r900r1500:AhKd|"
        b = r.answer(pre, session="d2")
        assert b["source"] == "subgame" and b["method"] == "unsafe" and not b["reused"], b
        # no board card is out: the same subgame answers another session's deal at once
        other = r.answer("MATCHSTATE:0:7:r300r900r1500:7h2c|", session="d9")
        assert other["source"] == "subgame" and other["reused"], other
        assert r.answer("MATCHSTATE:0:7:r300r900r1500:AhKd|", session="d8")["strategy"] == b["strategy"]
        # where no subgame fits (continuations over every deal of the flop, turn and river) the
        # blueprint's fallback answers, labelled
        monkeypatch.setattr(subgame.depth, "DEFAULT_LEAF_DEALS", None)
        r.sessions.clear()
        b = r.answer(pre, session="d3")
        assert b["source"] == "fallback" and b["fallback"] == "unsolvable" and "too big" in b["reason"], b
        assert b["strategy"] == hunl_bp.answer(pre).strategy
        assert r.metrics()["solver"]["outcomes"].get("unsolvable") == 1
    finally:
        r.close()


# -- HTTP ------------------------------------------------------------------------------------------
class Client:
    """Requests to a :class:`ThreadedServer` over one keep-alive connection (real sockets)."""

    class Response:
        def __init__(self, status: int, text: str):
            self.status_code, self.text = status, text

        def json(self):
            return json.loads(self.text)

    def __init__(self, server: ThreadedServer):
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)

    def _do(self, method: str, path: str, body: bytes | None = None, headers=None) -> Client.Response:
        self.conn.request(method, path, body=body, headers=headers or {})
        r = self.conn.getresponse()
        return Client.Response(r.status, r.read().decode())

    def get(self, path: str) -> Client.Response:
        return self._do("GET", path)

    def post(self, path: str, json: dict | None = None, content: bytes | None = None, headers=None):
        body = content if content is not None else __import__("json").dumps(json).encode()
        return self._do("POST", path, body, headers or {"Content-Type": "application/json"})


@contextlib.contextmanager
def serving(responder, **kw):
    with ThreadedServer(create_app(responder, **kw)) as srv:
        yield Client(srv)


@pytest.fixture(scope="module")
def client(responder):
    with serving(responder, threads=4, describe={"run_dir": "test"}) as c:
        yield c


def test_strategy_endpoint(client, hunl_bp):
    r = client.post("/v1/strategy", json={"matchstate": FLOP, "session": "h1", "time_budget_ms": 100})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["source"] == "blueprint" and body["method"] is None and body["elapsed_ms"] > 0
    assert body["strategy"] == pytest.approx(hunl_bp.strategy(FLOP))


def test_health_and_openapi(client):
    h = client.get("/healthz").json()
    assert h["status"] == "ok" and h["responder"] == "BlueprintResponder" and h["game"] == "hunl20"
    assert h["methods"] == ["blueprint"] and h["run_dir"] == "test" and h["iteration"] == 1000
    spec = client.get("/openapi.json").json()
    post = spec["paths"]["/v1/strategy"]["post"]
    req = spec["components"]["schemas"]["StrategyRequest"]
    assert set(req["properties"]) == {"matchstate", "session", "time_budget_ms", "method", "locks"}
    assert req["required"] == ["matchstate"]
    assert {"200", "400", "409", "422"} <= set(post["responses"])
    assert {"/healthz", "/metrics"} <= set(spec["paths"])


@pytest.mark.parametrize("matchstate, kwargs, status, kind, fragment", BAD)
def test_bad_input_is_a_4xx_and_the_server_keeps_serving(client, matchstate, kwargs, status, kind, fragment):
    r = client.post("/v1/strategy", json={"matchstate": matchstate, **kwargs})
    assert r.status_code == status
    assert r.json()["kind"] == kind and fragment in r.json()["error"]
    assert client.post("/v1/strategy", json={"matchstate": PREFLOP}).status_code == 200


@pytest.mark.parametrize(
    "body, fragment",
    [
        (b"not json", "body: not valid JSON"),
        (b"[1, 2]", "valid dictionary"),
        (json.dumps({}).encode(), "matchstate: Field required"),
        (json.dumps({"matchstate": 7}).encode(), "matchstate: Input should be a valid string"),
        (json.dumps({"matchstate": PREFLOP, "time_budget_ms": "fast"}).encode(), "time_budget_ms"),
        (json.dumps({"matchstate": PREFLOP, "time_budget_ms": True}).encode(), "time_budget_ms"),
        (json.dumps({"matchstate": PREFLOP, "budget": 5}).encode(), "budget: unknown field"),
    ],
)
def test_malformed_bodies_are_422_naming_the_field(client, body, fragment):
    r = client.post("/v1/strategy", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 422
    assert r.json()["kind"] == "invalid_request" and fragment in r.json()["error"], r.json()
    assert client.post("/v1/strategy", json={"matchstate": PREFLOP}).status_code == 200


def test_metrics_count_requests_errors_and_latency(responder):
    with serving(responder, threads=2) as c:
        for _ in range(5):
            assert c.post("/v1/strategy", json={"matchstate": FLOP}).status_code == 200
        c.post("/v1/strategy", json={"matchstate": "MATCHSTATE:0:0::AhAd|"})
        c.post("/v1/strategy", content=b"{", headers={"Content-Type": "application/json"})
        m = c.get("/metrics").json()
    assert m["requests"] == 7 and m["in_flight"] == 0
    assert m["responses"] == {"200": 5, "409": 1, "422": 1}
    assert m["errors"] == {"not_your_turn": 1, "invalid_request": 1}
    lat = m["latency_ms"]["blueprint"]
    assert lat["count"] == 5 and 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]


def test_every_answer_source_is_counted_and_a_legal_state_is_never_refused(responder):
    with serving(responder, threads=2) as c:
        answers = [
            c.post("/v1/strategy", json={"matchstate": ms})
            for ms in (FLOP, "MATCHSTATE:0:0:r250:AhAd|", "MATCHSTATE:0:0:r200r400r600:AhAd|")
        ]
        m = c.get("/metrics").json()
    assert [r.status_code for r in answers] == [200, 200, 200]
    assert [r.json()["source"] for r in answers] == ["blueprint", "translated", "fallback"]
    assert m["answers"] == {"blueprint": 1, "translated": 1, "fallback": 1}


class _Broken:
    """A responder with a bug: the service answers 500 and goes on."""

    methods = ()

    def __init__(self, game):
        self.game = game

    def answer(self, matchstate, session=None, time_budget_ms=None, method=None):
        if session == "boom":
            raise RuntimeError("kaboom")
        return {"strategy": {"c": 1.0}, "source": "blueprint", "method": None, "elapsed_ms": 0.0}

    def close(self):
        pass


def test_a_responder_bug_is_a_500_and_the_server_goes_on(responder):
    with serving(_Broken(responder.game)) as c:
        r = c.post("/v1/strategy", json={"matchstate": PREFLOP, "session": "boom"})
        assert r.status_code == 500 and "kaboom" in r.json()["error"]
        assert c.post("/v1/strategy", json={"matchstate": PREFLOP}).json()["strategy"] == {"c": 1.0}


# -- concurrency, over a real socket ----------------------------------------------------------------
class _SlowSolver:
    """Blueprint answers on the fast path; session 'solve' goes to a worker thread and takes 1 s
    (a stand-in for a subgame solve)."""

    methods = ("blueprint",)
    SOLVE_S = 1.0

    def __init__(self, inner: BlueprintResponder):
        self.inner = inner
        self.game = inner.game

    def answer_fast(self, matchstate, session=None, time_budget_ms=None, method=None):
        return None if session == "solve" else self.inner.answer(matchstate, session, time_budget_ms, method)

    def answer(self, matchstate, session=None, time_budget_ms=None, method=None):
        time.sleep(self.SOLVE_S)
        out = self.inner.answer(matchstate, session, time_budget_ms, method)
        return {**out, "source": "subgame", "method": "resolve"}

    def close(self):
        pass


def _post(port: int, body: dict) -> tuple[int, dict, float]:
    t = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", "/v1/strategy", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    out = json.loads(r.read())
    c.close()
    return r.status, out, time.perf_counter() - t


@pytest.mark.timing  # asserts wall-clock bounds: run alone, after the default run
def test_slow_queries_do_not_block_fast_ones_or_each_other(responder):
    with ThreadedServer(create_app(_SlowSolver(responder), threads=4)) as srv:
        slow: list = []
        threads = [
            threading.Thread(
                target=lambda: slow.append(_post(srv.port, {"matchstate": FLOP, "session": "solve"}))
            )
            for _ in range(4)
        ]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(0.2)  # the four solves are running
        fast = [_post(srv.port, {"matchstate": PREFLOP}) for _ in range(5)]
        fast_done = time.perf_counter() - t0
        for t in threads:
            t.join()
        all_done = time.perf_counter() - t0
    assert all(s == 200 and o["source"] == "blueprint" for s, o, _ in fast)
    assert fast_done < 0.2 + 0.6 * _SlowSolver.SOLVE_S  # answered while the solves ran
    assert all(s == 200 and o["source"] == "subgame" and o["method"] == "resolve" for s, o, _ in slow)
    assert all(o["elapsed_ms"] >= 1000 * _SlowSolver.SOLVE_S for _, o, _ in slow)
    assert all_done < 2.5 * _SlowSolver.SOLVE_S  # in parallel: not 4 x 1 s one after another


def test_ten_concurrent_clients_get_the_right_answers(responder, hunl_bp):
    states = example_matchstates(responder.game) + [PREFLOP, FLOP]
    want = {ms: hunl_bp.strategy(ms) for ms in states}
    errors: list = []
    with ThreadedServer(create_app(responder)) as srv:

        def client(k: int) -> None:
            for i in range(20):
                ms = states[(k + i) % len(states)]
                status, out, _ = _post(srv.port, {"matchstate": ms, "session": f"c{k}"})
                if status != 200 or out["strategy"] != pytest.approx(want[ms]):
                    errors.append((ms, status, out))

        threads = [threading.Thread(target=client, args=(k,)) for k in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        metrics = json.loads(_get(srv.port, "/metrics"))
    assert not errors
    assert metrics["answers"]["blueprint"] == 200 and metrics["in_flight"] == 0


def _get(port: int, path: str) -> str:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path)
    return c.getresponse().read().decode()


def test_http_responder_is_the_same_responder_over_the_wire(responder, hunl_bp):
    from mccfr.serving.responders import HttpResponder

    with ThreadedServer(create_app(responder)) as srv:
        remote = HttpResponder(srv.url)
        assert remote.game.gamedef.to_acpc() == responder.game.gamedef.to_acpc()
        assert remote.methods == ("blueprint",)
        out = remote.answer(FLOP, session="s", time_budget_ms=10)
        assert out["strategy"] == pytest.approx(hunl_bp.strategy(FLOP)) and out["source"] == "blueprint"
        with pytest.raises(QueryError, match="seat 1 is to act") as info:
            remote.answer("MATCHSTATE:0:0::AhAd|")
        assert (info.value.status, info.value.kind) == (409, "not_your_turn")
        remote.close()
    with pytest.raises(ValueError, match="expected http://HOST:PORT"):
        HttpResponder("ftp://x:1")


def test_serve_command(tmp_path):
    """The real entry point: `mccfr serve RUN` in a subprocess (mccfr.serving.launch.start_server:
    a free port, ready at /healthz), queried, then stopped."""
    import signal
    from pathlib import Path

    from click.testing import CliRunner

    from mccfr.cli import cli
    from mccfr.serving.launch import start_server

    run = tmp_path / "run"
    r = CliRunner().invoke(
        cli,
        ["train", "--game", "hunl20", "--abstraction", "rank", "--iterations", "200", "--out", str(run)],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.stderr
    log: list[str] = []
    repo = Path(__file__).resolve().parents[2]
    proc, port = start_server(run, root=repo, log=log.append)  # the server runs this tree's code
    try:
        status, out, _ = _post(port, {"matchstate": PREFLOP})
        assert status == 200 and out["source"] == "blueprint"
        status, out, _ = _post(port, {"matchstate": "MATCHSTATE:0:0::AhAd|"})
        assert status == 409
        assert json.loads(_get(port, "/healthz"))["run_dir"] == str(run)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0  # a clean stop
    deadline = time.monotonic() + 10  # the last lines reach the log from the reading thread
    while not any("stopped" in line for line in log) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any("stopped" in line for line in log), log
    assert any(f"127.0.0.1:{port}" in line for line in log)
    r = CliRunner().invoke(cli, ["serve", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "does not exist" in r.stderr
    with pytest.raises(RuntimeError, match="did not start"):
        start_server(tmp_path / "nope", log=log.append)


def test_the_node_cache_agrees_with_the_walk(hunl_bp):
    game = hunl_bp.game
    states = [
        "MATCHSTATE:0:0:r300:AhAd|",  # on the tree
        "MATCHSTATE:0:0:r250:AhAd|",  # off-tree open, translated
        "MATCHSTATE:1:0:r300r700:|AhAd",
        "MATCHSTATE:1:0:cc/r350:|AhAd/2c3d4h",  # off-tree flop bet (the pot bet is to 300)
    ]
    for ms in states:
        st = game.state(ms)
        assert hunl_bp.node_of(st) == hunl_bp._walk(st, None).node == hunl_bp.node_of(st)
        assert hunl_bp._node_cache[(st.viewer, st.betting.actions)].node == hunl_bp.node_of(st)


# -- time budgets: the answer comes back in time, from a subgame or labelled as a fallback ---------
RIVER = "MATCHSTATE:0:3:cc/cc/cc/:AsKd|/2c7h9s/Td/3c"
TURN = "MATCHSTATE:0:3:cc/cc/:AsKd|/2c7h9s/Td"


@pytest.mark.timing  # asserts wall-clock bounds: run alone, after the default run
def test_solve_stops_at_its_deadline_and_says_how_far_it_got(hunl_bp):
    from subgame.interrupt import SolveInterrupted
    from subgame.nested import solve_state

    full = solve_state(hunl_bp, RIVER, "reach-maxmargin", time_budget=None, iterations=300)[0]
    t = time.perf_counter()
    sol, _ = solve_state(
        hunl_bp, RIVER, "reach-maxmargin", time_budget=None, iterations=300, deadline=t + full.elapsed_s / 4
    )
    assert time.perf_counter() - t < full.elapsed_s / 4 + 0.05
    assert 0 < sol.iterations < 300 and sol.timing["iter_s"] > 0
    stop = threading.Event()
    stop.set()
    with pytest.raises(SolveInterrupted, match="cancelled"):
        solve_state(hunl_bp, RIVER, "reach-maxmargin", stop=stop)
    with pytest.raises(SolveInterrupted, match="deadline"):
        solve_state(hunl_bp, RIVER, "reach-maxmargin", deadline=time.perf_counter())


@pytest.mark.timing  # asserts wall-clock bounds: run alone, after the default run
def test_a_solve_that_cannot_fit_its_budget_comes_back_in_time_labelled(hunl_bp):
    """A turn subgame takes longer than 200 ms: the answer still comes within the budget (plus
    scheduling slack), from the blueprint with fallback 'deadline'; the responder learns the cost
    and answers the next turn query at once ('budget'), while the river is solved."""
    from mccfr.serving.solving import SolvingResponder

    r = SolvingResponder(hunl_bp, "reach-maxmargin", from_round=2, solver_threads=1, min_iterations=10)
    try:
        t = time.perf_counter()
        a = r.answer(TURN, time_budget_ms=200)
        took = time.perf_counter() - t
        assert took < 0.2 + 0.1, took
        assert a["source"] == "blueprint" and a["fallback"] == "deadline" and a["method"] == "reach-maxmargin"
        assert a["strategy"] == hunl_bp.strategy(TURN)
        r._wait_idle()  # the abandoned solve stops at its next check and records its time
        assert r.cost.get(2) > 0.2
        t = time.perf_counter()
        b = r.answer(TURN, time_budget_ms=200)
        assert time.perf_counter() - t < 0.05 and b["fallback"] == "budget"
        c = r.answer(RIVER, time_budget_ms=1500)
        assert c["source"] == "subgame" and c["iterations"] >= 10 and "fallback" not in c, (
            c.get("fallback"),
            r.cost.snapshot(),
        )
        assert c["elapsed_ms"] < 1500 + 100
    finally:
        r.close()


@pytest.mark.timing  # asserts wall-clock bounds: run alone, after the default run
def test_a_solve_that_overran_its_end_until_its_query_gave_up_backs_off(hunl_bp):
    """A construction that runs past the solve's end until the query stops waiting had its whole
    budget and never iterated: the cost model backs off (twice the time it ran), so the next query of
    that round is answered at once ('budget') rather than starting the same hopeless solve."""
    from mccfr.serving.solving import SolvingResponder
    from subgame.interrupt import SolveInterrupted

    r = SolvingResponder(hunl_bp, "reach-maxmargin", from_round=2, solver_threads=1, min_iterations=10)

    def overrun(state, method, limits, **kwargs):
        while not limits.stop.is_set():  # blind to its deadline, like one long construction step
            time.sleep(0.005)
        raise SolveInterrupted("deadline")

    r._solve_state = overrun
    try:
        t = time.perf_counter()
        a = r.answer(TURN, time_budget_ms=200)
        assert a["fallback"] == "deadline" and time.perf_counter() - t < 0.3
        r._wait_idle()
        assert r.cost.get(2) >= 2 * 0.15, r.cost.snapshot()
        assert r.answer(TURN, time_budget_ms=200)["fallback"] == "budget"
    finally:
        r.close()


@pytest.mark.timing  # asserts wall-clock bounds: run alone, after the default run
def test_solves_are_bounded_by_the_solver_threads_and_the_rest_fall_back(hunl_bp, monkeypatch):
    import mccfr.serving.solving
    from mccfr.serving.solving import SolvingResponder

    r = SolvingResponder(hunl_bp, "unsafe", solver_threads=1, min_iterations=2)
    real = mccfr.serving.solving.solve_state
    running, peak, lock = [0], [0], threading.Lock()

    def counted(*a, **k):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        try:
            return real(*a, **k)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(mccfr.serving.solving, "solve_state", counted)
    try:
        r.answer(RIVER, time_budget_ms=300)  # teaches the cost model
        out = []

        def ask(k: int) -> None:
            t = time.perf_counter()
            a = r.answer(RIVER, session=f"s{k}", time_budget_ms=400)
            out.append((time.perf_counter() - t, a))

        threads = [threading.Thread(target=ask, args=(k,)) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert peak[0] == 1
        assert all(took < 0.4 + 0.1 for took, _ in out), [took for took, _ in out]
        sources = [(a["source"], a.get("fallback")) for _, a in out]
        assert ("subgame", None) in sources and ("blueprint", "busy") in sources, sources
        assert all(s == ("subgame", None) or s == ("blueprint", "busy") for s in sources), sources
    finally:
        r.close()


@pytest.mark.timing  # asserts wall-clock bounds: run alone, after the default run
def test_the_service_counts_the_budget_from_the_request(hunl_bp):
    """Over HTTP: the handler passes the request's arrival; the answer's elapsed_ms stays in budget."""
    from mccfr.serving.solving import SolvingResponder

    r = SolvingResponder(hunl_bp, "reach-maxmargin", solver_threads=1, min_iterations=5)
    with serving(r, threads=4) as c:
        resp = c.post("/v1/strategy", json={"matchstate": RIVER, "time_budget_ms": 300})
        assert resp.status_code == 200
        out = resp.json()
        assert out["elapsed_ms"] < 300 and (
            out["source"] == "subgame" or out["fallback"] in ("busy", "deadline")
        )
        assert "fallback" in c.get("/openapi.json").text


def test_cost_model_learns_backs_off_and_decays():
    from mccfr.serving.admission import CostModel

    c = CostModel()
    assert c.get(3) == 0.0
    c.finished(3, 0.2)
    c.finished(3, 0.4)
    assert c.get(3) == pytest.approx(0.7 * 0.2 + 0.3 * 0.4)
    c.failed(3, 0.1, backoff=False)  # iterated, too few: at least the time it ran
    assert c.get(3) == pytest.approx(0.26)
    c.failed(3, 0.5, backoff=False)
    assert c.get(3) == pytest.approx(0.5)
    c.failed(2, 2.5, backoff=True)  # a turn solve that never iterated: more than twice its time
    assert c.get(2) == pytest.approx(5.0)
    c.failed(2, 2.0, backoff=True)  # and again: twice the estimate that let it start
    assert c.get(2) == pytest.approx(10.0)
    c.decay(2)
    assert c.get(2) == pytest.approx(9.9)


def test_cost_model_scales_with_the_size_of_the_solve():
    """With sizes, a round's cost is learned per unit of size: a small subgame of a round whose big
    ones are too slow is still admitted; without a size (or before any rate) the round's figure."""
    from mccfr.serving.admission import CostModel

    c = CostModel()
    c.finished(2, 2.0, units=10.0)  # a big turn subgame: 2 s
    assert c.get(2, 10.0) == pytest.approx(2.0) and c.get(2, 2.5) == pytest.approx(0.5)
    assert c.get(2) == pytest.approx(2.0) and c.get(3, 5.0) == 0.0
    c.finished(2, 0.5, units=5.0)
    assert c.get(2, 10.0) == pytest.approx(10 * (0.7 * 0.2 + 0.3 * 0.1))
    c.failed(2, 1.5, backoff=False, units=5.0)  # a mid-sized one that ran 1.5 s and was not useful
    assert c.get(2, 5.0) == pytest.approx(1.5) and c.get(2, 2.0) == pytest.approx(0.6)
    c.decay(2)
    assert c.get(2, 5.0) == pytest.approx(1.5 * 0.99)
    c.clear()
    assert c.get(2, 5.0) == 0.0


def test_the_learned_cost_leaves_out_the_final_check(hunl_bp, monkeypatch):
    """What a useful solve needs is its setup (construction, tree, engine) and ``min_iterations``
    iterations: not the final exploitability check, which a solve short of time skips. The solve is
    asked for the minimum iterations before that check (``SolveLimits.min_iterations``)."""
    import dataclasses

    import mccfr.serving.solving
    from mccfr.serving.solving import SolvingResponder
    from subgame.nested import solve_state

    sol0, node = solve_state(hunl_bp, RIVER, "reach-maxmargin", time_budget=None, iterations=3)
    seen = []

    def fake(bp, st, method, limits, **kw):
        seen.append(limits)
        timing = {"tree_s": 0.0, "engine_s": 0.05, "iter_s": 0.01, "measure_s": 30.0}
        return dataclasses.replace(sol0, iterations=20, elapsed_s=0.0, timing=timing), node

    monkeypatch.setattr(mccfr.serving.solving, "solve_state", fake)
    r = SolvingResponder(hunl_bp, "reach-maxmargin", solver_threads=1, min_iterations=7)
    try:
        a = r.answer(RIVER, session="cost", time_budget_ms=5000)
        r._wait_idle()
    finally:
        r.close()
    assert a["source"] == "subgame"
    assert seen[0].min_iterations == 7
    # setup 0.05 s (plus the little the fake's call took) and 7 x 0.01 s; the 30 s check left out
    assert 0.05 + 7 * 0.01 <= r.cost.get(3) < 0.5, r.cost.snapshot()
    raw = r.size.estimate(hunl_bp.game.state(RIVER))[1]
    assert raw and r.cost.get(3, raw) == pytest.approx(r.cost.get(3))  # per unit of its size too


def test_serve_solving_flags_are_checked(tmp_path):
    from click.testing import CliRunner

    from mccfr.cli import cli

    gamedef = (
        "GAMEDEF\nnolimit\nnumPlayers = 2\nnumRounds = 4\nstack = 2000 2000\nblind = 100 50\n"
        "firstPlayer = 2 1 1 1\nnumSuits = 4\nnumRanks = 13\nnumHoleCards = 2\nnumBoardCards = 0 3 1 1\n"
        "END GAMEDEF\n"
    )
    (tmp_path / "run.toml").write_text(f'gamedef = """{gamedef}"""\n')
    run = CliRunner()
    r = run.invoke(cli, ["serve", str(tmp_path), "--solve-from", "turn"])
    assert r.exit_code == 2 and "--solve-from applies to subgame solving" in r.stderr
    r = run.invoke(cli, ["serve", str(tmp_path), "--solve", "resolve", "--solve-from", "fifth"])
    assert r.exit_code == 2 and "'fifth' is no betting round" in r.stderr and "river" in r.stderr
    r = run.invoke(cli, ["serve", str(tmp_path), "--ray", "--port", "0"])
    assert r.exit_code == 2 and "fixed port" in r.stderr
    r = run.invoke(cli, ["serve", str(tmp_path), "--last-round-threads", "1"])
    assert r.exit_code == 2 and "--last-round-threads applies to subgame solving" in r.stderr
    r = run.invoke(
        cli,
        ["serve", str(tmp_path), "--solve", "resolve", "--solver-threads", "1", "--last-round-threads", "2"],
    )
    assert r.exit_code == 2 and "more than --solver-threads 1" in r.stderr
    r = run.invoke(cli, ["serve", str(tmp_path), "--solver-in-threads"])
    assert (
        r.exit_code == 2 and "--solver-processes/--solver-in-threads applies to subgame solving" in r.stderr
    )


def test_solving_starts_at_the_turn_by_default_where_the_budget_allows(tmp_path):
    """Without --solve-from, ``mccfr serve --solve`` (and ``mccfr play --method``) solve from the
    turn in hold'em at a default budget of 2 s or more (docs/solving.md, "Defaults"), from the last
    round below it and in games of other lengths; an explicit round wins."""
    from blueprint.defaults import TURN_SOLVING_FROM_BUDGET_MS, default_solve_from
    from mccfr.cli.serve import _solving_options

    for rounds, boards in ((4, "0 3 1 1"), (2, "0 1")):
        gamedef = (
            f"GAMEDEF\nnolimit\nnumPlayers = 2\nnumRounds = {rounds}\nstack = 2000 2000\n"
            f"blind = 100 50\nfirstPlayer = {' '.join(['2'] + ['1'] * (rounds - 1))}\nnumSuits = 4\n"
            f"numRanks = 13\nnumHoleCards = 2\nnumBoardCards = {boards}\nEND GAMEDEF\n"
        )
        run = tmp_path / f"r{rounds}"
        run.mkdir()
        (run / "run.toml").write_text(f'gamedef = """{gamedef}"""\n')
        at = lambda budget, solve_from=None: _solving_options(run, budget, "resolve", solve_from, None, None)  # noqa: E731
        default = 2 if rounds == 4 else rounds - 1
        assert at(2_000)["from_round"] == default == default_solve_from(rounds, 2_000)
        assert at(TURN_SOLVING_FROM_BUDGET_MS - 1)["from_round"] == rounds - 1
        assert at(2_000, "1")["from_round"] == 1
        assert _solving_options(run, 2_000, None, None, None, None) == {}  # blueprint answers only
    # a directory that is no run: a clear error naming the file, never a traceback
    from click.testing import CliRunner

    from mccfr.cli import cli

    (tmp_path / "nog").mkdir()
    (tmp_path / "nog" / "run.toml").write_text("x = 1\n")
    (tmp_path / "empty").mkdir()
    for d, says in (("nog", "no 'gamedef' string"), ("empty", "cannot read")):
        r = CliRunner().invoke(cli, ["serve", str(tmp_path / d), "--solve", "resolve"])
        assert r.exit_code != 0 and says in r.output and "Traceback" not in r.output, r.output


@pytest.mark.timing  # needs subgame answers within a 5 s budget: run alone, after the default run
def test_a_later_subgame_of_the_session_gives_the_viewer_the_range_its_answers_played(hunl_bp):
    """The river's first decision was answered from a subgame (a check for some hands, a bet for
    others). The opponent then bets a size that subgame lacks: the nested subgame solved for the
    session weighs the viewer's range by the check it was answered with, not by the blueprint's
    check; a query without the session gets the blueprint's range."""
    from mccfr.serving.solving import SolvingResponder
    from subgame.nested import nested_subgame

    r = SolvingResponder(hunl_bp, "unsafe", default_time_budget_ms=5000, solver_threads=1, min_iterations=3)
    try:
        first = "MATCHSTATE:0:3:cc/cc/cc/:AsKd|/2c7h9s/Td/3c"
        a = r.answer(first, session="p1")
        assert a["source"] == "subgame" and a["strategy"].get("c", 0) > 0, a
        key = (3, tuple(hunl_bp.game.state(first).hole_cards[0]), "unsafe")
        sol, node = r.sessions.lookup("p1", hunl_bp.game.state(first), key)
        check = sol.node_strategy(node)["c"]
        later_ms = "MATCHSTATE:0:3:cc/cc/cc/cr333:AsKd|/2c7h9s/Td/3c"
        later = hunl_bp.game.state(later_ms)
        assert r.sessions.lookup("p1", later, key) is None  # not in the solved subgame: a new solve
        played = r.policy.played("p1", key, later)
        assert list(played) == [6]
        np.testing.assert_array_equal(played[6], check)
        b = r.answer(later_ms, session="p1")
        assert b["source"] == "subgame" and not b["reused"], b
        sol_b, _ = r.sessions.lookup("p1", later, key)
        want = nested_subgame(hunl_bp, later, played=played).ranges
        np.testing.assert_allclose(sol_b.subgame.ranges, want, rtol=1e-6)
        plain = nested_subgame(hunl_bp, later).ranges
        assert np.abs(want[0] / want[0].sum() - plain[0] / plain[0].sum()).sum() > 0.05
        np.testing.assert_array_equal(want[1], plain[1])
        assert r.policy.played(None, key, later) == {} and r.policy.played("p2", key, later) == {}
    finally:
        r.close()


def test_locked_queries_solve_under_the_locks_and_bad_locks_are_422(hunl_bp, responder):
    """``locks`` in the request: the seat to act at a locked node plays the lock; a lock that does
    not fit the subgame, or one sent where nothing is solved, is a 422 naming the problem."""
    from mccfr.serving.solving import SolvingResponder

    with serving(responder) as c:
        bp_only = c.post("/v1/strategy", json={"matchstate": PREFLOP, "locks": {"": {"c": 1}}})
    assert bp_only.status_code == 422 and "need a solving server" in bp_only.json()["error"]
    r = SolvingResponder(hunl_bp, "unsafe", default_time_budget_ms=20000, solver_threads=1, min_iterations=3)
    # a hand the blueprint brings to this river (a hand of zero reach is not in the subgame's
    # range: it plays the lock at a locked node, and the uniform strategy elsewhere)
    idx = hand_index(hunl_bp.game.gamedef)
    for hole in ("AsKd", "KcJh", "9d8d", "Ac2d", "7s6s"):
        river = f"MATCHSTATE:0:3:cc/cc/cc/:{hole}|/2c7h9s/Td/3c"
        reach = state_subgame(hunl_bp, hunl_bp.game.state(river)).ranges[0]
        if reach[idx[tuple(sorted(hunl_bp.game.state(river).hole_cards[0]))]] > 0:
            break

    def idle():  # the solver thread free again (an answered solve leaves it a moment later)
        t_end = time.monotonic() + 30
        while time.monotonic() < t_end:
            with r._cond:
                if not r._running and not r._queue:
                    return
            time.sleep(0.01)
        raise AssertionError("the solver is still busy 30 s after the last answer")

    try:
        with serving(r, threads=2) as c:
            # a loaded machine (CI's parallel workers; the first solve compiling the solver's
            # kernels) may answer from the blueprint with a load fallback ("deadline", ...): asked
            # again, with the solver idle and its cost estimate forgotten, the lock is played
            for _ in range(3):
                idle()
                r.cost.clear()
                body = c.post(
                    "/v1/strategy", json={"matchstate": river, "session": "l1", "locks": {"": {"c": 1}}}
                )
                assert body.status_code == 200, body.text
                a = body.json()
                if a.get("fallback") not in ("busy", "budget", "deadline", "memory"):
                    break
            shown = {k: v for k, v in a.items() if k != "strategy"}
            assert a["source"] == "subgame" and a["strategy"]["c"] == pytest.approx(1.0, abs=1e-6), shown
            st = hunl_bp.game.state(river)
            assert r.sessions.lookup("l1", st, (3, tuple(st.hole_cards[0]), "unsafe")) is None  # not kept
            idle()
            free = c.post("/v1/strategy", json={"matchstate": river, "session": "l2"}).json()
            if free["source"] == "subgame":  # (a loaded machine may answer it from the blueprint: busy)
                assert r.sessions.lookup("l2", st, (3, tuple(st.hole_cards[0]), "unsafe")) is not None
            for locks, fragment in (
                ({"r99999": {"c": 1}}, "no action 'r99999'"),
                ({"": {"c": 0.5}}, "sum to 0.5, not 1"),
                ({"": {"c": [1.0, 0.0]}}, "one probability or 1326"),
            ):
                idle()  # a lock that does not fit is found by the solve: it needs the solver
                bad = c.post("/v1/strategy", json={"matchstate": river, "locks": locks})
                assert bad.status_code == 422 and bad.json()["kind"] == "bad_locks", bad.text
                assert fragment in bad.json()["error"]
            bad = c.post("/v1/strategy", json={"matchstate": river, "locks": {"": 1}})
            assert bad.status_code == 422 and bad.json()["kind"] == "invalid_request"
            bad = c.post(
                "/v1/strategy", json={"matchstate": river, "method": "blueprint", "locks": {"": {"c": 1}}}
            )
            assert bad.status_code == 422 and "locks need a subgame solve" in bad.json()["error"]
    finally:
        r.close()
