"""The strategy query service: ``mccfr serve RUN_DIR`` (HTTP + JSON on FastAPI / uvicorn).

Endpoints (the OpenAPI description is at ``GET /openapi.json``, interactive docs at ``/docs``)::

    POST /v1/strategy   {"matchstate": "MATCHSTATE:...", "session": "...", "time_budget_ms": 2000,
                         "method": "resolve"}            (only matchstate is required)
                     -> {"strategy": {"f": 0.1, "c": 0.6, "r600": 0.3}, "source": "blueprint",
                         "method": null, "elapsed_ms": 0.41}
    GET  /healthz    -> {"status": "ok", "game": ..., "responder": ..., "methods": [...], ...}
    GET  /metrics    -> request counts by status, errors by kind, latency percentiles per source

Answers come from a :class:`serving.responder.Responder` (the blueprint now; a subgame-solving
responder plugs into :func:`serving.responder.make_responder`). ``elapsed_ms`` is the server's
time for the request from the moment the handler starts to the moment the answer is ready,
waiting for a worker thread included. A responder whose ``answer`` takes ``arrived`` (a
:func:`time.perf_counter` instant) is given the handler's start, and counts the request's time
budget from it (:class:`serving.responder.SolvingResponder` answers within it, from the blueprint
with a ``fallback`` reason when a solve cannot fit).

Errors: every refused request gets a JSON body ``{"error": "<message naming the problem>",
"kind": "<tag>"}`` with a 4xx status: the responder's :class:`~serving.responder.QueryError` kinds
(400 bad or wrong-game match state, 409 not the viewer's turn or hand over, 422 bad method /
time budget / session, off the blueprint's tree), and ``invalid_request`` (422) for a body that is
not a JSON object with the fields above (an unknown field, a wrong type). An unexpected exception
inside a responder is a 500 with its message; the server keeps serving either way.

Concurrency: a responder may offer ``answer_fast(matchstate, session, time_budget_ms, method)``,
called on the event loop, which answers what it can answer in well under a millisecond (a
blueprint lookup: parse, walk, bucket, about 0.1-0.5 ms of CPU) and returns None for the rest;
everything else goes to ``responder.answer`` in a thread pool (``threads``, default 8), so a slow
query (a subgame solve under its time budget) holds up neither the fast ones nor the other slow
ones. Lookups stay on the loop because a hop to a pool thread costs more than the lookup itself
(and, under the GIL, up to a switch interval of waiting). The solving responder runs at most one
solve per core in solver threads of its own (the solver's kernels release the GIL) and answers the
rest from the blueprint rather than queue them past their budget.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import inspect
import math
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, Self

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from serving.responder import MAX_SESSION_LEN, MAX_TIME_BUDGET_MS, QueryError, Responder

LATENCY_WINDOW = 10_000  # latencies kept per source for the percentiles in /metrics


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


class StrategyResponse(BaseModel):
    strategy: dict[str, float] = Field(description="ACPC action -> probability (sums to 1)")
    source: Literal["blueprint", "subgame"]
    method: str | None = Field(description="the solve method (subgame answers; with fallback: the one asked for)")
    elapsed_ms: float = Field(description="server time from the handler's start to the answer")
    fallback: Literal["busy", "budget", "deadline"] | None = Field(
        None,
        description="why a query that asked for a solve got the blueprint's answer instead: every solver "
        "thread busy for the rest of its budget (busy), a solve of its round needs more than the budget "
        "(budget), the solve did not finish usefully in time (deadline)",
    )
    reused: bool | None = Field(None, description="subgame answers: the session's solved subgame was reused")
    iterations: int | None = Field(None, description="subgame answers: solver iterations")
    exploitability_pct_pot: float | None = Field(
        None, description="subgame answers: the solve's exploitability in % of the pot (None: no time to measure)"
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
        self.latency: dict[str, collections.deque[float]] = {}
        self.in_flight = 0

    def begin(self) -> None:
        with self._lock:
            self.requests += 1
            self.in_flight += 1

    def answered(self, source: str, ms: float) -> None:
        with self._lock:
            self.in_flight -= 1
            self.by_status[200] += 1
            self.answers[source] += 1
            self.latency.setdefault(source, collections.deque(maxlen=self._window)).append(ms)

    def failed(self, status: int, kind: str) -> None:
        with self._lock:
            self.in_flight -= 1
            self.by_status[status] += 1
            self.errors[kind] += 1

    def invalid(self, kind: str, status: int) -> None:
        """A request refused before it reached the handler (its body did not validate)."""
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


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for e in exc.errors():
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
        msg = e.get("msg", "invalid")
        if e.get("type") == "json_invalid":
            loc, msg = "body", f"not valid JSON ({e.get('ctx', {}).get('error', msg)})"
        elif e.get("type") == "extra_forbidden":
            msg = "unknown field (expected matchstate, session, time_budget_ms, method)"
        parts.append(f"{loc}: {msg}")
    return "invalid request: " + "; ".join(parts)


def create_app(responder: Responder, threads: int = 8, describe: dict[str, Any] | None = None) -> FastAPI:
    """The FastAPI application serving ``responder`` (module docstring). ``describe``: extra fields
    for ``/healthz`` (the run directory, ...)."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mccfr-query")
    metrics = Metrics()
    fast = getattr(responder, "answer_fast", None)
    # responders that take the request's arrival count their time budget from it
    timed = "arrived" in inspect.signature(responder.answer).parameters
    fast_timed = fast is not None and "arrived" in inspect.signature(fast).parameters
    info = dict(describe or {})
    if hasattr(responder, "describe"):
        info.update(responder.describe())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        pool.shutdown(wait=False, cancel_futures=True)
        responder.close()

    app = FastAPI(
        lifespan=lifespan,
        title="mccfr strategy service",
        version="1",
        description="Strategy queries by ACPC MATCHSTATE: blueprint lookups and subgame solving.",
        responses={
            400: {"model": ErrorResponse},
            409: {"model": ErrorResponse},
            422: {"model": ErrorResponse},
        },
    )
    app.state.responder = responder
    app.state.metrics = metrics
    app.state.pool = pool

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        metrics.invalid("invalid_request", 422)
        return JSONResponse({"error": _validation_message(exc), "kind": "invalid_request"}, status_code=422)

    @app.post("/v1/strategy", response_model=StrategyResponse)
    async def strategy(req: StrategyRequest) -> JSONResponse:
        """The acting seat's strategy at a match state."""
        t0 = time.perf_counter()
        metrics.begin()
        args = (req.matchstate, req.session, req.time_budget_ms, req.method)
        try:
            out = None
            if fast is not None:
                out = fast(*args, arrived=t0) if fast_timed else fast(*args)
            if out is None:
                call = functools.partial(responder.answer, *args, **({"arrived": t0} if timed else {}))
                out = await asyncio.get_running_loop().run_in_executor(pool, call)
        except QueryError as exc:
            metrics.failed(exc.status, exc.kind)
            return JSONResponse({"error": str(exc), "kind": exc.kind}, status_code=exc.status)
        except Exception as exc:  # noqa: BLE001 - a responder bug: report it (500), keep serving
            metrics.failed(500, "internal")
            return JSONResponse(
                {"error": f"internal error: {type(exc).__name__}: {exc}", "kind": "internal"}, status_code=500
            )
        out = dict(out)
        out["elapsed_ms"] = (time.perf_counter() - t0) * 1e3
        metrics.answered(out["source"], out["elapsed_ms"])
        return JSONResponse(out)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        """Liveness and what is served."""
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
        """Request counts, errors by kind, latency percentiles (ms) per answer source."""
        return metrics.snapshot()

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
    import uvicorn

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
    "Metrics",
    "StrategyRequest",
    "StrategyResponse",
    "ThreadedServer",
    "bind",
    "create_app",
    "make_server",
]
