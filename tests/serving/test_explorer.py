"""The web page's endpoints without a browser: whole ranges (``/v1/range``) against the blueprint's
own answers, a subgame's range against the solution the responder keeps, hands against the bot
(``/v1/play/*``), the training curve (``/v1/run``), the guard in front of them all, and a 413 that a
client still sending its body reads whole."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

import numpy as np
import pytest

from holdem.state import State
from mccfr.serving.play import PlayError, Table
from mccfr.serving.ranges import hand_names
from mccfr.serving.responders import BlueprintResponder
from mccfr.serving.service import ThreadedServer, create_app
from mccfr.serving.solving import SolvingResponder

FLOP_BOARD = "2c7h9s"


def _call(url: str, path: str, body: dict | None = None, token: str | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=120) as f:
            return f.status, json.loads(f.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def server(responder, tmp_path_factory):
    run = tmp_path_factory.mktemp("run")
    with ThreadedServer(create_app(responder, describe={"run_dir": str(run)})) as srv:
        srv.run_dir = run
        yield srv


def _ms(seat: int, betting: str, hand: str, board: str = "") -> str:
    cards = f"{hand}|" if seat == 0 else f"|{hand}"
    if board:
        cards += "/" + "/".join([board[:6]] + [board[i : i + 2] for i in range(6, len(board), 2)])
    return f"MATCHSTATE:{seat}:0:{betting}:{cards}"


def _row(out: dict, h: int) -> dict[str, float]:
    return {a: out["strategy"][i][h] for i, a in enumerate(out["actions"])}


def test_the_range_is_the_blueprints_answer_for_every_hand(server, hunl_bp):
    status, out = _call(server.url, "/v1/range", {"betting": "cc/", "board": FLOP_BOARD})
    assert status == 200 and out["status"] == "decision" and out["source"] == "blueprint"
    assert out["seat"] == 0 and out["betting"] == "cc/" and out["board"] == ["2c", "7h", "9s"]
    names = hand_names(hunl_bp.gamedef)
    assert len(out["reach"]) == len(names) == 1326
    checked = 0
    for h, name in enumerate(names):
        if any(name[i : i + 2] in FLOP_BOARD for i in (0, 2)):
            assert out["reach"][h] == 0 and sum(_row(out, h).values()) == 0
            continue
        want = hunl_bp.strategy(_ms(0, "cc/", name, FLOP_BOARD))
        assert _row(out, h) == pytest.approx(want, abs=1e-5), name
        # seat 0's reach: the probability that it checked behind before the flop with this hand
        assert out["reach"][h] == pytest.approx(hunl_bp.strategy(_ms(0, "c", name))["c"], abs=1e-5)
        checked += 1
    assert checked == 1176


def test_an_off_tree_raise_typed_in_is_translated(server, hunl_bp):
    status, out = _call(server.url, "/v1/range", {"betting": "cc/", "board": FLOP_BOARD, "action": "r700"})
    assert status == 200 and out["betting"] == "cc/r700" and out["seat"] == 1
    assert out["source"] == "translated"
    names = hand_names(hunl_bp.gamedef)
    for name in ("AhKh", "QsQd", "7d2d"):
        h = names.index(name)
        ms = _ms(1, "cc/r700", name, FLOP_BOARD)
        assert _row(out, h) == pytest.approx(hunl_bp.strategy(ms), abs=1e-5)
        # seat 1's only action so far: its call before the flop
        assert out["reach"][h] == pytest.approx(hunl_bp.strategy(_ms(1, "", name))["c"], abs=1e-5)


def test_a_state_off_the_abstraction_gets_the_blueprints_fallback(server, hunl_bp):
    # three raises in a round where the 'small' abstraction allows two
    status, out = _call(server.url, "/v1/range", {"betting": "r200r400", "action": "r600"})
    assert status == 200 and out["source"] == "fallback" and "abstraction has none" in out["reason"]
    names = hand_names(hunl_bp.gamedef)
    for name in ("AhAd", "7c2d"):
        want = hunl_bp.answer(_ms(0, "r200r400r600", name))
        assert want.source == "fallback"
        assert _row(out, names.index(name)) == pytest.approx(want.strategy, abs=1e-5)


def test_public_states_that_wait_for_cards_or_ended(server):
    status, out = _call(server.url, "/v1/range", {"betting": "c", "action": "c"})
    assert (
        status == 200 and out["status"] == "cards_due" and out["cards_due"] == 3 and out["betting"] == "cc/"
    )
    assert "strategy" not in out
    status, out = _call(server.url, "/v1/range", {"action": "f"})
    assert status == 200 and out["status"] == "hand_over" and out["betting"] == "f"
    status, out = _call(server.url, "/v1/range", {"betting": "r2000", "action": "c"})
    assert status == 200 and out["status"] == "cards_due" and out["cards_due"] == 5  # all-in: the whole board
    status, out = _call(server.url, "/v1/range", {"betting": "r2000c///", "board": "2c7h9sTd3c"})
    assert status == 200 and out["status"] == "hand_over"


@pytest.mark.parametrize(
    "body, status, kind, fragment",
    [
        ({"betting": "cc"}, 400, "bad_history", "ends early"),
        ({"betting": "cx"}, 400, "bad_history", "position 1"),
        ({"betting": "cc/", "board": "2c7h"}, 200, None, None),  # one card short: still due
        ({"betting": "cc/", "board": "2c7h9sTd"}, 400, "bad_board", "at most 3"),
        ({"betting": "cc/", "board": "2c2c9s"}, 400, "bad_board", "repeats"),
        ({"betting": "cc/", "board": "2c7h1s"}, 400, "bad_board", "1s"),
        ({"betting": "", "action": "r50000"}, 400, "bad_action", "legal: f, c, r200..r2000"),
        ({"betting": "f", "action": "c"}, 409, "hand_over", "over"),
        ({"betting": "cc/", "action": "c"}, 409, "cards_due", "due"),
        ({"betting": "", "method": "resolve"}, 422, "bad_method", "not available"),
        ({"betting": "", "extra": 1}, 422, "invalid_request", "extra"),
    ],
)
def test_bad_states_are_4xx_naming_the_problem(server, body, status, kind, fragment):
    got, out = _call(server.url, "/v1/range", body)
    assert got == status, out
    if kind is not None:
        assert out["kind"] == kind and fragment in out["error"], out


def test_the_page_is_open_and_the_endpoints_need_the_token(responder):
    with ThreadedServer(create_app(responder, api_key="k3y")) as srv:
        for path in ("/", "/static/app.js", "/static/style.css"):
            with urllib.request.urlopen(srv.url + path) as f:
                assert f.status == 200 and f.read()
        for path, body in (("/v1/game", None), ("/v1/range", {}), ("/v1/play/deal", {}), ("/v1/run", None)):
            status, out = _call(srv.url, path, body)
            assert status == 401 and out["kind"] == "unauthorized", path
        status, out = _call(srv.url, "/v1/game", token="k3y")
        assert status == 200 and out["num_hole_cards"] == 2 and len(out["hands"]) == 1326
        status, out = _call(srv.url, "/v1/range", {}, token="k3y")
        assert status == 200 and out["seat"] == 1


def _raw_post(port: int, path: str, body: bytes, chunked: bool = False) -> tuple[int, dict, bytes]:
    """Send a whole request on a raw socket, then read the whole response until the server
    closes the connection."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        if chunked:
            head += "Transfer-Encoding: chunked\r\n\r\n"
            step = 64 * 1024
            data = b"".join(
                b"%x\r\n" % len(body[i : i + step]) + body[i : i + step] + b"\r\n"
                for i in range(0, len(body), step)
            )
            data += b"0\r\n\r\n"
        else:
            head += f"Content-Length: {len(body)}\r\n\r\n"
            data = body
        s.sendall(head.encode() + data)
        buf = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    finally:
        s.close()
    head_text, _, rest = buf.partition(b"\r\n\r\n")
    lines = head_text.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    return int(lines[0].split()[1]), headers, rest


@pytest.mark.parametrize("chunked", [False, True])
def test_a_client_still_sending_a_2mb_body_reads_the_whole_413(responder, chunked):
    with ThreadedServer(create_app(responder)) as srv:
        body = b'{"matchstate": "' + b"x" * (2 * 2**20) + b'"}'
        for path in ("/v1/strategy", "/v1/range"):
            status, headers, rest = _raw_post(srv.port, path, body, chunked)
            assert status == 413 and headers["connection"] == "close"
            assert len(rest) == int(headers["content-length"])
            out = json.loads(rest)
            assert out["kind"] == "body_too_large" and "65,536" in out["error"]
        status, _ = _call(srv.url, "/v1/range", {})
        assert status == 200  # and the server goes on


def test_a_hand_against_the_bot_to_its_end(server, responder):
    status, v = _call(server.url, "/v1/play/deal", {"hand_number": 3})
    assert status == 200 and v["position"] == 1 and v["hand_number"] == 3 and len(v["hole"]) == 2
    answers = list(v["bot"])
    seen = [v]
    while not v["over"]:
        status, out = _call(server.url, "/v1/play/act", {"hand": v["hand"], "action": "z"})
        assert status == 400 and out["kind"] == "bad_action" and "legal" in out["error"]
        status, v = _call(server.url, "/v1/play/act", {"hand": v["hand"], "action": "c"})
        assert status == 200, v
        answers += v["bot"]
        seen.append(v)
    assert answers and all(a["source"] == "blueprint" and a["elapsed_ms"] >= 0 for a in answers)
    # the log line is the dealer's: it replays to the same result
    state = State.from_string(responder.game, v["log_line"])
    assert state.hand_id == 3 and state.is_terminal() and state.names == ("mccfr", "you")
    assert state.net[1] == v["net"] == state.payoffs()[1]
    assert v["log_line"].startswith(f"STATE:3:{v['betting']}:")
    # while the hand ran no strategy was sent; the finished hand's review has every bot action,
    # each drawn from its strategy
    assert all("strategy" not in a for a in answers)
    assert [a["action"] for a in v["review"]] == [a["action"] for a in answers]
    for a in v["review"]:
        assert a["strategy"][a["action"]] > 0
    assert tuple(v["bot_hole"]) == tuple(state.hole_cards[0])
    status, out = _call(server.url, "/v1/play/act", {"hand": v["hand"], "action": "c"})
    assert status == 404 and out["kind"] == "unknown_hand"  # a finished hand is forgotten


def test_the_table_is_bounded_and_refuses_out_of_turn(responder):
    t = Table(responder.game, seed=1, max_hands_per_client=2)
    a, b, c = (t.deal(n) for n in (0, 1, 2))
    assert len(t) == 2  # one client: its oldest hand went
    with pytest.raises(PlayError) as info:
        t.view(a)
    assert info.value.kind == "unknown_hand"
    t2 = Table(responder.game, seed=1, max_hands=1)  # a full table refuses another client
    t2.deal(0, "x")
    with pytest.raises(PlayError) as info:
        t2.deal(1, "y")
    assert info.value.kind == "table_full" and info.value.status == 503
    # hand 1: the person sits at position 1, who acts first before the flop
    assert t.bot_query(b) is None and t.view(b)["to_act"] == "you"
    t.act(b, "c")
    assert t.bot_query(b) is not None
    with pytest.raises(PlayError) as info:
        t.act(b, "c")
    assert info.value.kind == "not_your_turn"
    with pytest.raises(PlayError):
        t.deal(-1)


def test_the_run_curve(server):
    rows = [{"iteration": i, "seconds": i / 10, "exploitability": 1.0 / (i + 1)} for i in range(5000)]
    (server.run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"torn')
    status, out = _call(server.url, "/v1/run")
    assert status == 200 and out["unit"] == "mbb/game" and out["factor"] == 10.0
    got = out["rows"]
    assert len(got) == 2000 and got[0]["iteration"] == 0 and got[-1]["iteration"] == 4999
    assert np.all(np.diff([r["iteration"] for r in got]) > 0)


def test_no_run_dir_is_a_404(responder):
    with ThreadedServer(create_app(responder)) as srv:
        status, out = _call(srv.url, "/v1/run")
        assert status == 404 and out["kind"] == "no_run"


def test_a_subgame_range_is_the_solution_the_responder_keeps(hunl_bp):
    from subgame.nested import hand_strategy

    # 3 s: under a loaded CI machine 1 s ran out before the first iterations (fallback: deadline)
    r = SolvingResponder(hunl_bp, solver_threads=1, max_solve_ms=3000)
    r.warm_up()  # (the solver's kernels compile or load here, not in the query's budget)
    try:
        with ThreadedServer(create_app(r)) as srv:
            body = {
                "betting": "cc/cc/cc/",
                "board": "2c7h9sTd3c",
                "method": "resolve",
                "time_budget_ms": 20000,
            }
            status, out = _call(srv.url, "/v1/range", {**body, "session": "line-1"})
            assert status == 200 and out["source"] == "subgame", out.get("fallback")
            assert out["method"] == "resolve" and out["iterations"] >= 1 and out["session"] == "line-1"
            state = r.game.state(_ms(0, "cc/cc/cc/", "2d2h", "2c7h9sTd3c"))  # the query's hole cards
            sol, node = r.sessions.lookup("line-1", state, (0, tuple(state.hole_cards[0]), "resolve"))
            names = hand_names(hunl_bp.gamedef)
            for name in ("AhKh", "QsQd", "8d6d"):
                h = names.index(name)
                held = r.game.state(_ms(0, "cc/cc/cc/", name, "2c7h9sTd3c"))
                assert _row(out, h) == pytest.approx(hand_strategy(sol, node, held), abs=1e-5)
            # the range's weights: the subgame's root range (seat 0 has not acted on the river)
            assert out["reach"] == pytest.approx(np.asarray(sol.subgame.ranges[0]).tolist(), abs=1e-5)
            # a second look at the same state reuses the solve
            status, again = _call(srv.url, "/v1/range", {**body, "session": "line-1"})
            assert again["reused"] is True and again["strategy"] == out["strategy"]
    finally:
        r.close()


def test_any_public_state_is_answered_or_refused_by_name(responder):
    """Property: whatever history, board and action arrive at /v1/range, the answer is a 2xx with
    a public state (at a decision, every hand's strategy sums to 1, or 0 where the board holds one
    of its cards) or a 4xx ``{"error", "kind"}``; never a 5xx."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from mccfr.serving.fuzz import asgi_request

    app = create_app(responder)
    text = lambda alphabet, n: st.text(alphabet=alphabet, max_size=n)  # noqa: E731
    bodies = st.fixed_dictionaries(
        {"betting": text("cfr0123456789/", 16), "board": text("2379TJQKAcdhs/ ", 12)},
        optional={
            "action": text("cfr0123456789", 6),
            "method": st.sampled_from(["blueprint", "resolve", "no"]),
        },
    )

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(bodies)
    def check(body):
        status, _, raw = asgi_request(
            app, "POST", "/v1/range", json.dumps(body).encode(), {"content-type": "application/json"}
        )
        out = json.loads(raw)
        assert status < 500, (body, out)
        if status >= 400:
            assert out["error"] and out["kind"], (body, out)
            return
        assert out["status"] in ("decision", "cards_due", "hand_over")
        if out["status"] == "decision":
            sums = np.asarray(out["strategy"]).sum(axis=0)
            assert np.all((np.abs(sums - 1) < 1e-3) | (sums == 0)), body

    check()


RIVER = {"betting": "cc/cc/cc/", "board": "2c7h9sTd3c"}


@pytest.fixture
def river_solver(hunl_bp):
    # (one per test: a server closes its responder when it stops)
    r = SolvingResponder(hunl_bp, solver_threads=1, max_solve_ms=1000)
    r.warm_up()
    yield r
    r.close()


def test_a_locked_range_is_solved_under_the_locks_and_never_kept(river_solver, hunl_bp):
    from subgame.nested import solve_state

    r = river_solver
    names = hand_names(hunl_bp.gamedef)
    live = [
        i
        for i, n in enumerate(names)
        if not set(n[j : j + 2] for j in (0, 2)) & {"2c", "7h", "9s", "Td", "3c"}
    ]
    with ThreadedServer(create_app(r)) as srv:
        body = {**RIVER, "method": "resolve", "time_budget_ms": 20000}
        status, free = _call(srv.url, "/v1/range", {**body, "session": "free"})
        assert status == 200 and free["source"] == "subgame", free.get("fallback")
        acts = free["actions"]
        bet = next(a for a in acts if a.startswith("r"))
        locks = {"": {"c": 0.25, bet: 0.75}}
        hits = r.sessions.hits + r.sessions.misses
        status, out = _call(srv.url, "/v1/range", {**body, "session": "free", "locks": locks})
        assert status == 200 and out["source"] == "subgame" and out["locked"] is True, out
        assert r.sessions.hits + r.sessions.misses == hits  # no cached subgame looked up
        held = [h for h in live if out["reach"][h] > 0]  # (a hand the seat never holds plays uniformly)
        assert len(held) > 100
        row = {a: [out["strategy"][i][h] for h in held] for i, a in enumerate(out["actions"])}
        assert row["c"] == pytest.approx([0.25] * len(held), abs=1e-4)
        assert row[bet] == pytest.approx([0.75] * len(held), abs=1e-4)
        assert all(max(v) == 0 for a, v in row.items() if a not in ("c", bet))
        assert out["strategy"] != free["strategy"]
        # seat 1 facing the locked bet: read from the locked solve rooted at the river's first state
        status, child = _call(
            srv.url, "/v1/range", {**body, "action": bet, "locks": locks, "lock_root": "cc/cc/cc/"}
        )
        assert status == 200 and child["locked"] is True and child["seat"] == 1, child
        state = r.game.state(_ms(0, "cc/cc/cc/", "2d2h", "2c7h9sTd3c"))
        sol, _ = solve_state(hunl_bp, state, "resolve", iterations=child["iterations"], locks=locks)
        st1 = r.game.state(_ms(1, f"cc/cc/cc/{bet}", "2d2h", "2c7h9sTd3c"))
        from subgame.cache import node_in

        _, node = node_in(sol, st1)
        want = sol.node_strategy(node)
        for name in ("AhKh", "QsQd", "8d6d", "5s4s"):
            h = names.index(name)
            assert _row(child, h) == pytest.approx({a: float(want[a][h]) for a in want}, abs=2e-3), name
        # bad locks: 422 bad_locks, as /v1/strategy's
        for bad in ({"": {"c": 0.5}}, {"zz": {"c": 1.0}}, {"": {"q": 1.0}}):
            status, err = _call(srv.url, "/v1/range", {**body, "locks": bad})
            assert status == 422 and err["kind"] == "bad_locks", (bad, err)
        status, err = _call(srv.url, "/v1/range", {**RIVER, "locks": locks})  # no solve method
        assert status == 422 and err["kind"] == "bad_locks"
        status, err = _call(srv.url, "/v1/range", {**body, "locks": locks, "lock_root": "cc/r300"})
        assert status == 422 and err["kind"] == "bad_locks" and "not on the line" in err["error"]


def test_saved_solves_are_listed_and_browsed(hunl_bp, tmp_path):
    from mccfr.serving.explorer import open_saved
    from subgame.nested import solve_state
    from subgame.saved import save_solve

    r = BlueprintResponder(hunl_bp)  # (browsing a saved solve needs no solver)
    state = r.game.state(_ms(0, "cc/cc/cc/", "2d2h", "2c7h9sTd3c"))
    sol, _ = solve_state(hunl_bp, state, "resolve", iterations=60, keep_state=True)
    save_solve(tmp_path / "river.solve", sol)
    saved = open_saved([tmp_path], hunl_bp.gamedef)
    assert [e.id for e in saved] == ["river"]
    names = hand_names(hunl_bp.gamedef)
    with ThreadedServer(create_app(r, api_key="k", saved=saved)) as srv:
        status, _ = _call(srv.url, "/v1/saved")
        assert status == 401
        status, out = _call(srv.url, "/v1/saved", token="k")
        assert status == 200 and out["saved"][0]["id"] == "river" and out["saved"][0]["iterations"] == 60
        assert out["saved"][0]["root"] == "cc/cc/cc/" and out["saved"][0]["board"] == [
            "2c",
            "7h",
            "9s",
            "Td",
            "3c",
        ]
        status, root = _call(srv.url, "/v1/saved/range", {"id": "river", "history": ""}, token="k")
        assert status == 200 and root["source"] == "saved" and root["seat"] == 0, root
        bet = next(a for a in root["actions"] if a.startswith("r"))
        status, child = _call(srv.url, "/v1/saved/range", {"id": "river", "history": bet}, token="k")
        assert status == 200 and child["seat"] == 1 and child["betting"] == f"cc/cc/cc/{bet}"
        from subgame.cache import node_in

        for out_, hist, seat in ((root, "", 0), (child, bet, 1)):
            _, node = node_in(sol, r.game.state(_ms(seat, f"cc/cc/cc/{hist}", "2d2h", "2c7h9sTd3c")))
            want = sol.node_strategy(node)
            for name in ("AhKh", "QsQd", "8d6d"):
                h = names.index(name)
                assert _row(out_, h) == pytest.approx({a: float(want[a][h]) for a in want}, abs=1e-4)
        status, err = _call(srv.url, "/v1/saved/range", {"id": "nope"}, token="k")
        assert status == 404 and err["kind"] == "unknown_saved"
        status, err = _call(srv.url, "/v1/saved/range", {"id": "river", "history": "r1234"}, token="k")
        assert status == 422 and err["kind"] == "not_in_subgame", err
        status, err = _call(srv.url, "/v1/saved/range", {"id": "river", "history": "x"}, token="k")
        assert status == 400 and err["kind"] == "bad_history"


def test_serve_refuses_a_bad_saved_file_by_name(tmp_path, hunl_bp):
    import click

    from mccfr.cli.serve import _open_saved

    bad = tmp_path / "broken.solve"
    bad.write_bytes(b"MCCFRSLV" + bytes(64))
    with pytest.raises(click.BadParameter, match="broken.solve"):
        _open_saved([bad], hunl_bp.gamedef)
    (tmp_path / "empty").mkdir()
    with pytest.raises(click.BadParameter, match="no .solve files"):
        _open_saved([tmp_path / "empty"], hunl_bp.gamedef)
    with pytest.raises(click.BadParameter, match="no such file"):
        _open_saved([tmp_path / "missing.solve"], hunl_bp.gamedef)


def test_any_saved_state_is_answered_or_refused_by_name(hunl_bp, tmp_path):
    """Property: whatever history, board and action arrive at /v1/saved/range, the answer is a 2xx
    or a 4xx ``{"error", "kind"}``; never a 5xx."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from mccfr.serving.explorer import open_saved
    from mccfr.serving.fuzz import asgi_request
    from subgame.nested import solve_state
    from subgame.saved import save_solve

    r = BlueprintResponder(hunl_bp)
    sol, _ = solve_state(
        hunl_bp,
        r.game.state(_ms(0, "cc/cc/cc/", "2d2h", "2c7h9sTd3c")),
        "unsafe",
        iterations=5,
        keep_state=True,
    )
    save_solve(tmp_path / "river.solve", sol)
    app = create_app(r, saved=open_saved([tmp_path / "river.solve"], hunl_bp.gamedef))
    text = lambda alphabet, n: st.text(alphabet=alphabet, max_size=n)  # noqa: E731
    bodies = st.fixed_dictionaries(
        {
            "id": st.sampled_from(["river", "other"]),
            "history": text("cfr0123456789/", 12),
            "board": text("2379TJQKAcdhs/ ", 6),
        },
        optional={"action": text("cfr0123456789", 6)},
    )

    @settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(bodies)
    def check(body):
        status, _, raw = asgi_request(
            app, "POST", "/v1/saved/range", json.dumps(body).encode(), {"content-type": "application/json"}
        )
        out = json.loads(raw)
        assert status < 500, (body, out)
        if status >= 400:
            assert out["error"] and out["kind"], (body, out)

    check()
