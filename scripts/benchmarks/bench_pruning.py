"""Regret-based pruning on the main job: how much each pruning threshold prunes and saves.

    python scripts/benchmarks/bench_pruning.py [--thresholds none,4,16,64,256,1024] [--seconds 40]

For each threshold (``none``: no pruning; a number ``K``: ``prune_threshold_pots = -K``,
``floor_pots = -1.25 K``; the presets' is 64, floor 80), trains the main job (hunl100, `small` bets, `fine` cards, `dcfr` with the
timed default's 1.5 / 0.75 / 2, one thread, seed 1, the warm-up at its 20,000 iterations) for about
``--seconds`` and prints one JSON line: iterations, node visits per iteration (the work pruning
saves; independent of the machine's load), and the share of actions pruned at the nodes visited
in the last 100,000 iterations. Strength at equal wall-clock time is measured apart: two
``mccfr train --time 180 --threads 1`` runs at once, with and without ``--no-prune``, then
``scripts/benchmarks/bench_aivat.py match`` between them (BENCHMARKS.md, "Training speed").
"""

from __future__ import annotations

import argparse
import json
import time

from mccfr_util.numba_cache import configure

configure()

from blueprint.trainer import make_trainer  # noqa: E402

CHUNK = 100_000


def run(threshold: str, seconds: float) -> dict:
    over: dict = dict(alpha=1.5, beta=0.75, gamma=2.0)
    if threshold == "none":
        over["prune"] = False
    else:
        k = float(threshold)
        over.update(prune_threshold_pots=-k, floor_pots=-1.25 * k)
    tr = make_trainer("hunl100", bets="small", cards="fine", algo="dcfr", seed=1, **over)
    tr.run(1_000)  # compiles the kernels
    start, t0, share = tr.node_visits, time.perf_counter(), 0.0
    while time.perf_counter() - t0 < seconds:
        v, p = tr.node_visits, tr.pruned
        tr.run(CHUNK)
        share = (tr.pruned - p) / max(1, tr.node_visits - v)
    its = tr.iteration - 1_000
    return {
        "threshold": threshold,
        "iterations": its,
        "seconds": round(time.perf_counter() - t0, 1),
        "visits_per_iteration": round((tr.node_visits - start) / its, 2),
        "pruned_share_last": round(share, 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--thresholds", default="none,4,16,64,256,1024")
    ap.add_argument("--seconds", type=float, default=40.0)
    args = ap.parse_args()
    for t in args.thresholds.split(","):
        print(json.dumps(run(t.strip(), args.seconds)), flush=True)


if __name__ == "__main__":
    main()
