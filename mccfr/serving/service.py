"""The strategy query service: ``mccfr serve RUN_DIR`` (HTTP + JSON on FastAPI / uvicorn).

Endpoints (the OpenAPI description is at ``GET /openapi.json``, interactive docs at ``/docs``)::

    POST /v1/strategy   {"matchstate": "MATCHSTATE:...", "session": "...", "time_budget_ms": 2000,
                         "method": "resolve"}            (only matchstate is required)
                     -> {"strategy": {"f": 0.1, "c": 0.6, "r600": 0.3}, "source": "blueprint",
                         "method": null, "elapsed_ms": 0.41}
    GET  /healthz    -> {"status": "ok", "game": ..., "responder": ..., "methods": [...], ...}
    GET  /metrics    -> request counts by status, errors by kind, latency percentiles per source
    GET  /           the web page (explorer, play, runs) and its /v1/ endpoints: mccfr.serving.explorer

Answers come from a :class:`mccfr.serving.query.Responder` (the blueprint, or blueprint plus
subgame solving: :func:`mccfr.serving.solving.make_responder`). ``elapsed_ms`` is the server's time
for the request from its arrival (the moment the ASGI app first sees it, before its body is read)
to the moment the answer is ready, any waiting included. A responder whose ``answer`` takes
``arrived`` (a :func:`time.perf_counter` instant) is given that arrival, and counts the request's
time budget from it (:class:`mccfr.serving.solving.SolvingResponder` answers within it, from the
blueprint with a ``fallback`` reason when a solve cannot fit).

Errors: every refused request gets a JSON body ``{"error": "<message naming the problem>",
"kind": "<tag>"}`` with a 4xx status: the responder's :class:`~mccfr.serving.query.QueryError` kinds
(400 bad or wrong-game match state, 409 not the viewer's turn or hand over, 422 bad method /
time budget / session, off the blueprint's tree), ``invalid_request`` (422) for a body that is
not a JSON object with the fields above (an unknown field, a wrong type), ``bad_request`` (400) for
a body that is not UTF-8 JSON text at all, ``not_found`` / ``method_not_allowed`` (404 / 405), and
the :class:`Guard`'s: ``unauthorized`` (401: no or a wrong bearer token when the server has an API
key), ``body_too_large`` (413: over ``max_body_bytes``, default 64 KiB, refused without reading
more than that), ``too_many_requests`` (429: one client address with more than
``max_inflight_per_client`` requests in flight, default 128). ``/healthz`` and the API's
description need no token. An unexpected exception inside a responder is a 500 with its message;
the server keeps serving either way. :mod:`mccfr.serving.fuzz` checks these properties on raw bodies.

Concurrency: a responder may offer ``answer_start(matchstate, session, time_budget_ms, method,
arrived)``, called on the event loop, which answers at once (a blueprint lookup: parse, walk,
bucket, about 0.1-0.5 ms of CPU; a fallback; a session's solved subgame) or returns a pending
solve that the handler awaits on the loop, holding no thread, until its ``answer_by``: the solving
responder decides there, at arrival, whether a solve can start in time given the solves running
and queued (else it answers from the blueprint at once), so no request waits for a thread past
its budget. Otherwise ``answer_fast`` (same arguments) is called on the loop and may return None,
and ``responder.answer`` then runs in a thread pool (``threads``, default 8). Lookups stay on the
loop because a hop to a pool thread costs more than the lookup itself (and, under the GIL, up to a
switch interval of waiting). ``GET /metrics`` adds the responder's ``metrics()`` (the solving
responder: memory budget, cache bytes and entries, evictions, solver queue).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import hmac
import inspect
import json
import math
import signal
import socket
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, Self

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.staticfiles import StaticFiles

from mccfr.serving import explorer
from mccfr.serving.query import MAX_SESSION_LEN, MAX_TIME_BUDGET_MS, QueryError, Responder

LATENCY_WINDOW = 10_000  # latencies kept per source for the percentiles in /metrics
MAX_BODY_BYTES = 64 * 1024  # a request body larger than this is refused (413)
MAX_INFLIGHT_PER_CLIENT = 128  # requests one client address may have in flight (more: 429)
#: paths that need no bearer token and count against no client's in-flight cap: the API's
#: description and the web page's static files (the page sends the token with its API requests)
OPEN_PATHS = frozenset({"/healthz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc", "/"})
OPEN_PREFIXES = ("/static/",)
#: after a 413, up to this many bytes of the rest of the body are read (and dropped) before the
#: answer, within DRAIN_S seconds, so that a client still sending gets the 413 and not a reset
DRAIN_BYTES = 8 * 2**20
DRAIN_S = 10.0
#: the ASGI scope key under which the guard records a request's arrival (time.perf_counter)
ARRIVED = "mccfr.arrived"


class StrategyRequest(BaseModel):
    """A strategy query: the acting seat's match state, optionally a session, budget and method."""

    model_config = ConfigDict(extra="forbid")

    matchstate: StrictStr = Field(
        description="MATCHSTATE:<position>:<hand>:<betting>:<cards> of the seat to act",
        examples=["MATCHSTATE:0:0::AhKd|"],
    )
    session: StrictStr | None = Field(
        None,
        description=f"Key of the hand (1..{MAX_SESSION_LEN} printable characters): answers within it may "
        "reuse a solved subgame",
    )
    time_budget_ms: StrictInt | None = Field(
        None,
        description=f"Wall-time budget for the answer, 1..{MAX_TIME_BUDGET_MS} ms (default: the server's)",
    )
    method: StrictStr | None = Field(
        None,
        description="blueprint, or a subgame-solving method (unsafe, resolve, maxmargin, reach-maxmargin, "
        "estimate, reach-estimate) where the server solves",
    )
    locks: dict[StrictStr, dict[StrictStr, float | list[float]]] | None = Field(
        None,
        description="Node locks of the subgame solved (solving servers): {betting history from the subgame's "
        "root: {ACPC action: probability, or a list of one per hand}} (docs/solving.md)",
        examples=[{"": {"c": 0.5, "r300": 0.5}}],
    )


class StrategyResponse(BaseModel):
    strategy: dict[str, float] = Field(description="ACPC action -> probability (sums to 1)")
    source: Literal["blueprint", "translated", "subgame", "fallback"] = Field(
        description="where the answer came from: the blueprint on its tree, the blueprint after translating "
        "an opponent's off-tree raise, a solved subgame, or the blueprint's fallback where its tree has no "
        "node for the history (the abstract node most like the real state; see reason)"
    )
    method: str | None = Field(
        description="the solve method (subgame answers; with fallback: the one asked for)"
    )
    elapsed_ms: float = Field(description="server time from the handler's start to the answer")
    fallback: Literal["busy", "budget", "deadline", "memory", "unsolvable"] | None = Field(
        None,
        description="why a query that asked for a solve got the blueprint's answer instead: the solver "
        "threads and their queue are taken for the rest of its budget (busy), a solve of its round needs "
        "more than the budget (budget), the solve did not finish usefully in time (deadline), the solve's "
        "memory does not fit the server's memory budget (memory), no subgame can be built there "
        "(unsolvable, see reason)",
    )
    reason: str | None = Field(
        None, description="fallback answers: why the blueprint's tree has no node for the history"
    )
    reused: bool | None = Field(None, description="subgame answers: the session's solved subgame was reused")
    iterations: int | None = Field(None, description="subgame answers: solver iterations")
    exploitability_pct_pot: float | None = Field(
        None,
        description="subgame answers: the solve's exploitability in % of the pot (None: no time to measure)",
    )
    exploitability_cards: int | None = Field(
        None,
        description="depth-limited subgame answers: the exploitability was estimated on this many cards of "
        "the next deal (an estimate that errs high); None: every card, exact",
    )
    leaf_cards: int | None = Field(
        None,
        description="depth-limited subgame answers whose later deals came from a fixed sample of this many "
        "cards (a flop's turn and river): the exploitability is the depth-limited game's on that sample; "
        "None: every card",
    )


class ErrorResponse(BaseModel):
    error: str
    kind: str


class Metrics:
    """Thread-safe counters and latency windows for ``GET /metrics``."""

    def __init__(self, window: int = LATENCY_WINDOW):
        self._lock = threading.Lock()
        self._window = window
        self.started = time.time()
        self.requests = 0
        self.by_status: collections.Counter[int] = collections.Counter()
        self.errors: collections.Counter[str] = collections.Counter()
        self.answers: collections.Counter[str] = collections.Counter()
        self.fallbacks: collections.Counter[str] = collections.Counter()
        self.latency: dict[str, collections.deque[float]] = {}
        self.in_flight = 0

    def begin(self) -> None:
        with self._lock:
            self.requests += 1
            self.in_flight += 1

    def answered(self, source: str, ms: float, fallback: str | None = None) -> None:
        with self._lock:
            self.in_flight -= 1
            self.by_status[200] += 1
            self.answers[source] += 1
            if fallback is not None:
                self.fallbacks[fallback] += 1
            self.latency.setdefault(source, collections.deque(maxlen=self._window)).append(ms)

    def failed(self, status: int, kind: str) -> None:
        with self._lock:
            self.in_flight -= 1
            self.by_status[status] += 1
            self.errors[kind] += 1

    def invalid(self, kind: str, status: int) -> None:
        """A request refused before it reached the handler (its body did not validate; no or a
        wrong bearer token; a body over the limit; too many requests in flight)."""
        with self._lock:
            self.requests += 1
            self.by_status[status] += 1
            self.errors[kind] += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            lat = {s: sorted(d) for s, d in self.latency.items()}
            out = {
                "uptime_s": time.time() - self.started,
                "requests": self.requests,
                "in_flight": self.in_flight,
                "responses": {str(k): v for k, v in sorted(self.by_status.items())},
                "answers": dict(self.answers),
                "fallbacks": dict(self.fallbacks),
                "errors": dict(self.errors),
            }
        out["latency_ms"] = {s: _percentiles(v) for s, v in lat.items()}
        return out


def _percentiles(sorted_ms: list[float]) -> dict[str, float]:
    """p50/p90/p99/max over the window (nearest-rank percentiles)."""
    n = len(sorted_ms)

    def q(p: float) -> float:
        return sorted_ms[min(n - 1, max(0, math.ceil(p * n) - 1))]

    return {"count": n, "p50": q(0.50), "p90": q(0.90), "p99": q(0.99), "max": sorted_ms[-1]}


def _validation_message(exc: RequestValidationError, fields: str | None = None) -> str:
    parts = []
    for e in exc.errors():
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
        msg = e.get("msg", "invalid")
        if e.get("type") == "json_invalid":
            loc, msg = "body", f"not valid JSON ({e.get('ctx', {}).get('error', msg)})"
        elif e.get("type") == "extra_forbidden":
            msg = f"unknown field (expected {fields})" if fields else "unknown field"
        parts.append(f"{loc}: {msg}")
    return "invalid request: " + "; ".join(parts)


async def _send_error(
    send, status: int, kind: str, message: str, headers: list | None = None, close: bool = False
) -> None:
    """An ``{"error", "kind"}`` JSON response straight on the ASGI ``send`` (the guard's refusals)."""
    body = json.dumps({"error": message, "kind": kind}).encode()
    hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:  # the rest of the request is not read: the connection cannot carry another one
        hdrs.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": hdrs + list(headers or [])})
    await send({"type": "http.response.body", "body": body})


async def _drain(receive, limit: int, seconds: float = DRAIN_S, idle_s: float = 1.0) -> int:
    """Read and drop the rest of a request's body: until it ends, ``limit`` bytes, ``seconds`` in
    all or ``idle_s`` without a byte, whichever comes first. Returns the bytes read."""
    got = 0
    end = time.monotonic() + seconds
    while got <= limit:
        left = end - time.monotonic()
        if left <= 0:
            break
        try:
            msg = await asyncio.wait_for(receive(), min(left, idle_s))
        except (asyncio.TimeoutError, TimeoutError):
            break
        if msg["type"] != "http.request":
            break
        got += len(msg.get("body", b""))
        if not msg.get("more_body", False):
            break
    return got


class Guard:
    """ASGI middleware in front of the service, for a network it does not own. For every HTTP
    request it records the arrival (``scope[ARRIVED]``, a :func:`time.perf_counter` instant: time
    budgets count from it), then on every path but :data:`OPEN_PATHS` and those under
    :data:`OPEN_PREFIXES` (``/healthz``, the API's description, the web page and its static files):

    * with ``api_key``: the request must carry ``Authorization: Bearer <api_key>``, else 401
      ``unauthorized`` (compared in constant time);
    * with ``max_inflight_per_client``: one client address may have that many requests in
      flight; one more is 429 ``too_many_requests`` at once;
    * with ``max_body_bytes``: a body longer than that is 413 ``body_too_large``: when
      ``Content-Length`` says so (nothing of the body is kept), else as soon as the bytes read
      pass the limit (a chunked body); at most ``max_body_bytes`` are ever buffered. Before the
      413 the rest of the body, up to :data:`DRAIN_BYTES` more, is read and dropped (until it
      ends, :data:`DRAIN_S` seconds pass, or a second goes by without a byte), so that a client
      still sending reads the answer instead of a reset; a longer body is not read at all. The
      connection is closed after a 413.

    Each refusal is a JSON ``{"error", "kind"}`` like the service's other errors, and counted
    in ``metrics`` (a :class:`Metrics`)."""

    def __init__(
        self,
        app,
        metrics: Metrics | None = None,
        api_key: str | None = None,
        max_body_bytes: int | None = MAX_BODY_BYTES,
        max_inflight_per_client: int | None = MAX_INFLIGHT_PER_CLIENT,
    ):
        self.app = app
        self.metrics = metrics
        self._key = None if api_key is None else f"Bearer {api_key}".encode()
        self.max_body_bytes = max_body_bytes
        self.max_inflight = max_inflight_per_client
        self.inflight: collections.Counter[str] = collections.Counter()

    async def _refuse(self, send, status: int, kind: str, message: str, **kw) -> None:
        if self.metrics is not None:
            self.metrics.invalid(kind, status)
        await _send_error(send, status, kind, message, **kw)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        scope[ARRIVED] = time.perf_counter()
        path = scope.get("path") or ""
        if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or ())
        if self._key is not None:
            got = headers.get(b"authorization")
            if got is None or not hmac.compare_digest(got.strip(), self._key):
                what = "no bearer token" if got is None else "a wrong bearer token"
                return await self._refuse(
                    send,
                    401,
                    "unauthorized",
                    f"this server needs 'Authorization: Bearer <key>' (the key of mccfr serve --api-key); "
                    f"the request has {what}",
                    headers=[(b"www-authenticate", b'Bearer realm="mccfr"')],
                )
        client = (scope.get("client") or ("unknown",))[0]
        if self.max_inflight is not None and self.inflight[client] >= self.max_inflight:
            return await self._refuse(
                send,
                429,
                "too_many_requests",
                f"client {client} has {self.inflight[client]} requests in flight, the most this server "
                f"allows one client (--max-inflight-per-client {self.max_inflight}): wait for answers first",
                headers=[(b"retry-after", b"1")],
            )
        self.inflight[client] += 1
        try:
            limit = self.max_body_bytes
            if limit is None:
                return await self.app(scope, receive, send)
            length = headers.get(b"content-length")
            if length is not None:
                try:
                    n = int(length)
                except ValueError:
                    n = -1
                if n < 0:
                    return await self._refuse(
                        send,
                        400,
                        "bad_request",
                        f"Content-Length {length[:40]!r} is not a byte count",
                        close=True,
                    )
                if n > limit:
                    if n <= DRAIN_BYTES:
                        await _drain(receive, DRAIN_BYTES)
                    return await self._refuse(
                        send,
                        413,
                        "body_too_large",
                        f"the request body is {n:,} bytes; this server takes at most {limit:,}",
                        close=True,
                    )
            chunks, total = [], 0
            while True:
                msg = await receive()
                if msg["type"] != "http.request":  # the client went away
                    return
                body = msg.get("body", b"")
                total += len(body)
                if total > limit:
                    if msg.get("more_body", False):
                        await _drain(receive, DRAIN_BYTES)
                    return await self._refuse(
                        send,
                        413,
                        "body_too_large",
                        f"the request body is over {limit:,} bytes, the most this server takes",
                        close=True,
                    )
                chunks.append(body)
                if not msg.get("more_body", False):
                    break
            data = b"".join(chunks)
            sent = False

            async def replay():
                nonlocal sent
                if not sent:
                    sent = True
                    return {"type": "http.request", "body": data, "more_body": False}
                return await receive()

            return await self.app(scope, replay, send)
        finally:
            self.inflight[client] -= 1
            if self.inflight[client] <= 0:
                del self.inflight[client]


class LoopLag:
    """How late the event loop runs what is due: a heartbeat every ``period`` seconds measures how
    much later than asked it wakes; :attr:`lag` is the 90th percentile over the last ``window``
    seconds (the largest would let one pause shrink every budget for the whole window).
    Under load a request waits about that long before the loop reads it, and an answer about that
    long before it is sent: the service counts time budgets from the arrival less this lag, and
    gives up on a solve this much earlier."""

    def __init__(self, period: float = 0.02, window: float = 2.0):
        self.period = period
        self._samples: collections.deque[float] = collections.deque(maxlen=max(1, int(window / period)))
        self.lag = 0.0
        self.peak = 0.0

    async def run(self) -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(self.period)
            late = max(0.0, time.perf_counter() - t - self.period)
            self._samples.append(late)
            ordered = sorted(self._samples)
            self.lag = ordered[int(0.9 * (len(ordered) - 1))]
            self.peak = max(self.peak, late)

    def snapshot(self) -> dict[str, float]:
        n = len(self._samples)
        mean = sum(self._samples) / n if n else 0.0
        return {
            "lag_ms": round(self.lag * 1e3, 2),
            "mean_lag_ms": round(mean * 1e3, 2),
            "max_lag_ms": round(self.peak * 1e3, 2),
        }


async def await_pending(pending, early: float = 0.0) -> dict[str, Any]:
    """The answer of a :class:`mccfr.serving.solving.PendingAnswer`, awaited on the running event loop
    without holding a thread: its ``future`` until ``answer_by`` less ``early`` seconds, else
    ``give_up()``."""
    fut = pending.future
    if not fut.done():
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()

        def wake() -> None:
            if not waiter.done():
                waiter.set_result(None)

        def done(_f) -> None:  # in the solver thread
            try:
                loop.call_soon_threadsafe(wake)
            except RuntimeError:  # the loop has closed (shutdown): nobody waits
                pass

        fut.add_done_callback(done)
        timeout = pending.answer_by - early - time.perf_counter()
        if timeout <= 0:
            return pending.give_up()
        try:
            await asyncio.wait_for(waiter, timeout)
        except (asyncio.TimeoutError, TimeoutError):
            if not fut.done():
                return pending.give_up()
    return pending.finish()


_HTTP_KINDS = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
}


def create_app(
    responder: Responder,
    threads: int = 8,
    describe: dict[str, Any] | None = None,
    *,
    api_key: str | None = None,
    max_body_bytes: int | None = MAX_BODY_BYTES,
    max_inflight_per_client: int | None = MAX_INFLIGHT_PER_CLIENT,
    saved: Sequence[explorer.SavedEntry] = (),
) -> FastAPI:
    """The FastAPI application serving ``responder`` (module docstring). ``describe``: extra fields
    for ``/healthz`` (the run directory, ...). ``api_key``, ``max_body_bytes``,
    ``max_inflight_per_client``: the :class:`Guard` in front of it (None: no such check).
    ``saved``: saved solves the web page lists and browses (:func:`explorer.open_saved`)."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    if api_key is not None and (not api_key or not api_key.isprintable() or api_key != api_key.strip()):
        raise ValueError(
            "the API key must be a non-empty string of printable characters without surrounding spaces"
        )
    if max_body_bytes is not None and max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be >= 1, got {max_body_bytes}")
    if max_inflight_per_client is not None and max_inflight_per_client < 1:
        raise ValueError(f"max_inflight_per_client must be >= 1, got {max_inflight_per_client}")
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mccfr-query")
    metrics = Metrics()
    start = getattr(responder, "answer_start", None)
    start_early = start is not None and "early" in inspect.signature(start).parameters
    fast = getattr(responder, "answer_fast", None)
    # responders that take the request's arrival count their time budget from it
    timed = "arrived" in inspect.signature(responder.answer).parameters
    fast_timed = fast is not None and "arrived" in inspect.signature(fast).parameters
    extra_metrics = getattr(responder, "metrics", None)
    info = dict(describe or {})
    if hasattr(responder, "describe"):
        info.update(responder.describe())
    info.update(
        auth="bearer" if api_key is not None else None,
        max_body_bytes=max_body_bytes,
        max_inflight_per_client=max_inflight_per_client,
    )

    lag = LoopLag()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        beat = asyncio.get_running_loop().create_task(lag.run())
        yield
        beat.cancel()
        pool.shutdown(wait=False, cancel_futures=True)
        responder.close()

    app = FastAPI(
        lifespan=lifespan,
        title="mccfr strategy service",
        version="1",
        description="Strategy queries by ACPC MATCHSTATE: blueprint lookups and subgame solving.",
        responses={
            400: {"model": ErrorResponse},
            401: {"model": ErrorResponse},
            409: {"model": ErrorResponse},
            413: {"model": ErrorResponse},
            422: {"model": ErrorResponse},
            429: {"model": ErrorResponse},
        },
    )
    app.state.responder = responder
    app.state.metrics = metrics
    app.state.pool = pool
    app.state.loop_lag = lag
    app.add_middleware(
        Guard,
        metrics=metrics,
        api_key=api_key,
        max_body_bytes=max_body_bytes,
        max_inflight_per_client=max_inflight_per_client,
    )

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        metrics.invalid("invalid_request", 422)
        fields = (
            "matchstate, session, time_budget_ms, method, locks"
            if request.url.path == "/v1/strategy"
            else None
        )
        return JSONResponse(
            {"error": _validation_message(exc, fields), "kind": "invalid_request"}, status_code=422
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        """FastAPI's own refusals (an unknown path, a wrong method, a body it cannot decode) in the
        service's error format."""
        kind = _HTTP_KINDS.get(exc.status_code, "http_error")
        detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail, default=str)
        if exc.status_code == 400 and "parsing the body" in detail:
            cause = exc.__cause__
            if isinstance(cause, RecursionError):
                detail = "invalid request: the body's JSON is nested too deeply"
            elif isinstance(cause, UnicodeError):
                detail = "invalid request: the body is not JSON text in UTF-8"
            else:
                detail = f"invalid request: the body cannot be parsed ({type(cause).__name__ if cause else 'unknown'})"
        metrics.invalid(kind, exc.status_code)
        return JSONResponse(
            {"error": detail, "kind": kind},
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    async def respond(
        matchstate: str,
        session: str | None,
        time_budget_ms: int | None,
        method: str | None,
        t0: float,
        locks: dict | None = None,
        with_solution: bool = False,
    ) -> dict[str, Any]:
        """The responder's answer to a query that arrived at ``t0`` (module docstring,
        "Concurrency"), without ``elapsed_ms``; raises what the responder raises (QueryError).
        ``locks``: node locks (solving responders only, else a 422 ``bad_locks``); with them,
        ``with_solution``: a solved answer carries ``"solution"`` (the explorer's; not JSON)."""
        args = (matchstate, session, time_budget_ms, method)
        lk: dict[str, Any] = {} if locks is None else {"locks": locks}
        if lk and with_solution:
            lk["with_solution"] = True
        if lk and not getattr(responder, "accepts_locks", False):
            raise QueryError(
                "bad_locks", "locks need a solving server (this one answers from the blueprint)", 422
            )
        out = None
        if start is not None:  # decided on the loop; a solve is awaited without a thread
            # the request waited about the loop's lag before the loop saw it, and its answer
            # will wait about as long to be sent: the budget runs from the arrival less the lag
            late = lag.lag
            out = (
                start(*args, arrived=t0 - late, early=late, **lk)
                if start_early
                else start(*args, arrived=t0 - late, **lk)
            )
            if not isinstance(out, dict):
                out = await await_pending(out, early=0.0 if start_early else late)
        elif fast is not None and not lk:
            out = fast(*args, arrived=t0) if fast_timed else fast(*args)
        if out is None:
            kw: dict[str, Any] = {"arrived": t0, **lk} if timed else lk
            call = functools.partial(responder.answer, *args, **kw)
            out = await asyncio.get_running_loop().run_in_executor(pool, call)
        return dict(out or {})

    # the web page's endpoints (mccfr.serving.explorer) answer through the same path
    app.state.respond = respond
    app.state.arrival = lambda request: request.scope.get(ARRIVED) or time.perf_counter()
    app.state.run_dir = info.get("run_dir")
    app.state.saved = {e.id: e for e in saved}
    app.state.max_body_bytes = max_body_bytes  # (the page checks its lock requests fit)

    @app.post("/v1/strategy", response_model=StrategyResponse)
    async def strategy(req: StrategyRequest, request: Request) -> JSONResponse:
        """The acting seat's strategy at a match state."""
        t0 = request.scope.get(ARRIVED) or time.perf_counter()
        metrics.begin()
        try:
            out = await respond(req.matchstate, req.session, req.time_budget_ms, req.method, t0, req.locks)
        except QueryError as exc:
            metrics.failed(exc.status, exc.kind)
            return JSONResponse({"error": str(exc), "kind": exc.kind}, status_code=exc.status)
        except Exception as exc:  # noqa: BLE001 - a responder bug: report it (500), keep serving
            metrics.failed(500, "internal")
            return JSONResponse(
                {"error": f"internal error: {type(exc).__name__}: {exc}", "kind": "internal"}, status_code=500
            )
        out["elapsed_ms"] = (time.perf_counter() - t0) * 1e3
        metrics.answered(out["source"], out["elapsed_ms"], out.get("fallback"))
        return JSONResponse(out)

    app.include_router(explorer.router)
    app.mount("/static", StaticFiles(directory=explorer.STATIC), name="static")

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        """Liveness and what is served (needs no token)."""
        return {
            "status": "ok",
            "responder": type(responder).__name__,
            "methods": list(getattr(responder, "methods", ())),
            "default_time_budget_ms": getattr(responder, "default_time_budget_ms", None),
            "threads": threads,
            **info,
        }

    @app.get("/metrics")
    async def get_metrics() -> dict[str, Any]:
        """Request counts, errors by kind, latency percentiles (ms) per answer source; with a
        solving responder also ``memory`` (budget, cache bytes and entries, evictions) and
        ``solver`` (threads, running, queued, outcomes, per-round costs)."""
        out = metrics.snapshot()
        out["event_loop"] = lag.snapshot()
        if extra_metrics is not None:
            out.update(extra_metrics())
        return out

    return app


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def make_server(app: FastAPI, sock: socket.socket, access_log: bool = False):
    """A uvicorn server for ``app`` on the bound socket ``sock``; run it with
    ``server.run(sockets=[sock])`` (blocks) or :func:`serve_in_thread`."""
    import uvicorn  # only a server that runs needs it (create_app alone does not: tests, Ray Serve)

    class _Server(uvicorn.Server):
        """Stops gracefully on SIGINT / SIGTERM (a second one: at once) and returns normally,
        instead of re-raising the signal after the shutdown as uvicorn does."""

        @contextlib.contextmanager
        def capture_signals(self):
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            sigs = (signal.SIGINT, signal.SIGTERM)
            old = {sig: signal.signal(sig, self.handle_exit) for sig in sigs}
            try:
                yield
            finally:
                for sig, handler in old.items():
                    signal.signal(sig, handler)

    config = uvicorn.Config(app, log_level="warning", access_log=access_log, lifespan="on")
    return _Server(config)


class ThreadedServer:
    """A uvicorn server running in a daemon thread (tests, benchmarks): ``url``, ``stop()``."""

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0):
        self.sock = bind(host, port)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self.server = make_server(app, self.sock)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the query server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


__all__ = [
    "ARRIVED",
    "Guard",
    "MAX_BODY_BYTES",
    "MAX_INFLIGHT_PER_CLIENT",
    "Metrics",
    "OPEN_PATHS",
    "OPEN_PREFIXES",
    "LoopLag",
    "await_pending",
    "StrategyRequest",
    "StrategyResponse",
    "ThreadedServer",
    "bind",
    "create_app",
    "make_server",
]
