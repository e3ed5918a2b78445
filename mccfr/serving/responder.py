"""Answering strategy queries: the :class:`Responder` seam shared by the HTTP service and the
ACPC client.

A responder turns one query into one answer::

    answer(matchstate, session=None, time_budget_ms=None, method=None) -> {
        "strategy": {ACPC action: probability},   # sums to 1, keys legal in the match state
        "source": "blueprint" | "translated" | "subgame" | "fallback",
        "method": None | "<solve method>",          # None for blueprint answers
        "elapsed_ms": float,                        # time spent inside answer()
        "reason": str,                              # fallback answers only: why
    }

``source`` (:data:`blueprint.blueprint.SOURCES`): ``blueprint`` the history is on the blueprint's
tree; ``translated`` an opponent's off-tree raise was translated on the way; ``subgame`` a solved
subgame; ``fallback`` the blueprint's tree has no node for the history (more raises than the bet
abstraction allows, a translated all-in called with chips behind) and no subgame answered: the
strategy of the abstract node most like the real state
(:meth:`blueprint.blueprint.Blueprint.answer`). Every legal decision gets an answer.

* ``matchstate``: ``MATCHSTATE:<position>:<hand>:<betting>:<cards>`` of the seat to act.
* ``session``: an opaque key of one hand as a client sees it (e.g. ``"<match>:<hand>"``); a
  solving responder keys the reuse of a solved subgame by it. Up to :data:`MAX_SESSION_LEN`
  printable characters.
* ``time_budget_ms``: the most wall time the answer may take, 1 .. :data:`MAX_TIME_BUDGET_MS`;
  None means the responder's default (the server's ``--time-budget-ms``).
* ``method``: None (the responder chooses), ``"blueprint"`` (answer from the blueprint, no
  solving) or one of :data:`SOLVE_METHODS` (the subgame-solving methods, docs/architecture.md "5. Contracts").

Every problem with a query raises :class:`QueryError`, which carries the HTTP status the service
answers with and a short machine-readable ``kind``:

==================  ======  =============================================================
kind                status  meaning
==================  ======  =============================================================
bad_matchstate      400     malformed or illegal match state (the message names the position)
wrong_game          400     it is a match state of another game (the message says which)
not_your_turn       409     the seat to act is not the match state's viewer
hand_over           409     the hand is over: nothing to decide
bad_method          422     an unknown method, or one this responder cannot run
bad_time_budget     422     not an integer in 1 .. MAX_TIME_BUDGET_MS
bad_session         422     not a string of at most MAX_SESSION_LEN printable characters
==================  ======  =============================================================

:class:`BlueprintResponder` answers every query from a :class:`blueprint.blueprint.Blueprint`
(source ``"blueprint"``). A subgame-solving responder (turn/river and off-tree bets re-solved
under the time budget, the solved subgame reused within a ``session``) implements the same
``answer`` and is chosen by :func:`make_responder` when given a ``solve_method``; it can derive
from :class:`ValidatingResponder` (or wrap a :class:`BlueprintResponder`) for the checks above
and the blueprint's answers.
A responder whose ``answer`` takes a keyword ``arrived`` (a :func:`time.perf_counter` instant:
when the request arrived) counts the time budget from it instead of from the call; the service
passes it. :class:`SolvingResponder` answers within the budget and, when a solve cannot fit,
from the blueprint with ``"fallback": "busy" | "budget" | "deadline" | "memory" | "unsolvable"``
saying why.
Responders must be safe to call from several threads at once (the service runs queries in a
thread pool). Optionally a responder has ``answer_fast`` (same arguments), which the service
calls first, on its event loop: it answers what takes well under a millisecond (a blueprint
lookup) and returns None for what needs ``answer`` in a worker thread (a subgame solve).
A responder may instead have ``answer_start`` (same arguments, with ``arrived``), which the
service calls on its event loop and which returns the answer, or a :class:`PendingAnswer` whose
``future`` the service awaits without a thread until ``answer_by`` (then ``give_up()``): the
solving responder's queue-aware admission (:class:`SolvingResponder`). Optionally ``metrics()``
returns a dict that ``GET /metrics`` includes (the solving responder's memory budget, cache
and solver queue).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Protocol, runtime_checkable

from blueprint.defaults import DEFAULT_TIME_BUDGET_MS

if TYPE_CHECKING:
    from blueprint.blueprint import Blueprint
    from holdem.game import Game
    from holdem.state import State

#: The subgame-solving methods (``subgame.solve(..., method=...)``; docs/architecture.md, "5. Contracts").
SOLVE_METHODS = ("unsafe", "resolve", "maxmargin", "reach-maxmargin", "estimate", "reach-estimate")
#: ``method`` value that asks for the blueprint's answer, no solving.
BLUEPRINT_METHOD = "blueprint"
MAX_TIME_BUDGET_MS = 600_000  # the ACPC reference dealer's time per response

MAX_SESSION_LEN = 256
MAX_MATCHSTATE_LEN = 4096


class QueryError(ValueError):
    """A query that cannot be answered; ``status`` is the HTTP status, ``kind`` a short tag."""

    def __init__(self, kind: str, message: str, status: int):
        super().__init__(message)
        self.kind = kind
        self.status = status


@runtime_checkable
class Responder(Protocol):
    """Answers strategy queries (module docstring). ``game`` is the game it plays; ``methods``
    the ``method`` values it accepts besides None."""

    game: Game
    methods: tuple[str, ...]

    def answer(
        self,
        matchstate: str,
        session: str | None = None,
        time_budget_ms: int | None = None,
        method: str | None = None,
    ) -> dict[str, Any]: ...

    def close(self) -> None: ...


def check_time_budget(value: Any, default: int) -> int:
    """The request's time budget in ms, or ``default`` for None; :class:`QueryError` otherwise."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise QueryError(
            "bad_time_budget", f"time_budget_ms must be an integer number of milliseconds, got {value!r}", 422
        )
    if not 1 <= value <= MAX_TIME_BUDGET_MS:
        raise QueryError(
            "bad_time_budget", f"time_budget_ms must be in 1..{MAX_TIME_BUDGET_MS}, got {value}", 422
        )
    return value


def check_session(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise QueryError("bad_session", f"session must be a string, got {type(value).__name__}", 422)
    if not 1 <= len(value) <= MAX_SESSION_LEN or not value.isprintable():
        raise QueryError(
            "bad_session",
            f"session must be 1..{MAX_SESSION_LEN} printable characters, got {value[:40]!r}"
            + ("..." if len(value) > 40 else ""),
            422,
        )
    return value


def check_method(value: Any, accepted: tuple[str, ...]) -> str | None:
    """``value`` when None or in ``accepted``; a :class:`QueryError` naming the choices otherwise."""
    if value is None or (isinstance(value, str) and value in accepted):
        return value
    known = (BLUEPRINT_METHOD, *SOLVE_METHODS)
    if isinstance(value, str) and value in known:
        raise QueryError(
            "bad_method",
            f"method {value!r} is not available on this server (it answers with: "
            f"{', '.join(accepted) or 'the blueprint only'}); subgame solving needs a solving responder",
            422,
        )
    raise QueryError("bad_method", f"unknown method {value!r}: expected one of {', '.join(known)}", 422)


class _GameChecker:
    """Parses match states of one game; on failure tells whether the string is another game's."""

    def __init__(self, game: Game):
        self.game = game
        self._others: list[tuple[str, Game]] | None = None

    def _other_games(self) -> list[tuple[str, Game]]:
        if self._others is None:
            from holdem.game import Game
            from holdem.gamedef import PRESETS

            mine = self.game.gamedef.to_acpc()
            self._others = [(n, Game(g)) for n, g in PRESETS.items() if g.to_acpc() != mine]
        return self._others

    def parse(self, matchstate: Any) -> State:
        from holdem.state import StateError

        if not isinstance(matchstate, str):
            raise QueryError(
                "bad_matchstate", f"matchstate must be a string, got {type(matchstate).__name__}", 400
            )
        if len(matchstate) > MAX_MATCHSTATE_LEN:
            raise QueryError(
                "bad_matchstate",
                f"matchstate is {len(matchstate)} characters long (at most {MAX_MATCHSTATE_LEN})",
                400,
            )
        if not matchstate.startswith("MATCHSTATE:"):
            what = "a dealer STATE" if matchstate.startswith("STATE:") else repr(matchstate[:20])
            raise QueryError(
                "bad_matchstate",
                f"matchstate: expected 'MATCHSTATE:<position>:<hand>:<betting>:<cards>', got {what}",
                400,
            )
        try:
            state = self.game.state(matchstate)
        except StateError as exc:
            other = self._parses_as(matchstate)
            mine = self.game.gamedef.name or "this server's game"
            if other is not None:
                raise QueryError(
                    "wrong_game",
                    f"matchstate is not a {mine} state ({exc}); it parses as a {other} state, "
                    f"and this server plays {mine}",
                    400,
                ) from None
            raise QueryError("bad_matchstate", f"matchstate {matchstate!r}: {exc}", 400) from None
        if state.is_chance():  # cards missing: another game's (fewer hole or board cards)?
            other = self._parses_as(matchstate, complete=True)
            if other is not None:
                mine = self.game.gamedef.name or "this server's game"
                raise QueryError(
                    "wrong_game",
                    f"matchstate {matchstate!r} lacks cards for {mine} but is a complete {other} state; "
                    f"this server plays {mine}",
                    400,
                )
        return state

    def _parses_as(self, matchstate: str, complete: bool = False) -> str | None:
        """The first other preset that parses ``matchstate`` (with every card due, if ``complete``)."""
        from holdem.state import StateError

        for name, g in self._other_games():
            try:
                st = g.state(matchstate)
            except StateError:
                continue
            if complete and st.is_chance():
                continue
            return name
        return None


def decision_state(checker: _GameChecker, matchstate: Any) -> State:
    """The parsed match state, checked to be a decision of its viewer by
    :func:`blueprint.blueprint.viewer_decision` (else :class:`QueryError`: 409 ``hand_over`` /
    ``not_your_turn``, 400 ``bad_matchstate`` for missing cards)."""
    from blueprint.blueprint import NotADecisionError, viewer_decision

    state = checker.parse(matchstate)
    try:
        return viewer_decision(state)
    except NotADecisionError as exc:
        kind, status = (
            (exc.kind, 409) if exc.kind in ("hand_over", "not_your_turn") else ("bad_matchstate", 400)
        )
        raise QueryError(kind, f"matchstate {matchstate!r}: {exc}", status) from None


class ValidatingResponder:
    """Base of the responders here: the game, the accepted methods, the default time budget, and
    :meth:`validate` (every check of the module docstring). Subclasses implement ``answer``."""

    methods: tuple[str, ...] = ()

    def __init__(self, game: Game, default_time_budget_ms: int = DEFAULT_TIME_BUDGET_MS):
        self.game = game
        self.default_time_budget_ms = check_time_budget(default_time_budget_ms, DEFAULT_TIME_BUDGET_MS)
        self._checker = _GameChecker(game)

    def validate(
        self, matchstate: Any, session: Any, time_budget_ms: Any, method: Any
    ) -> tuple[State, str | None, int, str | None]:
        """(the parsed decision state, session, budget in ms, method), or :class:`QueryError`."""
        method = check_method(method, self.methods)
        budget = check_time_budget(time_budget_ms, self.default_time_budget_ms)
        session = check_session(session)
        return decision_state(self._checker, matchstate), session, budget, method

    def close(self) -> None:
        pass


class BlueprintResponder(ValidatingResponder):
    """Answers every query from a blueprint's average strategy (:meth:`Blueprint.answer
    <blueprint.blueprint.Blueprint.answer>`: source ``blueprint``, ``translated`` or ``fallback``).

    Off-tree raises earlier in the hand are mapped by pseudo-harmonic action translation
    (deterministically: the same query gets the same answer); where the tree has no node for the
    history, the blueprint's fallback answers (``reason`` says why).
    """

    methods: tuple[str, ...] = (BLUEPRINT_METHOD,)

    def __init__(self, bp: Blueprint, default_time_budget_ms: int = DEFAULT_TIME_BUDGET_MS):
        super().__init__(bp.game, default_time_budget_ms)
        self.bp = bp

    def blueprint_answer(self, state: State, t0: float, method: str | None = None) -> dict[str, Any]:
        """The blueprint's answer to ``state`` (labelled by its source; a fallback with its reason)."""
        ans = self.bp.answer(state)
        out: dict[str, Any] = {
            "strategy": ans.strategy,
            "source": ans.source,
            "method": method,
            "elapsed_ms": (time.perf_counter() - t0) * 1e3,
        }
        if ans.reason is not None:
            out["reason"] = ans.reason
        return out

    def answer(
        self,
        matchstate: str,
        session: str | None = None,
        time_budget_ms: int | None = None,
        method: str | None = None,
    ) -> dict[str, Any]:
        t0 = time.perf_counter()
        state, _, _, _ = self.validate(matchstate, session, time_budget_ms, method)
        return self.blueprint_answer(state, t0)

    answer_fast = answer  # every blueprint answer is fast: the service runs it on its event loop

    def warm_up(self) -> None:
        """Answer one query per betting round so that numba's card-bucket kernels are compiled
        (or loaded from the cache) before the first real query: that first call can take
        seconds."""
        for ms in example_matchstates(self.game):
            try:
                self.answer(ms)
            except QueryError:
                pass

    def describe(self) -> dict[str, Any]:
        """What /healthz reports about the blueprint."""
        return {
            "game": self.game.gamedef.name or None,
            "gamedef": self.game.gamedef.to_acpc(),
            "iteration": int(self.bp.iteration),
            "config_hash": self.bp.config_hash,
            "abstraction_hash": self.bp.abstraction_hash,
        }


class _CostModel:
    """Per betting round, the seconds a solve takes to become useful (construction, tree, the
    minimum iterations, final check): a moving average of the solves that were useful; one that was
    not (too few iterations) raises it to at least the time it ran, one that never iterated (its
    construction outlasted the budget) to at least twice that time and twice the estimate
    (exponential back-off); each query it turns away lowers it by 1%."""

    def __init__(self):
        self._lock = threading.Lock()
        self._est: dict[int, float] = {}

    def get(self, rnd: int) -> float:
        with self._lock:
            return self._est.get(rnd, 0.0)

    def finished(self, rnd: int, seconds: float) -> None:
        with self._lock:
            old = self._est.get(rnd)
            self._est[rnd] = seconds if old is None else 0.7 * old + 0.3 * seconds

    def failed(self, rnd: int, seconds: float, backoff: bool) -> None:
        """A solve that was not useful after ``seconds``: a useful one takes longer than that;
        with ``backoff`` (it never reached an iteration in its whole budget) twice the time it ran
        and twice the estimate that let it start: a round too slow to solve at all is tried again
        ever more rarely."""
        with self._lock:
            old = self._est.get(rnd, 0.0)
            # a solve that never iterated in its whole budget was cut off in its construction (the
            # construction's checkpoints): a useful one takes longer than the time it had, so back off
            self._est[rnd] = max(2.0 * seconds, 2.0 * old) if backoff else max(seconds, old)

    def decay(self, rnd: int, factor: float = 0.99) -> None:
        """A query refused on the estimate: lower it a little (after enough refusals the round is
        tried again, in case the machine got faster or quieter)."""
        with self._lock:
            if rnd in self._est:
                self._est[rnd] *= factor

    def clear(self) -> None:
        with self._lock:
            self._est.clear()

    def snapshot(self) -> dict[int, float]:
        with self._lock:
            return dict(self._est)


def default_solver_threads() -> int:
    """The cores this process may run on: one solve per core at most."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def lower_priority(nice: int) -> None:
    """Lower the calling thread's CPU priority by ``nice`` (Linux: threads have their own nice
    value; elsewhere nothing happens)."""
    import os

    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError:
        pass


_LIBC: Any = None  # the C library (ctypes), False where it has no malloc_trim


def malloc_trim() -> bool:
    """Give the C allocator's free memory back to the system (glibc ``malloc_trim(0)``, which also
    releases free pages inside its arenas): evicted subgames free many arrays of many sizes, and
    without it the freed pages stay resident. False where there is no glibc."""
    global _LIBC
    if _LIBC is None:
        import ctypes
        import ctypes.util

        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC = lib if hasattr(lib, "malloc_trim") else False
        except OSError:
            _LIBC = False
    if not _LIBC:
        return False
    _LIBC.malloc_trim(0)
    return True


def default_memory_budget() -> int:
    """The default memory budget of a solving responder's subgames: a quarter of the machine's
    physical memory (at least 256 MiB; 1 GiB where it cannot be read)."""
    import os

    try:
        phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 1 << 30
    return max(256 << 20, int(phys) // 4)


def parse_bytes(text: str | int) -> int:
    """A byte count from ``text``: an integer, optionally with a suffix K, M, G, T (powers of
    1024; also KB/KiB, ..., case-insensitive): ``"512M"``, ``"2G"``, ``"1.5GiB"``. ValueError otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"a byte count must be >= 0, got {text}")
        return text
    s = str(text).strip().upper().replace(" ", "")
    for suffix in ("IB", "B"):
        if s.endswith(suffix) and len(s) > len(suffix) and s[-len(suffix) - 1] in "KMGT":
            s = s[: -len(suffix)]
            break
    mult = 1
    if s and s[-1] in "KMGT":
        mult = 1024 ** ("KMGT".index(s[-1]) + 1)
        s = s[:-1]
    try:
        value = float(s) if "." in s else int(s)
    except ValueError:
        raise ValueError(f"{text!r} is not a byte count: expected e.g. 1073741824, 512M, 2G") from None
    out = int(value * mult)
    if value < 0 or out < 0 or value != value:
        raise ValueError(f"a byte count must be >= 0, got {text!r}")
    return out


class _SizeModel:
    """What a solve of a state will hold in memory, in bytes, before it runs.

    From the tree and hand counts: the blueprint's subtree below the state's abstract node gives
    the decision rows and nodes per later round, multiplied by the boards each round deals (a
    turn subgame has 1 + 48 boards in hold'em); with ``H`` private hands a solve holds about
    ``12 H`` bytes per row (its regret and average tables and the expanded strategy, float32),
    ``~120 H`` per board (card data, hand lists) and some per node. A state before the last round
    is solved depth-limited (:mod:`subgame.depth`): its subgame ends with the round, so only that
    round's rows count (with ``~96 H`` bytes per row for the leaves' continuation choices), plus
    ``~40 KB`` per blueprint row of the next round for the continuation strategies the leaves walk
    (stored per card bucket, not per hand). After each solve the real figure (the solver's
    ``state_bytes`` plus the :func:`~subgame.cache.nbytes` of the solution) is compared with the
    estimate and the round's correction factor learns the ratio (the largest recent one, decaying
    by 5% a solve and by 1% a solve refused for memory), so later estimates track the real size
    (``/metrics`` shows both). Before a round's first solve the factor is :attr:`PRIOR`: subgames
    are solved with finer bets than the blueprint's (4.5 times its rows on a hunl20 river), so the
    first estimate errs high rather than low."""

    ROW_BYTES = 12  # per row and hand
    BOARD_BYTES = 120  # per board and hand
    NODE_BYTES = 64  # per node
    HAND_BYTES = 96  # per hand (ranges, values, gifts)
    LEAF_BYTES = 96  # depth-limited: per row and hand (leaf choices' regrets, sums, average: 3 x 4 x 8)
    CONT_ROW_BYTES = 40_000  # depth-limited: per blueprint row of the next round (the continuations)
    PRIOR = 5.0  # the correction factor before a round's first solve

    def __init__(self, bp):
        from math import comb

        self.bp = bp
        g = bp.gamedef
        self.hands = comb(g.deck_size, g.num_hole_cards)
        self._lock = threading.Lock()
        self._per_node: tuple | None = None
        self.factor: dict[int, float] = {}
        self.last: dict[int, dict[str, int]] = {}  # per round: the last estimate and real size

    def _subtrees(self):
        """Per abstract node and round, the decision rows and nodes of its subtree (numpy, once)."""
        if self._per_node is None:
            import numpy as np

            from abstraction.tree import KIND_DECISION

            t = self.bp.tree
            N, R = int(t.num_nodes), self.bp.gamedef.num_rounds
            parent = np.asarray(t.parent, np.int64)
            rnd = np.clip(np.asarray(t.round, np.int64), 0, R - 1)
            dec = np.asarray(t.kind) == KIND_DECISION
            rows = np.zeros((N, R), np.int64)
            nodes = np.zeros((N, R), np.int64)
            rows[np.arange(N), rnd] = np.where(dec, np.asarray(t.num_actions, np.int64), 0)
            nodes[np.arange(N), rnd] = 1
            depth = np.zeros(N, np.int64)
            has = parent >= 0
            for _ in range(N):  # depth by relaxation: as many passes as the tree is deep
                new = np.where(has, depth[np.maximum(parent, 0)] + 1, 0)
                if np.array_equal(new, depth):
                    break
                depth = new
            for d in range(int(depth.max(initial=0)), 0, -1):
                lvl = np.nonzero(depth == d)[0]
                np.add.at(rows, parent[lvl], rows[lvl])
                np.add.at(nodes, parent[lvl], nodes[lvl])
            self._per_node = (rows, nodes)
        return self._per_node

    def _node(self, state) -> int | None:
        """The blueprint's abstract node of ``state`` (its subtree counts computed once); None
        when the tree has no node for it."""
        try:
            with self._lock:
                self._subtrees()
            w = self.bp.walk(state)
            return None if w.dead_end is not None else int(w.node)
        except Exception:  # noqa: BLE001 - no estimate from the tree: the caller uses the round's last
            return None

    def shape(self, state) -> tuple[int, int, int] | None:
        """(rows, nodes, boards) of the subgame at ``state``, estimated; None when the blueprint
        has no node for it."""
        from math import comb

        n = self._node(state)
        if n is None:
            return None
        rows_n, nodes_n = self._subtrees()
        g = self.bp.gamedef
        left = g.deck_size - g.board_cards_through(state.round)
        boards, mult = 0, 1
        rows = nodes = 0
        for r in range(state.round, g.num_rounds):
            if r > state.round:
                new = g.board_cards_through(r) - g.board_cards_through(r - 1)
                mult *= comb(left, new)
                left -= new
                nodes += mult  # the chance nodes dealing it (about one per board)
            boards += mult
            rows += int(rows_n[n, r]) * mult
            nodes += int(nodes_n[n, r]) * mult
        return rows, nodes, boards

    def raw(self, state) -> int | None:
        H = self.hands
        r = state.round
        if r < self.bp.gamedef.num_rounds - 1:  # depth-limited: this round's tree, the next's continuations
            n = self._node(state)
            if n is None:
                return None
            rows_n, nodes_n = self._subtrees()
            return (
                (self.ROW_BYTES + self.LEAF_BYTES) * H * int(rows_n[n, r])
                + self.NODE_BYTES * int(nodes_n[n, r])
                + self.HAND_BYTES * H
                + self.CONT_ROW_BYTES * int(rows_n[n, r + 1])
            )
        s = self.shape(state)
        if s is None:
            return None
        rows, nodes, boards = s
        return (
            self.ROW_BYTES * H * rows
            + self.BOARD_BYTES * H * boards
            + self.NODE_BYTES * nodes
            + self.HAND_BYTES * H
        )

    def estimate(self, state) -> tuple[int, int | None]:
        """(bytes a solve of ``state`` will hold at its peak, the uncorrected estimate)."""
        raw = self.raw(state)
        with self._lock:
            if raw is None:  # no shape: the largest the round has held
                last = self.last.get(state.round)
                return (last["actual"] if last else 0), None
            return int(raw * self.factor.get(state.round, self.PRIOR)), raw

    def refused(self, rnd: int, factor: float = 0.99) -> None:
        """A solve of round ``rnd`` refused on its estimate: lower the round's correction a little,
        so that one outsized solve (a nested subgame far bigger than the blueprint's subtree
        suggests) does not keep every later solve of the round out of the budget for good."""
        with self._lock:
            if rnd in self.factor:
                self.factor[rnd] *= factor

    def observe(self, rnd: int, raw: int | None, estimate: int, actual: int) -> None:
        with self._lock:
            self.last[rnd] = {"estimate": int(estimate), "actual": int(actual)}
            if raw:
                ratio = actual / raw
                self.factor[rnd] = max(ratio, 0.95 * self.factor.get(rnd, ratio))

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "correction": {str(r): round(f, 3) for r, f in sorted(self.factor.items())},
                "last_solve": {str(r): dict(v) for r, v in sorted(self.last.items())},
            }


def _public_key(state, method: str, played=None) -> Optional[str]:
    """The session-cache key of a subgame the same for every deal (:func:`subgame.cache.public_key`)
    solved with ``method``, shared by every session; None once board cards are out. It starts with
    a character no client's session has (sessions are printable), as :func:`_played_key` does."""
    from subgame.cache import public_key

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
    )

    def __init__(self, state, method, session, key, need, solve_by, answer_by, t0, reserved, raw):
        from concurrent.futures import Future

        self.state, self.session, self.key = state, session, key
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
        from concurrent.futures import TimeoutError as FutureTimeout

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
      early enough for a useful solve of its round (:class:`_CostModel`, learned from earlier
      solves) to end before its own deadline; otherwise it is answered at once (``busy``). A solve
      that still finds itself too late when its thread frees is not started (``busy``);
    * a solve iterates until its deadline, or for at most ``max_solve_ms`` beyond the time a
      useful solve needs (shorter solves free the solver threads sooner: more queries get one);
    * the solve's deadline is ``reserve_ms`` before the budget ends, checked between the
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
    ``memory_budget`` bytes (default: a quarter of physical memory, :func:`default_memory_budget`),
    least recently used first out, each counted at its real size
    (:func:`subgame.cache.nbytes`). The budget also covers the solves in flight: before a solve
    starts, its peak memory is estimated from the tree and hand counts (:class:`_SizeModel`) and
    reserved, evicting cached sessions as needed; a solve whose estimate cannot fit next to the
    other solves in flight is not started (``memory``). After the solve the real size is measured
    (the estimate learns from it) and a solution too big for the budget is answered but not kept.
    After evictions (at most every :attr:`TRIM_EVERY_S` seconds) the C allocator is asked to give
    the freed memory back (:func:`malloc_trim`), so that resident memory follows the cache.
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
        from_round: int | None = None,
        solver_threads: int | None = None,
        min_iterations: int = 10,
        reserve_ms: float = 100.0,
        max_solve_ms: float | None = None,
        memory_budget: int | str | None = None,
        max_sessions: int | None = None,
        solver_nice: int = 10,
        last_round_threads: int | None = None,
        measure_cards: int | None = 12,
        solver_processes: bool = False,
    ):
        from concurrent.futures import ThreadPoolExecutor

        from subgame.cache import SessionCache

        super().__init__(bp, default_time_budget_ms)
        check_method(solve_method, SOLVE_METHODS)
        self.solve_method: str = solve_method
        self.from_round = bp.gamedef.num_rounds - 1 if from_round is None else from_round
        if not 0 <= self.from_round < bp.gamedef.num_rounds:
            raise ValueError(f"from_round must be in 0..{bp.gamedef.num_rounds - 1}, got {from_round}")
        self.solver_threads = default_solver_threads() if solver_threads is None else solver_threads
        if self.solver_threads < 1:
            raise ValueError(f"solver_threads must be >= 1, got {solver_threads}")
        if min_iterations < 1:
            raise ValueError(f"min_iterations must be >= 1, got {min_iterations}")
        if reserve_ms < 0:
            raise ValueError(f"reserve_ms must be >= 0, got {reserve_ms}")
        if max_solve_ms is not None and max_solve_ms <= 0:
            raise ValueError(f"max_solve_ms must be > 0, got {max_solve_ms}")
        last = bp.gamedef.num_rounds - 1
        if last_round_threads is None:
            last_round_threads = (
                max(1, self.solver_threads - 1) if self.from_round < last else self.solver_threads
            )
        if not 1 <= last_round_threads <= self.solver_threads:
            raise ValueError(
                f"last_round_threads must be in 1..solver_threads ({self.solver_threads}), got {last_round_threads}"
            )
        self.last_round_threads = last_round_threads
        if measure_cards is not None and measure_cards < 2:
            raise ValueError(f"measure_cards must be >= 2 (or None: every card), got {measure_cards}")
        self.measure_cards = measure_cards
        self.max_solve_ms = max_solve_ms
        self.min_iterations = min_iterations
        self.reserve_ms = float(reserve_ms)
        budget = default_memory_budget() if memory_budget is None else parse_bytes(memory_budget)
        self.sessions = SessionCache(budget, max_entries=max_sessions)
        self.size = _SizeModel(bp)
        self._cond = threading.Condition()
        self._running: list[_Job] = []  # solves running
        self._queue: list[_Job] = []  # solves admitted, waiting for a solver thread (in order)
        self.solver_nice = solver_nice
        self._solvers = ThreadPoolExecutor(
            self.solver_threads,
            thread_name_prefix="mccfr-solve",
            initializer=lower_priority,
            initargs=(solver_nice,),
        )
        self._procs = None
        if solver_processes:  # forked now, before the server's threads start (mccfr.serving.solver_processes)
            from mccfr.serving.solver_processes import SolverProcesses

            self._procs = SolverProcesses(bp, self.solver_threads, solver_nice)
        self.cost = _CostModel()
        self._counts: dict[str, int] = {}
        self._overrun = 0.0  # how long solves ran past their end (a slowly decaying max), seconds
        self._overrun_mean = 0.0  # the same, a moving average: the projections count on it
        self._hand_index: dict | None = None
        self._trimmed = 0.0

    @property
    def memory_budget(self) -> int:
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

    def _duration(self, need: float) -> float:
        """The longest a solve that needs ``need`` seconds keeps its thread (before its deadline)."""
        return float("inf") if self.max_solve_ms is None else need + self.max_solve_ms / 1e3

    def _projected_start(self, now: float) -> float:
        """When a solve admitted now would get a solver thread (lock held): the running solves
        end by their deadlines; each waiting solve, in order, takes the first thread free and
        keeps it until its deadline (or its need plus ``max_solve_ms``); one that would start too
        late to be useful is skipped, as it will be when its turn comes."""
        import heapq

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

    def answer_start(
        self, matchstate, session=None, time_budget_ms=None, method=None, arrived=None, early: float = 0.0
    ) -> dict[str, Any] | PendingAnswer:
        """The answer, when it is known at once (a blueprint answer, a reused subgame, a fallback),
        else a :class:`PendingAnswer` of a solve admitted to the solver queue. Cheap (a blueprint
        lookup's cost): the service calls it on its event loop. ``early``: seconds before the end
        of the budget by which the answer must be ready (the service's event-loop lag: the time
        it will take to send it). Raises :class:`QueryError`."""
        from blueprint.blueprint import BlueprintError
        from subgame.tree import SubgameError

        t0 = time.perf_counter() if arrived is None else arrived
        state, session, budget, method = self.validate(matchstate, session, time_budget_ms, method)
        if method == BLUEPRINT_METHOD or not self._solves(state):
            return self._blueprint_answer(state, t0)
        method = method or self.solve_method
        assert state.viewer is not None  # a decision of its viewer (validated)
        key = (state.hand_id, tuple(state.hole_cards[state.viewer]), method)
        hit = self.sessions.lookup(session, state, key) if session is not None else None
        public = _public_key(state, method, self._played(session, key, state))
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
        solve_by = deadline - reserve  # the solve stops iterating by then
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
                job = _Job(state, method, session, key, need, solve_by, deadline - reserve / 2, t0, mem, raw)
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
        from subgame.cache import PlayedStrategy

        if session is None:
            return {}
        rec = self.sessions.get(_played_key(session), key)
        return rec.played(key, state) if isinstance(rec, PlayedStrategy) else {}

    def _record_played(self, session: str | None, key, state, sol, node: int) -> None:
        """A subgame answered ``session``'s decision ``state`` (node ``node`` of ``sol``): kept for
        :meth:`_played` in the session cache, within its byte budget (one more entry a session)."""
        from subgame.cache import PlayedStrategy

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
            from subgame.tree import hand_index

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
        from subgame.nested import solve_state

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
        from blueprint.blueprint import BlueprintError
        from mccfr.serving.solver_processes import SolverProcessError
        from subgame.cache import nbytes
        from subgame.solver import SolveInterrupted
        from subgame.tree import SubgameError

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
        self, matchstate, session=None, time_budget_ms=None, method=None, arrived=None
    ) -> dict[str, Any]:
        out = self.answer_start(matchstate, session, time_budget_ms, method, arrived=arrived)
        return out.wait() if isinstance(out, PendingAnswer) else out

    def warm_up(self) -> None:
        """Blueprint lookups, then one small solve per round solved here, so that the first real
        query does not pay for compiling (or loading) the solver's kernels."""
        super().warm_up()
        from subgame.nested import solve_state

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


class PlayerResponder(ValidatingResponder):
    """A :class:`mccfr.evaluation.players.Player` (always-call, random, ...) as a responder, so baseline
    opponents can sit at an ACPC dealer through the same client.

    The answer is the player's distribution (``probs``), or with ``seed`` given, the action its
    ``act`` samples as a pure strategy: the same play when the client samples it, and much
    cheaper for ``random`` in no-limit, whose distribution has one entry per legal raise-to.
    """

    methods: tuple[str, ...] = ()

    def __init__(self, player, game: Game, seed: int | None = None):
        if seed is None and not hasattr(player, "probs"):
            raise TypeError(f"{player!r} has no probs(state): give a seed to answer with its act()")
        super().__init__(game)
        self.player = player
        self._rng = None
        self._lock = threading.Lock()
        if seed is not None:
            import numpy as np

            self._rng = np.random.default_rng(seed)

    def answer(self, matchstate, session=None, time_budget_ms=None, method=None) -> dict[str, Any]:
        t0 = time.perf_counter()
        state, _, _, _ = self.validate(matchstate, session, time_budget_ms, method)
        if self._rng is not None:
            with self._lock:
                strategy = {self.player.act(state, self._rng): 1.0}
        else:
            strategy = self.player.probs(state)
        return {
            "strategy": strategy,
            "source": "blueprint",
            "method": None,
            "elapsed_ms": (time.perf_counter() - t0) * 1e3,
        }


class HttpResponder:
    """A responder that asks a running query service (``mccfr serve``) over HTTP: the same
    ``answer``, with the service's 4xx answers raised as :class:`QueryError` (its kind and
    message) and its game read from ``GET /healthz``. One keep-alive connection per thread.
    ``api_key``: sent as ``Authorization: Bearer <api_key>`` (a server started with ``--api-key``)."""

    def __init__(self, url: str, timeout_s: float = 660.0, api_key: str | None = None):
        from urllib.parse import urlsplit

        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"server URL {url!r}: expected http://HOST:PORT")
        self.url = f"http://{parts.netloc}"
        self.host, self.port = parts.hostname, parts.port or 80
        self.timeout_s = timeout_s
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._local = threading.local()
        health = self._request("GET", "/healthz")[1]
        text = health.get("gamedef")
        if not text:
            raise ValueError(f"{self.url}/healthz does not describe its game (is it 'mccfr serve'?)")
        from holdem.game import Game
        from holdem.gamedef import parse_gamedef

        self.game = Game(parse_gamedef(text, name=health.get("game") or ""))
        self.methods = tuple(health.get("methods", ()))
        self.default_time_budget_ms = health.get("default_time_budget_ms")

    def _request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        import http.client
        import json

        conn = getattr(self._local, "conn", None)
        for attempt in (0, 1):  # a keep-alive connection the server closed: reconnect once
            if conn is None:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
                self._local.conn = conn
            try:
                data = None if body is None else json.dumps(body).encode()
                conn.request(method, path, body=data, headers=self._headers)
                r = conn.getresponse()
                return r.status, json.loads(r.read() or b"{}")
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                conn = self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def answer(self, matchstate, session=None, time_budget_ms=None, method=None) -> dict[str, Any]:
        body = {"matchstate": matchstate}
        for k, v in (("session", session), ("time_budget_ms", time_budget_ms), ("method", method)):
            if v is not None:
                body[k] = v
        status, out = self._request("POST", "/v1/strategy", body)
        if status == 200:
            return out
        raise QueryError(out.get("kind", "http_error"), f"{self.url}: {out.get('error', out)}", status)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()


def example_matchstates(game: Game) -> list[str]:
    """One valid MATCHSTATE per betting round, each at a decision of its viewer (everyone checks
    or calls until that round; the deck's top cards are dealt)."""
    g = game.gamedef
    state = game.initial_state()
    top = list(range(g.deck_size - 1, -1, -1))
    state = state.deal(top[: 2 * g.num_hole_cards])
    i = 2 * g.num_hole_cards
    out: list[str] = []
    while not state.is_terminal():
        if state.is_chance():
            k = g.board_cards_through(state.round) - len(state.board_cards)
            state = state.deal(top[i : i + k])
            i += k
            continue
        if not out or state.round != game.state(out[-1]).round:
            out.append(state.matchstate(state.current_player()))
        state = state.apply("c")
    return out


def make_responder(
    run_dir: str | Path,
    solve_method: str | None = None,
    default_time_budget_ms: int = DEFAULT_TIME_BUDGET_MS,
    log=None,
    **solving: Any,
) -> Responder:
    """The responder for a run: the blueprint alone (``solve_method=None``), or blueprint plus
    subgame solving with ``solve_method`` as the default method (``solving``: the other keyword
    arguments of :class:`SolvingResponder`, e.g. ``from_round``, ``solver_threads``).

    Raises:
        QueryError: ``solve_method`` names no method (``bad_method``).
        blueprint.checkpoint.CheckpointError, ValueError: the run cannot be loaded.
    """
    from blueprint.blueprint import Blueprint

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
    "SolvingResponder",
    "PendingAnswer",
    "default_memory_budget",
    "default_solver_threads",
    "lower_priority",
    "malloc_trim",
    "parse_bytes",
    "BLUEPRINT_METHOD",
    "DEFAULT_TIME_BUDGET_MS",
    "MAX_TIME_BUDGET_MS",
    "SOLVE_METHODS",
    "BlueprintResponder",
    "HttpResponder",
    "PlayerResponder",
    "QueryError",
    "Responder",
    "ValidatingResponder",
    "check_method",
    "check_session",
    "check_time_budget",
    "decision_state",
    "example_matchstates",
    "make_responder",
]
