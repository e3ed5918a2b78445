"""16-bit against 32-bit tables on the main job: node visits per second per core and bytes per entry.

    python scripts/benchmarks/bench_table_bits.py [--seconds 40] [--rounds 4] [--seed 1] [--bets small]
    python scripts/benchmarks/bench_table_bits.py --converge [--iterations 500000] [--seeds 4]

The main job as ``mccfr train --game hunl100 --time 30`` resolves it (hunl100, `small` bets,
`fine` cards, `dcfr` with 1.5 / 0.75 / 2, pruning from 20,000 iterations), on one thread, the
same seed for both widths. Each trainer is warmed up (its kernels compiled or loaded, then 30,000
iterations: past the pruning warm-up), then the two take turns, ``--rounds`` windows of
``--seconds / --rounds`` each, so that a shared machine's load falls on both alike. Prints one
JSON line: per width the iterations, node visits per second (one thread: per core), the table's
bytes per entry (regret, strategy sum and, 16 bits, each row's strategy-sum exponent;
``row_bytes_per_entry`` adds the rows' epochs, 2 bytes per information set, the same for both), the 16-bit run's saturated and underflowed
update counts, and the ratio of node visits per second, 16 over 32. ``--bets standard``: the
same with the `standard` bets (a table past the last-level cache at either width).

``--converge``: exact exploitability at equal iterations, 16 against 32 bits, on Kuhn (pluribus)
and Leduc (pluribus, dcfr), the mean over ``--seeds`` seeds; one JSON line per game and algorithm.
"""

from __future__ import annotations

import argparse
import json
import time

from harness import machine_row

from mccfr_util.numba_cache import configure

configure()

from blueprint.trainer import make_trainer  # noqa: E402

WARM_ITERATIONS = 30_000
CHUNK = 20_000


def trainer(bits: int, seed: int, bets: str):
    tr = make_trainer(
        "hunl100",
        bets=bets,
        cards="fine",
        algo="dcfr",
        seed=seed,
        alpha=1.5,
        beta=0.75,
        gamma=2.0,
        table_bits=bits,
    )
    tr.warm_up()
    tr.run(WARM_ITERATIONS)
    return tr


def window(tr, seconds: float) -> tuple[int, int, float]:
    """Train ``tr`` for about ``seconds``: (iterations, node visits, seconds)."""
    it, vis, t0 = tr.iteration, tr.node_visits, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        tr.run(CHUNK)
    return tr.iteration - it, tr.node_visits - vis, time.perf_counter() - t0


def converge(iterations: int, seeds: int) -> None:
    for game, algo in (("kuhn", "pluribus"), ("leduc", "pluribus"), ("leduc", "dcfr")):
        out: dict = {"bench": "table_bits_converge", "game": game, "algo": algo, "iterations": iterations}
        for bits in (32, 16):
            ex = []
            for seed in range(seeds):
                tr = make_trainer(game, algo=algo, seed=seed, table_bits=bits)
                tr.run(iterations)
                ex.append(tr.exploitability()[0])
            out[f"bits{bits}"] = [round(x, 5) for x in ex]
            out[f"mean{bits}"] = round(float(sum(ex) / len(ex)), 5)
        out["ratio_16_over_32"] = round(out["mean16"] / out["mean32"], 3)
        print(json.dumps(out), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=40.0, help="training seconds per width")
    ap.add_argument("--rounds", type=int, default=4, help="turns each width takes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bets", default="small", help="bet abstraction (small: the main job's)")
    ap.add_argument("--converge", action="store_true", help="exploitability at equal iterations instead")
    ap.add_argument("--iterations", type=int, default=500_000)
    ap.add_argument("--seeds", type=int, default=4)
    args = ap.parse_args()
    if args.converge:
        converge(args.iterations, args.seeds)
        return
    runs = {bits: trainer(bits, args.seed, args.bets) for bits in (32, 16)}
    tot = {bits: [0, 0, 0.0] for bits in runs}
    for r in range(args.rounds):
        for bits in (32, 16) if r % 2 == 0 else (16, 32):
            got = window(runs[bits], args.seconds / args.rounds)
            tot[bits] = [a + b for a, b in zip(tot[bits], got)]
    out: dict = {
        "bench": "table_bits",
        **machine_row(),
        "seconds_per_width": args.seconds,
        "seed": args.seed,
        "bets": args.bets,
    }
    for bits, tr in runs.items():
        its, vis, sec = tot[bits]
        out[f"bits{bits}"] = {
            "iterations": its,
            "seconds": round(sec, 2),
            "iterations_per_second": round(its / sec, 1),
            "node_visits_per_second": round(vis / sec, 1),
            "table_entries": tr.size,
            "bytes_per_entry": round(tr.table_bytes / tr.size, 3),
            "row_bytes_per_entry": round((tr.table_bytes + tr.row_epoch.nbytes) / tr.size, 3),
            "mean_row_width": round(tr.size / tr.num_rows, 3),
            "saturated": tr.saturated,
            "underflowed": tr.underflowed,
        }
    out["visits_per_second_16_over_32"] = round(
        out["bits16"]["node_visits_per_second"] / out["bits32"]["node_visits_per_second"], 3
    )
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
