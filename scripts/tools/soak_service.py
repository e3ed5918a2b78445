"""Soak and load tests of the query service: hours of hands under a memory budget,
and many clients at once.

    python scripts/tools/soak_service.py soak RUN_DIR [--hands 10000] [--clients 10] [--memory-budget 256M]
           [--solve reach-maxmargin] [--solve-from river] [--max-solve-ms 50] [--max-minutes 15]
           [--csv soak.csv] [--png soak.png]
    python scripts/tools/soak_service.py load RUN_DIR [--clients 100] [--seconds 30] [--solve reach-maxmargin]

Both start ``mccfr serve RUN_DIR --port 0`` on 127.0.0.1 in a process of its own (with the flags
given: ``--solve``, ``--memory-budget``, ``--max-solve-ms``, ...) and play hands through it from
asyncio clients in this process, one keep-alive HTTP connection each. The hands come from
self-play of the run's blueprint (loaded here), as in ``scripts/benchmarks/bench_service.py``: each decision
samples the blueprint's strategy, except that a fold is not sampled before the first round the
server solves, so that every hand reaches it (hands with no decision there are skipped). Each hand
is one session per seat (``"<client>-<hand>-s<seat>"``), its decisions sent in order, as an ACPC
client of each seat would.

soak: ``--hands`` hands (shared among ``--clients`` clients, as fast as they are answered), at most
``--max-minutes``; every second the server's resident memory (``VmRSS`` of its process) and its
``/metrics`` (cache bytes and entries, evictions, answers) are sampled into ``--csv`` and plotted
to ``--png`` (matplotlib). It prints whether the resident memory plateaued (its peak over the last
quarter of the run at most 2% or 16 MiB above its peak over the second quarter) and stayed under
the ceiling: the memory budget plus the server's resident memory once it started serving (the
interpreter, the compiled kernels and the blueprint: the blueprint's own arrays are printed too).

load: ``--clients`` concurrent clients (default 100) for ``--seconds``; reports every status (no
5xx expected), dropped connections (a reset or an early close; none expected), and the client
round trip (p50 / p99 / max, from sending the request to reading the whole answer) overall, for
the queries the server may solve, and per round, with the answers by source and fallback.

Each prints a summary and a final JSON line (with the command, the date, the load average).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import sys
import time

import numpy as np

from mccfr.serving.launch import start_server
from mccfr_util.reporting import percentile

ROUNDS = ("preflop", "flop", "turn", "river")


def rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` (Linux: VmRSS in /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def server_flags(args) -> list[str]:
    out = []
    for flag, v in (
        ("--solve", args.solve),
        ("--solve-from", args.solve_from),
        ("--memory-budget", args.memory_budget),
        ("--max-solve-ms", args.max_solve_ms),
        ("--solver-threads", args.solver_threads),
        ("--time-budget-ms", args.time_budget_ms),
        ("--max-inflight-per-client", args.max_inflight),
    ):
        if v is not None:
            out += [flag, str(v)]
    return out


# -- hands from self-play ----------------------------------------------------------------------------
def self_play_hands(bp, count: int, seed: int, from_round: int, log_every: float = 10.0) -> list[list[str]]:
    """``count`` hands of blueprint self-play, each the list of its decisions' match states (the
    acting seat's view), every one reaching a decision in round ``from_round`` or later: no fold is
    sampled before that round."""
    from blueprint.blueprint import BlueprintError
    from blueprint.player import deal_next, sample

    game = bp.game
    g = game.gamedef
    rng = np.random.default_rng(seed)
    hands: list[list[str]] = []
    tried = 0
    t0 = last = time.perf_counter()
    while len(hands) < count:
        tried += 1
        deck = rng.permutation(g.deck_size)
        state, i = game.initial_state(hand_id=tried), 0
        seq: list[str] = []
        reached = False
        while not state.is_terminal():
            if state.is_chance():
                state, i = deal_next(state, deck, i)
                continue
            ms = state.matchstate(state.current_player())
            try:
                dist = bp.strategy(ms)
            except BlueprintError:
                seq = []
                break
            if state.round < from_round and "f" in dist and len(dist) > 1:
                dist = {a: p for a, p in dist.items() if a != "f"}
                z = sum(dist.values())
                dist = {a: p / z for a, p in dist.items()} if z > 0 else {a: 1 / len(dist) for a in dist}
            reached |= state.round >= from_round
            seq.append(ms)
            state = state.apply(sample(dist, rng))
        if seq and reached:
            hands.append(seq)
        if time.perf_counter() - last > log_every:
            last = time.perf_counter()
            print(f"  self-play: {len(hands):,} / {count:,} hands ({last - t0:.0f} s)", file=sys.stderr)
    return hands


# -- an asyncio HTTP/1.1 client ----------------------------------------------------------------------
class Dropped(Exception):
    """The connection broke (reset, or closed before the whole answer came)."""


class Conn:
    def __init__(self, port: int, api_key: str | None = None):
        self.port = port
        self.reader = self.writer = None
        self.auth = f"Authorization: Bearer {api_key}\r\n" if api_key else ""

    async def _open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except (ConnectionError, OSError):
                pass
            self.writer = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, dict]:
        if self.writer is None:
            await self._open()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"{self.auth}Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        try:
            self.writer.write(head + body)
            await self.writer.drain()
            status_line = await self.reader.readuntil(b"\r\n")
            status = int(status_line.split()[1])
            length, close = 0, False
            while True:
                line = await self.reader.readuntil(b"\r\n")
                if line == b"\r\n":
                    break
                k, _, v = line.decode("latin-1").partition(":")
                k = k.strip().lower()
                if k == "content-length":
                    length = int(v)
                elif k == "connection" and v.strip().lower() == "close":
                    close = True
            data = await self.reader.readexactly(length)
        except (ConnectionError, asyncio.IncompleteReadError, OSError) as exc:
            await self.close()
            raise Dropped(f"{type(exc).__name__}: {exc}") from None
        if close:
            await self.close()
        return status, json.loads(data) if data else {}

    async def post(self, obj: dict) -> tuple[int, dict]:
        return await self.request("POST", "/v1/strategy", json.dumps(obj).encode())


class Stats:
    def __init__(self):
        self.t0 = time.perf_counter()
        self.rows: list[tuple[float, float, int, str]] = []  # (rtt ms, server ms, round, answered by)
        self.slowest: list[
            tuple[float, float, float, int, str, bool]
        ] = []  # (rtt, at s, server ms, round, by, new conn)
        self.status: dict[int, int] = {}
        self.dropped = 0
        self.hands = 0
        self.errors: list[str] = []

    def add(self, status: int, out: dict, rtt_ms: float, rnd: int, fresh: bool = False) -> None:
        self.status[status] = self.status.get(status, 0) + 1
        if status == 200:
            by = out.get("fallback") or out["source"]
            self.rows.append((rtt_ms, out.get("elapsed_ms", float("nan")), rnd, by))
            if len(self.slowest) < 5 or rtt_ms > self.slowest[-1][0]:
                self.slowest.append(
                    (rtt_ms, time.perf_counter() - self.t0, out.get("elapsed_ms"), rnd, by, fresh)
                )
                self.slowest = sorted(self.slowest, reverse=True)[:5]
        elif len(self.errors) < 10:
            self.errors.append(f"{status}: {out}")


async def play_hand(
    conn: Conn, hand: list[str], tag: str, rounds: dict[str, int], stats: Stats, budget_ms: int | None
) -> None:
    for ms in hand:
        seat = ms.split(":", 2)[1]
        body = {"matchstate": ms, "session": f"{tag}-s{seat}"}
        if budget_ms is not None:
            body["time_budget_ms"] = budget_ms
        t = time.perf_counter()
        fresh = conn.writer is None
        try:
            status, out = await conn.post(body)
        except Dropped as exc:
            stats.dropped += 1
            if len(stats.errors) < 10:
                stats.errors.append(f"dropped: {exc}")
            continue
        stats.add(status, out, (time.perf_counter() - t) * 1e3, rounds[ms], fresh)
    stats.hands += 1


def round_of(game, hands: list[list[str]]) -> dict[str, int]:
    return {ms: game.state(ms).round for h in hands for ms in h}


def summarize(stats: Stats, from_round: int) -> dict:
    rows = stats.rows
    rtt = [r[0] for r in rows]
    solvable = [r[0] for r in rows if r[2] >= from_round]
    by: dict[str, int] = {}
    for r in rows:
        by[r[3]] = by.get(r[3], 0) + 1
    per_round = {}
    for rd in sorted({r[2] for r in rows}):
        sub = [r for r in rows if r[2] == rd]
        kinds: dict[str, int] = {}
        for r in sub:
            kinds[r[3]] = kinds.get(r[3], 0) + 1
        per_round[ROUNDS[rd] if rd < 4 else str(rd)] = {
            "n": len(sub),
            "rtt_p50_ms": percentile([r[0] for r in sub], 0.5),
            "rtt_p99_ms": percentile([r[0] for r in sub], 0.99),
            "rtt_max_ms": max(r[0] for r in sub),
            "server_p99_ms": percentile([r[1] for r in sub], 0.99),
            "server_max_ms": max(r[1] for r in sub),
            "answered_by": kinds,
        }
    return {
        "answers": len(rows),
        "hands": stats.hands,
        "status": {str(k): v for k, v in sorted(stats.status.items())},
        "5xx": sum(v for k, v in stats.status.items() if k >= 500),
        "dropped": stats.dropped,
        "rtt_p50_ms": percentile(rtt, 0.5),
        "rtt_p99_ms": percentile(rtt, 0.99),
        "rtt_max_ms": max(rtt) if rtt else None,
        "solvable_n": len(solvable),
        "solvable_rtt_p50_ms": percentile(solvable, 0.5),
        "solvable_rtt_p99_ms": percentile(solvable, 0.99),
        "solvable_rtt_max_ms": max(solvable) if solvable else None,
        "answered_by": by,
        "per_round": per_round,
        "errors": stats.errors,
        "slowest": [
            {
                "rtt_ms": round(r[0], 1),
                "at_s": round(r[1], 2),
                "server_ms": r[2],
                "round": r[3],
                "by": r[4],
                "new_connection": r[5],
            }
            for r in stats.slowest
        ],
    }


def load_blueprint(run_dir: str):
    from blueprint.blueprint import Blueprint

    return Blueprint.load(run_dir)


def first_solved_round(args, game) -> int:
    if args.solve is None:
        return game.gamedef.num_rounds
    if args.solve_from is None:
        return game.gamedef.num_rounds - 1
    return ROUNDS.index(args.solve_from) if args.solve_from in ROUNDS else int(args.solve_from)


# -- load ----------------------------------------------------------------------------------------------
def load(args) -> dict:
    bp = load_blueprint(args.run_dir)
    from_round = first_solved_round(args, bp.game)
    t = time.perf_counter()
    hands = self_play_hands(bp, args.pool, args.seed, min(from_round, bp.game.gamedef.num_rounds - 1))
    print(f"{len(hands):,} self-play hands in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    rounds = round_of(bp.game, hands)
    del bp
    proc, port = start_server(args.run_dir, server_flags(args), args.server_root)
    stats = Stats()
    try:
        load0 = os.getloadavg()

        connect_ms: list[float] = []

        async def connect(k: int) -> Conn:
            conn = Conn(port, args.api_key)
            t = time.perf_counter()
            await conn._open()
            connect_ms.append((time.perf_counter() - t) * 1e3)
            return conn

        async def client(conn: Conn, k: int, stop: float) -> None:
            rng = np.random.default_rng(args.seed + 1 + k)
            i = 0
            while time.perf_counter() < stop:
                await play_hand(
                    conn,
                    hands[int(rng.integers(len(hands)))],
                    f"c{k}-{i}",
                    rounds,
                    stats,
                    args.request_budget_ms,
                )
                i += 1
            await conn.close()

        async def main() -> tuple[float, dict]:
            conns = await asyncio.gather(
                *(connect(k) for k in range(args.clients))
            )  # keep-alive, opened first
            stats.t0 = t0 = time.perf_counter()
            stop = t0 + args.seconds
            await asyncio.gather(*(client(c, k, stop) for k, c in enumerate(conns)))
            wall = time.perf_counter() - t0
            c = Conn(port, args.api_key)
            _, m = await c.request("GET", "/metrics")
            await c.close()
            return wall, m

        wall, metrics = asyncio.run(main())
        load1 = os.getloadavg()
        rss = rss_bytes(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)
    out = summarize(stats, from_round)
    out.update(connect_p50_ms=percentile(connect_ms, 0.5), connect_max_ms=max(connect_ms))
    out.update(
        clients=args.clients,
        seconds=wall,
        qps=out["answers"] / wall,
        loadavg_before=load0,
        loadavg_after=load1,
        server_rss_mb=rss / 2**20,
        server_metrics={
            k: metrics.get(k)
            for k in (
                "responses",
                "answers",
                "fallbacks",
                "errors",
                "latency_ms",
                "memory",
                "solver",
                "event_loop",
            )
        },
    )
    print(
        f"{out['answers']:,} answers to {args.clients} clients in {wall:.1f} s ({out['qps']:.0f}/s); statuses "
        f"{out['status']}; 5xx {out['5xx']}; dropped connections {out['dropped']}; "
        f"load average {load0[0]:.2f} -> {load1[0]:.2f}; {args.clients} connections opened first (connect p50 "
        f"{out['connect_p50_ms']:.1f} ms, max {out['connect_max_ms']:.1f} ms), then kept alive"
    )
    print(
        f"round trip: p50 {out['rtt_p50_ms']:.1f} ms, p99 {out['rtt_p99_ms']:.1f} ms, max {out['rtt_max_ms']:.1f} ms; "
        f"queries the server may solve ({out['solvable_n']:,}): p50 {out['solvable_rtt_p50_ms']:.1f}, "
        f"p99 {out['solvable_rtt_p99_ms']:.1f}, max {out['solvable_rtt_max_ms'] or float('nan'):.1f} ms"
    )
    for name, r in out["per_round"].items():
        by = ", ".join(f"{k} {v}" for k, v in sorted(r["answered_by"].items()))
        print(
            f"  {name:8s} {r['n']:7,d}  rtt p50 {r['rtt_p50_ms']:8.1f}  p99 {r['rtt_p99_ms']:8.1f}  "
            f"max {r['rtt_max_ms']:8.1f} ms  server max {r['server_max_ms']:8.1f} ms; {by}"
        )
    print(
        f"  server: event loop {out['server_metrics'].get('event_loop')}; solver {out['server_metrics'].get('solver')}"
    )
    print(
        "  slowest:",
        "; ".join(
            f"{r['rtt_ms']:.0f} ms at {r['at_s']:.1f} s (server {r['server_ms']:.0f} ms, "
            f"{ROUNDS[r['round']]}, {r['by']}{', new connection' if r['new_connection'] else ''})"
            for r in out["slowest"]
        ),
    )
    for e in out["errors"][:5]:
        print("  e.g.", e[:300])
    return out


# -- soak ------------------------------------------------------------------------------------------------
def soak(args) -> dict:
    from subgame.cache import nbytes

    bp = load_blueprint(args.run_dir)
    bp_bytes = nbytes(bp, python=False)
    from_round = first_solved_round(args, bp.game)
    t = time.perf_counter()
    hands = self_play_hands(bp, args.hands, args.seed, min(from_round, bp.game.gamedef.num_rounds - 1))
    print(
        f"{len(hands):,} self-play hands ({sum(map(len, hands)):,} decisions) in {time.perf_counter() - t:.1f} s; "
        f"blueprint arrays {bp_bytes / 2**20:.1f} MiB",
        file=sys.stderr,
    )
    rounds = round_of(bp.game, hands)
    del bp
    proc, port = start_server(args.run_dir, server_flags(args))
    stats = Stats()
    samples: list[dict] = []
    try:
        rss0 = rss_bytes(proc.pid)
        load0 = os.getloadavg()
        t_end = time.perf_counter() + args.max_minutes * 60

        async def main() -> tuple[float, bool]:
            t0 = time.perf_counter()
            next_hand = 0
            done = asyncio.Event()

            async def client(k: int) -> None:
                nonlocal next_hand
                conn = Conn(port, args.api_key)
                while next_hand < len(hands) and time.perf_counter() < t_end:
                    i = next_hand
                    next_hand += 1
                    await play_hand(conn, hands[i], f"h{i}", rounds, stats, args.request_budget_ms)
                await conn.close()

            async def sampler() -> None:
                mc = Conn(port, args.api_key)
                while not done.is_set():
                    try:
                        _, m = await mc.request("GET", "/metrics")
                    except Dropped:
                        m = {}
                    mem = m.get("memory") or {}
                    samples.append(
                        {
                            "t_s": round(time.perf_counter() - t0, 2),
                            "rss_mb": rss_bytes(proc.pid) / 2**20,
                            "hands": stats.hands,
                            "answers": len(stats.rows),
                            "solved": (m.get("answers") or {}).get("subgame", 0),
                            "cache_mb": mem.get("cache_bytes", 0) / 2**20,
                            "cache_entries": mem.get("cache_entries", 0),
                            "evictions": mem.get("evictions", 0),
                            "budget_mb": mem.get("budget_bytes", 0) / 2**20,
                            "loadavg": os.getloadavg()[0],
                        }
                    )
                    if len(samples) % 30 == 0:
                        s = samples[-1]
                        print(
                            f"  {s['t_s']:6.0f} s: {s['hands']:,} hands, RSS {s['rss_mb']:.0f} MiB, cache "
                            f"{s['cache_mb']:.0f} MiB in {s['cache_entries']} sessions, {s['evictions']:,} "
                            f"evictions, {s['solved']:,} solved; load {s['loadavg']:.1f}",
                            file=sys.stderr,
                        )
                    try:
                        await asyncio.wait_for(done.wait(), 1.0)
                    except (asyncio.TimeoutError, TimeoutError):
                        pass
                await mc.close()

            samp = asyncio.create_task(sampler())
            await asyncio.gather(*(client(k) for k in range(args.clients)))
            done.set()
            await samp
            return time.perf_counter() - t0, next_hand >= len(hands)

        wall, finished = asyncio.run(main())
        load1 = os.getloadavg()
        c = Conn(port, args.api_key)
        metrics = asyncio.run(c.request("GET", "/metrics"))[1]
    finally:
        proc.terminate()
        proc.wait(30)
    out = summarize(stats, from_round)
    budget = (metrics.get("memory") or {}).get("budget_bytes")
    rss = [s["rss_mb"] for s in samples]
    n = len(rss)
    q2 = max(rss[n // 4 : n // 2] or rss)
    q4 = max(rss[3 * n // 4 :] or rss)
    plateau = q4 <= q2 + max(16.0, 0.02 * q2)
    rest = [s["rss_mb"] - s["cache_mb"] for s in samples]  # what is not the cache: should stay flat
    rest_growth = max(rest[n // 2 :] or rest) - max(rest[: n // 2] or rest)
    ceiling = rss0 / 2**20 + (budget or 0) / 2**20
    under = max(rss) <= ceiling
    out.update(
        seconds=wall,
        finished=finished,
        hands_reached=stats.hands,
        hands_planned=len(hands),
        rss_start_mb=rss0 / 2**20,
        rss_max_mb=max(rss),
        rss_end_mb=rss[-1],
        rss_q2_max_mb=q2,
        rss_q4_max_mb=q4,
        budget_mb=(budget or 0) / 2**20,
        ceiling_mb=ceiling,
        blueprint_arrays_mb=bp_bytes / 2**20,
        plateaued=plateau,
        under_ceiling=under,
        rss_less_cache_start_mb=rest[0],
        rss_less_cache_max_mb=max(rest),
        rss_less_cache_growth_second_half_mb=rest_growth,
        loadavg_before=load0,
        loadavg_after=load1,
        server_memory=metrics.get("memory"),
        server_solver=metrics.get("solver"),
        server_fallbacks=metrics.get("fallbacks"),
        csv=args.csv,
        png=args.png,
    )
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(samples[0]))
        w.writeheader()
        w.writerows(samples)
    plot(samples, args.png, ceiling, rss0 / 2**20, out)
    print(
        f"{stats.hands:,} of {len(hands):,} hands in {wall / 60:.1f} min ({'all' if finished else 'stopped at the time cap'}); "
        f"{out['answers']:,} answers, statuses {out['status']}, dropped {out['dropped']}; answered by {out['answered_by']}"
    )
    print(
        f"server RSS: {rss0 / 2**20:.0f} MiB serving, max {max(rss):.0f}, end {rss[-1]:.0f} MiB; memory budget "
        f"{out['budget_mb']:.0f} MiB, ceiling (budget + RSS serving) {ceiling:.0f} MiB; blueprint arrays "
        f"{bp_bytes / 2**20:.1f} MiB; cache at the end {out['server_memory']['cache_bytes'] / 2**20:.0f} MiB in "
        f"{out['server_memory']['cache_entries']} sessions, {out['server_memory']['evictions']:,} evictions"
    )
    print(f"server solver: {out['server_solver']}; fallbacks {out['server_fallbacks']}")
    print(
        f"RSS plateaued: {'yes' if plateau else 'NO'} (peak in the last quarter {q4:.0f} MiB vs second quarter "
        f"{q2:.0f} MiB); under the ceiling: {'yes' if under else 'NO'}; RSS less the cache: {rest[0]:.0f} MiB at "
        f"the start, max {max(rest):.0f}, second half vs first half {rest_growth:+.0f} MiB"
    )
    print(
        f"round trip p50 {out['rtt_p50_ms']:.1f} ms, p99 {out['rtt_p99_ms']:.1f} ms, max {out['rtt_max_ms']:.1f} ms; "
        f"csv {args.csv}, plot {args.png}"
    )
    return out


def plot(samples: list[dict], path: str, ceiling: float, start: float, out: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s["t_s"] / 60 for s in samples]
    fig, ax = plt.subplots(figsize=(9, 5))
    ax.plot(t, [s["rss_mb"] for s in samples], label="server RSS")
    ax.plot(t, [s["cache_mb"] for s in samples], label="cached subgames (/metrics)")
    ax.plot(t, [s["rss_mb"] - s["cache_mb"] for s in samples], label="RSS less the cache", alpha=0.7)
    ax.axhline(ceiling, color="red", linestyle="--", label=f"memory budget + RSS serving ({ceiling:.0f} MiB)")
    ax.axhline(start, color="gray", linestyle=":", label=f"RSS serving at start ({start:.0f} MiB)")
    ax.set_xlabel("minutes")
    ax.set_ylabel("MiB")
    ax2 = ax.twinx()
    ax2.plot(t, [s["hands"] for s in samples], color="green", alpha=0.4, label="hands played")
    ax2.set_ylabel("hands")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="center right", fontsize=8)
    ax.set_title(
        f"mccfr serve soak: {out['hands_reached']:,} hands, {out['answered_by'].get('subgame', 0):,} "
        f"subgame answers, {out['server_memory']['evictions']:,} evictions"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("soak", "load"):
        a = sub.add_parser(name)
        a.add_argument("run_dir")
        a.add_argument(
            "--solve", default="reach-maxmargin", help="mccfr serve --solve METHOD ('none': blueprint only)"
        )
        a.add_argument("--solve-from", default=None, help="mccfr serve --solve-from ROUND")
        a.add_argument(
            "--memory-budget", default="256M" if name == "soak" else None, help="mccfr serve --memory-budget"
        )
        a.add_argument(
            "--max-solve-ms",
            type=int,
            default=50 if name == "soak" else None,
            help="mccfr serve --max-solve-ms (soak default 50: more solves in the time)",
        )
        a.add_argument("--solver-threads", type=int, default=None)
        a.add_argument("--time-budget-ms", type=int, default=None, help="mccfr serve --time-budget-ms")
        a.add_argument(
            "--request-budget-ms", type=int, default=None, help="time_budget_ms sent with each query"
        )
        a.add_argument("--max-inflight", type=int, default=None, help="mccfr serve --max-inflight-per-client")
        a.add_argument("--api-key", default=os.environ.get("MCCFR_API_KEY"))
        a.add_argument("--seed", type=int, default=0)
        a.add_argument("--clients", type=int, default=10 if name == "soak" else 100)
        if name == "soak":
            a.add_argument("--hands", type=int, default=10_000)
            a.add_argument("--max-minutes", type=float, default=15.0)
            a.add_argument("--csv", default="soak_service.csv")
            a.add_argument("--png", default="soak_service.png")
        else:
            a.add_argument("--seconds", type=float, default=30.0)
            a.add_argument("--pool", type=int, default=2000, help="self-play hands the clients draw from")
            a.add_argument(
                "--server-root",
                default=None,
                help="run the server from the code in this directory (e.g. an unpacked git archive "
                "of an older revision: give it only flags that revision knows)",
            )
    args = ap.parse_args()
    if args.solve == "none":
        args.solve = None
        args.memory_budget = args.max_solve_ms = None
    out = {"soak": soak, "load": load}[args.cmd](args)
    out.update(
        command=" ".join(sys.argv),
        date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        cpus=os.cpu_count(),
    )
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
