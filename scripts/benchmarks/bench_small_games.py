"""Known values on Kuhn and Leduc, through the production kernels.

    python scripts/benchmarks/bench_small_games.py

* Kuhn: full-traversal CFR+ and external-sampling MCCFR (``pluribus`` preset): exploitability
  and the first seat's value against the known -1/18.
* Leduc: external-sampling MCCFR until the exact exploitability is <= 0.01 chips (checked every
  100,000 iterations), iterations and kernel seconds; and our exploitability of that strategy
  against ``pyspiel.exploitability`` of the same strategy on OpenSpiel's ``universal_poker``
  Leduc (loaded from the same game definition).
Prints a table and a JSON line.
"""

from __future__ import annotations

import json
import time

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.best_response import expected_value
from blueprint.trainer import make_trainer
from mccfr.evaluation.oracle import openspiel_exploitability


def main() -> dict:
    res = {}
    for algo, iters in (("cfr+", 3000), ("pluribus", 2_000_000)):
        tr = make_trainer("kuhn", algo=algo, seed=0)
        tr.run(iters)
        e = tr.exploitability()[0]
        v = expected_value(tr.tree, tr.cards, tr.row_offset, tr.average_strategy())
        res[f"kuhn_{algo}"] = {
            "iterations": iters,
            "exploitability": e,
            "value": v,
            "value_error": v + 1 / 18,
        }
        print(
            f"kuhn {algo:9s} {iters:>10,d} it  exploitability {e:.6f}  value {v:+.6f} (-1/18 = {-1 / 18:+.6f})"
        )
    tr = make_trainer("leduc", algo="pluribus", seed=0)
    t0 = time.perf_counter()
    while True:
        tr.run(100_000)
        e = tr.exploitability()[0]
        if e <= 0.01 or tr.iteration >= 50_000_000:
            break
    wall = time.perf_counter() - t0
    peer = openspiel_exploitability(tr)
    res["leduc_pluribus"] = {
        "iterations": tr.iteration,
        "exploitability": e,
        "kernel_s": tr.seconds,
        "wall_s_with_checks": wall,
        "openspiel_exploitability": peer,
        "abs_diff": abs(peer - e),
    }
    print(
        f"leduc pluribus {tr.iteration:>10,d} it  exploitability {e:.6f}  kernel {tr.seconds:.1f} s"
        f"  (pyspiel.exploitability of the same strategy: {peer:.6f}, |diff| {abs(peer - e):.1e})"
    )
    return res


if __name__ == "__main__":
    print(json.dumps(main()))
