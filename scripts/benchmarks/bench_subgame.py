"""Speed of the range-vectorized subgame solver on the two public Libratus endgames.

The tree is the speed tree of postflop-solver's examples: bets of 0.5, 1 and 2 pots and all-in;
raises to 2.5x and all-in (``abstraction/bets/subgame.toml``). Each endgame is solved with DCFR
(``--threads`` threads walk the boards of a chance node: default numba's count; the river has no
chance node) until the exploitability is at most ``--target`` percent of the starting pot
(checked at iteration ``--check`` and then at most every ``--check`` iterations, the checks' cost
included in the time), then the solve is repeated for a fixed number of iterations to give
iterations/s (wall and CPU) without the checks.

    python scripts/benchmarks/bench_subgame.py [--target 0.5] [--which river,turn] [--threads N] [--repeat N] [--json]

CPU seconds are the process's (every thread's); wall seconds the solve's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from pathlib import Path

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from subgame.libratus import read_libratus
from subgame.solver import solve

FIX = Path(__file__).resolve().parents[2] / "tests" / "data" / "libratus"
FILES = {"river": "subgame4.txt", "turn": "subgame2.txt"}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", type=float, default=0.5)
    ap.add_argument("--which", default="river,turn")
    ap.add_argument("--check", type=int, default=10)
    ap.add_argument("--algo", default="dcfr")
    ap.add_argument("--threads", type=int, default=None, help="default: numba's thread count")
    ap.add_argument("--repeat", type=int, default=1, help="solves to the target (the median CPU is reported)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    # compile the kernels once, outside the timings
    solve(read_libratus(FIX / FILES["river"]), "unsafe", iterations=2)
    rows = []
    for which in args.which.split(","):
        t0 = time.perf_counter()
        sub = read_libratus(FIX / FILES[which])
        tree = sub.public_tree()
        build = time.perf_counter() - t0
        cpus = []
        for _ in range(args.repeat):
            c0 = time.process_time()
            sol = solve(
                sub,
                "unsafe",
                target_pct_pot=args.target,
                check_every=args.check,
                algo=args.algo,
                threads=args.threads,
            )
            cpus.append(time.process_time() - c0)
        cpu = statistics.median(cpus)
        n = max(10, min(sol.iterations, 50))
        t1, c1 = time.perf_counter(), time.process_time()
        solve(sub, "unsafe", iterations=n, algo=args.algo, threads=args.threads)
        its = n / (time.perf_counter() - t1)
        its_cpu = n / (time.process_time() - c1)
        d = sol.diagnostics()
        row = {
            "endgame": which,
            "threads": args.threads,
            "file": FILES[which],
            "nodes": tree.num_nodes,
            "boards": len(tree.boards),
            "build_s": round(build, 2),
            "iterations": sol.iterations,
            "seconds_to_target": round(sol.elapsed_s, 2),
            "cpu_seconds_to_target": round(cpu, 4),
            "exploitability_pct_pot": round(sol.exploitability_pct_pot, 3),
            "iterations_per_s": round(its, 1),
            "iterations_per_cpu_s": round(its_cpu, 1),
            "solver_memory_mb": d["memory_mb"],
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "load_avg_1m": round(os.getloadavg()[0], 2),
        }
        rows.append(row)
        print(
            f"{which:5s} {FILES[which]}: {tree.num_nodes:,} nodes, {len(tree.boards)} boards; "
            f"threads {args.threads}: {sol.iterations} iterations to {sol.exploitability_pct_pot:.3f}% of the pot in {sol.elapsed_s:.2f} s "
            f"({cpu:.3f} s CPU{f', median of {args.repeat}' if args.repeat > 1 else ''}) "
            f"(tree built in {build:.1f} s); {its:.1f} iterations/s ({its_cpu:.1f} per CPU s); solver state {d['memory_mb']:.0f} MB; "
            f"load {row['load_avg_1m']}",
            flush=True,
        )
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
