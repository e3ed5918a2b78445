"""Brown & Sandholm 2017's Table 1, rebuilt on a small-deck two-round no-limit "flop hold'em".

The full game is the small game with the bet set as its rules (``fullgame.FLOP_BETS_TOML``:
preflop pot and all-in, flop 0.5 and 1 pot and all-in, two raises a round). Each blueprint uses
that bet set with a lossless (suit-isomorphic) preflop and EHS percentile buckets on the flop;
external-sampling MCCFR (DCFR weighting) trains it. Every flop root (each preflop history that
reaches the flop x each flop board, one board per suit class) is re-solved with every method, each
seat's part from the solve where it is refined, and each combined strategy is scored by an exact
best response in the full game (mbb/game).

    python scripts/experiments/subgame_experiment.py --ranks 7 --flop-buckets 8,64 --train-iterations 300000 \\
        --solve-iterations 200 --out results.json

``--table 2``: their Table 2, nested solving vs action translation for an off-tree bet. The full
game adds a 0.75-pot bet (``--off-tree-size``) as the first bet of the flop (``FLOP_OFF_TREE_TOML``),
which the same blueprints lack (they have 0.5 and 1 pot). The blueprint answers that bet by pseudo-harmonic
translation (``translation``) or by a nested subgame solved with each method, opened at every such
bet (every root, board and seat), everything else staying the blueprint's; each is scored by an
exact best response in the full game, where the responder may bet 0.75 pot.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from fullgame import (
    FLOP_BETS_TOML,
    FullGame,
    SolveSettings,
    flop_game,
    off_tree_bets_toml,
    run_experiment,
    run_nested_experiment,
)

from abstraction.bets import parse_bets
from abstraction.buckets import build_buckets, cache_root
from abstraction.isomorphism import HandIndexer
from blueprint.blueprint import Blueprint
from blueprint.trainer import make_trainer
from mccfr_util.reporting import chips_to_mbb
from subgame.solver import METHODS


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def blueprint_for(game, flop_buckets: int, iterations: int, seed: int, work: Path, check: bool):
    """Train (or load the cached) blueprint; with ``check``, also the base evaluator's exploitability."""
    ix = HandIndexer.for_game(game)
    key = f"{game.name}-ehs{ix.size(0)}x{flop_buckets}-it{iterations}-s{seed}"
    pk = work / f"{key}.pkl"
    if pk.exists():
        try:
            with open(pk, "rb") as f:
                bp, info = pickle.load(f)
        except (AttributeError, ImportError) as exc:  # pickled by an older layout of the classes
            log(f"blueprint {key}: cached file is from an older version ({exc}): training again")
        else:
            log(f"blueprint {key}: cached")
            # blueprints pickled before this memo cache existed
            if not hasattr(bp, "_node_cache"):
                bp._node_cache = {}
            return bp, info
    ab = build_buckets(
        game,
        (ix.size(0), flop_buckets),
        "ehs",
        work / f"ab-{game.name}-{flop_buckets}",
        progress=False,
        log=lambda s: None,
    )
    bets = work / "bets.toml"
    bets.write_text(FLOP_BETS_TOML)
    tr = make_trainer(game, bets=str(bets), cards=str(ab), algo="dcfr", seed=seed)
    t0 = time.perf_counter()
    tr.run(iterations)
    train_s = time.perf_counter() - t0
    log(f"blueprint {key}: trained {iterations} iterations in {train_s:.0f} s")
    base = None
    if check:
        t0 = time.perf_counter()
        base = tr.exploitability()[0]
        log(
            f"  trainer.exploitability(): {chips_to_mbb(base, game.big_blind):.3f} mbb/game ({time.perf_counter() - t0:.0f} s)"
        )
    bp = Blueprint(tr)
    out = (bp, {"key": key, "train_s": train_s, "iterations": iterations, "base_exploitability": base})
    with open(pk, "wb") as f:
        pickle.dump(out, f)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--table",
        type=int,
        default=1,
        choices=(1, 2),
        help="1: re-solve every flop root (Table 1); 2: nested solving vs translation (Table 2)",
    )
    ap.add_argument(
        "--off-tree-size",
        type=float,
        default=0.75,
        help="--table 2: the full game's first flop bet the blueprint lacks, as a pot fraction",
    )
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated subgame methods")
    ap.add_argument("--ranks", type=int, default=7)
    ap.add_argument("--suits", type=int, default=4)
    ap.add_argument("--stack-bb", type=int, default=10)
    ap.add_argument("--flop-buckets", default="8,64")
    ap.add_argument("--train-iterations", type=int, default=300_000)
    ap.add_argument("--solve-iterations", type=int, default=200)
    ap.add_argument("--algo", default="dcfr", choices=("dcfr", "cfr+"))
    ap.add_argument("--max-boards", type=int, default=None, help="re-solve only the first N board classes")
    ap.add_argument(
        "--solve-budget",
        type=float,
        default=None,
        help="seconds of solving per blueprint; classes not reached keep the blueprint (coverage reported)",
    )
    ap.add_argument(
        "--check-base",
        action="store_true",
        help="also score each blueprint with trainer.exploitability() (the dense evaluator; slow)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default=None, help="cache of built abstractions and trained blueprints")
    ap.add_argument("--out", default=None, help="JSON results")
    a = ap.parse_args(argv)
    game = flop_game(a.ranks, a.suits, a.stack_bb)
    work = Path(a.work) if a.work else cache_root() / "subgame_experiment"
    work.mkdir(parents=True, exist_ok=True)
    methods = tuple(a.methods.split(","))
    bad = [m for m in methods if m not in METHODS]
    if bad:
        ap.error(f"unknown method(s) {', '.join(bad)}: expected from {', '.join(METHODS)}")
    settings = SolveSettings(iterations=a.solve_iterations, algo=a.algo, methods=methods)
    full_bets = FLOP_BETS_TOML if a.table == 1 else off_tree_bets_toml(a.off_tree_size)
    results = {
        "game": game.to_acpc(),
        "name": game.name,
        "bets": FLOP_BETS_TOML,
        "full_game_bets": full_bets,
        "table": a.table,
        "settings": vars(a),
        "rows": [],
    }
    t_all = time.perf_counter()
    for fb in [int(x) for x in a.flop_buckets.split(",")]:
        bp, info = blueprint_for(game, fb, a.train_iterations, a.seed, work, a.check_base)
        if a.table == 2:
            res = run_nested_experiment(
                bp,
                parse_bets(full_bets),
                settings,
                log=log,
                max_boards=a.max_boards,
                time_budget=a.solve_budget,
                seed=a.seed,
            )
        else:
            res = run_experiment(
                bp,
                settings,
                log=log,
                max_boards=a.max_boards,
                fg=FullGame(bp),
                time_budget=a.solve_budget,
                seed=a.seed,
            )
        fast = res["chips"]["blueprint" if a.table == 1 else "no-off-tree"]
        if info["base_exploitability"] is not None:
            diff = abs(fast - info["base_exploitability"])
            log(f"  blueprint: |exact scorer - trainer.exploitability()| = {diff:.3g} chips")
        res.update(flop_buckets=fb, blueprint=info)
        res["br_values"] = {k: list(v) for k, v in res["br_values"].items()}
        results["rows"].append(res)
        if a.out:
            Path(a.out).write_text(json.dumps(results, indent=1, default=str))
    results["seconds"] = time.perf_counter() - t_all
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=1, default=str))
    first = ("blueprint",) if a.table == 1 else ("no-off-tree", "translation")
    cols = [c for c in first + METHODS if c in results["rows"][0]["mbb"]]
    print("| flop buckets | boards re-solved | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 2) + "|")
    for r in results["rows"]:
        print(
            f"| {r['flop_buckets']} | {100 * r['coverage']:.0f}% | "
            + " | ".join(f"{r['mbb'][c]:.1f}" for c in cols)
            + " |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
