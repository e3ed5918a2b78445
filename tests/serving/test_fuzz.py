"""Property tests of request bodies (issue 18): whatever bytes arrive at ``POST /v1/strategy`` the
service answers 2xx or 4xx with JSON (``{"error", "kind"}`` for a 4xx), never 5xx, and later
answers do not change. Bodies run in-process through :func:`mccfr.serving.fuzz.check_body` (the function
a long-run fuzz script calls with raw bytes); bounded: a few hundred examples, seconds."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mccfr.serving.fuzz import asgi_request, check_body, post_body
from mccfr.serving.query import example_matchstates
from mccfr.serving.service import create_app

PREFLOP = "MATCHSTATE:1:0::|AhAd"
FLOP = "MATCHSTATE:0:3:cc/:AhAd|/2c3d4h"
RIVER = "MATCHSTATE:0:3:cc/cc/cc/:AsKd|/2c7h9s/Td/3c"
LIMIT = 4096
FAST = settings(
    max_examples=400,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
)
json_values = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
    max_leaves=10,
)


@st.composite
def matchstates(draw):
    base = draw(st.sampled_from([PREFLOP, FLOP, RIVER, "MATCHSTATE:0:0:r300:AhAd|", "MATCHSTATE:0:0::AhAd|"]))
    how = draw(st.sampled_from(["as is", "cut", "insert", "replace", "random", "prefix"]))
    if how == "as is":
        return base
    if how == "random":
        return draw(st.text(max_size=80))
    if how == "prefix":
        return "MATCHSTATE:" + draw(st.text(alphabet="0123456789:|/crfAKQJT98765432shdc", max_size=40))
    i = draw(st.integers(0, len(base)))
    if how == "cut":
        return base[:i]
    piece = draw(st.text(max_size=6))
    if how == "insert":
        return base[:i] + piece + base[i:]
    return base[:i] + piece + base[i + len(piece) :]


field_values = {
    "session": st.none() | st.text(max_size=300) | json_values,
    "time_budget_ms": st.none() | st.integers(min_value=-5, max_value=10**12) | json_values,
    "method": st.none()
    | st.sampled_from(["blueprint", "resolve", "reach-maxmargin", "unsafe", "magic", ""])
    | json_values,
}


@st.composite
def request_objects(draw):
    obj = {"matchstate": draw(json_values) if draw(st.integers(0, 9)) == 0 else draw(matchstates())}
    for k, strat in field_values.items():
        if draw(st.booleans()):
            obj[k] = draw(strat)
    if draw(st.integers(0, 9)) == 0:
        obj[draw(st.text(max_size=10))] = draw(json_values)
    if draw(st.integers(0, 19)) == 0:
        obj.pop("matchstate", None)
    return obj


def encode(obj, draw_style: int) -> bytes:
    text = json.dumps(obj, ensure_ascii=draw_style % 2 == 0, allow_nan=True)
    return text.encode("utf-8", "surrogatepass") if draw_style % 3 == 0 else text.encode("utf-8", "replace")


bodies = st.one_of(
    st.builds(encode, request_objects(), st.integers(0, 5)),
    st.builds(encode, json_values, st.integers(0, 5)),
    st.binary(max_size=600),
    st.builds(lambda obj, cut: json.dumps(obj).encode()[:cut], request_objects(), st.integers(0, 200)),
    st.builds(lambda n: b"[" * n + b"]" * n, st.integers(1, LIMIT // 2)),
    st.builds(lambda n: b'{"matchstate": "' + b"x" * n + b'"}', st.integers(LIMIT - 40, LIMIT + 40)),
)
content_types = st.sampled_from(
    [
        "application/json",
        None,
        "text/plain",
        "application/json; charset=latin-1",
        "application/vnd.x+json",
        "multipart/form-data",
    ]
)


@pytest.fixture(scope="module")
def app(responder):
    return create_app(responder, max_body_bytes=LIMIT)


@pytest.fixture(scope="module")
def reference(app, hunl_bp):
    """The answers later requests must keep giving."""
    states = example_matchstates(hunl_bp.game) + [PREFLOP, FLOP]
    out = {ms: check_body(app, json.dumps({"matchstate": ms}).encode())[1]["strategy"] for ms in states}
    assert all(out[ms] == hunl_bp.strategy(ms) for ms in states)
    return out


def _still_the_same(app, reference) -> None:
    for ms, want in list(reference.items())[:2]:
        status, out = check_body(app, json.dumps({"matchstate": ms, "session": "ref"}).encode())
        assert status == 200 and out["strategy"] == want


@FAST
@given(body=bodies, content_type=content_types)
def test_any_body_gets_2xx_or_a_json_4xx_and_later_answers_do_not_change(app, reference, body, content_type):
    status, out = check_body(app, body, content_type=content_type)  # raises on 5xx or a malformed answer
    assert status in (200, 400, 409, 413, 415, 422), (status, out)
    if len(body) > LIMIT:
        assert status == 413 and out["kind"] == "body_too_large"
    _still_the_same(app, reference)


@FAST
@given(obj=request_objects())
def test_any_request_object_is_answered_or_refused_naming_a_kind(app, reference, obj):
    status, out = check_body(app, json.dumps(obj).encode("utf-8", "surrogatepass"))
    if status == 200:
        assert out["source"] == "blueprint"
        assert obj.get("matchstate") in reference or isinstance(obj.get("matchstate"), str)
        if obj.get("matchstate") in reference:
            assert out["strategy"] == reference[obj["matchstate"]]
    else:
        assert out["kind"] in {
            "bad_matchstate",
            "wrong_game",
            "not_your_turn",
            "hand_over",
            "bad_method",
            "bad_time_budget",
            "bad_session",
            "invalid_request",
            "bad_request",
        }, out


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(obj=request_objects(), budget=st.integers(1, 60))
def test_a_solving_server_never_fails_either(solving_app, obj, budget):
    """The same on a server that solves the river (short budgets keep each example quick)."""
    app, reference = solving_app
    if isinstance(obj.get("matchstate"), str) and "time_budget_ms" not in obj:
        obj["time_budget_ms"] = budget
    check_body(app, json.dumps(obj).encode("utf-8", "surrogatepass"))
    status, out = check_body(app, json.dumps({"matchstate": PREFLOP}).encode())
    assert status == 200 and out["strategy"] == reference


@pytest.fixture(scope="module")
def solving_app(hunl_bp):
    from mccfr.serving.solving import SolvingResponder

    r = SolvingResponder(hunl_bp, "reach-maxmargin", solver_threads=1, memory_budget="64M")
    r.warm_up()
    app = create_app(r, max_body_bytes=LIMIT)
    yield app, hunl_bp.strategy(PREFLOP)
    r.close()


def test_the_fuzz_entry_point_reports_server_errors(responder):
    """check_body raises on a 5xx (here a responder bug), with what was sent."""
    from mccfr.serving.fuzz import FuzzFailure

    class Broken:
        methods = ()
        game = responder.game

        def answer(self, *a, **k):
            raise RuntimeError("boom")

        def close(self):
            pass

    app = create_app(Broken())
    with pytest.raises(FuzzFailure, match="a server error") as info:
        check_body(app, json.dumps({"matchstate": PREFLOP}).encode())
    assert info.value.status == 500
    status, headers, raw = asgi_request(app, "GET", "/nope")
    assert status == 404 and json.loads(raw)["kind"] == "not_found"
    assert post_body(app, b"{}", path="/healthz")[0] == 405
