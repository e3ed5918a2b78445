"""LBR against a blueprint blended with the uniform strategy: does play closer to uniform lose less
to LBR? One test of why bigger, less-trained tables measure lower (BENCHMARKS.md, "Abstraction
ladder"): if mixing a well-trained blueprint with uniform play lowers LBR, LBR rewards
unconverged play, and a rung's lower LBR need not mean a better abstraction.

    python scripts/experiments/lbr_blend.py RUN --eps 0,0.1,0.3 --where allin --hands 2000 --seeds 1,2,3

``--where all``: every decision; ``allin``: only the decisions facing an all-in (fold or call);
``postflop``: every decision after the first round. At those nodes each bucket's strategy becomes
``(1 - eps) * sigma + eps * uniform``. Every blend plays the same deals (LBR ``fcpa``, menu in every
round; a seed deals the same cards whatever the strategy), so each is paired with ``eps`` 0 deal by
deal. Prints per eps the LBR (mbb/game, 95% interval) and the paired change, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.blueprint import Blueprint
from mccfr.evaluation.lbr import LocalBestResponse
from mccfr_util.reporting import chips_to_mbb, ci95


def blend_nodes(bp: Blueprint, where: str) -> list[int]:
    t = bp.tree
    nodes = []
    stack = min(bp.gamedef.stack)
    for n in t.decision_nodes():
        n = int(n)
        if where == "all":
            nodes.append(n)
        elif where == "postflop":
            if int(t.round[n]) > 0:
                nodes.append(n)
        elif where == "allin":
            e = int(t.parent_edge[n])
            if e >= 0 and int(t.edge_kind[e]) == 2 and int(t.edge_to[e]) >= stack:
                nodes.append(n)
        else:
            raise SystemExit(f"--where must be all, postflop or allin, got {where!r}")
    return nodes


def blended(bp: Blueprint, base: np.ndarray, nodes: list[int], eps: float) -> np.ndarray:
    out = base.copy()
    t = bp.tree
    for n in nodes:
        na = int(t.num_actions[n])
        nb = int(bp.num_buckets[t.round[n]])
        s = int(bp.row_offset[n])
        out[s : s + nb * na] = (1.0 - eps) * base[s : s + nb * na] + eps / na
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir")
    ap.add_argument("--eps", default="0,0.1,0.3", help="blend weights of the uniform strategy (0 first)")
    ap.add_argument("--where", default="all", choices=["all", "postflop", "allin"])
    ap.add_argument("--hands", type=int, default=2000, help="LBR hands per seed (each deal from both seats)")
    ap.add_argument("--seeds", default="1")
    a = ap.parse_args(argv)
    eps = [float(x) for x in a.eps.split(",")]
    if not eps or eps[0] != 0.0 or any(not 0.0 <= e <= 1.0 for e in eps):
        ap.error("--eps: weights in [0, 1], the first 0")
    seeds = [int(x) for x in a.seeds.split(",")]
    bp = Blueprint.load(a.run_dir)
    base = np.asarray(bp.probs, np.float64).copy()
    nodes = blend_nodes(bp, a.where)
    bb = bp.gamedef.big_blind
    values: dict[float, list[np.ndarray]] = {e: [] for e in eps}
    t0 = time.perf_counter()
    for e in eps:
        bp.probs = blended(bp, base, nodes, e)
        lbr = LocalBestResponse(bp.game, bp, menu="fcpa", preflop="menu")
        for seed in seeds:
            res = lbr.run(a.hands, seed=seed)
            values[e].append(chips_to_mbb(res.per_pair, bb))
    rows = []
    v0 = np.concatenate(values[0.0])
    print(
        f"{a.run_dir}: {len(nodes):,} decision nodes blended ({a.where}), {len(v0):,} deals, seeds {a.seeds}"
    )
    for e in eps:
        v = np.concatenate(values[e])
        d = v - v0
        rows.append(
            {
                "eps": e,
                "lbr": float(v.mean()),
                "ci95": ci95(v),
                "paired": float(d.mean()),
                "paired_ci95": ci95(d),
            }
        )
        print(
            f"eps {e:5.2f}: LBR {v.mean():+8.0f} +- {ci95(v):4.0f}   paired vs 0: {d.mean():+7.0f} +- {ci95(d):4.0f}"
        )
    print(
        json.dumps(
            {
                "run": a.run_dir,
                "where": a.where,
                "nodes": len(nodes),
                "deals": len(v0),
                "seeds": seeds,
                "hands_per_seed": a.hands,
                "seconds": time.perf_counter() - t0,
                "rows": rows,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
