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
from typing import Any, Optional

from blueprint.blueprint import Blueprint, BlueprintError
from blueprint.defaults import DEFAULT_TIME_BUDGET_MS
from mccfr.serving.admission import CostModel, SizeModel
from mccfr.serving.query import (
    BLUEPRINT_METHOD,
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
from mccfr.serving.responders import BlueprintResponder
from mccfr.serving.solver_processes import SolverProcessError, SolverProcesses
from subgame.cache import PlayedStrategy, SessionCache, nbytes, public_key
from subgame.interrupt import SolveInterrupted
from subgame.locking import LockError
from subgame.nested import solve_state
from subgame.tree import SubgameError, hand_index


@dataclasses.dataclass(frozen=True)
class SolvingOptions:
    """How a :class:`SolvingResponder` solves (its docstring tells what each option does). None
    stands for a default that depends on the game or the machine, which the responder fills in
    (its attributes of the same names hold the values in effect). Out-of-range values raise
    ValueError when the options are made."""

    from_round: int | None = None  # the first round solved; None: the last
    solver_threads: int | None = None  # solves running at once; None: one per core
    # of those, the last round's at most; None: all but one when an earlier round is solved, else all
    last_round_threads: int | None = None
    min_iterations: int = 10  # a solve with fewer is not used
    reserve_ms: float = 100.0  # a solve stops this long before the budget's end
    max_solve_ms: float | None = None  # iterate at most this long beyond what a useful solve needs
    memory_budget: int | str | None = None  # bytes, or "512M", "2G"; None: a quarter of physical memory
    max_sessions: int | None = None  # session-cache entries at most
    solver_nice: int = 10  # how much lower the solver threads' (and processes') CPU priority is
    measure_cards: int | None = 12  # depth-limited solves check on this many cards; None: every one
    solver_processes: bool = False  # solve in processes forked at start (mccfr.serving.solver_processes)

    def __post_init__(self) -> None:
        if self.solver_threads is not None and self.solver_threads < 1:
            raise ValueError(f"solver_threads must be >= 1, got {self.solver_threads}")
        if self.min_iterations < 1:
            raise ValueError(f"min_iterations must be >= 1, got {self.min_iterations}")
        if self.reserve_ms < 0:
            raise ValueError(f"reserve_ms must be >= 0, got {self.reserve_ms}")
        if self.max_solve_ms is not None and self.max_solve_ms <= 0:
            raise ValueError(f"max_solve_ms must be > 0, got {self.max_solve_ms}")
        if self.measure_cards is not None and self.measure_cards < 2:
            raise ValueError(f"measure_cards must be >= 2 (or None: every card), got {self.measure_cards}")
        if self.memory_budget is not None:
            parse_bytes(self.memory_budget)  # ValueError naming a text that is no byte count


#: The names of the solving options (:class:`SolvingOptions`'s fields).
OPTION_NAMES = tuple(f.name for f in dataclasses.fields(SolvingOptions))


def _public_key(state, method: str, played=None) -> Optional[str]:
    """The session-cache key of a subgame the same for every deal (:func:`subgame.cache.public_key`)
    solved with ``method``, shared by every session; None once board cards are out. It starts with
    a character no client's session has (sessions are printable), as :func:`_played_key` does."""
    key = public_key(state, played)
    return None if key is None else f"\x00public:{method}:{key}"


def _played_key(session: str) -> str:
    """The session-cache key of ``session``'s :class:`~subgame.cache.PlayedStrategy`."""
    return f"\x00played:{session}"


class _Job:
    """One admitted solve: the query, its times (``time.perf_counter`` instants) and its future."""

    __slots__ = (
        "state",
        "method",
        "session",
        "key",
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
        method,
        session,
        key,
        need,
        solve_by,
        answer_by,
        t0,
        reserved,
        raw,
        locks=None,
        with_solution=False,
    ):
        self.state, self.session, self.key = state, session, key
        self.locks = locks  # subgame.locking.LockSpec or None
        self.with_solution = with_solution  # a locked answer carries its solution (the explorer's)
        self.method: str = method
        self.need, self.solve_by, self.answer_by, self.t0 = need, solve_by, answer_by, t0
        self.reserved, self.raw = reserved, raw
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
    """Blueprint early in the hand; from ``from_round`` on (default: the last round, whose subgames
    have no chance nodes and solve within the default budget) a subgame solved with the query's
    method (default ``solve_method``) under its time budget, nested when the opponent's bet is off
    the blueprint's tree. Queries with the same ``session`` reuse the hand's solved subgame while
    the state stays inside it. ``method="blueprint"`` answers from the blueprint.

    **The answer comes back within the time budget**, counted from ``arrived`` (the service passes
    the moment the request reached it; default: the call), waiting and the subgame's construction
    included. :meth:`answer_start` decides at once, when the query arrives:

    * at most ``solver_threads`` solves run at once (default: one per core), each in a solver
      thread of its own; the solves admitted wait for one in arrival order (a queue);
    * when solving starts before the last round (``from_round``), the last round's solves hold at
      most ``last_round_threads`` of them (default ``solver_threads - 1``, at least 1): river
      queries are the commonest and their solves use their whole budget, so without a thread kept
      back a turn query would always find every solver busy; a river query beyond its share is
      answered at once (``busy``);
    * a solve is admitted only when it would start in time: the queue ahead is projected (each
      running solve ends by its deadline, each waiting one starts when a thread frees and runs for
      what it needs at least, until its own deadline at most) and the query's solve must start
      early enough for a useful solve of its round (:class:`~mccfr.serving.admission.CostModel`, learned from earlier
      solves) to end before its own deadline; otherwise it is answered at once (``busy``). A solve
      that still finds itself too late when its thread frees is not started (``busy``);
    * a solve iterates until its deadline, or for at most ``max_solve_ms`` beyond the time a
      useful solve needs (shorter solves free the solver threads sooner: more queries get one);
    * the solve's deadline is ``reserve_ms`` before the budget ends (plus how far solves have
      lately run past their ends, at most a quarter of the budget), checked between the
      construction's steps and before every solver iteration; the query waits for it until half
      the reserve is left, then answers without it (``deadline``);
    * a solve that cannot be useful in time (fewer than ``min_iterations``) is not used;
    * the solver threads run at a lower CPU priority (``solver_nice``, default nice +10, Linux),
      so that solves, which use every core they get, do not slow down the event loop that
      parses requests, answers from the blueprint and sends answers (which are due by their
      deadlines too): solves take the CPU the rest leaves;
    * with ``solver_processes`` each solver thread hands its solve to one of ``solver_threads``
      processes forked in the constructor (:mod:`mccfr.serving.solver_processes`; Linux), so that the
      subgame's construction, mostly Python, no longer contends with the event loop for the
      interpreter lock; a process that dies is replaced and its query answered ``unsolvable``.

    **Memory**: solved subgames are kept per session (:class:`subgame.cache.SessionCache`) within
    ``memory_budget`` bytes (default: a quarter of physical memory, :func:`~mccfr.serving.resources.default_memory_budget`),
    least recently used first out, each counted at its real size
    (:func:`subgame.cache.nbytes`). The budget also covers the solves in flight: before a solve
    starts, its peak memory is estimated from the tree and hand counts (:class:`~mccfr.serving.admission.SizeModel`) and
    reserved, evicting cached sessions as needed; a solve whose estimate cannot fit next to the
    other solves in flight is not started (``memory``). After the solve the real size is measured
    (the estimate learns from it) and a solution too big for the budget is answered but not kept.
    After evictions (at most every :attr:`TRIM_EVERY_S` seconds) the C allocator is asked to give
    the freed memory back (:func:`~mccfr.serving.resources.malloc_trim`), so that resident memory follows the cache.
    Beside its subgame a session keeps, as a second small entry of the same cache (a few kB a
    decision), the strategies its subgame answers played (:class:`subgame.cache.PlayedStrategy`):
    a later subgame of the hand gives the viewer the range those answers played, not the
    blueprint's. ``max_sessions`` bounds the entries, both kinds counted.

    Instead of a subgame answer the query then gets the blueprint's (``source: "blueprint"``) with
    ``fallback`` saying why: ``"busy"`` (the solver threads are taken, queue included, for the
    rest of the budget), ``"budget"`` (a solve of this round has needed more than the budget
    left), ``"deadline"`` (the solve did not finish, or reached fewer than ``min_iterations``, in
    time), ``"memory"`` (the solve's memory does not fit the budget) and ``method`` the method
    that was asked for. Subgame answers carry ``iterations``, ``exploitability_pct_pot`` (None when
    there was no time to measure it), ``exploitability_cards``, ``leaf_cards`` and ``reused``.

    **Depth-limited answers** (rounds before the last, :mod:`subgame.depth`): an exact check of the
    depth-limited game walks every card of the next deal (on a hold'em turn about as long as 15
    iterations), so these solves check on ``measure_cards`` of them (default 12, a fixed sample per
    board): ``exploitability_pct_pot`` is then an estimate that errs high (a best response to a
    sample of the cards tailors itself to them) and ``exploitability_cards`` says how many cards it
    walked (None: every one, exact). ``measure_cards=None`` checks exactly."""

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
        """``options`` (:class:`SolvingOptions`), with ``overrides`` (its fields by name, e.g.
        ``solver_threads=2``) replacing some. TypeError for an unknown option, ValueError for a
        value out of range."""
        unknown = sorted(set(overrides) - set(OPTION_NAMES))
        if unknown:
            raise TypeError(
                f"unknown solving option(s) {', '.join(unknown)}: expected {', '.join(OPTION_NAMES)}"
            )
        super().__init__(bp, default_time_budget_ms)
        check_method(solve_method, SOLVE_METHODS)
        self.solve_method: str = solve_method
        opts = dataclasses.replace(options or SolvingOptions(), **overrides)
        self.options = opts  # as asked; the attributes below hold the values in effect
        last = bp.gamedef.num_rounds - 1
        self.from_round: int = last if opts.from_round is None else opts.from_round
        if not 0 <= self.from_round <= last:
            raise ValueError(f"from_round must be in 0..{last}, got {opts.from_round}")
        self.solver_threads: int = (
            default_solver_threads() if opts.solver_threads is None else opts.solver_threads
        )
        threads = opts.last_round_threads
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
        self.solver_nice = opts.solver_nice
        budget = default_memory_budget() if opts.memory_budget is None else parse_bytes(opts.memory_budget)
        self.sessions = SessionCache(budget, max_entries=opts.max_sessions)
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
        if opts.solver_processes:  # forked now, before the server's threads start
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

    def _solves(self, state) -> bool:
        """Whether a query asking for a solve at ``state`` gets one: from ``from_round`` on, and
        wherever the blueprint's tree has no node for the history (a dead end, which a subgame
        answers where one fits: :func:`subgame.nested.dead_end_subgame`)."""
        return state.round >= self.from_round or self.bp.walk(state).dead_end is not None

    def answer_fast(self, matchstate, session=None, time_budget_ms=None, method=None, arrived=None):
        t0 = time.perf_counter() if arrived is None else arrived
        state, _, _, method = self.validate(matchstate, session, time_budget_ms, method)
        if method == BLUEPRINT_METHOD or not self._solves(state):
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
        if locks is not None and (method == BLUEPRINT_METHOD or not self._solves(state)):
            raise QueryError(
                "bad_locks",
                "locks need a subgame solve, and this query is answered from the blueprint "
                + (
                    "(method 'blueprint')"
                    if method == BLUEPRINT_METHOD
                    else f"(this server solves from round {self.from_round + 1} on)"
                ),
                422,
            )
        if method == BLUEPRINT_METHOD or not self._solves(state):
            return self._blueprint_answer(state, t0)
        method = method or self.solve_method
        assert state.viewer is not None  # a decision of its viewer (validated)
        key = (state.hand_id, tuple(state.hole_cards[state.viewer]), method)
        hit = self.sessions.lookup(session, state, key) if session is not None and locks is None else None
        public = _public_key(state, method, self._played(session, key, state)) if locks is None else None
        if hit is None and public is not None:  # a pre-flop subgame solved for another deal
            hit = self.sessions.lookup(public, state, public)
        if hit is not None:
            sol, node = hit
            try:
                strategy = self._hand_strategy(sol, node, state)
            except (SubgameError, BlueprintError) as exc:
                self._count("unsolvable")
                out = self._blueprint_answer(state, t0, "unsolvable", method)
                out["reason"] = f"{out['reason']}; " if "reason" in out else ""
                out["reason"] += f"cannot solve a subgame here: {exc}"
                return out
            self._record_played(session, key, state, sol, node)
            self._count("reused")
            return {
                "strategy": strategy,
                "source": "subgame",
                "method": sol.method,
                "elapsed_ms": (time.perf_counter() - t0) * 1e3,
                "reused": True,
                "iterations": sol.iterations,
                "exploitability_pct_pot": sol.exploitability_pct_pot,
                "exploitability_cards": sol.measure_cards,
                "leaf_cards": sol.leaf_cards,
            }
        budget_s = budget / 1e3
        reserve = self._reserve_s(budget_s)
        deadline = t0 + budget_s - max(0.0, early)  # the answer is due then
        solve_by = deadline - self._stop_early_s(budget_s)  # the solve stops iterating by then (>= reserve)
        need = max(self.cost.get(state.round), 0.005)
        now = time.perf_counter()
        if need > solve_by - now:
            self.cost.decay(state.round)  # so that a round refused long enough is tried again
            self._count("budget")
            return self._blueprint_answer(state, t0, "budget", method)
        mem, raw = self.size.estimate(state)
        with self._cond:
            start = self._projected_start(now)
            fits = start + need <= solve_by and self._within_share(state.round)
            reserved = fits and self.sessions.reserve(mem)
            if reserved:
                job = _Job(
                    state,
                    method,
                    session,
                    key,
                    need,
                    solve_by,
                    deadline - reserve / 2,
                    t0,
                    mem,
                    raw,
                    locks,
                    with_solution and locks is not None,
                )
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

    def _played(self, session: str | None, key, state) -> dict:
        """:data:`subgame.construct.Played` of ``session``'s hand at ``state``: the decisions of
        the hand that a subgame answered, with the strategy it answered with (its sampled action
        is read from the history), so that a later subgame gives the viewer the range it played."""
        if session is None:
            return {}
        rec = self.sessions.get(_played_key(session), key)
        return rec.played(key, state) if isinstance(rec, PlayedStrategy) else {}

    def _record_played(self, session: str | None, key, state, sol, node: int) -> None:
        """A subgame answered ``session``'s decision ``state`` (node ``node`` of ``sol``): kept for
        :meth:`_played` in the session cache, within its byte budget (one more entry a session)."""
        if session is None:
            return
        rec = self.sessions.get(_played_key(session), key)
        if not isinstance(rec, PlayedStrategy):
            rec = PlayedStrategy()
        rec.record(key, state, sol, node)
        self.sessions.store(_played_key(session), rec, key)

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

    def _solve_state(self, state, method: str, stop=None, **kwargs):
        """:func:`subgame.nested.solve_state` without a time budget, in a solver process when the
        responder has them (``solver_processes``), else in the calling thread."""
        if self._procs is not None:
            return self._procs.solve(state, method, stop=stop, time_budget=None, **kwargs)
        return solve_state(self.bp, state, method, time_budget=None, stop=stop, **kwargs)

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
        played = self._played(job.session, job.key, state)
        try:
            last = state.round >= self.bp.gamedef.num_rounds - 1
            sol, node = self._solve_state(
                state,
                job.method,
                deadline=job.end,
                stop=job.stop,
                measure_samples=None if last else self.measure_cards,
                played=played or None,
                **({"locks": job.locks} if job.locks is not None else {}),
            )
            iterated = sol.iterations > 0
            if sol.iterations >= self.min_iterations:
                useful = True
                tm = sol.timing
                setup = (time.perf_counter() - t) - sol.elapsed_s + tm["tree_s"]
                check = tm["measure_s"] if tm.get("measure_s") is not None else 2 * tm["iter_s"]
                self.cost.finished(state.round, setup + self.min_iterations * tm["iter_s"] + check)
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
                self.cost.failed(state.round, time.perf_counter() - t, backoff=not iterated and whole)
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
        public = _public_key(state, job.method, played)
        self._record_played(job.session, job.key, state, sol, node)
        if job.session is not None or public is not None:
            evicted = self.sessions.evictions
            if job.session is not None:
                self.sessions.store(job.session, sol, job.key, size)
            if public is not None:  # counted twice when in both: the budget errs safe
                self.sessions.store(public, sol, public, size)
            now = time.perf_counter()
            if self.sessions.evictions != evicted and now - self._trimmed > self.TRIM_EVERY_S:
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
    :class:`SolvingOptions`, and its fields by name, e.g. ``from_round``, ``solver_threads``).

    Raises:
        QueryError: ``solve_method`` names no method (``bad_method``).
        blueprint.io.errors.CheckpointError, ValueError: the run cannot be loaded.
    """
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


__all__ = ["OPTION_NAMES", "PendingAnswer", "SolvingOptions", "SolvingResponder", "make_responder"]
