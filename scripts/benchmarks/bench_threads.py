"""Threads on one table: throughput at 1..N threads side by side, and what threads cost per iteration.

    python scripts/benchmarks/bench_threads.py speed --threads 1,2,4,8,16 --window 20 --rounds 3
    python scripts/benchmarks/bench_threads.py leduc --threads 16 --seeds 8 --iterations 2000,10000,50000,200000
    python scripts/benchmarks/bench_threads.py exact --game small-deck --threads 2 --seeds 8 --iterations 20000,100000,500000
    python scripts/benchmarks/bench_threads.py distance --reference-seconds 60 --seconds 7.4 --seeds 6
    python scripts/benchmarks/bench_threads.py pairs --pairs 7 --seconds 20
    python scripts/benchmarks/bench_threads.py tables --threads 2 --window 5 --rounds 8

speed: the main job (``make_trainer()``: hunl100, small bets, fine card abstraction, pluribus;
``--cards small`` for another abstraction; ``--algo dcfr`` for barriers every 1,000 iterations),
one trainer per thread count in one process, each warmed up past the pruning warm-up
(``--warmup`` iterations), then ``--rounds`` rounds of one ``--window``-second window per thread
count in turn, so every count sees the same machine load; per count the best round's iterations/s
and node visits/s (wall clock), and the speed-up and per-thread efficiency against one thread.
Node visits/s is the figure to compare: a faster run is further into training, where an iteration
visits more nodes.

leduc (``exact --game leduc``): exploitability (chips) of the average strategy at the same
iteration counts with 1 thread and with T, over ``--seeds`` seeds each: mean, 95% interval
(Student t over seeds) and the difference T - 1 with its 95% interval (Welch). Threads do the same
iterations, each on its own RNG stream, on one table (or on copies, if the table is big enough for
them: :mod:`blueprint.threads`); the difference shows what the threads cost per iteration.
``exact --game small-deck``: the same on the three-round small-deck limit game
(:func:`holdem.gamedef.small_deck_game`, ``--ranks`` ranks; one bucket per suit class pre-flop,
``--buckets`` E[HS^2] buckets on the flop and the turn, built once into the temporary folder), whose
exploitability :mod:`blueprint.vector_cfr` computes exactly (in the real game).

distance: the main job's game, where exact exploitability is out of reach: how far each run's
average strategy is from a long one-thread reference run's (``--reference-seconds``), at equal
training time (``--seconds``: iterations at each arm's measured rate) over ``--seeds`` seeds: one
thread, T threads on copies (the default on this table), T threads on the one shared table
(``--reference-threads`` for a reference of several threads, to stay ahead of many-thread arms). Two
distances: the mean absolute difference per first-round table entry, and over every entry weighted
by the reference's strategy sums (where the play goes). A proxy, not exploitability: it says which
arm is further along the same road in the same time.

pairs: the default main job as users run it, ``mccfr train --game hunl100 --time S --threads T
--json --out DIR`` (a process each, the default ``dcfr``), one thread then ``--threads`` threads,
``--pairs`` times (the order alternating). Per pair two ratios: iterations/s at equal time (the runs'
final counts), node visits/s (the runs' totals over their seconds), and at equal work, the one-thread run's seconds over the seconds the T-thread run
took to reach the one-thread run's final iteration count (interpolated in its ``metrics.jsonl``):
a node visit per iteration grows as the strategy trains, so equal time understates the faster run.

tables: whether threads lose to sharing the one table. Per round, four windows of ``--window``
seconds: ONE trainer (the default ``dcfr`` main job, warmed up ``--warmup`` iterations) on 1 thread
then on T threads (``--algo``; the same trainer: a trainer's node visits/s grows as it trains, so separate
trainers per thread count, as in ``speed``, favour the one that trained further), then a second
trainer alone, then it with T - 1 more trainers on tables of their own, each in its own thread
(Python threads: the kernel releases the GIL). Per round the two ratios of node visits/s, T over 1;
their medians.

Each command prints a table and a final JSON line. Run it on an idle machine: with other work on
the cores, the thread counts compete with it.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

import harness

# two-sided 95% Student t quantiles by degrees of freedom (larger: the normal's 1.96)
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
_T95.update({10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042})


def t95(df: float) -> float:
    keys = sorted(k for k in _T95 if k <= df)
    return _T95[keys[-1]] if keys and df < 60 else 1.96


def machine() -> str:
    from blueprint.threads import available_cores

    return f"{available_cores()} usable of {harness.machine()}"


def cmd_speed(
    threads: list[int], window: float, rounds: int, warmup: int, game: str, algo: str, cards: str | None
) -> dict:
    from blueprint.trainer import make_trainer

    trainers = {}
    for t in threads:
        tr = make_trainer(game, algo=algo, threads=t, cards=cards)
        tr.run(warmup)
        trainers[t] = tr
    rates: dict[int, list[tuple[float, float]]] = {t: [] for t in threads}
    for _ in range(rounds):
        for t, tr in trainers.items():
            it0, v0, t0 = tr.iteration, tr.node_visits, time.perf_counter()
            tr.run_for(window)
            dt = time.perf_counter() - t0
            rates[t].append(((tr.iteration - it0) / dt, (tr.node_visits - v0) / dt))
    base = max(v for _, v in rates[threads[0]])
    rows = []
    for t in threads:
        ips, vps = max(rates[t], key=lambda r: r[1])
        rows.append(
            {
                "threads": t,
                "iterations_per_s": ips,
                "node_visits_per_s": vps,
                "speedup": vps / base,
                "efficiency": vps / base / (t / threads[0]),
                "iterations": trainers[t].iteration,
                "all_node_visits_per_s": [v for _, v in rates[t]],
            }
        )
    print(
        f"{game} {algo} {trainers[threads[0]].cards.name} cards, {rounds} rounds of {window:g} s per thread count, best round ({machine()})"
    )
    print(f"{'threads':>8s}{'iterations/s':>15s}{'node visits/s':>16s}{'speed-up':>10s}{'per thread':>12s}")
    for r in rows:
        print(
            f"{r['threads']:8d}{r['iterations_per_s']:15,.0f}{r['node_visits_per_s']:16,.0f}"
            f"{r['speedup']:10.2f}{r['efficiency']:12.2f}"
        )
    return {
        "machine": machine(),
        "game": game,
        "algo": algo,
        "cards": trainers[threads[0]].cards.name,
        "window_s": window,
        "rounds": rounds,
        "rows": rows,
    }


def _mean_ci(xs: list[float]) -> tuple[float, float, float]:
    n = len(xs)
    m = sum(xs) / n
    var = sum((x - m) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    return m, var, t95(n - 1) * math.sqrt(var / n)


@functools.lru_cache(maxsize=None)
def _small_deck(ranks: int, buckets: int):
    """The small-deck game, its card abstraction (one bucket per suit class pre-flop, ``buckets``
    E[HS^2] percentiles on the flop and the turn, built once into the temporary folder) and the
    exact evaluator on its tree: built once per process, shared by every seed and thread count."""
    import tempfile
    from pathlib import Path

    from abstraction.buckets import build_buckets
    from abstraction.cards import from_file
    from abstraction.isomorphism import HandIndexer
    from abstraction.tree import build_tree
    from blueprint.vector_cfr import VectorCFR
    from holdem.gamedef import small_deck_game

    gd = small_deck_game(ranks)
    where = Path(tempfile.gettempdir()) / f"mccfr-bench-{gd.name}-ehs2-{buckets}"
    if not (where / "abstraction.bin").exists():
        sizes = (HandIndexer.for_game(gd).size(0), buckets, buckets)
        build_buckets(gd, sizes, "ehs2", where, progress=False, log=lambda m: None)
    cards = from_file(gd, where)
    return gd, where, cards, VectorCFR(build_tree(gd), cards)


def _exact_trainer(game: str, algo: str, seed: int, threads: int, ranks: int, buckets: int):
    """A trainer for ``game`` (leduc, small-deck) and a function of it: its exact exploitability."""
    from blueprint.trainer import make_trainer

    if game == "leduc":
        tr = make_trainer("leduc", algo=algo, seed=seed, threads=threads)
        return tr, lambda t: float(t.exploitability()[0])
    from abstraction.tree import KIND_DECISION
    from blueprint.defaults import run_config
    from blueprint.trainer import Trainer

    gd, where, cards, exact = _small_deck(ranks, buckets)
    tr = Trainer(run_config(gd.name, gd, cards=str(where), algo=algo, seed=seed), cards)
    tr.set_threads(threads)
    dec = tr.tree.kind == KIND_DECISION
    if not (exact.size == tr.size and (exact.row_offset[dec] == tr.row_offset[dec]).all()):
        raise SystemExit("the exact evaluator's table layout differs from the trainer's")
    return tr, lambda t: float(exact.exploitability(t.average_strategy())[0])


def cmd_exact(
    threads: int,
    seeds: int,
    iterations: list[int],
    algo: str,
    game: str = "leduc",
    ranks: int = 5,
    buckets: int = 50,
) -> dict:
    expl: dict[int, dict[int, list[float]]] = {t: {n: [] for n in iterations} for t in (1, threads)}
    size = 0
    for t in (1, threads):
        for seed in range(seeds):
            tr, exploitability = _exact_trainer(game, algo, seed, t, ranks, buckets)
            size = tr.size
            for n in iterations:
                tr.run(n - tr.iteration)
                expl[t][n].append(exploitability(tr))
    rows = []
    for n in iterations:
        m1, v1, c1 = _mean_ci(expl[1][n])
        mt, vt, ct = _mean_ci(expl[threads][n])
        se = math.sqrt(v1 / seeds + vt / seeds)
        df = se**4 / ((v1 / seeds) ** 2 / (seeds - 1) + (vt / seeds) ** 2 / (seeds - 1)) if se > 0 else 1e9
        rows.append(
            {
                "iterations": n,
                "one_thread": m1,
                "one_thread_ci95": c1,
                "threads": mt,
                "threads_ci95": ct,
                "difference": mt - m1,
                "difference_ci95": t95(df) * se,
            }
        )
    name = (
        "Leduc"
        if game == "leduc"
        else f"small deck ({ranks} ranks, {buckets} buckets, {size:,} table entries)"
    )
    print(f"{name} {algo}: exploitability (chips) over {seeds} seeds, mean +- 95% interval ({machine()})")
    print(f"{'iterations':>11s}{'1 thread':>20s}{f'{threads} threads':>20s}{'difference':>22s}")
    for r in rows:
        print(
            f"{r['iterations']:11,d}{r['one_thread']:12.4f} +-{r['one_thread_ci95']:.4f}"
            f"{r['threads']:12.4f} +-{r['threads_ci95']:.4f}{r['difference']:+14.4f} +-{r['difference_ci95']:.4f}"
        )
    return {
        **harness.machine_row(),
        "usable_cores": machine(),
        "game": game if game == "leduc" else f"small-deck {ranks} ranks {buckets} buckets",
        "table_entries": size,
        "algo": algo,
        "seeds": seeds,
        "threads": threads,
        "rows": rows,
    }


def cmd_distance(
    ref_seconds: float, seconds: float, seeds: int, threads: int, game: str, ref_threads: int = 1
) -> dict:
    import numpy as np

    import blueprint.trainer as trainer_mod
    from blueprint.threads import use_copies
    from blueprint.trainer import make_trainer

    ref = make_trainer(game, seed=1_000_000, threads=ref_threads)
    ref.run_for(ref_seconds)
    distance = harness.ReferenceDistance(ref)

    def by_table(entries, nbytes, hot_span=None, threads=None):  # copies at any thread count
        return use_copies(entries, nbytes, hot_span)

    arms = [("1 thread", 1, use_copies), (f"{threads} threads, copies", threads, by_table)]
    arms.append((f"{threads} threads, shared table", threads, lambda *args, **kw: False))
    rows = []
    for name, th, copies in arms:
        trainer_mod.use_copies = copies
        try:
            probe = make_trainer(game, seed=999, threads=th)  # this arm's rate, past the warm-up
            probe.run(30_000)
            i0, t0 = probe.iteration, time.perf_counter()
            probe.run_for(min(5.0, seconds))
            rate = (probe.iteration - i0) / (time.perf_counter() - t0)
            n = int(rate * seconds)
            d_first, d_all = [], []
            for seed in range(seeds):
                tr = make_trainer(game, seed=seed, threads=th)
                tr.run(n)
                d1, d2 = distance(tr)
                d_first.append(d1)
                d_all.append(d2)
        finally:
            trainer_mod.use_copies = use_copies
        df, da = np.array(d_first), np.array(d_all)
        h = t95(seeds - 1) / np.sqrt(seeds)
        rows.append(
            {
                "arm": name,
                "iterations": n,
                "first_round": float(df.mean()),
                "first_round_ci95": float(h * df.std(ddof=1)),
                "weighted": float(da.mean()),
                "weighted_ci95": float(h * da.std(ddof=1)),
            }
        )
    print(
        f"{game}: distance to a {ref.iteration:,}-iteration reference after {seconds:g} s of training, "
        f"{seeds} seeds, mean +- 95% interval ({machine()})"
    )
    print(f"{'arm':>26s}{'iterations':>12s}{'first round':>22s}{'weighted, all':>22s}")
    for r in rows:
        print(
            f"{r['arm']:>26s}{r['iterations']:12,d}{r['first_round']:14.5f} +-{r['first_round_ci95']:.5f}"
            f"{r['weighted']:14.5f} +-{r['weighted_ci95']:.5f}"
        )
    return {
        **harness.machine_row(),
        "game": game,
        "reference_iterations": ref.iteration,
        "reference_threads": ref_threads,
        "rows": rows,
    }


def _train(threads: int, seconds: float, out: Path) -> tuple[int, float, list[tuple[int, float]], float]:
    """One ``mccfr train`` process: its final iteration count and seconds, its metrics' points and
    its node visits per second."""
    cmd = [sys.executable, "-m", "mccfr", "train", "--game", "hunl100", "--time", f"{seconds:g}"]
    cmd += ["--threads", str(threads), "--json", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    last = json.loads(done.stdout.strip().splitlines()[-1])
    points = [(0, 0.0)]
    for line in (out / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        points.append((row["iteration"], row["seconds"]))
    return last["iterations"], last["seconds"], points, last["node_visits_per_second"]


def _seconds_to(points: list[tuple[int, float]], iterations: int) -> float | None:
    """The seconds a run's metrics put at ``iterations`` (linear between points; None past its end)."""
    import numpy as np

    its, secs = zip(*points)
    return float(np.interp(iterations, its, secs)) if iterations <= its[-1] else None


def cmd_pairs(pairs: int, seconds: float, threads: int) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(pairs):
            order = (1, threads) if k % 2 == 0 else (threads, 1)
            runs = {t: _train(t, seconds, Path(tmp) / f"p{k}t{t}") for t in order}
            (n1, s1, _, v1), (nt, st, points, vt) = runs[1], runs[threads]
            reach = _seconds_to(points, n1)
            rows.append(
                {
                    "first": order[0],
                    "iterations_per_s": {"1": n1 / s1, str(threads): nt / st},
                    "equal_time": (nt / st) / (n1 / s1),
                    "equal_work": s1 / reach if reach else None,
                    "node_visits": vt / v1,
                    "load": round(os.getloadavg()[0], 2),
                }
            )
            print(
                f"pair {k + 1} ({order[0]} thread{'s' if order[0] > 1 else ''} first): 1 thread {n1 / s1:,.0f} it/s, "
                f"{threads} threads {nt / st:,.0f} it/s; equal time {rows[-1]['equal_time']:.2f}x, "
                f"node visits/s {rows[-1]['node_visits']:.2f}x, "
                f"equal work " + (f"{rows[-1]['equal_work']:.2f}x" if reach else "not reached"),
                flush=True,
            )
    work = [r["equal_work"] for r in rows if r["equal_work"]]
    res = {
        "machine": machine(),
        "threads": threads,
        "seconds": seconds,
        "pairs": rows,
        "median_equal_time": statistics.median(r["equal_time"] for r in rows),
        "median_equal_work": statistics.median(work) if work else None,
        "median_node_visits": statistics.median(r["node_visits"] for r in rows),
    }
    print(
        f"median over {pairs} pairs: equal time {res['median_equal_time']:.2f}x, "
        f"node visits/s {res['median_node_visits']:.2f}x, equal work "
        + (f"{res['median_equal_work']:.2f}x" if work else "-")
    )
    return res


def cmd_tables(threads: int, window: float, rounds: int, warmup: int, algo: str) -> dict:
    import threading

    from blueprint.algo import dcfr_overrides
    from blueprint.defaults import SHORT_BUDGET_DCFR_PARAMS
    from blueprint.trainer import make_trainer

    # dcfr: the main job's parameters (mccfr train --time S)
    kw = dcfr_overrides(SHORT_BUDGET_DCFR_PARAMS) if algo == "dcfr" else {}
    shared, *alone = [make_trainer(algo=algo, seed=1 + k, **kw) for k in range(threads + 1)]
    for tr in (shared, *alone):
        tr.run(warmup)

    def rate(trainers) -> float:
        v0, t0 = sum(t.node_visits for t in trainers), time.perf_counter()
        ths = [threading.Thread(target=t.run_for, args=(window,)) for t in trainers]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        return (sum(t.node_visits for t in trainers) - v0) / (time.perf_counter() - t0)

    out = []
    print(f"{shared.config.algo}, {rounds} rounds of four {window:g} s windows ({machine()})")
    for r in range(rounds):
        shared.set_threads(1)
        one = rate([shared])
        shared.set_threads(threads)
        many = rate([shared])
        base = rate(alone[:1])
        apart = rate(alone)
        out.append({"shared": many / one, "apart": apart / base, "one_thread": one})
        print(
            f"round {r + 1}: one table {many / one:.2f}x, {threads} tables {apart / base:.2f}x ({one:,.0f} node visits/s)"
        )
    med = {k: statistics.median(o[k] for o in out) for k in ("shared", "apart")}
    print(f"medians: one table {med['shared']:.3f}x, {threads} tables {med['apart']:.3f}x")
    return {
        "machine": machine(),
        "algo": algo,
        "threads": threads,
        "window_s": window,
        "rounds": out,
        "median": med,
    }


def _ints(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected whole numbers >= 1, got {text!r}")
    return values


def main(argv: list[str] | None = None) -> None:
    from blueprint.threads import available_cores

    cores = available_cores()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("speed", help="iterations/s and node visits/s at each thread count")
    sp.add_argument("--threads", type=_ints, default=sorted({1, 2, *range(4, cores + 1, 4), cores}))
    sp.add_argument("--window", type=float, default=20.0, help="seconds per window")
    sp.add_argument("--rounds", type=int, default=3)
    sp.add_argument("--warmup", type=int, default=30_000, help="iterations before measuring")
    sp.add_argument("--game", default="hunl100")
    sp.add_argument(
        "--algo", default="pluribus", help="dcfr and linear discount every 1,000 iterations all along"
    )
    sp.add_argument("--cards", default=None, help="card abstraction (default: the main job's)")
    for cmd in ("leduc", "exact"):
        lp = sub.add_parser(
            cmd, help="exact exploitability per iteration (Leduc or a small deck), T threads against 1"
        )
        lp.add_argument("--threads", type=int, default=cores)
        lp.add_argument("--seeds", type=int, default=8)
        lp.add_argument("--iterations", type=_ints, default=[2_000, 10_000, 50_000, 200_000])
        lp.add_argument("--algo", default="pluribus")
        if cmd == "exact":
            lp.add_argument("--game", choices=("leduc", "small-deck"), default="leduc")
            lp.add_argument("--ranks", type=int, default=5, help="small-deck: ranks (4 suits)")
            lp.add_argument("--buckets", type=int, default=50, help="small-deck: flop and turn buckets")
        else:
            lp.set_defaults(game="leduc", ranks=5, buckets=50)
    dp = sub.add_parser("distance", help="distance to a long reference at equal time, 1 vs T threads")
    dp.add_argument("--reference-seconds", type=float, default=60.0)
    dp.add_argument("--seconds", type=float, default=7.5, help="training time of every run")
    dp.add_argument("--seeds", type=int, default=6)
    dp.add_argument("--threads", type=int, default=cores)
    dp.add_argument("--game", default="hunl100")
    dp.add_argument("--reference-threads", type=int, default=1, help="threads of the reference run")
    pp = sub.add_parser("pairs", help="mccfr train processes, 1 thread against T, equal time and equal work")
    pp.add_argument("--pairs", type=int, default=7)
    pp.add_argument("--seconds", type=float, default=20.0, help="--time of every run")
    pp.add_argument("--threads", type=int, default=cores)
    tp = sub.add_parser("tables", help="T threads on one table against T trainers on T tables")
    tp.add_argument("--threads", type=int, default=cores)
    tp.add_argument("--window", type=float, default=5.0, help="seconds per window")
    tp.add_argument("--rounds", type=int, default=8)
    tp.add_argument("--warmup", type=int, default=300_000, help="iterations before measuring")
    tp.add_argument(
        "--algo",
        choices=("dcfr", "pluribus", "linear", "vanilla"),
        default="dcfr",
        help="dcfr: with the main job's (1.5, 0.75, 2)",
    )
    args = ap.parse_args(argv)
    if args.cmd == "tables":
        if not 2 <= args.threads <= cores or args.rounds < 1 or args.window <= 0 or args.warmup < 0:
            ap.error(
                f"tables needs --threads from 2 to {cores}, --rounds >= 1, --window > 0 and --warmup >= 0"
            )
        res = cmd_tables(args.threads, args.window, args.rounds, args.warmup, args.algo)
    elif args.cmd == "pairs":
        if not 2 <= args.threads <= cores or args.pairs < 1:
            ap.error(f"pairs needs --threads from 2 to {cores} and --pairs >= 1")
        res = cmd_pairs(args.pairs, args.seconds, args.threads)
    elif args.cmd == "distance":
        if not 2 <= args.threads <= cores or args.seeds < 2:
            ap.error(f"distance needs --threads from 2 to {cores} and --seeds >= 2")
        res = cmd_distance(
            args.reference_seconds, args.seconds, args.seeds, args.threads, args.game, args.reference_threads
        )
    elif args.cmd == "speed":
        if max(args.threads) > cores:
            ap.error(f"--threads {max(args.threads)}: this process may use {cores} cores")
        res = cmd_speed(
            sorted(set(args.threads)), args.window, args.rounds, args.warmup, args.game, args.algo, args.cards
        )
    else:
        if not 2 <= args.threads <= cores or args.seeds < 2:
            ap.error(f"{args.cmd} needs --threads from 2 to {cores} and --seeds >= 2")
        if not 3 <= args.ranks <= 13 or args.buckets < 1:
            ap.error(f"--ranks {args.ranks} (from 3 to 13) or --buckets {args.buckets} (at least 1)")
        res = cmd_exact(
            args.threads,
            args.seeds,
            sorted(set(args.iterations)),
            args.algo,
            args.game,
            args.ranks,
            args.buckets,
        )
    print(json.dumps(res))


if __name__ == "__main__":
    main()
