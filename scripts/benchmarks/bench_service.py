"""Query-service latency and throughput, and full ACPC matches of ``mccfr play``.

    python scripts/benchmarks/bench_service.py latency RUN_DIR [--clients 10] [--seconds 30] [--solve METHOD [--solve-from ROUND]]
    python scripts/benchmarks/bench_service.py inprocess RUN_DIR    # CPU per answer without HTTP, per round
    python scripts/benchmarks/bench_service.py acpc RUN_DIR [--hands 1000] [--vs always-call,random] [--duplicate]

latency: starts ``mccfr serve RUN_DIR --port 0`` in its own process, builds a pool of realistic
match states by self-play through the server (every action sampled from the server's answers,
so every round and on-tree history appears), then runs ``--clients`` closed-loop client threads
(one keep-alive HTTP connection each, in this process) sending pool states as fast as they are
answered for ``--seconds`` (with ``--think-ms T``, each waits T ms on average after every answer,
as a client in a match does; ``--budget-ms B`` sends every query with ``time_budget_ms`` B). Reports the round-trip latency seen by the clients and the server's
own ``elapsed_ms`` (handler start to answer ready, queueing for a worker thread included):
p50/p99 overall and per betting round, and the throughput in queries/s; with ``--solve``, per
round the fraction of answers from a subgame and from each fallback (busy, budget, deadline).

acpc: for each opponent, runs the in-repo ACPC dealer (:mod:`mccfr.serving.acpc_dealer`) for
``--hands`` hands, ``mccfr play RUN_DIR`` as a separate process in seat 0 and the opponent (an
:class:`~mccfr.serving.acpc_client.AcpcClient` with a baseline player) in seat 1, under the reference
dealer's default time limits (600 s per response, 7 s per hand on average). Checks that the
match finished with no protocol error, invalid action or timeout, and that the client's net
equals the dealer's; reports the win rate in mbb/hand with a 95% interval. ``--duplicate`` also
plays the mirror match (same seed, seats swapped: each player gets the other's cards) and
reports the duplicate estimate over hand pairs.

Each command prints a table and a final JSON line.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from harness import machine_row

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.player import self_play_states
from holdem.game import Game
from mccfr.evaluation.players import player_from_spec
from mccfr.serving.acpc_client import AcpcClient
from mccfr.serving.acpc_dealer import AcpcDealer, DealerLimits
from mccfr.serving.launch import mccfr_command, start_server
from mccfr.serving.responders import PlayerResponder
from mccfr_util.reporting import chips_to_mbb, ci95, percentile


def run_game(run_dir: str) -> Game:
    """The game of a run, from its run.toml."""
    import tomllib

    from holdem.gamedef import parse_gamedef

    cfg = tomllib.loads((Path(run_dir) / "run.toml").read_text())
    return Game(parse_gamedef(cfg["gamedef"], name=cfg.get("game", "")))


# -- latency ---------------------------------------------------------------------------------------
class Conn:
    def __init__(self, port: int):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def post(self, body: dict) -> tuple[int, dict]:
        data = json.dumps(body).encode()
        self.c.request("POST", "/v1/strategy", body=data, headers={"Content-Type": "application/json"})
        r = self.c.getresponse()
        return r.status, json.loads(r.read())

    def get(self, path: str) -> dict:
        self.c.request("GET", path)
        r = self.c.getresponse()
        return json.loads(r.read())


def state_pool(game: Game, port: int, size: int, seed: int) -> list[str]:
    """``size`` match states from self-play hands through the server (on-tree, all rounds), from
    its blueprint answers (``method: blueprint``: a solving server neither solves for the pool nor
    learns solve costs from it under another budget than the run's)."""
    conn = Conn(port)

    def strategy_of(ms: str) -> dict | None:
        status, ans = conn.post({"matchstate": ms, "method": "blueprint"})
        return ans["strategy"] if status == 200 else None  # off the abstract tree: next hand

    return self_play_states(game, size, seed, strategy_of)[:size]


def server_flags(args) -> list[str]:
    """The ``mccfr serve`` flags of the ``latency`` options."""
    solve = getattr(args, "solve", None)
    out = ["--solve", solve] if solve else []
    out += ["--solve-from", args.solve_from] if getattr(args, "solve_from", None) else []
    out += ["--max-solve-ms", str(args.max_solve_ms)] if getattr(args, "max_solve_ms", None) else []
    out += ["--solver-in-threads"] if solve and getattr(args, "solver_in_threads", False) else []
    return out


def latency(args) -> dict:
    game = run_game(args.run_dir)
    proc, port = start_server(args.run_dir, server_flags(args))
    try:
        t0 = time.perf_counter()
        pool = state_pool(game, port, args.pool, args.seed)
        build_s = time.perf_counter() - t0
        rounds = {ms: game.state(ms).round for ms in pool}
        stop = time.perf_counter() + args.seconds
        results: list[list[tuple[float, float, int]]] = [[] for _ in range(args.clients)]
        errors = [0] * args.clients
        load0 = os.getloadavg()

        def client(k: int) -> None:
            conn = Conn(port)
            rng = np.random.default_rng(args.seed + 1 + k)
            think_rng = np.random.default_rng(args.seed + 1001 + k)
            think = getattr(args, "think_ms", 0) / 1e3
            budget = getattr(args, "budget_ms", None)
            out = results[k]
            while time.perf_counter() < stop:
                ms = pool[int(rng.integers(len(pool)))]
                t = time.perf_counter()
                body = {"matchstate": ms, "session": f"bench-{k}"}
                if budget is not None:
                    body["time_budget_ms"] = budget
                status, ans = conn.post(body)
                rtt = (time.perf_counter() - t) * 1e3
                if status != 200:
                    errors[k] += 1
                    continue
                out.append((rtt, ans["elapsed_ms"], rounds[ms], ans.get("fallback") or ans["source"]))
                if think > 0:  # a client in a match: the opponent and the dealer take their turn
                    time.sleep(min(think_rng.exponential(think), max(0.0, stop - time.perf_counter())))

        threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
        t_start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t_start
        load1 = os.getloadavg()
        metrics = Conn(port).get("/metrics")
    finally:
        proc.terminate()
        proc.wait(10)
    allr = [r for rs in results for r in rs]
    rtt = [r[0] for r in allr]
    srv = [r[1] for r in allr]
    names = ["preflop", "flop", "turn", "river"]
    per_round = {}
    for rd in sorted({r[2] for r in allr}):
        sub = [r for r in allr if r[2] == rd]
        kinds = {}
        for r in sub:
            kinds[r[3]] = kinds.get(r[3], 0) + 1
        solved = [r for r in sub if r[3] == "subgame"]
        per_round[names[rd] if rd < 4 else str(rd)] = {
            "n": len(sub),
            "rtt_p50": percentile([r[0] for r in sub], 0.5),
            "rtt_p99": percentile([r[0] for r in sub], 0.99),
            "server_p50": percentile([r[1] for r in sub], 0.5),
            "server_p99": percentile([r[1] for r in sub], 0.99),
            "server_max": max(r[1] for r in sub),
            # answered by: blueprint (never asked to solve), subgame, or a fallback (busy, budget, deadline)
            "answered_by": {k: v / len(sub) for k, v in sorted(kinds.items())},
            "subgame_server_p50": percentile([r[1] for r in solved], 0.5) if solved else None,
            "subgame_server_p99": percentile([r[1] for r in solved], 0.99) if solved else None,
        }
    out = {
        "clients": args.clients,
        "seconds": wall,
        "queries": len(allr),
        "errors": sum(errors),
        "qps": len(allr) / wall,
        "rtt_p50_ms": percentile(rtt, 0.5),
        "rtt_p99_ms": percentile(rtt, 0.99),
        "server_p50_ms": percentile(srv, 0.5),
        "server_p99_ms": percentile(srv, 0.99),
        "server_max_ms": max(srv),
        "per_round": per_round,
        "pool": len(pool),
        "pool_build_s": build_s,
        "loadavg_before": load0,
        "loadavg_after": load1,
        "server_metrics": metrics.get("latency_ms"),
        "server_memory": metrics.get("memory"),
        "server_solver": metrics.get("solver"),
    }
    print(
        f"{len(allr):,} queries from {args.clients} clients in {wall:.1f} s: {out['qps']:.0f} queries/s, "
        f"{sum(errors)} errors; load average {load0[0]:.2f} -> {load1[0]:.2f}"
    )
    print(f"{'':10s} {'n':>7s} {'rtt p50':>9s} {'rtt p99':>9s} {'srv p50':>9s} {'srv p99':>9s}  (ms)")
    print(
        f"{'all':10s} {len(allr):7d} {out['rtt_p50_ms']:9.3f} {out['rtt_p99_ms']:9.3f} "
        f"{out['server_p50_ms']:9.3f} {out['server_p99_ms']:9.3f}"
    )
    for name, r in per_round.items():
        by = ", ".join(f"{k} {v:.0%}" for k, v in r["answered_by"].items())
        print(
            f"{name:10s} {r['n']:7d} {r['rtt_p50']:9.3f} {r['rtt_p99']:9.3f} {r['server_p50']:9.3f} {r['server_p99']:9.3f}"
            f"  max {r['server_max']:.1f}; {by}"
        )
    return out


def inprocess(args) -> dict:
    """CPU time of one blueprint answer without HTTP (responder.answer), per round: the part of
    a query's cost that does not depend on the load of the machine."""
    from blueprint.blueprint import Blueprint
    from mccfr.serving.responders import BlueprintResponder

    responder = BlueprintResponder(Blueprint.load(args.run_dir))
    responder.warm_up()
    game = responder.game
    g = game.gamedef
    pool = self_play_states(
        game, args.pool, args.seed, lambda ms: responder.answer(ms)["strategy"]
    )  # as in `latency`
    names = ["preflop", "flop", "turn", "river"]
    out = {}
    for rd in range(g.num_rounds):
        sub = [ms for ms in pool if game.state(ms).round == rd]
        if not sub:
            continue
        t = time.process_time()
        for _ in range(args.repeat):
            for ms in sub:
                responder.answer(ms)
        cpu = (time.process_time() - t) / (args.repeat * len(sub)) * 1e3
        out[names[rd] if rd < 4 else str(rd)] = {"states": len(sub), "cpu_ms_per_answer": cpu}
        print(f"{names[rd]:8s} {len(sub):6d} states: {cpu:.3f} ms of CPU per answer")
    return {"per_round": out}


# -- ACPC matches ----------------------------------------------------------------------------------
def one_match(args, game: Game, vs: str, seed: int, mccfr_seat: int, tmp: Path) -> dict:
    names = ["mccfr", vs] if mccfr_seat == 0 else [vs, "mccfr"]
    dealer = AcpcDealer(
        game,
        args.hands,
        seed=seed,
        names=tuple(names),
        limits=DealerLimits(start_timeout_s=600),
        log_path=tmp / f"dealer-{vs}-{mccfr_seat}.log",
    ).start()
    opp = PlayerResponder(player_from_spec(vs, game), game, seed=seed + 7)
    log = tmp / f"play-{vs}-{mccfr_seat}.jsonl"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        mccfr_command()
        + [
            "play",
            args.run_dir,
            "--dealer",
            f"127.0.0.1:{dealer.ports[mccfr_seat]}",
            "--log",
            str(log),
            "--seed",
            str(seed),
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    opp_rep = {}

    def run_opp() -> None:
        # the opponent connects second when mccfr is seat 0 (the dealer accepts seat 0 first)
        opp_rep["r"] = AcpcClient(opp, seed=seed + 7).play("127.0.0.1", dealer.ports[1 - mccfr_seat])

    th = threading.Thread(target=run_opp)
    th.start()
    out, err = proc.communicate(timeout=3600)
    th.join()
    res = dealer.join(60)
    wall = time.perf_counter() - t0
    lines = [x for x in out.strip().splitlines() if x.startswith("{")]
    rep = json.loads(lines[-1]) if lines else {"error": err[-2000:]}
    return {
        "vs": vs,
        "mccfr_seat": mccfr_seat,
        "seed": seed,
        "wall_s": wall,
        "client": rep,
        "client_exit": proc.returncode,
        "dealer_error": res.error,
        "dealer_hands": res.hands,
        "dealer_total": res.totals[mccfr_seat],
        "hand_values": [v[mccfr_seat] for v in res.hand_values],
        "invalid_actions": res.invalid_actions[mccfr_seat],
        "ignored": res.ignored_responses[mccfr_seat],
        "dealer_max_response_ms": res.max_response_ms[mccfr_seat],
        "used_ms": res.used_ms[mccfr_seat],
        "opponent_ended": opp_rep["r"].ended,
        "log": str(log),
    }


def acpc(args) -> dict:
    game = run_game(args.run_dir)
    bb = game.gamedef.big_blind
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-acpc-") as d:
        tmp = Path(args.log_dir) if args.log_dir else Path(d)
        tmp.mkdir(parents=True, exist_ok=True)
        for vs in args.vs.split(","):
            seats = (0, 1) if args.duplicate else (0,)
            ms = [one_match(args, game, vs, args.seed, s, tmp) for s in seats]
            for m in ms:
                c = m["client"]
                ok = (
                    m["dealer_error"] is None
                    and m["client_exit"] == 0
                    and m["invalid_actions"] == 0
                    and m["ignored"] == 0
                    and c.get("hands") == args.hands
                    and c.get("net") == m["dealer_total"]
                )
                m["ok"] = ok
                print(
                    f"mccfr (seat {m['mccfr_seat']}) vs {vs}: {c.get('hands')} hands in {m['wall_s']:.0f} s, "
                    f"{c.get('mean', float('nan')):+.0f} +- {c.get('ci95') or float('nan'):.0f} mbb/hand; "
                    f"protocol ok {ok}; dealer error {m['dealer_error']}; invalid {m['invalid_actions']}; "
                    f"fallbacks {c.get('fallbacks')} {c.get('fallback_reasons')}; "
                    f"max response {m['dealer_max_response_ms']:.1f} ms (dealer's clock), "
                    f"{m['used_ms'] / 1e3 / max(1, m['dealer_hands']):.4f} s/hand of the 7 s allowed"
                )
            row = {"vs": vs, "matches": ms}
            if args.duplicate and all(m["dealer_hands"] == args.hands for m in ms):
                pairs = (np.asarray(ms[0]["hand_values"]) + np.asarray(ms[1]["hand_values"])) / 2
                mean = chips_to_mbb(float(pairs.mean()), bb)
                ci = chips_to_mbb(ci95(pairs), bb)
                row.update(duplicate_mean=mean, duplicate_ci95=ci)
                print(f"  duplicate over {len(pairs)} hand pairs: {mean:+.0f} +- {ci:.0f} mbb/hand")
            for m in ms:
                del m["hand_values"]
            results.append(row)
    return {"hands": args.hands, "results": results}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("latency")
    a.add_argument("run_dir")
    a.add_argument("--clients", type=int, default=10)
    a.add_argument("--seconds", type=float, default=30)
    a.add_argument("--pool", type=int, default=2000)
    a.add_argument("--seed", type=int, default=0)
    a.add_argument(
        "--solve",
        default=None,
        metavar="METHOD",
        help="serve with subgame solving of the last round (mccfr serve --solve METHOD)",
    )
    a.add_argument(
        "--solve-from",
        default=None,
        metavar="ROUND",
        help="with --solve: the first round solved (mccfr serve --solve-from ROUND)",
    )
    a.add_argument("--max-solve-ms", type=int, default=None, help="with --solve: mccfr serve --max-solve-ms")
    a.add_argument(
        "--think-ms",
        type=float,
        default=0,
        help="each client waits this long on average (exponential) after every answer, as a client "
        "in a match does while the opponent acts (default 0: closed loop, as fast as answered)",
    )
    a.add_argument(
        "--solver-in-threads",
        action="store_true",
        help="with --solve: mccfr serve --solver-in-threads (default: solver processes)",
    )
    a.add_argument(
        "--budget-ms",
        type=int,
        default=None,
        help="every query's time_budget_ms (default: none sent, the server's default of 2,000)",
    )
    c = sub.add_parser("inprocess")
    c.add_argument("run_dir")
    c.add_argument("--pool", type=int, default=2000)
    c.add_argument("--repeat", type=int, default=3)
    c.add_argument("--seed", type=int, default=0)
    b = sub.add_parser("acpc")
    b.add_argument("run_dir")
    b.add_argument("--hands", type=int, default=1000)
    b.add_argument("--vs", default="always-call,random")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--duplicate", action="store_true")
    b.add_argument("--log-dir", default=None)
    args = ap.parse_args()
    out = {"latency": latency, "inprocess": inprocess, "acpc": acpc}[args.cmd](args)
    out.update(machine_row())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
