"""The cost of Pluribus-style search (:mod:`subgame.multiway`) on a run's blueprint: searches at
decisions of self-play hands (the blueprint's own), per round, at a fixed iteration count or
within a time budget; iterations per second and the seconds a decision takes (p50, p99), and how
often the searched strategy's likeliest action differs from the blueprint's.

    python scripts/benchmarks/bench_search_n.py RUN [--iterations 1000] [--seconds S] [--states 20]
        [--continuations 4] [--seed 0] [--json]

Prints one JSON row per round, then a table. The first search compiles (or loads) the kernels
and is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.blueprint import Blueprint  # noqa: E402
from blueprint.player import self_play_states  # noqa: E402
from subgame.multiway import MultiwaySearch, SearchConfig  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a run directory")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=None, help="a time budget per search instead")
    ap.add_argument("--states", type=int, default=20, help="decisions per round")
    ap.add_argument("--continuations", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="only the JSON rows")
    args = ap.parse_args()
    t = time.perf_counter()
    bp = Blueprint.load(args.run)
    load_s = time.perf_counter() - t
    g = bp.gamedef
    config = SearchConfig(
        iterations=None if args.seconds else args.iterations,
        seconds=args.seconds,
        continuations=args.continuations,
        from_round=min(1, g.num_rounds - 1),
    )
    ms = MultiwaySearch(bp, config)
    by_round: dict[int, list[str]] = {}
    want = args.states * (g.num_rounds - config.from_round)
    pool = self_play_states(bp.game, max(200, 20 * want), args.seed, bp.strategy)
    for m in pool:
        r = bp.game.state(m).round
        if r >= config.from_round and len(by_round.setdefault(r, [])) < args.states:
            by_round[r].append(m)
    warm = next(iter(by_round.values()))[0]
    t = time.perf_counter()
    ms.answer(warm)
    compile_s = time.perf_counter() - t
    rows = []
    for r in sorted(by_round):
        secs, its, differ = [], [], 0
        for m in by_round[r]:
            a = ms.answer(m)
            secs.append(a.seconds)
            its.append(a.iterations)
            b = bp.strategy(m)
            differ += max(a.strategy, key=a.strategy.__getitem__) != max(b, key=b.__getitem__)
        s = np.array(secs)
        rows.append(
            {
                "what": "search_n",
                "game": g.name,
                "seats": g.num_players,
                "round": r,
                "states": len(secs),
                "iterations_mean": float(np.mean(its)),
                "iterations_per_s": float(np.sum(its) / s.sum()),
                "p50_s": float(np.percentile(s, 50)),
                "p99_s": float(np.percentile(s, 99)),
                "argmax_differs": differ,
                "continuations": args.continuations,
                "load_s": round(load_s, 1),
                "compile_s": round(compile_s, 1),
                "load": round(os.getloadavg()[0], 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    if args.json:
        return
    print()
    for row in rows:
        print(
            f"round {row['round']}: {row['states']} decisions, {row['iterations_mean']:.0f} iterations, "
            f"{row['iterations_per_s']:,.0f} it/s, p50 {row['p50_s']:.3f} s, p99 {row['p99_s']:.3f} s, "
            f"likeliest action unlike the blueprint's in {row['argmax_differs']}"
        )


if __name__ == "__main__":
    main()
