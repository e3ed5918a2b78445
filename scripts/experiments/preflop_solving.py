"""Depth-limited solving from pre-flop: how the later deals' sample changes the answer, what a
solve costs, and whether the solved root decision is less exploitable than the blueprint's.

    python scripts/experiments/preflop_solving.py RUN_DIR [--state MATCHSTATE ...] [--leaf deals:32,1,1 --leaf cards:5 ...]
        [--seeds 4] [--iterations 30] [--method reach-maxmargin] [--check-deals 256,1,1] [--json OUT]

For each state (default: the 4-bet the abstraction lacks, a dead end, and an off-tree open to 700,
nested) and each way of dealing the later cards (``deals:F,T,R``: sampled runouts,
:attr:`subgame.depth.DepthLimit.leaf_deals`; ``cards:N``: a fixed sample of N cards, ``leaf_cards``),
the state is solved with ``--seeds`` different samples. Per setting:

* the construction and solve seconds and the iterations;
* **agreement between samples**: the mean over pairs of seeds of the range-weighted mean total
  variation distance between the solved root strategies (0: every sample gives the same answer; 1:
  disjoint answers);
* **out of sample**: on an independent, larger sample of runouts (``--check-deals``, another seed)
  the opponent best-responds to the solving seat's strategy (its continuation chosen per hand at the
  leaves); the same with the root decision replaced by the blueprint's answer there (the fallback at
  a dead end, the translation at an off-tree open; the rest of the tree as solved). In % of the pot;
  lower is better for the solving seat.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import statistics
import time
from pathlib import Path

import numpy as np
from flop_solving import opponent_br_pct

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.blueprint import Blueprint
from holdem.betting import CALL, FOLD
from subgame.depth import DepthLimit
from subgame.nested import decision_state, solve_state, state_subgame
from subgame.tree import all_hands

STATES = ("MATCHSTATE:0:0:r300r900r2700:AhKd|", "MATCHSTATE:0:0:r700:AhKd|")


def depth_limit(bp, spec: str, seed: int) -> DepthLimit:
    kind, _, val = spec.partition(":")
    if kind == "deals":
        return DepthLimit(bp, leaf_deals=tuple(int(x) for x in val.split(",")), seed=seed)
    if kind == "cards":
        return DepthLimit(bp, samples=4, leaf_cards=int(val), seed=seed)
    raise SystemExit(f"--leaf {spec!r}: expected deals:F,T,R or cards:N")


def root_rows(sub, strategy: np.ndarray) -> np.ndarray:
    """The root rows of ``strategy`` (full width: [actions, H])."""
    t = sub.public_tree()
    r0, A = int(t.row[0]), int(t.num_actions[0])
    return np.asarray(strategy[r0 : r0 + A], np.float64)


def blueprint_root(bp, state, sub) -> np.ndarray:
    """The blueprint's answer at the root for every hand of the seat to act, on the subgame's root
    actions (a raise to its nearest raise of the tree by amount)."""
    t = sub.public_tree()
    s, A = int(t.child_start[0]), int(t.num_actions[0])
    kinds = [int(k) for k in t.edge_kind[s : s + A]]
    tos = [int(x) for x in t.edge_to[s : s + A]]
    hands = all_hands(bp.gamedef)
    out = np.zeros((A, len(hands)))
    board = set(int(c) for c in state.board_cards)
    for h, hand in enumerate(hands):
        if board & set(int(c) for c in hand):
            continue
        hole = list(state.hole_cards)
        hole[state.viewer] = tuple(int(c) for c in hand)
        st = dataclasses.replace(state, hole_cards=(hole[0], hole[1]))
        for key, p in bp.answer(st).strategy.items():
            if key == "f":
                a = kinds.index(FOLD)
            elif key == "c":
                a = kinds.index(CALL)
            else:
                x = int(key[1:])
                a = min((j for j in range(A) if tos[j]), key=lambda j: abs(tos[j] - x))
            out[a, h] += p
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--state", action="append", default=None)
    ap.add_argument("--leaf", action="append", default=None)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--method", default="reach-maxmargin")
    ap.add_argument("--check-deals", default="256,1,1")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    bp = Blueprint.load(a.run_dir)
    leaves = a.leaf or ["cards:5", "cards:6", "deals:16,1,1", "deals:32,1,1", "deals:64,1,1"]
    rows = []
    print(
        "| state | leaves | seeds | build + solve s (median) | iterations | reported % pot (median) | "
        "samples' disagreement (TV) | opp. BR vs solved, % pot | vs blueprint's root | solved - blueprint |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for ms in a.state or STATES:
        state = decision_state(bp, ms)
        check = state_subgame(bp, state, None, True, depth_limit(bp, f"deals:{a.check_deals}", 1000))
        me = state.viewer
        bp_root = None
        for spec in leaves:
            roots, secs, its, rep, br_sol, br_bp = [], [], [], [], [], []
            w = None
            for seed in range(a.seeds):
                t0 = time.perf_counter()
                sol, _ = solve_state(
                    bp,
                    state,
                    a.method,
                    time_budget=None,
                    iterations=a.iterations,
                    depth_limit=depth_limit(bp, spec, seed),
                )
                secs.append(time.perf_counter() - t0)
                its.append(sol.iterations)
                rep.append(sol.exploitability_pct_pot)
                sub = sol.subgame
                w = sub.ranges[me] / sub.ranges[me].sum()
                roots.append(root_rows(sub, sol.strategy))
                if check.public_tree().num_rows != sub.public_tree().num_rows:
                    raise SystemExit("the check's tree differs from the solved one")
                sig = np.asarray(sol.strategy).copy()
                br_sol.append(opponent_br_pct(check, sig))
                if bp_root is None:
                    bp_root = blueprint_root(bp, state, sub)
                t = sub.public_tree()
                r0 = int(t.row[0])
                sig[r0 : r0 + bp_root.shape[0]] = bp_root
                br_bp.append(opponent_br_pct(check, sig))
            tv = [float(w @ (0.5 * np.abs(x - y).sum(0))) for x, y in itertools.combinations(roots, 2)]
            diff = [s - b for s, b in zip(br_sol, br_bp)]
            row = {
                "state": ms,
                "leaves": spec,
                "seconds": secs,
                "iterations": its,
                "reported_pct_pot": rep,
                "disagreement_tv": statistics.fmean(tv) if tv else None,
                "opp_br_vs_solved_pct": br_sol,
                "opp_br_vs_blueprint_root_pct": br_bp,
            }
            rows.append(row)
            print(
                f"| `{ms}` | {spec} | {a.seeds} | {statistics.median(secs):.2f} | {statistics.median(its)} | "
                f"{statistics.median(rep):.2f} | {row['disagreement_tv'] or 0:.3f} | "
                f"{statistics.fmean(br_sol):.2f} | {statistics.fmean(br_bp):.2f} | "
                f"{statistics.fmean(diff):+.2f} |",
                flush=True,
            )
    if a.json:
        Path(a.json).write_text(json.dumps({"args": vars(a), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
