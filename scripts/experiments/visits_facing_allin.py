"""How often MCCFR updates the information sets that face an all-in after the flop, against the
others of their round: the strategy-sum mass per information set (the reach-weighted visits a seat
got there as the opponent of the traversing seat), by round and by whether the node faces an
all-in (the opponent's commitment is the whole stack).

    python scripts/experiments/visits_facing_allin.py --seconds 60 [--threads 2] [--game hunl100]

LBR wins most of its chips by shoving after the flop (BENCHMARKS.md, "LBR and head-to-head
matches"); external sampling updates a node that faces a shove only when the sampled opponent
shoved, so if the blueprint rarely shoves, its answers to shoves see few updates. This script
measures how few. Prints a table and a final JSON line.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.trainer import make_trainer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--game", default="hunl100")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    tr = make_trainer(a.game, seed=a.seed, threads=a.threads)
    tr.run_for(a.seconds)
    t = tr.tree
    stack = int(tr.game.stack[0]) if hasattr(tr.game, "stack") else int(t.spent.max())
    rows = []
    for rnd in range(int(t.round.max()) + 1):
        for facing in (False, True):
            masses = []
            for n in t.decision_nodes():
                if int(t.round[n]) != rnd:
                    continue
                opp = 1 - int(t.player[n])
                if (int(t.spent[n, opp]) >= stack) != facing:
                    continue
                na, nb = int(t.num_actions[n]), int(tr.num_buckets[rnd])
                block = tr.strat[tr.row_offset[n] : tr.row_offset[n] + nb * na].astype(np.float64)
                masses.append(block.reshape(nb, na).sum(axis=1))
            if not masses:
                continue
            m = np.concatenate(masses)
            rows.append(
                {
                    "round": rnd,
                    "facing_all_in": facing,
                    "nodes": len(masses),
                    "information_sets": int(m.size),
                    "mean_mass": float(m.mean()),
                    "median_mass": float(np.median(m)),
                    "share_below_10": float((m < 10).mean()),
                    "share_zero": float((m == 0).mean()),
                }
            )
    print(f"{a.game}, {tr.iteration:,} iterations ({a.seconds:g} s, {a.threads} thread(s)); stack {stack}")
    print(
        f"{'round':>5s} {'facing all-in':>13s} {'nodes':>6s} {'info sets':>10s} {'mean':>10s} {'median':>10s} {'<10':>6s} {'zero':>6s}"
    )
    for r in rows:
        print(
            f"{r['round']:5d} {str(r['facing_all_in']):>13s} {r['nodes']:6d} {r['information_sets']:10d} "
            f"{r['mean_mass']:10.1f} {r['median_mass']:10.1f} {r['share_below_10']:6.2f} {r['share_zero']:6.2f}"
        )
    print(json.dumps({"game": a.game, "iterations": tr.iteration, "threads": a.threads, "rows": rows}))


if __name__ == "__main__":
    main()
