"""Subgame solves in worker processes (``mccfr serve --solver-processes``, the default).

A solve's construction from the blueprint is mostly Python: in a solver *thread* it contends for
the interpreter lock with the event loop that parses requests and answers from the blueprint, and
under load a turn subgame that builds in 0.5 s alone took 2.6-3.9 s (BENCHMARKS.md, "Query service").
:class:`SolverProcesses` runs each solve in a process of its own instead, forked from the server
once the blueprint is loaded, so the blueprint's arrays are shared copy-on-write, not copied. The
responder's solver threads stay (they queue, admit and time the solves); each one hands its solve
to an idle process and waits on a pipe, holding no lock.

What crosses the pipe is pickled, with the process-wide objects a subgame refers to (the
blueprint, its game definition, game and bet abstraction) sent as references, not copies
(:class:`_Pickler`): a solved turn subgame is about 2-7 MB and crosses in a few milliseconds. The
query's deadline crosses as a :func:`time.perf_counter` instant (``CLOCK_MONOTONIC``, one clock for
every process of the machine) and its stop event is relayed to the process's own event while the
thread waits. The exceptions a solve may raise (:class:`~subgame.interrupt.SolveInterrupted`,
:class:`~subgame.tree.SubgameError`, :class:`~blueprint.blueprint.BlueprintError`) are raised again
in the caller with their message, any other as a :class:`RuntimeError` with the process's
traceback; a process that dies (killed for memory, for example) is replaced and the solve raises
:class:`SolverProcessError`.

Each process walks on one thread (``threads=1``: numba's thread pool does not survive a fork),
runs at the responder's lower priority, and after every solve gives its freed memory back to the
system (``malloc_trim``). Linux (``fork``) only; elsewhere the responder solves in threads.
"""

from __future__ import annotations

import dataclasses
import gc
import io
import multiprocessing
import os
import pickle
import queue
import signal
import threading
import traceback
from typing import Any, Optional

from blueprint.blueprint import BlueprintError
from mccfr.serving.resources import lower_priority, malloc_trim
from subgame.bets import bp_bets
from subgame.interrupt import SolveInterrupted
from subgame.limits import FIELDS, SolveLimits
from subgame.locking import LockError
from subgame.nested import STATE_LIMITS, solve_state
from subgame.tree import SubgameError

POLL_S = 0.01  # how often a waiting thread relays its query's stop event


class SolverProcessError(RuntimeError):
    """A solver process died during a solve (it has been replaced)."""


def available() -> bool:
    """Whether this platform can fork solver processes (Linux and other ``fork`` platforms)."""
    return "fork" in multiprocessing.get_all_start_methods()


def _shared(bp) -> list:
    """The objects that cross the pipe as references (the same list in the server and its forks)."""
    return [o for o in (bp, bp.gamedef, bp.game, bp.tree, bp.cards, bp_bets(bp)) if o is not None]


class _Pickler(pickle.Pickler):
    def __init__(self, f, ids: dict[int, int]):
        super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
        self._ids = ids

    def persistent_id(self, obj):  # noqa: D102 - pickle's hook
        return self._ids.get(id(obj))


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, objs: list):
        super().__init__(f)
        self._objs = objs

    def persistent_load(self, pid):  # noqa: D102 - pickle's hook
        return self._objs[pid]


class _Codec:
    """Pickling with the shared objects as references (see the module's docstring)."""

    def __init__(self, bp):
        self.objs = _shared(bp)
        self.ids = {id(o): i for i, o in enumerate(self.objs)}

    def dumps(self, obj) -> bytes:
        f = io.BytesIO()
        _Pickler(f, self.ids).dump(obj)
        return f.getvalue()

    def loads(self, data: bytes):
        return _Unpickler(io.BytesIO(data), self.objs).load()


def _carried() -> tuple[type[Exception], ...]:
    """The errors a solve may raise that cross to the caller as their own type (subclasses as
    these: a subclass's constructor may take more than the message)."""
    return (SolveInterrupted, LockError, SubgameError, BlueprintError)


def _limits(limits: Optional[SolveLimits], kwargs: dict) -> tuple[SolveLimits, dict]:
    """The solve's limits (``limits`` with the fields among ``kwargs``, as
    :func:`~subgame.nested.solve_state` builds them) and the rest of ``kwargs``."""
    fields = {k: v for k, v in kwargs.items() if k in FIELDS}
    rest = {k: v for k, v in kwargs.items() if k not in FIELDS}
    return SolveLimits.build(limits, base=STATE_LIMITS, **fields), rest


def _serve(bp, conn, stop, nice: int, others: list) -> None:
    """A solver process: solve each job read from ``conn`` until the pipe closes. ``others``: the
    server's ends of the pipes (this process's and the earlier ones'), inherited by the fork and
    closed here, so that the pipe reads end when the server goes, however it goes."""
    for c in others:
        try:
            c.close()
        except OSError:
            pass

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which stops its solvers
    gc.freeze()  # what the fork inherited stays untouched by the collector (shared pages stay shared)
    lower_priority(nice)
    codec = _Codec(bp)
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            os._exit(0)
        try:
            state, method, limits, kwargs = codec.loads(data)
            limits = dataclasses.replace(limits, stop=stop, threads=1)
            out: tuple = ("ok", solve_state(bp, state, method, limits, **kwargs))
        except Exception as exc:  # noqa: BLE001 - every error goes back to the waiting thread
            cls = next((c for c in _carried() if isinstance(exc, c)), None)
            if cls is not None:
                out = ("error", cls.__name__, str(exc))
            else:
                out = ("bug", type(exc).__name__, "".join(traceback.format_exception(exc)))
        try:
            payload = codec.dumps(out)
        except Exception as exc:  # noqa: BLE001 - a result that does not pickle is a bug, reported
            payload = codec.dumps(("bug", type(exc).__name__, f"the solution does not pickle: {exc}"))
        try:
            conn.send_bytes(payload)
        except (BrokenPipeError, OSError):
            os._exit(0)
        del out, payload
        malloc_trim()


class _Worker:
    def __init__(self, ctx, bp, nice: int, others: list):
        self.stop = ctx.Event()
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(
            target=_serve,
            args=(bp, child, self.stop, nice, [*others, self.conn]),
            name="mccfr-solver",
            daemon=True,
        )
        self.proc.start()
        child.close()

    def close(self, timeout: float = 2.0) -> None:
        try:
            self.conn.close()
        except OSError:
            pass
        self.proc.join(timeout)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout)


class SolverProcesses:
    """``n`` solver processes forked from this one (call it before starting threads that may hold
    locks: the responder does it in its constructor). :meth:`solve` runs
    :func:`subgame.nested.solve_state` in an idle one; at most ``n`` callers at a time get one
    at once (more wait for the next free one)."""

    def __init__(self, bp, n: int, nice: int = 10):
        if not available():
            raise RuntimeError("solver processes need the 'fork' start method (Linux)")
        if n < 1:
            raise ValueError(f"solver processes must be >= 1, got {n}")
        self.bp, self.n, self.nice = bp, n, nice
        self._ctx = multiprocessing.get_context("fork")
        self._codec = _Codec(bp)
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []
        self.restarts = 0
        self._closed = False
        for _ in range(n):
            w = _Worker(self._ctx, bp, nice, [x.conn for x in self._workers])
            self._workers.append(w)
            self._idle.put(w)

    @property
    def pids(self) -> list[int]:
        with self._lock:
            return [int(w.proc.pid or 0) for w in self._workers]

    def solve(self, state, method: str, limits: Optional[SolveLimits] = None, **kwargs) -> tuple[Any, int]:
        """``solve_state(bp, state, method, limits, **kwargs)`` in a solver process, walking on one
        thread: the solution (its shared objects this process's own) and the node of ``state`` in
        it. The limits' ``stop`` (this process's event) is relayed to the solver while it runs."""
        if self._closed:
            raise SolverProcessError("the solver processes are closed")
        lim, kwargs = _limits(limits, kwargs)
        stop = lim.stop
        job = self._codec.dumps((state, method, dataclasses.replace(lim, stop=None), kwargs))
        w = self._idle.get()
        try:
            w.stop.clear()
            try:
                w.conn.send_bytes(job)
                while not w.conn.poll(POLL_S):
                    if stop is not None and stop.is_set():
                        w.stop.set()
                    if not w.proc.is_alive():
                        raise EOFError
                data = w.conn.recv_bytes()
            except (EOFError, OSError, BrokenPipeError):
                code = w.proc.exitcode
                w = self._replace(w)
                raise SolverProcessError(
                    f"the solver process died during the solve (exit code {code}); a new one replaces it"
                ) from None
        finally:
            if not self._closed:
                self._idle.put(w)
        out = self._codec.loads(data)
        if out[0] == "ok":
            return out[1]
        if out[0] == "error":
            raise {c.__name__: c for c in _carried()}[out[1]](out[2])
        raise RuntimeError(f"{out[1]} in the solver process:\n{out[2]}")  # a bug, as in a thread

    def warm_up(self, state, method: str, **kwargs) -> None:
        """One solve in every process at once (loads the kernels in each); errors are ignored."""
        lim, kwargs = _limits(None, kwargs)
        job = self._codec.dumps((state, method, dataclasses.replace(lim, stop=None), kwargs))
        taken = [self._idle.get() for _ in range(self.n)]
        try:
            for w in taken:
                w.conn.send_bytes(job)
            for w in taken:
                w.conn.recv_bytes()
        except (EOFError, OSError):
            taken = [w if w.proc.is_alive() else self._replace(w) for w in taken]
        finally:
            for w in taken:
                self._idle.put(w)

    def _replace(self, w: _Worker) -> _Worker:
        w.close(timeout=0.5)
        with self._lock:
            nw = _Worker(self._ctx, self.bp, self.nice, [x.conn for x in self._workers if x is not w])
            self._workers[self._workers.index(w)] = nw
            self.restarts += 1
        return nw

    def close(self) -> None:
        self._closed = True
        with self._lock:
            workers = list(self._workers)
        for w in workers:
            w.stop.set()
            w.close()
