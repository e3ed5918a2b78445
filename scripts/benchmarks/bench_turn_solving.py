"""Turn (or flop, or river) decisions of a solving responder at a time budget, and what a turn
solve's setup and iterations cost.

    python scripts/benchmarks/bench_turn_solving.py answers RUN_DIR [--states 20] [--seed 7]
        [--round flop|turn|river] [--budget-ms 2000]
    python scripts/benchmarks/bench_turn_solving.py setup RUN_DIR [--states 20] [--seed 7] [--iterations 10]
    python scripts/benchmarks/bench_turn_solving.py samples RUN_DIR [--states 6] [--seed 11] [--iterations 10]

The states: the first turn decision of each of ``--states`` self-play hands of the run's blueprint
(:func:`blueprint.player.self_play_states`, every action sampled from the blueprint); with
``--round``, the first decision of that round.

answers: the responder of ``mccfr serve RUN_DIR --solve reach-maxmargin --solve-from ROUND``
(:func:`mccfr.serving.solving.make_responder`, warmed up as the server warms it), each state asked
once at ``--budget-ms`` (the service's default 2,000), one at a time (the solver idle before
each): how many come from a subgame, the fallbacks, and the latency's p50 / p99 / max (the
answer's ``elapsed_ms``).

setup: each state solved directly (:func:`subgame.nested.solve_state`, ``--iterations``, no budget)
after one untimed solve that compiles the kernels: per state the construction from the blueprint
(:func:`subgame.nested.state_subgame`), the solver's engine (:func:`subgame.solver.subgame_engine`,
the depth-limited leaves' model), the mean iteration and the final check.

samples: river cards a CFR iteration walks (``DepthLimit.samples``) at equal solving time: each
state solved (``reach-maxmargin``) with 4 cards for ``--iterations`` and 3x that, and with 2 cards for
twice each count (about the same time), each then checked exactly over every river card: the
exploitability in % of the pot (the gadget game's, half its gap) and the seconds of iterations;
per pair, the ratio 2 cards / 4 cards (geometric mean over the states).

Each command prints a table and a final JSON line (with the machine's load).
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np
from harness import emit, machine_row

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.blueprint import Blueprint
from blueprint.defaults import DEFAULT_TIME_BUDGET_MS
from blueprint.player import self_play_states
from mccfr_util.reporting import percentile

ROUNDS = {"flop": 1, "turn": 2, "river": 3}


def turn_states(bp: Blueprint, count: int, seed: int, rnd: int = 2) -> list[str]:
    """One decision of round ``rnd`` (the turn) of each of ``count`` self-play hands of ``bp``: the
    round's first in every other hand, the second (after a check or a bet) where there is one in
    the others."""
    size = 40 * count
    while True:
        hands: dict[int, list[str]] = {}
        for ms in self_play_states(bp.game, size, seed, lambda m: bp.strategy(m)):
            s = bp.game.state(ms)
            if s.round == rnd:
                hands.setdefault(s.hand_id, []).append(ms)
        if len(hands) >= count:
            return [h[min(i % 2, len(h) - 1)] for i, h in enumerate(list(hands.values())[:count])]
        size *= 2


def answers(args) -> dict:
    from mccfr.serving.solving import make_responder

    rnd = ROUNDS[args.round]
    r = make_responder(args.run_dir, "reach-maxmargin", args.budget_ms, from_round=rnd)
    bp = r.bp
    pool = turn_states(bp, args.states, args.seed, rnd)
    t = time.perf_counter()
    r.warm_up()
    warm_s = time.perf_counter() - t
    rows = []
    for i, ms in enumerate(pool):
        r._wait_idle()
        t = time.perf_counter()
        ans = r.answer(ms, session=f"bench-{i}")
        wall = (time.perf_counter() - t) * 1e3
        rows.append(
            {
                "matchstate": ms,
                "source": ans["source"],
                "fallback": ans.get("fallback"),
                "elapsed_ms": round(ans["elapsed_ms"], 1),
                "wall_ms": round(wall, 1),
                "iterations": ans.get("iterations"),
                "exploitability_pct_pot": ans.get("exploitability_pct_pot"),
            }
        )
        print(
            f"{i:3d} {ms:60s} {ans['source']:9s} {str(ans.get('fallback') or ''):9s} "
            f"{ans['elapsed_ms']:8.1f} ms  it={ans.get('iterations')}  "
            f"expl={ans.get('exploitability_pct_pot')}",
            flush=True,
        )
    r._wait_idle()
    lat = [x["elapsed_ms"] for x in rows]
    out = {
        **machine_row(),
        "command": "answers",
        "run_dir": args.run_dir,
        "round": args.round,
        "budget_ms": args.budget_ms,
        "states": len(rows),
        "warm_up_s": round(warm_s, 2),
        "subgame": sum(x["source"] == "subgame" for x in rows),
        "fallbacks": {k: sum(x["fallback"] == k for x in rows) for k in {x["fallback"] for x in rows} if k},
        "p50_ms": percentile(lat, 0.5),
        "p99_ms": percentile(lat, 0.99),
        "max_ms": max(lat),
        "iterations_median": float(np.median([x["iterations"] for x in rows if x["iterations"]] or [0])),
        "cost_s": r.metrics()["solver"]["cost_s"],
        "rows": rows,
    }
    r.close()
    print(
        f"subgame {out['subgame']}/{len(rows)}  fallbacks {out['fallbacks']}  p50 {out['p50_ms']:.0f} ms  "
        f"p99 {out['p99_ms']:.0f} ms  max {out['max_ms']:.0f} ms  cost model {out['cost_s']}"
    )
    return out


def setup(args) -> dict:
    from subgame import nested, solver

    spent: dict[str, float] = {}

    def timed(mod, name: str) -> None:
        f = getattr(mod, name)

        @functools.wraps(f)
        def g(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t

        setattr(mod, name, g)

    timed(nested, "state_subgame")
    timed(solver, "subgame_engine")
    bp = Blueprint.load(args.run_dir)
    pool = turn_states(bp, args.states, args.seed)
    nested.solve_state(bp, pool[0], "reach-maxmargin", iterations=2, time_budget=None)  # compiles
    rows = []
    for ms in pool:
        spent.clear()
        t = time.perf_counter()
        sol, _ = nested.solve_state(
            bp, ms, "reach-maxmargin", iterations=args.iterations, time_budget=None, measure_samples=12
        )
        total = time.perf_counter() - t
        construct, engine = spent.get("state_subgame", 0.0), spent.get("subgame_engine", 0.0)
        check = sol.timing.get("measure_s") or 0.0
        it = (total - construct - engine - check) / max(sol.iterations, 1)
        rows.append(
            {"construct_s": construct, "engine_s": engine, "iter_s": it, "check_s": check, "total_s": total}
        )
        print(
            f"{ms:60s} construct {construct:6.3f}  engine {engine:6.3f}  iteration {it:6.3f}  "
            f"check {check:6.3f}  total {total:6.3f} s",
            flush=True,
        )
    med = {k: float(np.median([x[k] for x in rows])) for k in rows[0]}
    out = {
        **machine_row(),
        "command": "setup",
        "run_dir": args.run_dir,
        "states": len(rows),
        "iterations": args.iterations,
        "median": {k: round(v, 4) for k, v in med.items()},
        "setup_median_s": round(float(np.median([x["construct_s"] + x["engine_s"] for x in rows])), 4),
    }
    print(
        f"median: construct {med['construct_s']:.3f}  engine {med['engine_s']:.3f}  "
        f"setup {out['setup_median_s']:.3f}  iteration {med['iter_s']:.3f}  check {med['check_s']:.3f} s"
    )
    return out


def samples(args) -> dict:
    from subgame import nested
    from subgame.depth import DepthLimit

    bp = Blueprint.load(args.run_dir)
    pool = turn_states(bp, args.states, args.seed)
    nested.solve_state(bp, pool[0], "reach-maxmargin", iterations=2, time_budget=None)  # compiles
    n = args.iterations
    plan = ((4, n), (2, 2 * n), (4, 3 * n), (2, 6 * n))
    rows = []
    for ms in pool:
        for cards, its in plan:
            dl = DepthLimit(bp, samples=cards)
            sol, _ = nested.solve_state(
                bp,
                ms,
                "reach-maxmargin",
                iterations=its,
                time_budget=None,
                depth_limit=dl,
                measure_samples=None,
            )
            row = {
                "matchstate": ms,
                "samples": cards,
                "iterations": its,
                "solve_s": sol.timing["iter_s"] * its,
                "exploitability_pct_pot": sol.exploitability_pct_pot,
            }
            rows.append(row)
            print(
                f"{ms:60s} {cards} cards x {its:4d} iterations: {row['solve_s']:6.2f} s  "
                f"{row['exploitability_pct_pot']:7.2f}% of the pot",
                flush=True,
            )
    pairs = {}
    for k in range(2):
        four = [r for r in rows if r["samples"] == 4 and r["iterations"] == plan[2 * k][1]]
        two = [r for r in rows if r["samples"] == 2 and r["iterations"] == plan[2 * k + 1][1]]
        ratio = lambda key: float(np.exp(np.mean([np.log(b[key] / a[key]) for a, b in zip(four, two)])))  # noqa: E731
        pairs[f"{plan[2 * k][1]}x4 against {plan[2 * k + 1][1]}x2"] = {
            "exploitability_4": float(np.median([a["exploitability_pct_pot"] for a in four])),
            "exploitability_2": float(np.median([b["exploitability_pct_pot"] for b in two])),
            "ratio_exploitability": round(ratio("exploitability_pct_pot"), 3),
            "ratio_seconds": round(ratio("solve_s"), 3),
            "two_better": sum(
                b["exploitability_pct_pot"] < a["exploitability_pct_pot"] for a, b in zip(four, two)
            ),
        }
    for name, p in pairs.items():
        print(
            f"{name}: median exploitability {p['exploitability_4']:.1f}% -> {p['exploitability_2']:.1f}% of the pot, "
            f"ratio {p['ratio_exploitability']:.2f} (geometric mean) at {p['ratio_seconds']:.2f}x the seconds; "
            f"2 cards better on {p['two_better']} of {len(pool)} states"
        )
    return {
        **machine_row(),
        "command": "samples",
        "run_dir": args.run_dir,
        "states": len(pool),
        "pairs": pairs,
        "rows": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("answers", "setup", "samples"))
    ap.add_argument("run_dir")
    ap.add_argument("--states", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--round", choices=tuple(ROUNDS), default="turn", help="answers: the round asked")
    ap.add_argument("--budget-ms", type=int, default=DEFAULT_TIME_BUDGET_MS, help="answers: the budget")
    args = ap.parse_args()
    emit({"answers": answers, "setup": setup, "samples": samples}[args.command](args))


if __name__ == "__main__":
    main()
