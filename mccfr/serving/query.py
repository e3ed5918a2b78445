"""The query contract: what a responder is asked and answers, and how a query is checked. The
:class:`Responder` seam is shared by the HTTP service and the ACPC client.

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

* ``locks`` (solving responders, keyword): node locks of the subgame solved
  (:mod:`subgame.locking`: ``{history: {action: probability or [one per hand]}}``, at most
  :data:`subgame.locking.MAX_LOCKS` nodes); a locked query always solves (never reuses or keeps a
  solved subgame).

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
bad_locks           422     locks that are malformed, do not fit the subgame (the message names
                            the node and action), or are sent where no subgame is solved
==================  ======  =============================================================

The responders: :class:`mccfr.serving.responders.BlueprintResponder` answers every query from a
:class:`blueprint.blueprint.Blueprint` (source ``"blueprint"``);
:class:`mccfr.serving.solving.SolvingResponder` re-solves subgames (turn/river and off-tree bets)
under the time budget, reusing a solved subgame within a ``session``; both derive from
:class:`ValidatingResponder` here (every check above) and :func:`mccfr.serving.solving.make_responder`
picks one for a run. :class:`~mccfr.serving.responders.PlayerResponder` and
:class:`~mccfr.serving.responders.HttpResponder` answer for a baseline player and for a running
service.
A responder whose ``answer`` takes a keyword ``arrived`` (a :func:`time.perf_counter` instant:
when the request arrived) counts the time budget from it instead of from the call; the service
passes it. The solving responder answers within the budget and, when a solve cannot fit,
from the blueprint with ``"fallback": "busy" | "budget" | "deadline" | "memory" | "unsolvable"``
saying why.
Responders must be safe to call from several threads at once (the service runs queries in a
thread pool). Optionally a responder has ``answer_fast`` (same arguments), which the service
calls first, on its event loop: it answers what takes well under a millisecond (a blueprint
lookup) and returns None for what needs ``answer`` in a worker thread (a subgame solve).
A responder may instead have ``answer_start`` (same arguments, with ``arrived``), which the
service calls on its event loop and which returns the answer, or a pending answer
(:class:`mccfr.serving.solving.PendingAnswer`) whose ``future`` the service awaits without a
thread until ``answer_by`` (then ``give_up()``): the solving responder's queue-aware admission.
Optionally ``metrics()`` returns a dict that ``GET /metrics`` includes (the solving responder's
memory budget, cache and solver queue).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from blueprint.blueprint import NotADecisionError, viewer_decision
from blueprint.defaults import DEFAULT_TIME_BUDGET_MS
from holdem.game import Game
from holdem.gamedef import MULTIWAY_PRESETS, PRESETS
from holdem.state import State, StateError
from subgame.locking import LockError, LockSpec, check_lock_spec
from subgame.solver import METHODS

#: The subgame-solving methods (``subgame.solve(..., method=...)``; docs/architecture.md, "5. Contracts").
SOLVE_METHODS: tuple[str, ...] = METHODS
#: ``method`` value that asks for the blueprint's answer, no solving.
BLUEPRINT_METHOD = "blueprint"
#: ``method`` of Pluribus-style search (:mod:`subgame.multiway`, any number of seats).
SEARCH_METHOD = "search"
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
    known = (BLUEPRINT_METHOD, *SOLVE_METHODS, SEARCH_METHOD)
    if isinstance(value, str) and value in known:
        raise QueryError(
            "bad_method",
            f"method {value!r} is not available on this server (it answers with: "
            f"{', '.join(accepted) or 'the blueprint only'}); subgame solving needs a solving responder",
            422,
        )
    raise QueryError("bad_method", f"unknown method {value!r}: expected one of {', '.join(known)}", 422)


def check_locks(value: Any) -> LockSpec | None:
    """The request's node locks checked for shape (:func:`subgame.locking.check_lock_spec`; the
    subgame's tree checks the rest), or None; :class:`QueryError` ``bad_locks`` otherwise."""
    if value is None:
        return None
    try:
        return check_lock_spec(value)
    except LockError as exc:
        raise QueryError("bad_locks", str(exc), 422) from None


class GameChecker:
    """Parses match states of one game; on failure tells whether the string is another game's."""

    def __init__(self, game: Game):
        self.game = game
        self._others: list[tuple[str, Game]] | None = None

    def _other_games(self) -> list[tuple[str, Game]]:
        if self._others is None:
            mine = self.game.gamedef.to_acpc()
            games = {**PRESETS, **MULTIWAY_PRESETS}  # (an N-seat MATCHSTATE: named as such)
            self._others = [(n, Game(g)) for n, g in games.items() if g.to_acpc() != mine]
        return self._others

    def parse(self, matchstate: Any) -> State:
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
        for name, g in self._other_games():
            try:
                st = g.state(matchstate)
            except StateError:
                continue
            if complete and st.is_chance():
                continue
            return name
        return None


def decision_state(checker: GameChecker, matchstate: Any) -> State:
    """The parsed match state, checked to be a decision of its viewer by
    :func:`blueprint.blueprint.viewer_decision` (else :class:`QueryError`: 409 ``hand_over`` /
    ``not_your_turn``, 400 ``bad_matchstate`` for missing cards)."""
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
        self._checker = GameChecker(game)

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


def example_matchstates(game: Game) -> list[str]:
    """One valid MATCHSTATE per betting round, each at a decision of its viewer (everyone checks
    or calls until that round; the deck's top cards are dealt)."""
    g = game.gamedef
    state = game.initial_state()
    top = list(range(g.deck_size - 1, -1, -1))
    state = state.deal(top[: g.num_players * g.num_hole_cards])
    i = g.num_players * g.num_hole_cards
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


__all__ = [
    "BLUEPRINT_METHOD",
    "DEFAULT_TIME_BUDGET_MS",
    "MAX_MATCHSTATE_LEN",
    "MAX_SESSION_LEN",
    "MAX_TIME_BUDGET_MS",
    "SEARCH_METHOD",
    "SOLVE_METHODS",
    "GameChecker",
    "QueryError",
    "Responder",
    "ValidatingResponder",
    "check_locks",
    "check_method",
    "check_session",
    "check_time_budget",
    "decision_state",
    "example_matchstates",
]
