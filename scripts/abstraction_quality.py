"""Abstraction quality: exploitability in the real game of blueprints trained on each card
abstraction, at equal bucket counts (the card-abstraction issue's experiment).

The game is a small-deck *three-round* limit hold'em (``--ranks`` x 4 suits, 2 hole cards, a
``--flop``-card flop and a 1-card turn; blinds 10/5, raises 10/20/20, ``--max-raises`` per round),
so the flop buckets matter for play on the turn. Preflop is lossless (one bucket per suit class);
the flop and the turn get ``B`` buckets each for every ``B`` of ``--buckets`` and every method
(``ehs``, ``ehs2``, ``distribution``, ``potential``); ``iso`` is one bucket per suit-isomorphism
class of (hole cards, board as a set) in every round (imperfect recall: the turn forgets which
board card came last), ``lossless`` the perfect-recall floor (board cards grouped by round). Each blueprint is solved by full-width CFR+ on the
abstract game (:mod:`blueprint.vector_cfr`, vectorized over hands, alternating updates, linear
averaging) and its average strategy's exploitability in the real game (exact best response,
mbb/game) is measured at doublings of the iteration count, so the table shows convergence.

    python scripts/abstraction_quality.py --ranks 5 --buckets 10,30,100 --iterations 128
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from abstraction.bets import build_tree
from abstraction.buckets import build_buckets
from abstraction.cards import from_file
from abstraction.isomorphism import HandIndexer
from blueprint.vector_cfr import VectorCFR
from holdem.gamedef import GameDef


def small_game(ranks: int, max_raises: int, flop: int = 2) -> GameDef:
    """Limit, blinds 10/5, raises 10/20/20, ``ranks`` x 4 suits, 2 hole cards, flop + 1-card turn."""
    return GameDef("limit", 3, (2000, 2000), (10, 5), (10, 20, 20), (1, 0, 0), (max_raises,) * 3, 4, ranks, 2,
                   (0, flop, 1), f"lim3r{ranks}f{flop}")


def solve_curve(game, cards_dir, iterations, points):
    cards = None if cards_dir is None else from_file(game, cards_dir)
    tree = build_tree(game)
    t0 = time.perf_counter()
    cfr = VectorCFR(tree, cards)
    curve = []
    for target in points:
        cfr.iterate(target - cfr.iteration)
        expl, _ = cfr.exploitability()
        curve.append((target, expl / game.big_blind * 1000.0))
    return curve, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=5)
    ap.add_argument("--flop", type=int, default=2, help="flop cards")
    ap.add_argument("--max-raises", type=int, default=2)
    ap.add_argument("--buckets", default="10,30,100", help="flop = turn bucket counts (the curve)")
    ap.add_argument("--methods", default="ehs,ehs2,distribution,potential")
    ap.add_argument("--iterations", type=int, default=128)
    ap.add_argument("--points", type=int, default=3, help="exploitability measured at iterations / 2**k, k < points")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default="/tmp/abstraction_quality3")
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-iso", action="store_true")
    ap.add_argument("--last-round", default="ochs", choices=("ochs", "hs"),
                    help="clustered methods: OCHS k-means or hand-strength percentiles on the last round")
    args = ap.parse_args(argv)
    game = small_game(args.ranks, args.max_raises, args.flop)
    ix = HandIndexer.for_game(game)
    sizes = tuple(ix.size(r) for r in range(3))
    work = Path(args.work) / game.name
    quiet = lambda m: None
    points = [args.iterations >> k for k in range(args.points - 1, -1, -1)]
    rows = []
    out_json = Path(args.json) if args.json else None
    print(f"game {game.name}: {args.ranks} ranks x 4 suits, limit, 3 rounds (0/{args.flop}/1 board cards), "
          f"classes {sizes}; CFR+ x {args.iterations} iterations; cores {os.cpu_count()}", flush=True)
    configs = [(m, b) for b in [int(x) for x in args.buckets.split(",")] for m in args.methods.split(",")]
    if not args.no_iso:
        configs += [("iso", None), ("lossless", None)]
    prix = HandIndexer.for_game(game, perfect_recall=True)
    for m, b in configs:
        if m == "lossless":  # perfect recall: suit classes of (hole, flop, turn) as separate groups
            t0 = time.perf_counter()
            curve, tt = solve_curve(game, None, args.iterations, points)
            bk = tuple(prix.size(r) for r in range(3))
            rows.append({"method": m, "buckets": list(bk), "build_s": 0.0, "solve_s": tt, "curve": curve})
            print(f"{m:>12} {'/'.join(map(str, bk)):<16} solve+BR {tt:7.1f}s  "
                  + "  ".join(f"{it:>5}:{v:8.2f}" for it, v in curve), flush=True)
            if out_json:
                out_json.write_text(json.dumps({"args": vars(args), "classes": sizes, "rows": rows}, indent=1))
            continue
        bk = sizes if m == "iso" else (sizes[0], b, b)
        tag = "" if args.last_round == "ochs" or m not in ("distribution", "potential") else "-lasths"
        d = work / ("iso" if m == "iso" else f"{m}{tag}-{b}-s{args.seed}")
        t0 = time.perf_counter()
        if not (d / "abstraction.bin").exists():
            build_buckets(game, bk, "ehs" if m == "iso" else m, d, progress=False, log=quiet, seed=args.seed,
                          last_round=args.last_round)
        tb = time.perf_counter() - t0
        curve, tt = solve_curve(game, d, args.iterations, points)
        rows.append({"method": m + tag, "buckets": list(bk), "build_s": tb, "solve_s": tt, "curve": curve})
        print(f"{m:>12} {'/'.join(map(str, bk)):<16} build {tb:6.1f}s solve+BR {tt:7.1f}s  "
              + "  ".join(f"{it:>5}:{v:8.2f}" for it, v in curve), flush=True)
        if out_json:
            out_json.write_text(json.dumps({"args": vars(args), "classes": sizes, "rows": rows}, indent=1))
    bs = sorted({r["buckets"][1] for r in rows if r["method"] != "iso"})
    methods = [m for m in args.methods.split(",")]
    print("\n| method | " + " | ".join(f"{sizes[0]}/{b}/{b}" for b in bs) + " |")
    print("|---|" + "---:|" * len(bs))
    for m in methods:
        cells = []
        for b in bs:
            mt = m + ("-lasths" if args.last_round == "hs" and m in ("distribution", "potential") else "")
            r = next((r for r in rows if r["method"] == mt and r["buckets"][1] == b), None)
            cells.append("" if r is None else f"{r['curve'][-1][1]:.1f} ({r['curve'][-2][1]:.1f})")
        print(f"| {m} | " + " | ".join(cells) + " |")
    for name in ("iso", "lossless"):
        for r in rows:
            if r["method"] == name:
                c = r["curve"]
                print(f"| {name} ({'/'.join(map(str, r['buckets']))}) | {c[-1][1]:.2f} ({c[-2][1]:.2f}) |")
    return rows


if __name__ == "__main__":
    main()
