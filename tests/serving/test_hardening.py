"""Issue 18, a service that runs for weeks: solved subgames under a memory budget in bytes (LRU by
measured size, the "memory" fallback, /metrics), a deadline per answer under load (the solver queue
is projected at arrival), and the guard for a network the service does not own (401, 413, 429)."""

from __future__ import annotations

import dataclasses
import gc
import http.client
import json
import socket
import threading
import time

import numpy as np
import pytest

from mccfr.serving.query import QueryError, check_session
from mccfr.serving.resources import parse_bytes
from mccfr.serving.service import ThreadedServer, create_app
from mccfr.serving.solving import SolverResources, SolvingOptions, SolvingResponder
from subgame.cache import ENTRY_OVERHEAD, SessionCache, nbytes

PREFLOP = "MATCHSTATE:1:0::|AhAd"
RIVER = "MATCHSTATE:0:3:cc/cc/cc/:AsKd|/2c7h9s/Td/3c"


def river(hand: int) -> str:
    """A river decision of seat 0 in hand ``hand`` (the same cards: only the hand number differs)."""
    return f"MATCHSTATE:0:{hand}:cc/cc/cc/:AsKd|/2c7h9s/Td/3c"


# -- sizes -------------------------------------------------------------------------------------------
def test_nbytes_counts_each_buffer_once_like_numpy():
    a = np.zeros((100, 7), np.float32)
    b = np.arange(1000, dtype=np.int64)
    view = b[10:20]
    assert nbytes(a, python=False) == a.nbytes
    obj = {"a": a, "again": a, "view": view, "list": [b, (a,)], "n": 3, "s": "text"}
    assert nbytes(obj, python=False) == a.nbytes + b.nbytes  # the view is b's memory
    assert nbytes(view, python=False) == b.nbytes  # a view keeps its base alive
    assert nbytes(obj) > a.nbytes + b.nbytes  # plus the Python objects

    @dataclasses.dataclass
    class Holder:
        x: np.ndarray
        y: list

    h = Holder(a, [np.ones(5), np.ones(5)])
    assert nbytes(h, python=False) == a.nbytes + 2 * 40


def _arrays_reachable(obj) -> list[np.ndarray]:
    """Every numpy array reachable from ``obj`` through gc referents (an independent walk), not
    entering the game definition, the bet abstraction, classes, functions or modules."""
    from abstraction.bets import BetAbstraction
    from holdem.gamedef import GameDef

    stop = (GameDef, BetAbstraction, type, type(np), type(len), type(_arrays_reachable))
    seen, out, todo = set(), [], [obj]
    while todo:
        o = todo.pop()
        if id(o) in seen or isinstance(o, stop):
            continue
        seen.add(id(o))
        if isinstance(o, np.ndarray):
            out.append(o)
            continue
        todo.extend(gc.get_referents(o))
    return out


def test_nbytes_of_a_solved_subgame_is_the_numpy_bytes_it_holds(hunl_bp):
    from subgame.nested import solve_state

    sol, _ = solve_state(hunl_bp, RIVER, "reach-maxmargin", time_budget=None, iterations=5)
    arrays = _arrays_reachable(sol)
    owners = {}
    for x in arrays:
        base = x
        while isinstance(base.base, np.ndarray):
            base = base.base
        owners[id(base)] = base.nbytes
    want = sum(owners.values())
    assert nbytes(sol, python=False) == want
    assert want >= sol.strategy.nbytes + sol.subgame.ranges.nbytes
    assert nbytes(sol) >= want


def test_parse_bytes():
    assert (
        parse_bytes("512M") == 512 * 2**20
        and parse_bytes("2G") == 2 * 2**30
        and parse_bytes("1.5GiB") == 3 * 2**29
    )
    assert (
        parse_bytes("64k") == 65536
        and parse_bytes("100") == 100
        and parse_bytes(7) == 7
        and parse_bytes("1KB") == 1024
    )
    for bad in ("", "G", "-1", "12X", "lots"):
        with pytest.raises(ValueError):
            parse_bytes(bad)


# -- the session cache -------------------------------------------------------------------------------
def test_session_cache_evicts_least_recently_used_by_bytes():
    budget = 3 * (1000 + ENTRY_OVERHEAD)
    c = SessionCache(budget)
    for s in ("a", "b", "c"):
        assert c.store(s, object(), None, size=1000)
    assert len(c) == 3 and c.bytes == budget and c.evictions == 0
    with c._lock:  # a lookup makes "a" the most recent (lookup itself needs a real solution)
        c._entries.move_to_end("a")
    assert c.store("d", object(), None, size=1000)
    assert "b" not in c and {"a", "c", "d"} == set(c._entries)
    assert c.evictions == 1 and c.bytes <= budget
    assert c.store("big", object(), None, size=2 * 1000 + ENTRY_OVERHEAD)  # needs two entries' room
    assert c.evictions == 3 and set(c._entries) == {"d", "big"} and c.bytes <= budget
    # reservations (solves in flight) share the budget; one larger than it is refused untouched
    assert not c.reserve(budget + 1) and c.refused == 1 and len(c) == 2
    assert c.reserve(budget - 10)  # evicts everything to make room
    assert len(c) == 0 and c.bytes == 0
    assert not c.store("e", object(), None, size=1000)  # no room next to the reservation
    assert c.rejected == 1
    c.release(budget - 10)
    assert c.store("e", object(), None, size=1000)
    snap = c.snapshot()
    assert snap["cache_entries"] == 1 and snap["budget_bytes"] == budget and snap["evictions"] == 5
    # get: what was stored, for the key it was stored for only
    rec = object()
    assert c.store("r", rec, ("hand", 1), size=10)
    assert (
        c.get("r", ("hand", 1)) is rec and c.get("r", ("hand", 2)) is None and c.get("nobody", None) is None
    )


def test_no_client_session_names_the_services_own_entries():
    """The shared pre-flop subgames and the sessions' played strategies are kept under keys no
    client's session can be (sessions are printable; the keys start with a NUL)."""
    from holdem.game import Game
    from subgame.policy import SolvePolicy

    state = Game.load("hunl20").state("MATCHSTATE:0:0:r300r900r1500:AhKd|")
    keys = (
        SolvePolicy.public_key(state, "unsafe"),
        SolvePolicy.played_key("public:unsafe:0:r300r900r1500"),
        SolvePolicy.public_key(state, "unsafe", {1: 0}),
    )
    for key in keys:
        assert key is not None and not key.isprintable()
        with pytest.raises(QueryError):
            check_session(key)
    assert keys[0] != keys[2]  # a subgame whose ranges follow a played decision is another subgame


# -- the solving responder under a memory budget ----------------------------------------------------
@pytest.fixture(scope="module")
def river_solution(hunl_bp):
    from subgame.nested import solve_state

    return solve_state(hunl_bp, RIVER, "reach-maxmargin", time_budget=None, iterations=20)


@pytest.mark.timing  # solves against a deadline: run alone, after the default run, with the kernel cache warm
def test_cached_sessions_stay_within_the_budget_lru_first_out(hunl_bp, river_solution):
    sol, _ = river_solution
    one = nbytes(sol) + ENTRY_OVERHEAD
    peak = sol.state_bytes + one
    budget = 3 * one + peak  # room for three sessions beside one solve in flight
    r = SolvingResponder(hunl_bp, "reach-maxmargin", memory_budget=budget, solver_threads=1, min_iterations=3)
    try:
        r.warm_up()
        assert r.memory_budget == budget and r.sessions.bytes == 0  # warm-up keeps nothing
        for h in range(8):
            a = r.answer(river(h), session=f"s{h}", time_budget_ms=400)
            assert a["source"] == "subgame", {k: v for k, v in a.items() if k != "strategy"}
            assert r.sessions.bytes + r.sessions.reserved <= budget
        m = r.metrics()["memory"]
        assert m["budget_bytes"] == budget and m["cache_bytes"] <= budget
        # each session keeps its subgame and (a small entry) the strategy its answer played
        with r.sessions._lock:
            sizes = {k: e[2] for k, e in r.sessions._entries.items()}
        subgames = [n for k, n in sizes.items() if not k.startswith("\x00played:")]
        assert 1 <= len(subgames) < 8 and m["evictions"] == 16 - m["cache_entries"]
        assert all(n == pytest.approx(one, rel=0.05) for n in subgames)
        assert all(n < one / 10 for k, n in sizes.items() if k.startswith("\x00played:"))
        # the most recent session is reused, the oldest was evicted and is solved again
        assert r.answer(river(7), session="s7", time_budget_ms=1500)["reused"] is True
        assert r.answer(river(0), session="s0", time_budget_ms=1500)["reused"] is False
        # the size estimate was checked against the real size after each solve
        last = m["last_solve"]["3"]
        assert last["actual"] > 0 and m["correction"]["3"] > 0
        est, raw = r.size.estimate(r._checker.parse(river(9)))
        assert raw is not None and est == pytest.approx(last["actual"], rel=0.25)
    finally:
        r.close()


def test_a_solve_that_cannot_fit_the_memory_budget_falls_back_labelled(hunl_bp):
    r = SolvingResponder(hunl_bp, "reach-maxmargin", memory_budget="64K", solver_threads=1)
    try:
        r.warm_up()
        a = r.answer(RIVER, session="m", time_budget_ms=1500)
        assert a["source"] == "blueprint" and a["fallback"] == "memory" and a["method"] == "reach-maxmargin"
        assert a["strategy"] == hunl_bp.strategy(RIVER)
        assert r.metrics()["solver"]["outcomes"] == {"memory": 1}
        assert r.sessions.refused >= 1 and r.sessions.reserved == 0 and len(r.sessions) == 0
        assert r.answer(PREFLOP)["source"] == "blueprint" and "fallback" not in r.answer(PREFLOP)
    finally:
        r.close()
    with pytest.raises(ValueError, match="not a byte count"):
        SolvingResponder(hunl_bp, memory_budget="a lot")


def test_metrics_report_the_memory_budget(hunl_bp):
    r = SolvingResponder(hunl_bp, "reach-maxmargin", memory_budget="64K", solver_threads=1)
    with ThreadedServer(create_app(r)) as srv:
        status, out = _post(srv.port, {"matchstate": RIVER, "session": "x", "time_budget_ms": 1000})
        assert status == 200 and out["fallback"] == "memory"
        m = json.loads(_get(srv.port, "/metrics")[1])
    assert m["memory"]["budget_bytes"] == 65536
    assert {"cache_bytes", "cache_entries", "evictions", "reserved_bytes"} <= set(m["memory"])
    assert m["fallbacks"] == {"memory": 1} and m["solver"]["outcomes"] == {"memory": 1}


# -- a deadline per answer under load ----------------------------------------------------------------
@pytest.fixture
def fake_slow_solve(monkeypatch, river_solution):
    """The solving responder's ``solve_state`` replaced by a stand-in that behaves like a real solve
    in time: its first 0.1 s are useful work, then it iterates until its deadline (checking stop), and it
    returns a real river solution. Counts the solves running at once."""
    import mccfr.serving.solving

    sol0, node = river_solution
    state = {"running": 0, "peak": 0, "calls": 0}
    lock = threading.Lock()

    def slow(bp, st, method, limits, **kw):
        deadline, stop = limits.deadline, limits.stop
        t = time.perf_counter()
        with lock:
            state["running"] += 1
            state["calls"] += 1
            state["peak"] = max(state["peak"], state["running"])
        try:
            while time.perf_counter() < (deadline or t + 0.1) - 0.01 and not (
                stop is not None and stop.is_set()
            ):
                time.sleep(0.005)
            el = time.perf_counter() - t
            its = int(el / 0.01)
            return dataclasses.replace(
                sol0, iterations=its, elapsed_s=el, timing={"tree_s": 0.0, "iter_s": 0.008, "measure_s": None}
            ), node
        finally:
            with lock:
                state["running"] -= 1

    monkeypatch.setattr(mccfr.serving.solving, "solve_state", slow)
    return state


def _post(port: int, body: dict, headers: dict | None = None) -> tuple[int, dict]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(
        "POST",
        "/v1/strategy",
        body=json.dumps(body),
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    r = c.getresponse()
    out = json.loads(r.read())
    c.close()
    return r.status, out


def _get(port: int, path: str, headers: dict | None = None) -> tuple[int, str]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    return r.status, r.read().decode()


def test_no_answer_later_than_its_budget_under_many_concurrent_solves(hunl_bp, fake_slow_solve):
    """60 concurrent river queries, each asking for a solve of at most 600 ms, against 2 solver
    threads whose solves run to their deadlines: every answer comes within the budget (client
    round trip, plus slack for the test's own threads), the solves admitted never exceed the
    threads, and several solves ran one after another from the queue."""
    budget = 600
    r = SolvingResponder(hunl_bp, "reach-maxmargin", solver_threads=2, min_iterations=5, max_solve_ms=150)
    r.cost.finished(3, 0.12)  # as learned: a useful river solve takes 0.12 s
    results: list = []
    with ThreadedServer(create_app(r, threads=4)) as srv:

        def client(k: int) -> None:
            for i in range(3):
                t = time.perf_counter()
                status, out = _post(
                    srv.port,
                    {"matchstate": river(100 * k + i), "session": f"c{k}-{i}", "time_budget_ms": budget},
                )
                results.append((time.perf_counter() - t, status, out))

        threads = [threading.Thread(target=client, args=(k,)) for k in range(60)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        m = json.loads(_get(srv.port, "/metrics")[1])
    assert len(results) == 180 and all(s == 200 for _, s, _ in results)
    rtt = sorted(x for x, _, _ in results)
    server = [o["elapsed_ms"] for _, _, o in results]
    assert max(server) <= budget, max(server)  # from arrival to answer, on the server's clock
    assert rtt[-1] <= budget / 1e3 + 0.25, rtt[-5:]  # round trip, with slack for 60 client threads
    kinds = [o.get("fallback") or o["source"] for _, _, o in results]
    assert fake_slow_solve["peak"] <= 2
    assert kinds.count("subgame") >= 4 and kinds.count("busy") >= 1, {k: kinds.count(k) for k in set(kinds)}
    assert m["in_flight"] == 0 and m["solver"]["running"] + m["solver"]["queued"] <= 2


@pytest.mark.timing  # asserts wall-clock bounds: run alone, after the default run
def test_queued_solves_start_in_turn_when_they_still_fit(hunl_bp, fake_slow_solve):
    """One solver thread, solves of at most 0.12 + 0.1 s, a budget of 1.5 s: of 8 queries at once
    several are solved one after another from the queue (not all but one turned away at once),
    and the rest are answered at once as busy; none late."""
    r = SolvingResponder(hunl_bp, "reach-maxmargin", solver_threads=1, min_iterations=5, max_solve_ms=100)
    r.cost.finished(3, 0.12)
    out: list = []

    def ask(k: int) -> None:
        t = time.perf_counter()
        a = r.answer(river(k), session=f"q{k}", time_budget_ms=1500)
        out.append((time.perf_counter() - t, a))

    try:
        threads = [threading.Thread(target=ask, args=(k,)) for k in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        r.close()
    solved = [t for t, a in out if a["source"] == "subgame"]
    busy = [t for t, a in out if a.get("fallback") == "busy"]
    assert len(solved) + len(busy) == 8 and len(solved) >= 4, [
        (round(t, 3), a.get("fallback")) for t, a in out
    ]
    assert max(solved) > 0.4  # the later ones waited in the queue for their turn
    assert all(t < 0.1 for t in busy)  # turned away at arrival, not after waiting
    assert max(t for t, _ in out) < 1.5


@pytest.mark.timing  # solves against a deadline: run alone, after the default run, with the kernel cache warm
def test_the_last_round_keeps_a_solver_thread_for_earlier_rounds(hunl_bp, fake_slow_solve):
    """Solving from the turn with 2 solver threads: river solves hold one thread at most, so a turn
    query that comes while river queries keep arriving still gets a solve; river queries beyond
    the share are answered at once (busy)."""
    turn = "MATCHSTATE:0:5:cc/cc/:AsKd|/2c7h9s/Td"
    r = SolvingResponder(hunl_bp, "reach-maxmargin", from_round=2, solver_threads=2, min_iterations=5)
    assert r.last_round_threads == 1
    r.cost.finished(3, 0.12)
    r.cost.finished(2, 0.12)
    rounds: list = []
    out: dict = {}

    def ask(name: str, ms: str) -> None:
        t = time.perf_counter()
        out[name] = (r.answer(ms, session=name, time_budget_ms=1000), time.perf_counter() - t)

    try:
        rivers = [threading.Thread(target=ask, args=(f"r{k}", river(k))) for k in range(4)]
        for th in rivers:
            th.start()
        time.sleep(0.2)  # the first river solve is running, the others were turned away
        with r._cond:
            rounds.extend(j.state.round for j in (*r._running, *r._queue))
        ask("turn", turn)
        for th in rivers:
            th.join()
    finally:
        r.close()
    kinds = {k: a.get("fallback") or a["source"] for k, (a, _) in out.items()}
    assert rounds == [3], rounds
    assert kinds["turn"] == "subgame", kinds
    assert sorted(v for k, v in kinds.items() if k != "turn") == ["busy", "busy", "busy", "subgame"], kinds
    assert all(t < 0.1 for k, (a, t) in out.items() if a.get("fallback") == "busy")
    with pytest.raises(ValueError, match="last_round_threads"):
        SolvingResponder(hunl_bp, from_round=2, solver_threads=2, last_round_threads=3)
    only = SolvingResponder(hunl_bp, solver_threads=2)  # river-only solving keeps no thread back
    assert only.last_round_threads == 2
    only.close()


def test_solving_options_are_checked_and_combine_with_keywords(hunl_bp):
    """SolvingOptions and its SolverResources refuse bad values when made; the responder takes
    them, a keyword overrides one of them (the resources' by name too), and an unknown keyword (a
    typo) is a TypeError naming it."""
    for record, bad, match in (
        (SolvingOptions, {"min_iterations": 0}, "min_iterations"),
        (SolvingOptions, {"reserve_ms": -1}, "reserve_ms"),
        (SolvingOptions, {"max_solve_ms": 0}, "max_solve_ms"),
        (SolvingOptions, {"measure_cards": 1}, "measure_cards"),
        (SolverResources, {"solver_threads": 0}, "solver_threads"),
        (SolverResources, {"memory_budget": "lots"}, "not a byte count"),
    ):
        with pytest.raises(ValueError, match=match):
            record(**bad)
        with pytest.raises(ValueError, match=match):
            SolvingOptions().replace(**bad)
    with pytest.raises(TypeError, match="solver_thread"):
        SolvingResponder(hunl_bp, solver_thread=2)
    opts = SolvingOptions(min_iterations=4, resources=SolverResources(solver_threads=3, memory_budget="64M"))
    r = SolvingResponder(hunl_bp, options=opts, from_round=2, solver_threads=2)
    try:
        assert r.options == dataclasses.replace(
            opts, from_round=2, resources=dataclasses.replace(opts.resources, solver_threads=2)
        )
        assert r.options == opts.replace(from_round=2, solver_threads=2)
        assert (r.from_round, r.solver_threads, r.last_round_threads, r.min_iterations) == (2, 2, 1, 4)
        assert r.memory_budget == 64 << 20
        d = r.describe()
        assert (
            d["solve_from_round"] == 2 and d["solver_threads"] == 2 and d["memory_budget_bytes"] == 64 << 20
        )
    finally:
        r.close()


@pytest.mark.timing  # solves against a deadline: run alone, after the default run, with the kernel cache warm
def test_a_depth_limited_turn_answer_reports_its_exploitability(hunl_bp):
    """A real turn solve (depth-limited) through the responder: a subgame answer with its
    exploitability, measured on a sample of the river cards when an exact check would not fit."""
    turn = "MATCHSTATE:0:5:cc/cc/:AsKd|/2c7h9s/Td"
    r = SolvingResponder(
        hunl_bp,
        "reach-maxmargin",
        from_round=2,
        solver_threads=1,
        min_iterations=3,
        solver_nice=0,
        max_solve_ms=3000,  # a useful solve and its check, not 20 s of iterations up to the deadline
    )
    try:
        r.warm_up()
        a = r.answer(turn, session="t", time_budget_ms=20_000)
        assert a["source"] == "subgame", {k: v for k, v in a.items() if k != "strategy"}
        info = {k: v for k, v in a.items() if k != "strategy"}
        assert a["exploitability_pct_pot"] is not None and a["exploitability_pct_pot"] >= 0, info
        assert a["exploitability_cards"] in (None, 12) and a["leaf_cards"] is None  # every river card
        assert abs(sum(a["strategy"].values()) - 1) < 1e-5
        assert r.metrics()["memory"]["last_solve"]["2"]["actual"] > 0
    finally:
        r.close()


@pytest.mark.timing  # solves against a deadline: run alone, after the default run, with the kernel cache warm
def test_a_depth_limited_flop_answer_says_its_sample_of_the_later_cards(hunl_bp):
    """A flop solve through the responder (`--solve-from flop`, a budget it fits): a subgame answer
    whose turns and rivers came from a fixed sample of 12 cards, as the answer says."""
    from subgame.nested import solve_state

    flop = "MATCHSTATE:0:5:cc/:AsKd|/2c7h9s"
    # the flop's kernels compiled (or loaded) first, outside the budget: on a cold cache compiling
    # them takes longer than the budget
    solve_state(hunl_bp, flop, "reach-maxmargin", iterations=1, time_budget=None)
    # max_solve_ms: the solve stops iterating after about 3 s, then its exact check (about 5 s here)
    # ends well inside the budget; iterating to the budget's end left the check's time to an estimate
    r = SolvingResponder(
        hunl_bp,
        "reach-maxmargin",
        from_round=1,
        solver_threads=1,
        min_iterations=3,
        solver_nice=0,
        max_solve_ms=3_000,
    )
    try:  # no warm-up: its 2 s flop queries would teach the cost model that a flop solve takes long
        a = r.answer(flop, session="f", time_budget_ms=40_000)
        info = {k: v for k, v in a.items() if k != "strategy"}
        assert a["source"] == "subgame" and a["leaf_cards"] == 12, info
        # the check after the last iteration is reported when it fitted before the solve's end
        assert a["exploitability_pct_pot"] is None or a["exploitability_pct_pot"] >= 0, info
        assert abs(sum(a["strategy"].values()) - 1) < 1e-5
    finally:
        r.close()


# -- the guard: bearer token, body cap, in-flight cap ------------------------------------------------
class _Held:
    """A responder whose answers wait until ``release`` is set (requests stay in flight)."""

    methods = ("blueprint",)

    def __init__(self, inner):
        self.inner = inner
        self.game = inner.game
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    def answer(self, matchstate, session=None, time_budget_ms=None, method=None):
        self.entered.release()
        self.release.wait(30)
        return self.inner.answer(matchstate, session, time_budget_ms, method)

    def close(self):
        pass


def test_bearer_token_guards_strategy_and_metrics_not_healthz(responder, monkeypatch):
    with ThreadedServer(create_app(responder, api_key="s3cret-key")) as srv:
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": "s3cret-key"},
            {"Authorization": "Basic s3cret-key"},
        ):
            status, out = _post(srv.port, {"matchstate": PREFLOP}, headers)
            assert status == 401 and out["kind"] == "unauthorized" and "Bearer" in out["error"], (
                headers,
                out,
            )
            status, text = _get(srv.port, "/metrics", headers)
            assert status == 401 and json.loads(text)["kind"] == "unauthorized"
        ok = {"Authorization": "Bearer s3cret-key"}
        status, out = _post(srv.port, {"matchstate": PREFLOP}, ok)
        assert status == 200 and out["source"] == "blueprint"
        status, text = _get(srv.port, "/healthz")
        assert status == 200 and json.loads(text)["auth"] == "bearer"
        status, text = _get(srv.port, "/metrics", ok)
        m = json.loads(text)
        assert status == 200 and m["errors"]["unauthorized"] == 8 and m["responses"]["401"] == 8
        # the HTTP client of `mccfr play --server` sends the key
        from mccfr.serving.responders import HttpResponder

        assert HttpResponder(srv.url, api_key="s3cret-key").answer(PREFLOP)["source"] == "blueprint"
        with pytest.raises(QueryError) as info:
            HttpResponder(srv.url).answer(PREFLOP)
        assert info.value.status == 401
    with pytest.raises(ValueError, match="API key"):
        create_app(responder, api_key=" spaced ")


def _raw(port: int, data: bytes, read_timeout: float = 10) -> tuple[int, dict, bytes]:
    """Send raw bytes, read one response (status, headers, body) and whether the server closed."""
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout)
    try:
        s.sendall(data)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
        n = int(headers.get("content-length", 0))
        while len(rest) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        return status, headers, rest[:n]
    finally:
        s.close()


def test_bodies_over_the_limit_are_413_without_being_read(responder):
    with ThreadedServer(create_app(responder, max_body_bytes=1024)) as srv:
        # Content-Length says 10 MB: refused at once, though not a byte of the body is sent
        t = time.perf_counter()
        status, headers, body = _raw(
            srv.port,
            b"POST /v1/strategy HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n",
        )
        assert (
            status == 413
            and json.loads(body)["kind"] == "body_too_large"
            and "10,000,000" in json.loads(body)["error"]
        )
        assert headers.get("connection") == "close" and time.perf_counter() - t < 5
        # a chunked body: refused once the bytes read pass the limit
        chunk = b'{"matchstate": "' + b"x" * 600 + b'"}'
        data = (
            b"POST /v1/strategy HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 3
        )
        status, _, body = _raw(srv.port, data)
        assert status == 413 and json.loads(body)["kind"] == "body_too_large"
        # a body just under the limit is read and answered as usual
        status, out = _post(srv.port, {"matchstate": PREFLOP, "session": "x" * 200})
        assert status == 200
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        c.request(
            "POST",
            "/v1/strategy",
            body=b"{" + b" " * 5000 + b"}",
            headers={"Content-Type": "application/json"},
        )
        r = c.getresponse()
        assert r.status == 413 and json.loads(r.read())["kind"] == "body_too_large"
        m = json.loads(_get(srv.port, "/metrics")[1])
        assert m["errors"]["body_too_large"] == 3 and m["responses"]["413"] == 3


def test_more_requests_in_flight_from_one_client_than_allowed_are_429(responder):
    held = _Held(responder)
    with ThreadedServer(create_app(held, threads=4, max_inflight_per_client=2)) as srv:
        results: list = []
        threads = [
            threading.Thread(target=lambda: results.append(_post(srv.port, {"matchstate": PREFLOP})))
            for _ in range(2)
        ]
        for th in threads:
            th.start()
        for _ in range(2):
            assert held.entered.acquire(timeout=10)  # both are in flight
        status, out = _post(srv.port, {"matchstate": PREFLOP})
        assert status == 429 and out["kind"] == "too_many_requests" and "in flight" in out["error"]
        assert _get(srv.port, "/healthz")[0] == 200  # not counted, not capped
        held.release.set()
        for th in threads:
            th.join()
        assert [s for s, _ in results] == [200, 200]
        status, _ = _post(srv.port, {"matchstate": PREFLOP})  # the client is under its cap again
        assert status == 200
        m = json.loads(_get(srv.port, "/metrics")[1])
        assert m["errors"] == {"too_many_requests": 1} and m["in_flight"] == 0


def test_guard_options_are_checked(responder):
    for kw in ({"max_body_bytes": 0}, {"max_inflight_per_client": 0}, {"api_key": ""}):
        with pytest.raises(ValueError):
            create_app(responder, **kw)


def test_serve_flags(tmp_path):
    from click.testing import CliRunner

    from mccfr.cli import cli

    (tmp_path / "run.toml").write_text('gamedef = """GAMEDEF\\nlimit\\nEND GAMEDEF\\n"""\n')
    run = CliRunner()
    r = run.invoke(cli, ["serve", str(tmp_path), "--memory-budget", "2G"])
    assert r.exit_code == 2 and "--memory-budget applies to subgame solving" in r.stderr
    r = run.invoke(cli, ["serve", str(tmp_path), "--solve", "resolve", "--memory-budget", "lots"])
    assert r.exit_code == 2 and "not a byte count" in r.stderr
    r = run.invoke(cli, ["serve", "--help"])
    for flag in (
        "--memory-budget",
        "--api-key",
        "MCCFR_API_KEY",
        "--max-body-bytes",
        "--max-inflight-per-client",
    ):
        assert flag in r.stdout
