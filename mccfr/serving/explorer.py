"""The web page of ``mccfr serve`` and the endpoints it uses, on the service's own app.

``GET /`` is the page (``static/index.html``; its scripts, styles and nothing else under
``/static/``: plain HTML, JavaScript modules and CSS, no build step, nothing fetched from
elsewhere). The page and its files need no token; every endpoint below is under ``/v1/`` and so
goes through the service's :class:`~mccfr.serving.service.Guard` like ``POST /v1/strategy``
(bearer token, body cap, in-flight cap), and answers through the same path (the responder's
admission, time budget and memory budget)::

    GET  /v1/game    the game, every hand's name, the methods and budgets the server takes, its
                     request body cap (``max_body_bytes``; the page's per-hand locks must fit it)
    POST /v1/range   {"betting": "r300c/", "board": "2c7h9s", "action": "r900", "method": "resolve",
                      "time_budget_ms": 5000, "session": "...", "locks": {...}, "lock_root": "r300c/"}
                                                                                (all optional)
                  -> the public state after ``action`` (when given): status decision | cards_due |
                     hand_over; at a decision, for every hand of the seat to act its strategy and
                     reach weight (:mod:`mccfr.serving.ranges`), from the blueprint or (``method``) from
                     a subgame solved there, labelled ``source`` blueprint | translated | subgame |
                     fallback, with ``fallback`` saying why a solve asked for did not answer (the
                     responder's reasons; ``memory`` also when the solved subgame was answered but
                     not kept; ``round`` where the server does not solve that round).
                     ``locks`` (with a solve ``method``; the form and checks of ``/v1/strategy``'s,
                     422 ``bad_locks``): the subgame is solved at ``lock_root`` (a betting string on
                     the line to the state; default: the state itself), whose subgame's root the
                     lock histories start from, under those locks, and the state's range is read
                     from that solve (``locked``: true). A locked solve is never kept nor reused.
    GET  /v1/saved   the saved solves the server opened (``mccfr serve --saved FILE``): id, file,
                     method, iterations, root betting, board, exploitability, locks
    POST /v1/saved/range {"id": "...", "history": "r900", "board": "Td"}
                  -> as ``/v1/range``, from the saved solve's strategy: ``history`` is the betting
                     from the saved subgame's root, ``board`` the cards dealt after it; 404
                     ``unknown_saved``, 422 ``not_in_subgame`` for a state outside its tree
    POST /v1/play/deal  {"hand_number": 0}                 a hand against the bot
    POST /v1/play/act   {"hand": "<token>", "action": "c"}  the person's action
                  -> the person's view, the bot's answers (action, source, time: never its
                     strategy while the hand runs); at the end the dealer's log line, the result,
                     the bot's cards and each answer's strategy for review. Hands in play are
                     capped per client address (one more drops that client's own oldest) and in
                     all (full: 503 ``table_full``) (:mod:`mccfr.serving.play`)
    GET  /v1/run     the run's training curve (``metrics.jsonl``: iteration, seconds, exploitability)

A solve for the explorer goes through the responder as a query of the seat to act holding the
first cards not on the board, in the request's ``session`` (the page keeps one per line it
walks, so a later state of the same subgame reuses the solve); the whole range is then read from
the solved subgame that the responder keeps for the session. Errors are the service's
``{"error", "kind"}`` with a 4xx status (``bad_history``, ``bad_board``, ``bad_action``,
``unknown_hand``, ``not_your_turn``, ``table_full`` (503), ``bot_failed`` (500) besides the query's
kinds). ``/metrics`` counts range answers by source and play requests as ``play``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import secrets
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Optional

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from blueprint.rundir import METRICS_JSONL, read_metrics
from holdem.betting import parse_betting
from holdem.cards import card_name
from mccfr.serving.play import PlayError, Table, bot_failed, client_of
from mccfr.serving.query import BLUEPRINT_METHOD, QueryError
from mccfr.serving.ranges import PublicState, blueprint_range, encode, hand_names, public_state, subgame_range
from mccfr_util.reporting import big_blind_of, mbb_per_chip
from subgame.cache import node_in
from subgame.types import Solution

STATIC = Path(__file__).resolve().parent / "static"
MAX_CURVE_ROWS = 2000  # rows of the training curve sent (evenly spaced, the last one kept)
MAX_METRICS_BYTES = 256 * 2**20  # a metrics file larger than this is not read

router = APIRouter()


class RangeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    betting: StrictStr = Field(
        "", description="ACPC betting string of the public history ('' = the first action)"
    )
    board: StrictStr = Field("", description="board cards dealt so far, in deal order (e.g. '2c7h9sTd')")
    action: Optional[StrictStr] = Field(None, description="an ACPC action of the seat to act, applied first")
    method: Optional[StrictStr] = Field(None, description="blueprint (default) or a solve method")
    time_budget_ms: Optional[StrictInt] = Field(
        None, description="the solve's budget (default: the server's)"
    )
    session: Optional[StrictStr] = Field(None, description="key under which the solved subgame is kept")
    locks: Optional[dict[StrictStr, dict[StrictStr, float | list[float]]]] = Field(
        None, description="node locks of the subgame solved at lock_root (as /v1/strategy's)"
    )
    lock_root: Optional[StrictStr] = Field(
        None, description="betting string of the state where the locked subgame is solved (default: this one)"
    )


class SavedRangeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: StrictStr = Field(..., description="a saved solve's id (GET /v1/saved)")
    history: StrictStr = Field("", description="ACPC betting from the saved subgame's root ('' = the root)")
    board: StrictStr = Field("", description="board cards dealt after the subgame's root, in deal order")
    action: Optional[StrictStr] = Field(None, description="an ACPC action of the seat to act, applied first")


@dataclasses.dataclass(frozen=True)
class SavedEntry:
    """A saved solve opened by the server: ``id`` (the file's stem, made unique), its file, its
    solution (the saved average strategy, re-measured) and the file's header."""

    id: str
    path: str
    solution: Solution
    meta: dict


#: the name saved solves have in a directory given to ``--saved``
SAVED_SUFFIX = ".solve"


def saved_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The files of ``--saved``: each file as given, each directory's ``*.solve`` files (sorted)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.name.endswith(SAVED_SUFFIX) and f.is_file())
            if not found:
                raise FileNotFoundError(f"{p}: no {SAVED_SUFFIX} files in this directory")
            out.extend(found)
        elif p.exists():
            out.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or directory")
    return out


def open_saved(
    paths: Iterable[str | os.PathLike[str]],
    gamedef,
    log: Optional[Callable[[str], None]] = None,
    blueprint=None,
) -> list[SavedEntry]:
    """Read every saved solve of ``paths`` (:func:`saved_files`) with :func:`subgame.saved.read_saved`
    (its hostile-input checks; :class:`~blueprint.io.errors.CheckpointError` naming the file) and
    measure its saved strategy (no iteration run). ``ValueError`` for a solve of another game than
    ``gamedef`` (the server's); a depth-limited solve must be of ``blueprint`` (the server's)."""
    from subgame.saved import read_saved
    from subgame.solver import solve

    out: list[SavedEntry] = []
    for f in saved_files(paths):
        saved = read_saved(f, blueprint=blueprint)
        g = saved.subgame.game
        if g.to_acpc() != gamedef.to_acpc():
            raise ValueError(
                f"{f}: a solve of the game {g.name or '?'}, not this server's {gamedef.name or '?'}"
            )
        sol = solve(
            saved.subgame,
            saved.method,
            iterations=0,
            algo=saved.algo,
            precision=saved.precision,
            locks=saved.locks,
            resume=saved.state,
        )
        base, n = f.name.removesuffix(SAVED_SUFFIX), 1
        ident = base
        while any(e.id == ident for e in out):
            n += 1
            ident = f"{base}-{n}"
        out.append(SavedEntry(ident, str(f), sol, saved.meta))
        if log is not None:
            log(f"saved solve {ident}: {f} ({saved.method}, {saved.state.iterations:,} iterations)")
    return out


class DealRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hand_number: StrictInt = Field(
        0, description="the hand's number; the person sits at position hand_number % 2"
    )


class ActRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hand: StrictStr
    action: StrictStr


def _error(metrics, exc: Exception) -> JSONResponse:
    if isinstance(exc, (QueryError, PlayError)):
        metrics.failed(exc.status, exc.kind)
        return JSONResponse({"error": str(exc), "kind": exc.kind}, status_code=exc.status)
    metrics.failed(500, "internal")
    return JSONResponse(
        {"error": f"internal error: {type(exc).__name__}: {exc}", "kind": "internal"}, status_code=500
    )


def _blueprint(responder):
    bp = getattr(responder, "bp", None)
    if bp is None:
        raise QueryError(
            "no_blueprint", f"this server's responder ({type(responder).__name__}) has no blueprint", 422
        )
    return bp


@router.get("/", include_in_schema=False)
async def page() -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type="text/html")


@router.get("/v1/game")
async def game(request: Request) -> dict[str, Any]:
    """The game, every hand's name (in the order of ``/v1/range``'s arrays) and what the server
    solves."""
    st = request.app.state
    responder = st.responder
    g = responder.game.gamedef
    bb = big_blind_of(g)
    describe: dict[str, Any] = getattr(responder, "describe", dict)()
    return {
        "name": g.name or None,
        "limit": g.is_limit,
        "num_rounds": g.num_rounds,
        "num_ranks": g.num_ranks,
        "num_suits": g.num_suits,
        "num_hole_cards": g.num_hole_cards,
        "num_board_cards": list(g.num_board_cards),
        "stack": [int(min(s, 2**31 - 1)) for s in g.stack],
        "big_blind": bb,
        "mbb_per_chip": mbb_per_chip(bb) if bb else None,
        "cards": [card_name(c, g.num_suits) for c in range(g.deck_size)],
        "hands": list(hand_names(g)),
        "methods": list(getattr(responder, "methods", ())),
        "solve_method": describe.get("solve_method"),
        "solve_from_round": describe.get("solve_from_round"),
        "default_time_budget_ms": getattr(responder, "default_time_budget_ms", None),
        "has_blueprint": getattr(responder, "bp", None) is not None,
        "run_dir": st.run_dir,
        "max_body_bytes": getattr(st, "max_body_bytes", None),
    }


async def _range(st, req: RangeRequest, t0: float) -> dict[str, Any]:
    responder = st.responder
    bp = _blueprint(responder)
    g = responder.game.gamedef
    ps = public_state(responder.game, req.betting, req.board, req.action)
    out: dict[str, Any] = {
        "betting": ps.betting,
        "board": [card_name(c, g.num_suits) for c in ps.board],
        "round": ps.round,
        "status": ps.status,
        "cards_due": ps.cards_due,
        "spent": list(ps.spent),
        "pot": int(sum(ps.spent)),
    }
    if ps.status != "decision":
        return out
    state = ps.state
    assert state is not None and ps.seat is not None
    rr = state.raise_range()
    out.update(seat=ps.seat, legal=state.legal_actions(), raise_range=list(rr) if rr else None)
    loop = asyncio.get_running_loop()
    method = req.method
    if req.locks is not None:
        rng = await _locked_range(st, req, ps, t0)
    elif method is None or method == BLUEPRINT_METHOD:
        rng = await loop.run_in_executor(st.pool, blueprint_range, bp, state)
        rng["method"] = None
    else:
        session = req.session or f"explorer:{secrets.token_hex(8)}"
        ans = await st.respond(state.matchstate(ps.seat), session, req.time_budget_ms, method, t0)
        found = None
        if ans["source"] == "subgame":  # the responder keeps the solved subgame for the session
            key = (state.hand_id, tuple(state.hole_cards[ps.seat]), method)
            found = responder.sessions.lookup(session, state, key)
        if found is not None:
            rng = await loop.run_in_executor(st.pool, subgame_range, found[0], found[1], ps.seat, ps.board)
            rng["source"] = "subgame"
            for k in ("method", "iterations", "exploitability_pct_pot", "reused", "leaf_cards"):
                rng[k] = ans.get(k)
        else:
            rng = await loop.run_in_executor(st.pool, blueprint_range, bp, state)
            rng["method"] = method
            rng["fallback"] = ans.get("fallback")
            if ans["source"] == "subgame":  # answered, but not kept: too big for the memory budget
                rng["fallback"] = "memory"
            elif rng["fallback"] is None and ans["source"] != "fallback":
                rng["fallback"] = "round"  # the server does not solve this round
        out["session"] = session
    out.update(encode(rng))
    return out


def _lock_root(game, ps: PublicState, lock_root: Optional[str]) -> PublicState:
    """The public state where a locked subgame is solved: ``lock_root`` on the line to ``ps``
    (its board: ``ps``'s cards dealt by then), or ``ps`` itself."""
    if lock_root is None or lock_root == ps.betting:
        return ps
    g = game.gamedef
    if not ps.betting.startswith(lock_root):
        raise QueryError(
            "bad_locks", f"lock_root {lock_root[:80]!r} is not on the line to {ps.betting!r}", 422
        )
    try:
        rnd = parse_betting(lock_root, g).round
    except ValueError as exc:
        raise QueryError("bad_locks", f"lock_root {lock_root[:80]!r}: {exc}", 422) from None
    board = "".join(card_name(c, g.num_suits) for c in ps.board[: g.board_cards_through(rnd)])
    root = public_state(game, lock_root, board)
    if root.status != "decision":
        raise QueryError("bad_locks", f"lock_root {lock_root!r} is not a decision ({root.status})", 422)
    return root


async def _locked_range(st, req: RangeRequest, ps: PublicState, t0: float) -> dict[str, Any]:
    """The range at ``ps`` from a subgame solved at the lock root under ``req.locks`` (the
    responder's path, its admission and budgets; never kept nor reused); the blueprint's, with
    ``fallback``, when the solve did not answer."""
    responder = st.responder
    if req.method is None or req.method == BLUEPRINT_METHOD:
        raise QueryError("bad_locks", "locks need a subgame solve: give a solve method", 422)
    root = _lock_root(responder.game, ps, req.lock_root)
    assert root.state is not None and root.seat is not None and ps.state is not None and ps.seat is not None
    ans = await st.respond(
        root.state.matchstate(root.seat),
        None,
        req.time_budget_ms,
        req.method,
        t0,
        req.locks,
        with_solution=True,
    )
    found = ans.pop("solution", None)
    loop = asyncio.get_running_loop()
    if found is None:
        rng = await loop.run_in_executor(st.pool, blueprint_range, _blueprint(responder), ps.state)
        rng["method"] = req.method
        rng["fallback"] = ans.get("fallback") or "round"
        rng["locked"] = False
        return rng
    sol = found[0]
    hit = node_in(sol, ps.state)
    if hit is None:
        raise QueryError(
            "bad_locks",
            f"the state {ps.betting!r} is not a decision of the subgame solved at {root.betting!r}",
            422,
        )
    rng = await loop.run_in_executor(st.pool, subgame_range, sol, hit[1], ps.seat, ps.board)
    rng["source"] = "subgame"
    for k in ("method", "iterations", "exploitability_pct_pot", "leaf_cards"):
        rng[k] = ans.get(k)
    rng.update(locked=True, lock_root=root.betting, subgame_root=sol.subgame.root.betting_string())
    return rng


@router.post("/v1/range")
async def range_(req: RangeRequest, request: Request) -> JSONResponse:
    """Every hand's strategy and reach for the seat to act at a public state (module docstring)."""
    st = request.app.state
    t0 = st.arrival(request)
    st.metrics.begin()
    try:
        out = await _range(st, req, t0)
    except Exception as exc:  # noqa: BLE001 - reported (4xx, or 500 for a bug); the server goes on
        return _error(st.metrics, exc)
    out["elapsed_ms"] = (time.perf_counter() - t0) * 1e3
    st.metrics.answered(out.get("source", "public_state"), out["elapsed_ms"], out.get("fallback"))
    return JSONResponse(out)


def _saved_entry(st, ident: str) -> SavedEntry:
    entry = st.saved.get(ident)
    if entry is None:
        raise QueryError(
            "unknown_saved", f"no saved solve {ident[:80]!r} on this server (GET /v1/saved)", 404
        )
    return entry


@router.get("/v1/saved")
async def saved_list(request: Request) -> dict[str, Any]:
    """The saved solves this server opened (``mccfr serve --saved``)."""
    st = request.app.state
    out = []
    for e in st.saved.values():
        sol = e.solution
        sub = sol.subgame
        g = sub.game
        out.append(
            {
                "id": e.id,
                "file": Path(e.path).name,
                "method": sol.method,
                "iterations": sol.iterations,
                "root": sub.root.betting_string(),
                "board": [card_name(int(c), g.num_suits) for c in sub.board],
                "exploitability_pct_pot": sol.exploitability_pct_pot,
                "locks": sorted(e.meta.get("locks") or {}),
            }
        )
    return {"saved": out}


def _saved_range(game, entry: SavedEntry, req: SavedRangeRequest) -> dict[str, Any]:
    sol = entry.solution
    sub = sol.subgame
    g = game.gamedef
    root = sub.root.betting_string()
    board = "".join(card_name(int(c), g.num_suits) for c in sub.board) + req.board
    ps = public_state(game, root + req.history, board, req.action)
    if not ps.betting.startswith(root):  # (a history cannot undo the root's round end)
        raise QueryError(
            "not_in_subgame", f"{ps.betting!r} does not continue the subgame's root {root!r}", 422
        )
    out: dict[str, Any] = {
        "id": entry.id,
        "betting": ps.betting,
        "history": ps.betting[len(root) :],
        "root": root,
        "board": [card_name(c, g.num_suits) for c in ps.board],
        "round": ps.round,
        "status": ps.status,
        "cards_due": ps.cards_due,
        "spent": list(ps.spent),
        "pot": int(sum(ps.spent)),
    }
    if ps.status != "decision":
        return out
    assert ps.state is not None and ps.seat is not None
    hit = node_in(sol, ps.state)
    if hit is None:
        raise QueryError(
            "not_in_subgame",
            f"history {out['history']!r} (board {board!r}) is not a decision of the saved subgame",
            422,
        )
    rng = subgame_range(sol, hit[1], ps.seat, ps.board)
    rr = ps.state.raise_range()
    out.update(seat=ps.seat, legal=ps.state.legal_actions(), raise_range=list(rr) if rr else None)
    out.update(encode(rng))
    out.update(
        source="saved",
        method=sol.method,
        iterations=sol.iterations,
        exploitability_pct_pot=sol.exploitability_pct_pot,
    )
    return out


@router.post("/v1/saved/range")
async def saved_range(req: SavedRangeRequest, request: Request) -> JSONResponse:
    """Every hand's strategy and reach at a state of a saved solve (module docstring)."""
    st = request.app.state
    t0 = st.arrival(request)
    st.metrics.begin()
    try:
        entry = _saved_entry(st, req.id)
        out = await asyncio.get_running_loop().run_in_executor(
            st.pool, _saved_range, st.responder.game, entry, req
        )
    except Exception as exc:  # noqa: BLE001 - reported (4xx, or 500 for a bug); the server goes on
        return _error(st.metrics, exc)
    out["elapsed_ms"] = (time.perf_counter() - t0) * 1e3
    st.metrics.answered(out.get("source", "public_state"), out["elapsed_ms"])
    return JSONResponse(out)


def _table(st) -> Table:
    table = getattr(st, "table", None)
    if table is None:
        table = st.table = Table(st.responder.game)
    return table


async def _bot_turns(st, table: Table, token: str) -> None:
    """The bot answers (through the responder, as ``/v1/strategy``) until it is the person's
    turn or the hand is over."""
    while (ms := table.bot_query(token)) is not None:
        t0 = time.perf_counter()
        try:
            ans = await st.respond(ms, table.bot_session(token), None, None, t0)
            ans["elapsed_ms"] = (time.perf_counter() - t0) * 1e3
            table.bot_acts(token, ans)
        except PlayError:  # (the hand is gone: unknown_hand)
            raise
        except Exception as exc:  # noqa: BLE001 - its message may quote the bot's match state
            table.drop(token)
            raise bot_failed(exc) from exc


async def _play(request: Request, step) -> JSONResponse:
    st = request.app.state
    t0 = st.arrival(request)
    st.metrics.begin()
    try:
        table = _table(st)
        token, seen = step(table)
        await _bot_turns(st, table, token)
        out = table.view(token, seen)
    except Exception as exc:  # noqa: BLE001 - reported (4xx, or 500 for a bug); the server goes on
        return _error(st.metrics, exc)
    out["elapsed_ms"] = (time.perf_counter() - t0) * 1e3
    st.metrics.answered("play", out["elapsed_ms"])
    return JSONResponse(out)


@router.post("/v1/play/deal")
async def play_deal(req: DealRequest, request: Request) -> JSONResponse:
    """Deal a hand against the bot; the bot acts until it is the person's turn."""
    client = client_of(request.scope)
    return await _play(request, lambda table: (table.deal(req.hand_number, client), 0))


@router.post("/v1/play/act")
async def play_act(req: ActRequest, request: Request) -> JSONResponse:
    """The person's action; the bot answers until it is the person's turn again or the hand ends."""

    def step(table: Table):
        seen = table.answers_seen(req.hand)
        table.act(req.hand, req.action)
        return req.hand, seen

    return await _play(request, step)


def _curve(run_dir: Optional[str]) -> dict[str, Any]:
    if run_dir is None:
        raise QueryError("no_run", "this server was not started on a run directory", 404)
    path = Path(run_dir)
    f = path / METRICS_JSONL
    if f.exists() and f.stat().st_size > MAX_METRICS_BYTES:
        raise QueryError("too_large", f"{f} is over {MAX_METRICS_BYTES:,} bytes", 422)
    rows = read_metrics(path)
    if len(rows) > MAX_CURVE_ROWS:
        step = len(rows) / MAX_CURVE_ROWS
        rows = [rows[int(i * step)] for i in range(MAX_CURVE_ROWS - 1)] + [rows[-1]]
    keep = ("iteration", "seconds", "wall_seconds", "exploitability", "iterations_per_second", "time")
    return {"run_dir": str(path), "rows": [{k: r.get(k) for k in keep} for r in rows]}


@router.get("/v1/run")
async def run(request: Request) -> JSONResponse:
    """The run's training curve: ``metrics.jsonl``'s rows (at most :data:`MAX_CURVE_ROWS`),
    exploitability in chips (null where not computed) and the factor to mbb/game."""
    st = request.app.state
    try:
        out = await asyncio.get_running_loop().run_in_executor(st.pool, _curve, st.run_dir)
    except QueryError as exc:
        st.metrics.invalid(exc.kind, exc.status)
        return JSONResponse({"error": str(exc), "kind": exc.kind}, status_code=exc.status)
    g = st.responder.game.gamedef
    bb = big_blind_of(g)
    out.update(unit="mbb/game" if bb else "chips", factor=mbb_per_chip(bb) if bb else 1.0)
    return JSONResponse(out)


__all__ = ["SAVED_SUFFIX", "STATIC", "SavedEntry", "open_saved", "router", "saved_files"]
