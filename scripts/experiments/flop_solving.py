"""Depth-limited solving from the flop: what a solve costs, and whether its strategy is less
exploitable than the blueprint's on cards it was not solved on.

    python scripts/experiments/flop_solving.py RUN_DIR [--states 6] [--iterations 50] [--method reach-maxmargin]
        [--check-cards 12] [--leaf-cards 8] [--seed 0] [--json OUT]

Flop decisions from self-play of the run's blueprint (the service benchmark's pool) are solved
with :func:`subgame.nested.solve_state`'s defaults for the flop: depth-limited at the end of the
flop, the turn and the river dealt from a fixed sample of 12 of the cards left
(:data:`subgame.depth.DEFAULT_LEAF_CARDS`; ``--leaf-cards`` another size), the safe gadgets'
values from the depth-limited game.
Per state: the construction's seconds (the blueprint's ranges and values, the tree, the
continuations), seconds per iteration, the exploitability check's seconds, the solver's memory, the
exploitability it reports (the gadget game's, on its own sample: % of the pot) and the margin.

The out-of-sample check: the state is solved again with the blueprint's own bets (so that the
blueprint's strategy and the re-solved one live on one public tree), and that tree is made
depth-limited on an *independent* sample of ``--check-cards`` cards (another seed, every deal
walked). There the opponent best-responds, choosing its continuation per hand at the leaves, to the
solving seat's re-solved strategy and to the blueprint's. Both are in % of the pot; a re-solve
that helps leaves the opponent less (``re-solved - blueprint`` below 0). The mean over the states
is printed with its 95% interval.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.blueprint import Blueprint
from blueprint.player import self_play_states
from subgame import kernels as K
from subgame.bets import bp_bets
from subgame.construct import blueprint_sigma, map_to_blueprint
from subgame.depth import DEFAULT_LEAF_CARDS, FLOP_SAMPLES, DepthLimit
from subgame.nested import solve_state, state_subgame
from subgame.solver import subgame_engine
from subgame.tree import SubgameError


def opponent_br_pct(sub, sigma: np.ndarray) -> float:
    """The opponent's best-response value against the refined seat's rows of the full-width
    ``sigma`` in ``sub`` (its engine; the leaves' best continuation per hand), in % of the pot."""
    e = subgame_engine(sub)
    r = sub.ranges
    o = sub.opponent
    v = e.walk(sigma, r, o, K.MODE_BR)
    z = float(r[o] @ e.compat_mass(r[1 - o]))
    return 100.0 * float(r[o] @ v) / z / sub.pot


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--states", type=int, default=6)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--method", default="reach-maxmargin")
    ap.add_argument("--check-cards", type=int, default=12)
    ap.add_argument("--leaf-cards", type=int, default=DEFAULT_LEAF_CARDS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    bp = Blueprint.load(a.run_dir)
    game = bp.game
    flop = 1
    pool = self_play_states(game, 20 * a.states, a.seed, lambda ms: bp.strategy(ms))
    states = [ms for ms in pool if game.state(ms).round == flop][: a.states]
    print(
        f"{a.method}, {a.iterations} iterations, leaf cards {a.leaf_cards}; check on "
        f"{a.check_cards} other cards\n"
    )
    print(
        "| flop state | construction s | s / iteration | check s | memory MB | reported, % pot | "
        "margin, chips | opp. BR vs blueprint, % pot | vs re-solved | re-solved - blueprint |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows, diffs = [], []
    bets = bp_bets(bp)
    dl = DepthLimit(bp, samples=FLOP_SAMPLES, leaf_cards=a.leaf_cards)  # each solve takes a copy
    for i, ms in enumerate(states):
        st = game.state(ms)
        try:
            t0 = time.perf_counter()
            sol, _ = solve_state(bp, ms, a.method, time_budget=None, iterations=a.iterations, depth_limit=dl)
            total = time.perf_counter() - t0
        except SubgameError as exc:
            print(f"| `{ms}` | skipped: {exc} |||||||||")
            continue
        tm = sol.timing
        construction = total - sol.elapsed_s + tm["tree_s"] + tm["engine_s"]
        # with the blueprint's bets, then that tree's leaves on an independent sample of the cards
        sol_b, _ = solve_state(
            bp, ms, a.method, time_budget=None, iterations=a.iterations, bets=bets, depth_limit=dl
        )
        dl2 = DepthLimit(bp, samples=None, leaf_cards=a.check_cards, seed=1000 + i)
        sub2 = state_subgame(bp, st, bets, True, dl2)
        t2 = sub2.public_tree()
        t1 = sol_b.subgame.public_tree()
        if t2.num_nodes != t1.num_nodes or t2.num_rows != t1.num_rows:
            print(f"| `{ms}` | skipped: the check's tree differs |||||||||")
            continue
        sig_bp = blueprint_sigma(bp, t2, map_to_blueprint(t2, bp, bp.node_of(st)))
        br_bp = opponent_br_pct(sub2, sig_bp)
        br_sol = opponent_br_pct(sub2, np.asarray(sol_b.strategy))
        row = {
            "state": ms,
            "construction_s": construction,
            "iteration_s": tm["iter_s"],
            "check_s": tm.get("measure_s"),
            "memory_mb": sol.state_bytes / 2**20,
            "reported_pct_pot": sol.exploitability_pct_pot,
            "min_margin": sol.min_margin,
            "opp_br_vs_blueprint_pct": br_bp,
            "opp_br_vs_solved_pct": br_sol,
            "iterations": sol.iterations,
            "pot": sol.subgame.pot,
        }
        rows.append(row)
        diffs.append(br_sol - br_bp)
        print(
            f"| `{ms}` | {construction:.2f} | {tm['iter_s']:.3f} | {tm.get('measure_s') or 0:.2f} | "
            f"{row['memory_mb']:.0f} | {sol.exploitability_pct_pot:.2f} | {sol.min_margin:.1f} | "
            f"{br_bp:.2f} | {br_sol:.2f} | {br_sol - br_bp:+.2f} |",
            flush=True,
        )
    if diffs:
        m = statistics.fmean(diffs)
        half = 1.96 * statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan")
        print(
            f"\nre-solved - blueprint, opponent's best response on independent cards: {m:+.2f} +- "
            f"{half:.2f} % pot over {len(diffs)} flop states (below 0: the re-solve is less exploitable)"
        )
        for key in ("construction_s", "iteration_s", "check_s", "memory_mb"):
            vals = [r[key] for r in rows if r[key] is not None]
            print(f"{key}: median {statistics.median(vals):.3f}, max {max(vals):.3f}")
    if a.json:
        Path(a.json).write_text(json.dumps({"args": vars(a), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
