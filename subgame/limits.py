"""A solve's limits: when it stops and what it may use (:class:`SolveLimits`).

One frozen record carries the stop rule (iterations, seconds, a target exploitability, a deadline,
a stop event) and the run's settings (walk threads, a sampled exploitability check, node locks,
keeping the solver's state) from whoever asks for a solve (the ``mccfr solve`` command, the query
service, a solving player) through :func:`subgame.nested.solve_state` to
:func:`subgame.solver.solve`. It is checked once, when it is made: a budget of 0, a negative,
NaN or absurd one is a :class:`~subgame.tree.SubgameError` (a ValueError) naming the field.

The convenience keywords of :func:`~subgame.solver.solve` and :func:`~subgame.nested.solve_state`
(``iterations=200``, ``time_budget=2.0``, ...) build one with :meth:`SolveLimits.build`.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from typing import Any, Mapping, Optional

from subgame.tree import SubgameError

#: the most iterations one solve may be asked for (more is a typo, not a plan)
MAX_ITERATIONS = 10**9
#: the longest time budget one solve may be given, seconds (30 days)
MAX_SECONDS = 30 * 24 * 3600.0
#: the most walk threads a solve may be given
MAX_THREADS = 4096


def _count(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int in ``[low, high]``, else a SubgameError naming ``name``."""
    if isinstance(value, bool):
        raise SubgameError(f"{name} must be an integer, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise SubgameError(f"{name} must be an integer, got {value!r}") from None
    if not low <= n <= high:
        raise SubgameError(f"{name} must be in {low:,}..{high:,}, got {n:,}")
    return n


def _number(name: str, value: Any) -> float:
    """``value`` as a finite float, else a SubgameError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise SubgameError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise SubgameError(f"{name} must be a finite number, got {x}")
    return x


@dataclasses.dataclass(frozen=True)
class SolveLimits:
    """When a solve stops and what it may use. None leaves a limit out. A solve without
    ``iterations``, ``time_budget`` or ``target_pct_pot`` runs :data:`DEFAULT_ITERATIONS`
    iterations (:func:`subgame.solver.solve`).

    ``iterations``: CFR iterations to run, 0 to 10**9 (0: none, the strategy measured as it is, for
    a continued solve). ``time_budget``: seconds, more than 0 and at most 30 days.
    ``target_pct_pot``: stop at this exploitability (the gadget game's for the safe methods), in
    percent of the starting pot, more than 0; checked every ``check_every`` iterations at first.
    ``deadline``: a :func:`time.perf_counter` instant, a hard limit on the whole call (the
    subgame's construction included). ``stop``: a :class:`threading.Event` (or anything with
    ``is_set()``) that ends the solve at its next check. ``threads``: the walk's threads (None:
    numba's). ``measure_samples``: a depth-limited solve's exploitability check on this many of the
    next deal's cards (at least 2). ``locks``: node locks (:mod:`subgame.locking`).
    ``keep_state``: keep the solver's tables in ``Solution.state`` (to continue or save it).
    ``min_iterations``: with a ``deadline``, the iterations that come before the final
    exploitability check (0 to 10**9): until the solve has run this many, it keeps iterating while
    an iteration fits before the deadline, without keeping back the check's time (a solve its caller
    cannot use with fewer iterations should not stop early to measure itself). ``final_check``:
    False skips the exploitability check after the last iteration (the solution has the average
    strategy alone, as when a deadline leaves no time for it): for callers that only play the
    strategy, such as evaluation's solving players (a turn solve's exact check walks every river
    card, a quarter of a 100-iteration solve)."""

    iterations: Optional[int] = None
    time_budget: Optional[float] = None
    target_pct_pot: Optional[float] = None
    deadline: Optional[float] = None
    stop: Any = dataclasses.field(default=None, compare=False)
    threads: Optional[int] = None
    measure_samples: Optional[int] = None
    check_every: int = 10
    locks: Optional[Mapping[str, Any]] = dataclasses.field(default=None, compare=False)
    keep_state: bool = False
    min_iterations: int = 0
    final_check: bool = True

    def __post_init__(self) -> None:
        fix = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 - frozen
        if self.iterations is not None:
            fix("iterations", _count("iterations", self.iterations, 0, MAX_ITERATIONS))
        if self.time_budget is not None:
            t = _number("time_budget", self.time_budget)
            if not 0 < t <= MAX_SECONDS:
                raise SubgameError(
                    f"time_budget must be more than 0 and at most {MAX_SECONDS:,.0f} s, got {t}"
                )
            fix("time_budget", t)
        if self.target_pct_pot is not None:
            p = _number("target_pct_pot", self.target_pct_pot)
            if p <= 0:
                raise SubgameError(f"target_pct_pot must be more than 0 (% of the pot), got {p}")
            fix("target_pct_pot", p)
        if self.deadline is not None:
            fix("deadline", _number("deadline", self.deadline))
        if self.stop is not None and not callable(getattr(self.stop, "is_set", None)):
            raise SubgameError(f"stop must be an event (with is_set()), got {self.stop!r}")
        if self.threads is not None:
            fix("threads", _count("threads", self.threads, 1, MAX_THREADS))
        if self.measure_samples is not None:
            fix("measure_samples", _count("measure_samples", self.measure_samples, 2, MAX_ITERATIONS))
        fix("check_every", _count("check_every", self.check_every, 1, MAX_ITERATIONS))
        if self.locks is not None and not isinstance(self.locks, Mapping):
            raise SubgameError(f"locks must be a mapping of node histories to strategies, got {self.locks!r}")
        if not isinstance(self.keep_state, bool):
            raise SubgameError(f"keep_state must be True or False, got {self.keep_state!r}")
        if not isinstance(self.final_check, bool):
            raise SubgameError(f"final_check must be True or False, got {self.final_check!r}")
        fix("min_iterations", _count("min_iterations", self.min_iterations, 0, MAX_ITERATIONS))

    @property
    def bounded(self) -> bool:
        """Whether a stop rule of its own is given (iterations, seconds or a target)."""
        return self.iterations is not None or self.time_budget is not None or self.target_pct_pot is not None

    @classmethod
    def build(cls, limits: Optional[SolveLimits] = None, base: Optional[SolveLimits] = None, **fields: Any):
        """``limits``, or ``base`` (default: no limit), with ``fields`` (this record's field names:
        the convenience keywords of the solve functions) replacing some. A TypeError names a
        keyword that is no field."""
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            raise TypeError(f"unknown solve limit(s) {', '.join(unknown)}: expected {', '.join(FIELDS)}")
        start = limits if limits is not None else base if base is not None else cls()
        return dataclasses.replace(start, **fields) if fields else start


#: the field names of :class:`SolveLimits` (the solve functions' convenience keywords)
FIELDS = tuple(f.name for f in dataclasses.fields(SolveLimits))

#: the iterations of a solve given no stop rule
DEFAULT_ITERATIONS = 1000

__all__ = ["DEFAULT_ITERATIONS", "FIELDS", "MAX_ITERATIONS", "MAX_SECONDS", "MAX_THREADS", "SolveLimits"]
