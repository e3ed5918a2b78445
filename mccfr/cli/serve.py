"""``mccfr serve`` (the query service; FastAPI / uvicorn imported only here) and ``mccfr play``
(the ACPC client)."""

from __future__ import annotations

import gc
import json
import signal
import sys
import threading
import tomllib
from pathlib import Path

import click

from blueprint.defaults import DEFAULT_TIME_BUDGET_MS, default_solve_from
from blueprint.io.errors import CheckpointError
from holdem.gamedef import parse_gamedef
from mccfr.cli.common import CLIError, json_opt, run_dir_arg, user_input
from mccfr.serving.acpc_client import AcpcClient, TimeBank, parse_address
from mccfr.serving.query import SEARCH_METHOD, SOLVE_METHODS, QueryError, check_method
from mccfr.serving.resources import default_memory_budget, default_solver_threads, parse_bytes
from mccfr.serving.responders import HttpResponder
from mccfr.serving.solver_processes import available
from mccfr.serving.solving import make_responder
from subgame.tree import SubgameError


def _load_responder(run_dir: str, time_budget_ms: int, solve_method: str | None = None, **solving):

    path = run_dir_arg(run_dir)
    with user_input():
        try:
            responder = make_responder(
                path,
                solve_method=solve_method,
                default_time_budget_ms=time_budget_ms,
                log=lambda msg: click.echo(f"warning: {msg}", err=True),
                **solving,
            )
        except QueryError as exc:
            raise click.BadParameter(str(exc), param_hint="--solve") from None
    warm_up = getattr(responder, "warm_up", None)
    if warm_up is not None:  # compile / load the numba kernels before the first real query
        warm_up()

    # what is loaded now (the blueprint, the compiled kernels, the libraries) lives as long as the
    # process: moved out of the collector's sight, a full collection no longer walks it (about
    # 0.2M objects, 50-100 ms of every thread stopped; pauses that would land inside answers)
    gc.collect()
    gc.freeze()
    return path, responder


_budget_opt = click.option(
    "--time-budget-ms",
    "time_budget_ms",
    type=click.IntRange(1, 600_000),
    default=DEFAULT_TIME_BUDGET_MS,
    show_default=True,
    help="Default wall-time budget of one answer (subgame solving; a request's time_budget_ms overrides it).",
)


ROUND_NAMES = ("preflop", "flop", "turn", "river")


class ByteCount(click.ParamType):
    """A number of bytes: 1073741824, 512M, 2G, 1.5GiB (K, M, G, T: powers of 1024)."""

    name = "BYTES"

    def convert(self, value, param, ctx):

        try:
            return parse_bytes(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


_api_key_opt = click.option(
    "--api-key",
    "api_key",
    envvar="MCCFR_API_KEY",
    default=None,
    metavar="KEY",
    show_envvar=True,
    help="Bearer token: with it, /v1/strategy and /metrics answer only requests with "
    "'Authorization: Bearer KEY' (else 401); /healthz stays open. Prefer the environment variable "
    "(a command line is visible to other users of the machine).",
)


def _solving_options(
    run_dir,
    time_budget_ms,
    solve_method,
    solve_from,
    solver_threads,
    max_solve_ms,
    memory_budget=None,
    last_round_threads=None,
    solver_processes=None,
) -> dict:
    """make_responder's subgame-solving keyword arguments from serve's flags (checked)."""
    if solve_method is None:
        for flag, v in (
            ("--solve-from", solve_from),
            ("--solver-threads", solver_threads),
            ("--max-solve-ms", max_solve_ms),
            ("--memory-budget", memory_budget),
            ("--last-round-threads", last_round_threads),
            ("--solver-processes/--solver-in-threads", solver_processes),
        ):
            if v is not None:
                raise click.UsageError(f"{flag} applies to subgame solving: give --solve METHOD too")
        return {}
    out = {}
    if memory_budget is not None:
        out["memory_budget"] = memory_budget
    if max_solve_ms is not None:
        out["max_solve_ms"] = max_solve_ms
    if solver_threads is not None:
        out["solver_threads"] = solver_threads
    if solver_processes is not None:
        if solver_processes and not available():
            raise click.BadParameter("needs the 'fork' start method (Linux)", param_hint="--solver-processes")
        out["solver_processes"] = solver_processes
    if last_round_threads is not None:
        if solver_threads is not None and last_round_threads > solver_threads:
            raise click.BadParameter(
                f"{last_round_threads} is more than --solver-threads {solver_threads}",
                param_hint="--last-round-threads",
            )
        out["last_round_threads"] = last_round_threads
    g = _run_game(run_dir)
    if solve_from is None and solve_method == SEARCH_METHOD:  # Pluribus searched from the flop
        out["from_round"] = min(1, g.num_rounds - 1)
    elif solve_from is None:
        out["from_round"] = default_solve_from(g.num_rounds, time_budget_ms)
    else:
        names = ROUND_NAMES[: g.num_rounds] if g.num_rounds == 4 else ()
        r = names.index(solve_from) if solve_from in names else None
        if r is None and solve_from.isdigit():
            r = int(solve_from)
        if r is None or not 0 <= r < g.num_rounds:
            choices = ", ".join([*names, f"0..{g.num_rounds - 1}"])
            raise click.BadParameter(
                f"{solve_from!r} is no betting round of this game (expected {choices})",
                param_hint="--solve-from",
            )
        out["from_round"] = r
    return out


def _run_game(run_dir):
    """The game of the run at ``run_dir`` (its ``run.toml``), a clear error if it cannot be read."""
    path = run_dir_arg(run_dir) / "run.toml"
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CLIError(f"cannot read {path} (is {run_dir!r} a run directory?): {exc}") from None
    if not isinstance(doc.get("gamedef"), str):
        raise CLIError(f"{path} has no 'gamedef' string: not a run's record (mccfr train --out writes one)")
    with user_input():
        return parse_gamedef(doc["gamedef"])


@click.command()
@click.argument("run_dir")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface)."
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port (0: any free port; --ray needs a fixed one).",
)
@_budget_opt
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Worker threads answering queries (the event loop never runs one).",
)
@click.option("--access-log", is_flag=True, help="Log every request (costs latency).")
@click.option(
    "--solve",
    "solve_method",
    default=None,
    metavar="METHOD",
    help="Re-solve subgames (from --solve-from's round, and off-tree bets) with this method "
    "(e.g. reach-maxmargin), or 'search' (Pluribus-style, any number of seats, from the second round "
    "by default); default: blueprint answers only.",
)
@click.option(
    "--solve-from",
    "solve_from",
    default=None,
    metavar="ROUND",
    help="With --solve: the first betting round solved (preflop, flop, turn, river or its index) "
    "[default: the turn in hold'em at a --time-budget-ms of 2000 or more, else the last round; "
    "docs/solving.md, 'Defaults']. A solve that cannot fit the time budget is answered from the "
    "blueprint, with 'fallback' saying so.",
)
@click.option(
    "--solver-threads",
    "solver_threads",
    type=click.IntRange(min=1),
    default=None,
    help="With --solve: solves running at once [default: one per core; with --ray, cores / replicas].",
)
@click.option(
    "--last-round-threads",
    "last_round_threads",
    type=click.IntRange(min=1),
    default=None,
    help="With --solve: solver threads the last round's solves may hold at once [default: all but one "
    "when --solve-from is an earlier round (river solves would otherwise always hold them all), else all].",
)
@click.option(
    "--solver-processes/--solver-in-threads",
    "solver_processes",
    default=None,
    help="With --solve: solve in worker processes forked from the server (the blueprint shared, "
    "the construction of a subgame off the event loop's interpreter lock) or in threads of the "
    "server's process [default: processes where the platform forks (Linux), threads with --ray].",
)
@click.option(
    "--max-solve-ms",
    "max_solve_ms",
    type=click.IntRange(min=1),
    default=None,
    help="With --solve: iterate at most this long beyond what a useful solve needs [default: until the "
    "budget's end]; shorter solves free the solver threads sooner, so more queries get one.",
)
@click.option(
    "--memory-budget",
    "memory_budget",
    type=ByteCount(),
    default=None,
    help="With --solve: bytes for solved subgames (kept per session, least recently used evicted "
    "first, each at its measured size) and the solves in flight; a solve whose estimated memory "
    "does not fit is answered from the blueprint (fallback 'memory'). Suffixes K, M, G: 512M, 2G "
    "[default: a quarter of physical memory; with --ray, divided among the replicas].",
)
@_api_key_opt
@click.option(
    "--max-body-bytes",
    "max_body_bytes",
    type=ByteCount(),
    default="64K",
    show_default=True,
    help="Largest request body accepted (413 beyond, refused without reading the rest).",
)
@click.option(
    "--max-inflight-per-client",
    "max_inflight",
    type=click.IntRange(min=1),
    default=128,
    show_default=True,
    help="Requests one client address may have in flight (429 beyond). Clients behind one proxy "
    "share an address.",
)
@click.option(
    "--saved",
    "saved_paths",
    multiple=True,
    metavar="FILE",
    help="A saved solve (mccfr solve --save FILE) to list and browse on the web page, or a directory "
    "of .solve files (repeatable). Read at start-up with the saved-solve reader's checks.",
)
@click.option(
    "--ray",
    "use_ray",
    is_flag=True,
    help='Deploy as a Ray Serve application (needs the serve extra: pip install "mccfr[serve]").',
)
@click.option(
    "--replicas", type=click.IntRange(min=1), default=None, help="With --ray: service replicas [default: 1]."
)
@click.option(
    "--address",
    default=None,
    metavar="ADDR",
    help="With --ray: the Ray cluster to join ('auto', or ray://HOST:PORT) [default: start a local one].",
)
def serve(
    run_dir,
    host,
    port,
    time_budget_ms,
    threads,
    access_log,
    solve_method,
    solve_from,
    solver_threads,
    last_round_threads,
    solver_processes,
    max_solve_ms,
    memory_budget,
    api_key,
    max_body_bytes,
    max_inflight,
    saved_paths,
    use_ray,
    replicas,
    address,
):
    """Serve strategy queries over HTTP + JSON.

    \b
    POST /v1/strategy {"matchstate": "MATCHSTATE:...", "session"?, "time_budget_ms"?, "method"?}
         -> {"strategy": {action: p}, "source": "blueprint"|"subgame", "method", "elapsed_ms",
             "fallback"? (why a query for a solve got the blueprint's answer: busy, budget, deadline,
             memory)}
    GET  /healthz, /metrics, /openapi.json (docs at /docs)

    Bad input gets a 4xx with {"error": "...", "kind": "..."}; the server keeps serving. With
    --api-key (or MCCFR_API_KEY) every path but /healthz and the API description needs
    'Authorization: Bearer KEY' (401). Bodies over --max-body-bytes are 413, a client address with
    more than --max-inflight-per-client requests in flight gets 429. Stop with Ctrl-C.
    """
    if not use_ray:
        for flag, v in (("--replicas", replicas), ("--address", address)):
            if v is not None:
                raise click.UsageError(f"{flag} applies to the Ray Serve deployment: give --ray too")
    solving = _solving_options(
        run_dir,
        time_budget_ms,
        solve_method,
        solve_from,
        solver_threads,
        max_solve_ms,
        memory_budget,
        last_round_threads,
        solver_processes,
    )
    guard = {
        "api_key": api_key or None,
        "max_body_bytes": max_body_bytes,
        "max_inflight_per_client": max_inflight,
    }
    if api_key and (not api_key.isprintable() or api_key != api_key.strip()):
        raise click.BadParameter(
            "the key must be printable characters without surrounding spaces",
            param_hint="--api-key / MCCFR_API_KEY",
        )
    if use_ray and saved_paths:
        raise click.UsageError("--saved is for the page of a plain server, not with --ray")
    if use_ray:
        return _serve_ray(
            run_dir, host, port, time_budget_ms, threads, solve_method, solving, replicas or 1, address, guard
        )
    try:
        from mccfr.serving.service import bind, create_app, make_server  # FastAPI and uvicorn: serve only
    except ImportError as exc:
        raise CLIError(f"serve needs fastapi and uvicorn ({exc}); pip install fastapi uvicorn") from None
    if solve_method not in (None, SEARCH_METHOD) and "solver_processes" not in solving:
        solving["solver_processes"] = available()
    path, responder = _load_responder(run_dir, time_budget_ms, solve_method, **solving)
    saved = (
        _open_saved(saved_paths, responder.game.gamedef, getattr(responder, "bp", None))
        if saved_paths
        else ()
    )
    app = create_app(responder, threads=threads, describe={"run_dir": str(path)}, saved=saved, **guard)
    try:
        sock = bind(host, port)
    except OSError as exc:
        raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    click.echo(_serving_line(path, responder, host, sock.getsockname()[1], bool(guard["api_key"])), err=True)
    make_server(app, sock, access_log=access_log).run(sockets=[sock])  # returns on Ctrl-C / SIGTERM
    click.echo("stopped", err=True)


def _serving_line(path, responder, host: str, bound: int, api_key: bool) -> str:
    """What ``serve`` says once it listens: the run, the game, the address and its notes."""
    shown = f"[{host}]" if ":" in host else host
    bp = getattr(responder, "bp", None)
    what = f"{responder.game.gamedef.name or 'game'}" + (
        f", iteration {bp.iteration:,}" if bp is not None else ""
    )
    budget = getattr(responder, "memory_budget", None)
    notes = [
        f"memory budget {budget / 2**20:,.0f} MiB" if budget is not None else "",
        "bearer token required" if api_key else "",
    ]
    note = "; ".join(n for n in notes if n)
    return (
        f"serving {path} ({what}) on http://{shown}:{bound}  "
        "(the web page at /; POST /v1/strategy, GET /healthz /metrics /openapi.json); Ctrl-C stops"
        + (f"  [{note}]" if note else "")
    )


def _open_saved(paths, gamedef, bp=None) -> list:
    """``--saved``'s solves, read and measured (a clear error naming a refused file); a
    depth-limited one needs to be of the served blueprint ``bp``."""
    from mccfr.serving.explorer import open_saved  # FastAPI (its routes): only --saved needs it

    try:
        return open_saved(paths, gamedef, log=lambda msg: click.echo(msg, err=True), blueprint=bp)
    except (CheckpointError, SubgameError, ValueError, OSError) as exc:
        raise click.BadParameter(str(exc), param_hint="--saved") from None


def _serve_ray(run_dir, host, port, time_budget_ms, threads, solve_method, solving, replicas, address, guard):
    # Ray Serve (and FastAPI): only serve --ray needs them
    from mccfr.serving.ray_serve import RayServeMissing, build_app, import_serve, run, shutdown

    if port == 0:
        raise click.BadParameter("the Ray Serve proxy needs a fixed port, not 0", param_hint="--port")
    try:
        import_serve()
    except RayServeMissing as exc:
        raise CLIError(str(exc)) from None
    path = run_dir_arg(run_dir)
    opts = {"solve_method": solve_method, "default_time_budget_ms": time_budget_ms, **solving}
    solves = solve_method not in (None, SEARCH_METHOD)  # subgame solving: its threads and memory
    if solves and "solver_threads" not in solving:
        opts["solver_threads"] = max(1, default_solver_threads() // replicas)
    if solves and "memory_budget" not in solving:
        opts["memory_budget"] = default_memory_budget() // replicas
    with user_input():
        make_responder(path, **opts).close()  # fail here, with a clear message, not inside a replica
    app = build_app(str(path), replicas, threads=threads, responder_options=opts, app_options=guard)
    url = run(app, host=host, port=port, address=address)
    click.echo(
        f"serving {path} on Ray Serve ({replicas} replica{'s' if replicas > 1 else ''}) at {url}  "
        "(the web page at /; POST /v1/strategy, GET /healthz /metrics /openapi.json); Ctrl-C stops",
        err=True,
    )
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(1.0):
        pass
    shutdown()
    click.echo("stopped", err=True)


@click.command()
@click.argument("run_dir", required=False)
@click.option(
    "--dealer",
    "dealer",
    required=True,
    metavar="HOST:PORT",
    help="The dealer's address and this seat's port.",
)
@click.option(
    "--server",
    "server",
    default=None,
    metavar="URL",
    help="Ask a running 'mccfr serve' at URL (http://HOST:PORT) instead of loading RUN_DIR.",
)
@click.option(
    "--log", "log_file", default=None, metavar="FILE", help="Write the match log (JSON lines) here."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the action sampling.")
@click.option(
    "--method",
    default=None,
    help="Method passed with every query (blueprint, or a solving method: without --server, subgames "
    "solved from the turn in hold'em at a --time-budget-ms of 2000 or more, else the last round; or "
    "search: Pluribus-style search from the second round, any number of seats).",
)
@_budget_opt
@click.option(
    "--time-per-hand-ms",
    type=click.FloatRange(min=1),
    default=7_000,
    show_default=True,
    help="The dealer's average time per hand (its --t_per_hand): the client's time bank.",
)
@click.option(
    "--response-limit-ms",
    type=click.FloatRange(min=1),
    default=600_000,
    show_default=True,
    help="The dealer's time per response (its --t_response).",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=900,
    show_default=True,
    help="Give up when the dealer sends nothing for this many seconds.",
)
@click.option("--connect-timeout", type=click.FloatRange(min=0, min_open=True), default=10, show_default=True)
@click.option(
    "--api-key",
    "api_key",
    envvar="MCCFR_API_KEY",
    default=None,
    metavar="KEY",
    show_envvar=True,
    help="With --server: the service's bearer token (mccfr serve --api-key).",
)
@json_opt
def play(
    run_dir,
    dealer,
    server,
    log_file,
    seed,
    method,
    time_budget_ms,
    time_per_hand_ms,
    response_limit_ms,
    idle_timeout,
    connect_timeout,
    api_key,
    as_json,
):
    """Play a match against an ACPC dealer (protocol 2.0.0) with the run's blueprint (or a service).

    \b
    mccfr play RUN_DIR --dealer 127.0.0.1:18791 --log match.jsonl
    mccfr play --server http://127.0.0.1:8000 --dealer 127.0.0.1:18791

    Connects to HOST:PORT, plays every hand the dealer deals within its time limits, writes the
    match log, and reports the hands played and the net result (mbb/hand with a 95% interval in
    games with a big blind). Exit status 1 when the match ended early (a disconnect, a protocol
    error, a timeout).
    """

    try:
        host, port = parse_address(dealer)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--dealer") from None
    if log_file is not None and not Path(log_file).resolve().parent.is_dir():
        raise CLIError(f"cannot write --log {log_file!r}: its directory does not exist")
    if (run_dir is None) == (server is None):
        raise click.UsageError(
            "give RUN_DIR (play its blueprint) or --server URL (ask a running service), one of them"
        )
    path, responder = _play_responder(run_dir, server, api_key, time_budget_ms, method)
    if method is not None:
        try:
            check_method(method, tuple(responder.methods))
        except QueryError as exc:
            raise click.BadParameter(str(exc), param_hint="--method") from None
    show = sys.stderr.isatty()

    def progress(rep) -> None:
        if show:
            click.echo(f"\r  {rep.hands:,} hands, net {rep.net:+,.0f} chips", err=True, nl=False)

    client = AcpcClient(
        responder,
        seed=seed,
        log=log_file,
        method=method,
        bank=TimeBank(time_per_hand_ms, response_limit_ms, budget_ms=time_budget_ms),
        idle_timeout_s=idle_timeout,
        progress=progress,
    )
    try:
        rep = client.play(host, port, connect_timeout=connect_timeout)
    except OSError as exc:
        raise CLIError(f"cannot connect to the dealer at {dealer}: {exc.strerror or exc}") from None
    if show:
        click.echo("", err=True)
    out = rep.to_json()
    out.update(dealer=dealer, log=log_file, **({"server": server} if server else {"run_dir": str(path)}))
    ci = f" +- {out['ci95']:.4g}" if out["ci95"] is not None else ""
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(rep.fallback_reasons.items()))
    click.echo(
        f"played {rep.hands:,} hands at {dealer}: {out['mean']:+.6g}{ci} {out['unit']} (net {rep.net:+,.0f} chips); "
        f"{rep.decisions:,} decisions, {rep.fallbacks} fallbacks{f' ({reasons})' if reasons else ''}, "
        f"max response {rep.max_response_ms:.1f} ms; {rep.ended}"
    )
    if as_json:
        click.echo(json.dumps(out))
    if not rep.complete:
        sys.exit(1)


def _play_responder(run_dir, server, api_key, time_budget_ms, method):
    """``play``'s responder: a running service's (``--server``) or the run's own."""
    if server is None:
        if method == SEARCH_METHOD:
            return _load_responder(run_dir, time_budget_ms, method)
        if method not in SOLVE_METHODS:
            return _load_responder(run_dir, time_budget_ms)
        return _load_responder(
            run_dir,
            time_budget_ms,
            method,
            from_round=default_solve_from(_run_game(run_dir).num_rounds, time_budget_ms),
        )
    try:
        return server, HttpResponder(server, api_key=api_key or None)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--server") from None
    except OSError as exc:
        raise CLIError(f"cannot reach the query service at {server}: {exc.strerror or exc}") from None
