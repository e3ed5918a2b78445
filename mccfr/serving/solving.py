"""The solving responder: blueprint early in the hand, subgames re-solved later and after
off-tree bets, every answer within its time budget (:class:`SolvingResponder`, configured by
:class:`SolvingOptions`); :class:`PendingAnswer`, a query whose solve is running; and
:func:`make_responder`, the responder for a run (the blueprint's or the solving one).

What a query and its answer are: :mod:`mccfr.serving.query`. What decides whether a solve is
admitted (its time and memory, estimated before it starts): :mod:`mccfr.serving.admission`. The
solves run in threads of this process or in forked processes (:mod:`mccfr.serving.solver_processes`).
"""

from __future__ import annotations

import dataclasses
import heapq
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from blueprint.blueprint import Blueprint, BlueprintError
from blueprint.defaults import DEFAULT_TIME_BUDGET_MS
from mccfr.serving.admission import CostModel, SizeModel
from mccfr.serving.query import (
    BLUEPRINT_METHOD,
    SEARCH_METHOD,
    SOLVE_METHODS,
    QueryError,
    Responder,
    check_locks,
    check_method,
    example_matchstates,
)
from mccfr.serving.resources import (
    default_memory_budget,
    default_solver_threads,
    lower_priority,
    malloc_trim,
    parse_bytes,
)
from mccfr.serving.responders import BlueprintResponder, SearchResponder
from mccfr.serving.solver_processes import SolverProcessError, SolverProcesses
from subgame.cache import SessionCache, nbytes
from subgame.interrupt import SolveInterrupted
from subgame.limits import SolveLimits
from subgame.locking import LockError
from subgame.multiway import SearchConfig
from subgame.nested import solve_state
from subgame.policy import Decision, SolvePolicy
from subgame.tree import SubgameError, hand_index


@dataclasses.dataclass(frozen=True)
class SolverResources:
    """What a :class:`SolvingResponder`'s solves may use of the machine: threads, memory, CPU
    priority, processes. None stands for a default that depends on the machine, which the
    responder fills in. Out-of-range values raise ValueError when the record is made."""

    solver_threads: int | None = None  # solves running at once; None: one per core
    # of those, the last round's at most; None: all but one when an earlier round is solved, else all
    last_round_threads: int | None = None
    memory_budget: int | str | None = None  # bytes, or "512M", "2G"; None: a quarter of physical memory
    max_sessions: int | None = None  # session-cache entries at most
    solver_nice: int = 10  # how much lower the solver threads' (and processes') CPU priority is
    solver_processes: bool = False  # solve in processes forked at start (mccfr.serving.solver_processes)

    def __post_init__(self) -> None:
        if self.solver_threads is not None and self.solver_threads < 1:
            raise ValueError(f"solver_threads must be >= 1, got {self.solver_threads}")
        if self.memory_budget is not None:
            parse_bytes(self.memory_budget)  # ValueError naming a text that is no byte count


@dataclasses.dataclass(frozen=True)
class SolvingOptions:
    """How a :class:`SolvingResponder` solves (its docstring tells what each option does): which
    rounds, how long a solve runs, and the machine's share (:class:`SolverResources`). None stands
    for a default that depends on the game or the machine, which the responder fills in (its
    attributes of the same names hold the values in effect). Out-of-range values raise ValueError
    when the options are made. :meth:`replace` takes any option by name, the resources' included."""

    from_round: int | None = None  # the first round solved; None: the last
    min_iterations: int = 10  # a solve with fewer is not used
    reserve_ms: float = 100.0  # a solve stops this long before the budget's end
    max_solve_ms: float | None = None  # iterate at most this long beyond what a useful solve needs
    measure_cards: int | None = 12  # depth-limited solves check on this many cards; None: every one
    resources: SolverResources = dataclasses.field(default_factory=SolverResources)

    def __post_init__(self) -> None:
        if self.min_iterations < 1:
            raise ValueError(f"min_iterations must be >= 1, got {self.min_iterations}")
        if self.reserve_ms < 0:
            raise ValueError(f"reserve_ms must be >= 0, got {self.reserve_ms}")
        if self.max_solve_ms is not None and self.max_solve_ms <= 0:
            raise ValueError(f"max_solve_ms must be > 0, got {self.max_solve_ms}")
        if self.measure_cards is not None and self.measure_cards < 2:
            raise ValueError(f"measure_cards must be >= 2 (or None: every card), got {self.measure_cards}")

    def replace(self, **options: Any) -> SolvingOptions:
        """A copy with ``options`` (any of :data:`OPTION_NAMES`, e.g. ``solver_threads=2``)
        replaced; TypeError for an unknown name, ValueError for a value out of range."""
        unknown = sorted(set(options) - set(OPTION_NAMES))
        if unknown:
            raise TypeError(
                f"unknown solving option(s) {', '.join(unknown)}: expected {', '.join(OPTION_NAMES)}"
            )
        res = {k: v for k, v in options.items() if k in _RESOURCE_NAMES}
        own = {k: v for k, v in options.items() if k not in _RESOURCE_NAMES}
        if res:
            own["resources"] = dataclasses.replace(self.resources, **res)
        return dataclasses.replace(self, **own)


_RESOURCE_NAMES = tuple(f.name for f in dataclasses.fields(SolverResources))
#: The names of the solving options: :class:`SolvingOptions`'s own and its :class:`SolverResources`'.
OPTION_NAMES = (
    *(f.name for f in dataclasses.fields(SolvingOptions) if f.name != "resources"),
    *_RESOURCE_NAMES,
)


class _Job:
    """One admitted solve: the query, the policy's decision (its session, hand key, played
    strategies and public key), its times (``time.perf_counter`` instants) and its future."""

    __slots__ = (
        "state",
        "method",
        "decision",
        "need",
        "solve_by",
        "answer_by",
        "t0",
        "stop",
        "future",
        "reserved",
        "raw",
        "end",
        "started",
        "given_up_at",
        "locks",
        "with_solution",
    )

    def __init__(
        self,
        state,
        method: str,
        decision: Decision,
        times: tuple[float, float, float, float],
        memory: tuple[int, Any],
        locks=None,
        with_solution: bool = False,
    ):
        """``times``: (seconds the solve needs, solve by, answer by, the query's arrival);
        ``memory``: (bytes reserved, the size model's raw estimate)."""
        self.state, self.method, self.decision = state, method, decision
        self.locks = locks  # subgame.locking.LockSpec or None
        self.with_solution = with_solution  # a locked answer carries its solution (the explorer's)
        self.need, self.solve_by, self.answer_by, self.t0 = times
        self.reserved, self.raw = memory
        self.stop = threading.Event()
        self.future: Future = Future()
        self.end: float = float("inf")  # when it stops iterating at the latest (set when it starts)
        self.started: float | None = None
        # when its query stopped waiting (inf: it has not; one that waited past the solve's end cut
        # nothing short)
        self.given_up_at = float("inf")

    @property
    def given_up(self) -> bool:
        """Its query stopped waiting."""
        return self.given_up_at != float("inf")


class PendingAnswer:
    """A query whose answer a solver thread is computing: wait for ``future`` until ``answer_by``
    (a :func:`time.perf_counter` instant), then :meth:`finish` it; or, past ``answer_by``,
    :meth:`give_up` (the blueprint's answer, ``fallback: "deadline"``). The service awaits
    ``future`` on its event loop without holding a thread; :meth:`wait` blocks."""

    def __init__(self, responder: SolvingResponder, job: _Job):
        self._r = responder
        self._job = job
        self.future = job.future
        self.answer_by = job.answer_by

    def finish(self) -> dict[str, Any]:
        """The answer once ``future`` is done (raises the query's :class:`QueryError`)."""
        out = self.future.result()
        if isinstance(out, str):  # a fallback reason ("unsolvable:<why>" with why)
            kind, _, why = out.partition(":")
            if kind == "bad_locks":  # the query's fault, not the solver's: a 4xx
                raise QueryError("bad_locks", why, 422)
            self._r._count(kind)
            ans = self._r._blueprint_answer(self._job.state, self._job.t0, kind, self._job.method)
            if why:
                ans["reason"] = (
                    f"{ans['reason']}; " if "reason" in ans else ""
                ) + f"cannot solve a subgame here: {why}"
            return ans
        self._r._count("solved")
        return {**out, "elapsed_ms": (time.perf_counter() - self._job.t0) * 1e3}

    def give_up(self) -> dict[str, Any]:
        """Stop the solve (it ends at its next check and frees its thread) and answer from the blueprint."""
        self._job.given_up_at = time.perf_counter()
        self._job.stop.set()
        self._r._count("deadline")
        return self._r._blueprint_answer(self._job.state, self._job.t0, "deadline", self._job.method)

    def wait(self) -> dict[str, Any]:
        try:
            self.future.result(timeout=max(0.0, self.answer_by - time.perf_counter()))
        except FutureTimeout:
            return self.give_up()
        except Exception:  # noqa: BLE001 - raised again by finish()
            pass
        return self.finish()


class SolvingResponder(BlueprintResponder):
    """Blueprint early in the hand; from ``from_round`` on (default: the last round) and at the
    blueprint's dead ends, a subgame solved with the query's method (default ``solve_method``)
    within its time budget, nested after an off-tree bet, and reused within the session's hand:
    the solve policy of :class:`subgame.policy.SolvePolicy`. ``method="blueprint"`` answers from
    the blueprint. Every answer comes back within its time budget, counted from ``arrived``.

    How solves are admitted, queued, timed and kept within the memory budget, and what each
    fallback means: docs/serving.md, "The solving responder"."""

    methods: tuple[str, ...] = (BLUEPRINT_METHOD, *SOLVE_METHODS)
    FALLBACKS = ("busy", "budget", "deadline", "memory", "unsolvable")
    TRIM_EVERY_S = 5.0  # at most this often, after evictions: malloc_trim()

    def __init__(
        self,
        bp: Blueprint,
        solve_method: str = "reach-maxmargin",
        default_time_budget_ms: int = DEFAULT_TIME_BUDGET_MS,
        options: SolvingOptions | None = None,
        **overrides: Any,
    ):
        """``options`` (:class:`SolvingOptions`), with ``overrides`` (any option by name, those
        of its :class:`SolverResources` included, e.g. ``solver_threads=2``) replacing some.
        TypeError for an unknown option, ValueError for a value out of range."""
        opts = (options or SolvingOptions()).replace(**overrides)  # TypeError: an unknown option
        super().__init__(bp, default_time_budget_ms)
        check_method(solve_method, SOLVE_METHODS)
        self.solve_method: str = solve_method
        self.options = opts  # as asked; the attributes below hold the values in effect
        res = opts.resources
        last = bp.gamedef.num_rounds - 1
        budget = default_memory_budget() if res.memory_budget is None else parse_bytes(res.memory_budget)
        self.sessions = SessionCache(budget, max_entries=res.max_sessions)
        self.policy = SolvePolicy(bp, opts.from_round, hands=self.sessions)  # ValueError: from_round
        self.from_round: int = self.policy.from_round
        self.solver_threads: int = (
            default_solver_threads() if res.solver_threads is None else res.solver_threads
        )
        threads = res.last_round_threads
        if threads is None:  # a thread kept back for the earlier rounds' solves, when there are any
            threads = max(1, self.solver_threads - 1) if self.from_round < last else self.solver_threads
        if not 1 <= threads <= self.solver_threads:
            raise ValueError(
                f"last_round_threads must be in 1..solver_threads ({self.solver_threads}), got {threads}"
            )
        self.last_round_threads: int = threads
        self.min_iterations = opts.min_iterations
        self.reserve_ms = float(opts.reserve_ms)
        self.max_solve_ms = opts.max_solve_ms
        self.measure_cards = opts.measure_cards
        self.solver_nice = res.solver_nice
        self.size = SizeModel(bp)
        self._cond = threading.Condition()
        self._running: list[_Job] = []  # solves running
        self._queue: list[_Job] = []  # solves admitted, waiting for a solver thread (in order)
        self._solvers = ThreadPoolExecutor(
            self.solver_threads,
            thread_name_prefix="mccfr-solve",
            initializer=lower_priority,
            initargs=(self.solver_nice,),
        )
        self._procs: SolverProcesses | None = None
        if res.solver_processes:  # forked now, before the server's threads start
            self._procs = SolverProcesses(bp, self.solver_threads, self.solver_nice)
        self.cost = CostModel()
        self._counts: dict[str, int] = {}
        self._overrun = 0.0  # how long solves ran past their end (a slowly decaying max), seconds
        self._overrun_mean = 0.0  # the same, a moving average: the projections count on it
        self._hand_index: dict | None = None
        self._trimmed = 0.0

    @property
    def memory_budget(self) -> int:
        """Bytes for solved subgames and the solves in flight (the session cache's budget)."""
        return self.sessions.budget

    def _count(self, what: str) -> None:
        with self._cond:
            self._counts[what] = self._counts.get(what, 0) + 1

    def _blueprint_answer(
        self, state, t0, fallback: str | None = None, method: str | None = None
    ) -> dict[str, Any]:
        out = self.blueprint_answer(state, t0, method)
        if fallback is not None:
            out["fallback"] = fallback
        return out

    def answer_fast(self, matchstate, session=None, time_budget_ms=None, method=None, arrived=None):
        t0 = time.perf_counter() if arrived is None else arrived
        state, _, _, method = self.validate(matchstate, session, time_budget_ms, method)
        if method == BLUEPRINT_METHOD or not self.policy.solves(state):
            return self._blueprint_answer(state, t0)
        return None

    def _reserve_s(self, budget_s: float) -> float:
        return min(self.reserve_ms / 1e3, 0.25 * budget_s)

    def _stop_early_s(self, budget_s: float) -> float:
        """How long before the answer is due a solve stops iterating: the reserve, plus how far
        solves have lately run past their end (the last iteration, the answer's way back from a
        solver process), so that a loaded machine's slower ends still land inside the budget."""
        return min(self._reserve_s(budget_s) + self._overrun, 0.25 * budget_s)

    def _duration(self, need: float) -> float:
        """The longest a solve that needs ``need`` seconds keeps its thread (before its deadline)."""
        return float("inf") if self.max_solve_ms is None else need + self.max_solve_ms / 1e3

    def _projected_start(self, now: float) -> float:
        """When a solve admitted now would get a solver thread (lock held): the running solves
        end by their deadlines; each waiting solve, in order, takes the first thread free and
        keeps it until its deadline (or its need plus ``max_solve_ms``); one that would start too
        late to be useful is skipped, as it will be when its turn comes."""
        over = self._overrun_mean  # solves end a little after their deadline (the last iteration, the answer)
        free = [max(now, j.end + over) for j in self._running]
        free += [now] * max(0, self.solver_threads - len(free))
        heapq.heapify(free)
        for j in self._queue:
            if j.stop.is_set():
                continue
            t = free[0]
            if t + j.need > j.solve_by:
                continue  # it will not start
            heapq.heapreplace(free, min(j.solve_by, t + self._duration(j.need)) + over)
        return free[0]

    def _within_share(self, rnd: int) -> bool:
        """Whether one more solve of round ``rnd`` keeps the last round within its share of the
        solver threads (lock held)."""
        if rnd < self.bp.gamedef.num_rounds - 1 or self.last_round_threads >= self.solver_threads:
            return True
        held = sum(1 for j in (*self._running, *self._queue) if j.state.round == rnd and not j.stop.is_set())
        return held < self.last_round_threads

    #: queries may carry node locks (``locks=``, :mod:`subgame.locking`)
    accepts_locks = True

    def answer_start(
        self,
        matchstate,
        session=None,
        time_budget_ms=None,
        method=None,
        arrived=None,
        early: float = 0.0,
        locks=None,
        with_solution: bool = False,
    ) -> dict[str, Any] | PendingAnswer:
        """The answer, when it is known at once (a blueprint answer, a reused subgame, a fallback),
        else a :class:`PendingAnswer` of a solve admitted to the solver queue. Cheap (a blueprint
        lookup's cost): the service calls it on its event loop. ``early``: seconds before the end
        of the budget by which the answer must be ready (the service's event-loop lag: the time
        it will take to send it). ``locks``: node locks of the subgame (:mod:`subgame.locking`; a
        locked query always solves: it neither reuses nor keeps a solved subgame; with
        ``with_solution`` its answer, when solved, carries ``"solution": (Solution, node)`` for the
        caller: not JSON, for the explorer's whole-range view). Raises :class:`QueryError`."""
        t0 = time.perf_counter() if arrived is None else arrived
        state, session, budget, method = self.validate(matchstate, session, time_budget_ms, method)
        locks = check_locks(locks)
        d = None
        if method != BLUEPRINT_METHOD:
            method = method or self.solve_method
            assert state.viewer is not None  # a decision of its viewer (validated)
            key = (state.hand_id, tuple(state.hole_cards[state.viewer]), method)
            d = self.policy.decide(state, session, key, method, reuse=locks is None)
        if d is None or (d.hit is None and not d.solve):  # the blueprint answers
            if locks is not None:
                why = (
                    "(method 'blueprint')"
                    if d is None
                    else f"(this server solves from round {self.from_round + 1} on)"
                )
                raise QueryError(
                    "bad_locks",
                    f"locks need a subgame solve, and this query is answered from the blueprint {why}",
                    422,
                )
            return self._blueprint_answer(state, t0)
        if d.hit is not None:
            sol, node = d.hit
            try:
                strategy = self._hand_strategy(sol, node, state)
            except (SubgameError, BlueprintError) as exc:
                self._count("unsolvable")
                out = self._blueprint_answer(state, t0, "unsolvable", method)
                out["reason"] = f"{out['reason']}; " if "reason" in out else ""
                out["reason"] += f"cannot solve a subgame here: {exc}"
                return out
            self.policy.record(session, d.key, state, sol, node)
            self._count("reused")
            ans = self._answer_of(sol, strategy)
            return {**ans, "elapsed_ms": (time.perf_counter() - t0) * 1e3, "reused": True}
        budget_s = budget / 1e3
        reserve = self._reserve_s(budget_s)
        deadline = t0 + budget_s - max(0.0, early)  # the answer is due then
        solve_by = deadline - self._stop_early_s(budget_s)  # the solve stops iterating by then (>= reserve)
        mem, raw = self.size.estimate(state)  # raw: the solve's size, which its cost scales with
        need = max(self.cost.get(state.round, raw), 0.005)
        now = time.perf_counter()
        if need > solve_by - now:
            self.cost.decay(state.round)  # so that a round refused long enough is tried again
            self._count("budget")
            return self._blueprint_answer(state, t0, "budget", method)
        with self._cond:
            start = self._projected_start(now)
            fits = start + need <= solve_by and self._within_share(state.round)
            reserved = fits and self.sessions.reserve(mem)
            if reserved:
                times = (need, solve_by, deadline - reserve / 2, t0)
                job = _Job(state, method, d, times, (mem, raw), locks, with_solution and locks is not None)
                self._queue.append(job)
        if not fits:
            self._count("busy")
            return self._blueprint_answer(state, t0, "busy", method)
        if not reserved:
            self.size.refused(state.round)
            self._count("memory")
            return self._blueprint_answer(state, t0, "memory", method)
        try:
            self._solvers.submit(self._run, job)
        except BaseException:
            self._drop(job)
            raise
        return PendingAnswer(self, job)

    def _hand_strategy(self, sol, node: int, state) -> dict[str, float]:
        """``subgame.nested.hand_strategy`` with the hand's index from a table built once (the
        subgame module's builds a dict of every hand per call: milliseconds on the event loop)."""
        if self._hand_index is None:
            self._hand_index = hand_index(self.bp.gamedef)
        i = self._hand_index[tuple(sorted(int(c) for c in state.hole_cards[state.viewer]))]
        return {k: float(v[i]) for k, v in sol.node_strategy(node).items()}

    def _drop(self, job: _Job) -> None:
        """``job`` leaves the queue / the running solves; its memory reservation is released."""
        with self._cond:
            if job in self._queue:
                self._queue.remove(job)
            if job in self._running:
                self._running.remove(job)
            if job.reserved:
                self.sessions.release(job.reserved)
                job.reserved = 0
            self._cond.notify_all()

    def _solve_state(self, state, method: str, limits: SolveLimits, **kwargs):
        """:func:`subgame.nested.solve_state` within ``limits``, in a solver process when the
        responder has them (``solver_processes``), else in the calling thread."""
        if self._procs is not None:
            return self._procs.solve(state, method, limits, **kwargs)
        return solve_state(self.bp, state, method, limits, **kwargs)

    def _run(self, job: _Job) -> None:
        """In a solver thread: solve ``job`` (unless too late by now), set its future."""
        try:
            job.future.set_result(self._solve(job))
        except BaseException as exc:  # noqa: BLE001 - the waiting query raises it
            job.future.set_exception(exc)
        finally:
            self._drop(job)

    def _solve(self, job: _Job) -> dict[str, Any] | str:
        t = time.perf_counter()
        with self._cond:
            self._queue.remove(job)
            if job.stop.is_set() or t + job.need > job.solve_by:  # given up, or too late by now
                late = True
            else:
                late = False
                job.started = t
                job.end = min(job.solve_by, t + self._duration(job.need))
                self._running.append(job)
        if late:
            if not job.given_up:
                self._count(
                    "late"
                )  # answered "busy": admitted, but the solves ahead ran longer than projected
            return "busy"
        state = job.state
        useful, iterated = False, False
        played = job.decision.played
        try:
            last = state.round >= self.bp.gamedef.num_rounds - 1
            limits = SolveLimits(
                deadline=job.end,
                stop=job.stop,
                measure_samples=None if last else self.measure_cards,
                locks=job.locks,
                min_iterations=self.min_iterations,
            )
            sol, node = self._solve_state(state, job.method, limits, played=played or None)
            iterated = sol.iterations > 0
            if sol.iterations >= self.min_iterations:
                useful = True
                tm = sol.timing
                # what a useful solve needs: the construction, the tree and the engine, and the
                # minimum iterations; not the final exploitability check, which the solver skips when
                # it no longer fits (diagnostics: the answer reports it when it was measured)
                setup = (time.perf_counter() - t) - sol.elapsed_s + tm["tree_s"] + tm.get("engine_s", 0.0)
                self.cost.finished(state.round, setup + self.min_iterations * tm["iter_s"], job.raw)
        except SolveInterrupted:
            return "deadline"
        except LockError as exc:
            return f"bad_locks:{exc}"
        except (SubgameError, BlueprintError, SolverProcessError) as exc:
            return f"unsolvable:{exc}"
        finally:
            over = max(0.0, time.perf_counter() - job.end)
            with self._cond:
                self._overrun = max(self._overrun * 0.999, over)
                self._overrun_mean = 0.9 * self._overrun_mean + 0.1 * over
            if not useful:  # stopped, or too few iterations: a useful solve takes longer than this one ran
                # (back-off only for a solve that had all its budget's time and never iterated: given up
                # by its query before its end, or cut short by max_solve_ms, it only says a useful one
                # takes longer; a query that gave up because the solve ran past its end cut nothing short)
                whole = job.end >= job.solve_by - 1e-3 and job.given_up_at >= job.end
                self.cost.failed(
                    state.round, time.perf_counter() - t, backoff=not iterated and whole, units=job.raw
                )
        size = nbytes(sol)
        self.size.observe(state.round, job.raw, job.reserved, int(getattr(sol, "state_bytes", 0)) + size)
        if not useful:
            return "deadline"
        try:
            strategy = self._hand_strategy(sol, node, state)
        except (SubgameError, BlueprintError) as exc:
            return f"unsolvable:{exc}"
        self.sessions.release(job.reserved)  # the solve's working memory is gone: room to keep the result
        with self._cond:
            job.reserved = 0
        if job.locks is not None:  # a locked subgame answers this query only
            out = self._answer_of(sol, strategy)
            if job.with_solution:
                out["solution"] = (sol, node)
            return out
        d = job.decision
        self.policy.record(d.session, d.key, state, sol, node)
        if self.policy.keep(d, sol, size):
            now = time.perf_counter()
            if now - self._trimmed > self.TRIM_EVERY_S:
                self._trimmed = now  # in this (low-priority) solver thread, off the event loop
                malloc_trim()
        return self._answer_of(sol, strategy)

    @staticmethod
    def _answer_of(sol, strategy: dict[str, float]) -> dict[str, Any]:
        return {
            "strategy": strategy,
            "source": "subgame",
            "method": sol.method,
            "reused": False,
            "iterations": sol.iterations,
            "exploitability_pct_pot": sol.exploitability_pct_pot,
            "exploitability_cards": sol.measure_cards,
            "leaf_cards": sol.leaf_cards,
        }

    def answer(
        self,
        matchstate,
        session=None,
        time_budget_ms=None,
        method=None,
        arrived=None,
        locks=None,
        with_solution: bool = False,
    ) -> dict[str, Any]:
        out = self.answer_start(
            matchstate,
            session,
            time_budget_ms,
            method,
            arrived=arrived,
            locks=locks,
            with_solution=with_solution,
        )
        return out.wait() if isinstance(out, PendingAnswer) else out

    def warm_up(self) -> None:
        """Blueprint lookups, then one small solve per round solved here, so that the first real
        query does not pay for compiling (or loading) the solver's kernels."""
        super().warm_up()
        examples = [
            ms for ms in example_matchstates(self.game) if self._checker.parse(ms).round >= self.from_round
        ]
        # the last round's subgame is the smallest and runs the solver's kernels; a depth-limited one
        # (the round before the last, when solved here) runs the continuation kernels besides: compiled
        # in a fresh install they take tens of seconds, which the first real query would pay
        last = self.bp.gamedef.num_rounds - 1
        dl = [ms for ms in examples if self._checker.parse(ms).round < last][-1:]
        for ms in dl + examples[-1:]:
            if self._procs is not None:  # in every solver process at once
                self._procs.warm_up(
                    self._checker.parse(ms), self.solve_method, time_budget=None, iterations=2
                )
                continue
            try:
                solve_state(
                    self.bp, self._checker.parse(ms), self.solve_method, time_budget=None, iterations=2
                )
            except Exception:  # a warm-up query the blueprint cannot serve: nothing to compile from it
                pass
        if examples:
            self.size.shape(self._checker.parse(examples[-1]))  # the subtree counts, computed once
        # one query per solved round (the last first) under the default budget, twice: the first
        # pass runs every code path of a real query once (numba may still load or compile there),
        # the second teaches the cost model what a solve of each round takes, so that the first real
        # query of a round too slow to solve does not start a solve only to abandon it
        for rep in range(2):
            self.cost.clear()
            for ms in reversed(examples):
                try:
                    self.answer(ms)
                except QueryError:
                    pass
                self._wait_idle()  # a solve given up goes on to its next check: let it end
        with self._cond:
            self._counts.clear()

    def _wait_idle(self) -> None:
        """Until no solve runs or waits."""
        with self._cond:
            while self._running or self._queue:
                self._cond.wait()

    def metrics(self) -> dict[str, Any]:
        """What ``/metrics`` adds: the memory budget and the session cache (bytes, entries,
        evictions), the size estimates, and the solver queue with the per-round costs."""
        with self._cond:
            running, queued, counts, over = (
                len(self._running),
                len(self._queue),
                dict(self._counts),
                self._overrun,
            )
        return {
            "memory": {**self.sessions.snapshot(), **self.size.snapshot()},
            "solver": {
                "threads": self.solver_threads,
                "processes": None if self._procs is None else {"restarts": self._procs.restarts},
                "running": running,
                "queued": queued,
                "outcomes": counts,
                "overrun_ms": {"max": round(over * 1e3, 1), "mean": round(self._overrun_mean * 1e3, 1)},
                "cost_s": {str(r): round(s, 4) for r, s in sorted(self.cost.snapshot().items())},
            },
        }

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "solve_method": self.solve_method,
            "solve_from_round": self.from_round,
            "solver_threads": self.solver_threads,
            "solver_processes": self._procs is not None,
            "min_iterations": self.min_iterations,
            "reserve_ms": self.reserve_ms,
            "max_solve_ms": self.max_solve_ms,
            "memory_budget_bytes": self.memory_budget,
        }

    def close(self) -> None:
        with self._cond:
            waiting = list(self._queue) + list(self._running)
        for j in waiting:
            j.stop.set()
        self._solvers.shutdown(wait=False, cancel_futures=True)
        if self._procs is not None:
            self._procs.close()


def make_responder(
    run_dir: str | Path,
    solve_method: str | None = None,
    default_time_budget_ms: int = DEFAULT_TIME_BUDGET_MS,
    log=None,
    **solving: Any,
) -> Responder:
    """The responder for a run: the blueprint alone (``solve_method=None``), or blueprint plus
    subgame solving with ``solve_method`` as the default method (``solving``: ``options``, a
    :class:`SolvingOptions`, and any option by name, e.g. ``from_round``, ``solver_threads``), or
    with ``solve_method="search"`` Pluribus-style search (:class:`SearchResponder`; any number of
    seats; ``from_round`` its only option, default 1, the second round).

    Raises:
        QueryError: ``solve_method`` names no method (``bad_method``).
        blueprint.io.errors.CheckpointError, ValueError: the run cannot be loaded.
    """
    if solve_method == SEARCH_METHOD:
        extra = sorted(set(solving) - {"from_round"})
        if extra:
            raise QueryError(
                "bad_method",
                f"{', '.join(extra)}: options of subgame solving; search takes from_round only",
                422,
            )
        bp = Blueprint.load(Path(run_dir), log=log)
        first = solving.get("from_round", min(1, bp.gamedef.num_rounds - 1))  # Pluribus: the flop on
        config = SearchConfig(iterations=None, seconds=1.0, from_round=first)
        return SearchResponder(bp, default_time_budget_ms, config)
    if solve_method is not None:
        check_method(solve_method, SOLVE_METHODS)
        return SolvingResponder(
            Blueprint.load(Path(run_dir), log=log), solve_method, default_time_budget_ms, **solving
        )
    if solving:
        raise TypeError(
            f"{', '.join(sorted(solving))}: options of subgame solving, which needs a solve_method"
        )
    return BlueprintResponder(Blueprint.load(Path(run_dir), log=log), default_time_budget_ms)


__all__ = [
    "OPTION_NAMES",
    "PendingAnswer",
    "SolverResources",
    "SolvingOptions",
    "SolvingResponder",
    "make_responder",
]
