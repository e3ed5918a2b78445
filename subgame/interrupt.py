"""Stopping a solve early: a deadline or a ``stop`` event, checked between the steps of a
subgame's construction and of :func:`subgame.solver.solve`.

:func:`interruptible` sets the bounds for the block (per thread); :func:`checkpoint`, called by the
construction between its steps (ranges, the blueprint's values, the depth-limited continuations:
seconds of Python on a loaded machine), raises :class:`SolveInterrupted` once they are passed.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Optional


class SolveInterrupted(Exception):
    """A solve given ``stop`` or ``deadline`` was stopped before it could do anything useful
    (raised between the steps of :func:`subgame.nested.solve_state`)."""


_scope = threading.local()


@contextlib.contextmanager
def interruptible(deadline: Optional[float], stop=None):
    """Within the block (in this thread), :func:`checkpoint` raises :class:`SolveInterrupted` once
    ``stop`` is set or ``deadline`` has passed: the subgame's construction (ranges, the blueprint's
    values, the depth-limited continuations: seconds of Python on a loaded machine) calls it
    between its steps, so a query's deadline ends it there instead of after it."""
    old = getattr(_scope, "bounds", None)
    _scope.bounds = (deadline, stop)
    try:
        yield
    finally:
        _scope.bounds = old


def checkpoint() -> None:
    """:func:`check_interrupt` with the bounds of the enclosing :func:`interruptible` block, if any."""
    bounds = getattr(_scope, "bounds", None)
    if bounds is not None:
        check_interrupt(*bounds)


def check_interrupt(deadline: Optional[float], stop=None) -> None:
    """:class:`SolveInterrupted` when ``stop`` (a :class:`threading.Event`) is set or the
    ``deadline`` (a :func:`time.perf_counter` instant) has passed."""
    if stop is not None and stop.is_set():
        raise SolveInterrupted("the solve was cancelled")
    if deadline is not None and time.perf_counter() >= deadline:
        raise SolveInterrupted("the solve's deadline passed before it started iterating")
