"""Abstraction quality: exploitability in the real game of blueprints trained on each card
abstraction, at equal bucket counts (the card-abstraction issue's experiment).

The game is a small-deck two-round limit hold'em (preflop, then a 3-card flop) whose exact best
response is feasible (:mod:`blueprint.evaluate`). Both rounds are lossy: ``--pre`` preflop buckets
and each of ``--flop`` flop buckets. Every method (``ehs``, ``ehs2``, ``distribution``,
``potential``) gets the same bucket counts; ``iso`` is the floor: one bucket per suit-isomorphism
class (lossless up to suits). Each blueprint is trained by external-sampling MCCFR (``--algo``)
for ``--iterations`` iterations and its average strategy's exploitability (exact best response,
mbb/game) is measured at doublings, so the table shows whether it has flattened.

    python scripts/abstraction_quality.py --ranks 5 --pre 5 --flop 10,20,40 --iterations 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from abstraction.buckets import build_buckets
from abstraction.isomorphism import HandIndexer
from blueprint.algo import get_algo
from blueprint.trainer import RunConfig, Trainer
from holdem.gamedef import GameDef


def small_game(ranks: int, max_raises: int) -> GameDef:
    """Limit, blinds 10/5, raises 10 then 20, ``ranks`` x 4 suits, 2 hole cards, a 3-card flop."""
    return GameDef("limit", 2, (2000, 2000), (10, 5), (10, 20), (1, 0), (max_raises, max_raises), 4, ranks, 2,
                   (0, 3), f"lim2r{ranks}")


def train_curve(game, cards_dir, algo, iterations, seed, points):
    tr = Trainer(RunConfig(game.name, None, str(cards_dir), get_algo(algo), seed), gamedef=game)
    curve = []
    done = 0
    t0 = time.perf_counter()
    for target in points:
        tr.run(target - done)
        done = target
        expl, _ = tr.exploitability()
        curve.append((target, expl / game.big_blind * 1000.0))
    return curve, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=5)
    ap.add_argument("--max-raises", type=int, default=2)
    ap.add_argument("--pre", type=int, default=5, help="preflop buckets")
    ap.add_argument("--flop", default="10,20,40", help="flop bucket counts (the curve)")
    ap.add_argument("--methods", default="ehs,ehs2,distribution,potential")
    ap.add_argument("--iterations", type=int, default=1_000_000)
    ap.add_argument("--iso-iterations", type=int, default=0, help="iterations of the iso floor (0: 4x)")
    ap.add_argument("--points", type=int, default=3, help="exploitability measured at iterations / 2**k, k < points")
    ap.add_argument("--algo", default="linear")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default="/tmp/abstraction_quality")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    game = small_game(args.ranks, args.max_raises)
    ix = HandIndexer.for_game(game)
    sizes = (ix.size(0), ix.size(1))
    work = Path(args.work)
    quiet = lambda m: None
    points = [args.iterations >> k for k in range(args.points - 1, -1, -1)]
    rows = []
    print(f"game {game.name}: {args.ranks} ranks x 4 suits, limit, 2 rounds; classes {sizes}; "
          f"{args.algo} x {args.iterations} iterations; cores {os.cpu_count()}", flush=True)
    for nf in [int(x) for x in args.flop.split(",")]:
        for m in args.methods.split(","):
            d = work / f"{m}-{args.pre}-{nf}-s{args.seed}"
            t0 = time.perf_counter()
            if not (d / "abstraction.bin").exists():
                build_buckets(game, (args.pre, nf), m, d, progress=False, log=quiet, seed=args.seed)
            tb = time.perf_counter() - t0
            curve, tt = train_curve(game, d, args.algo, args.iterations, args.seed, points)
            rows.append({"method": m, "pre": args.pre, "flop": nf, "build_s": tb, "train_s": tt, "curve": curve})
            print(f"{m:>12} {args.pre}/{nf:<4} build {tb:5.1f}s train+BR {tt:6.1f}s  "
                  + "  ".join(f"{it:>8}:{v:8.1f}" for it, v in curve), flush=True)
    iso_it = args.iso_iterations or 4 * args.iterations
    d = work / "iso"
    if not (d / "abstraction.bin").exists():
        build_buckets(game, sizes, "ehs", d, progress=False, log=quiet)
    curve, tt = train_curve(game, d, args.algo, iso_it, args.seed, [iso_it >> k for k in range(args.points - 1, -1, -1)])
    rows.append({"method": "iso", "pre": sizes[0], "flop": sizes[1], "build_s": 0.0, "train_s": tt, "curve": curve})
    print(f"{'iso':>12} {sizes[0]}/{sizes[1]} train+BR {tt:6.1f}s  "
          + "  ".join(f"{it:>8}:{v:8.1f}" for it, v in curve), flush=True)
    # the table: final exploitability (mbb/game) per method and flop bucket count
    flops = sorted({r["flop"] for r in rows if r["method"] != "iso"})
    methods = [m for m in args.methods.split(",")]
    print("\n| method | " + " | ".join(f"{args.pre}/{f}" for f in flops) + " |")
    print("|---|" + "---|" * len(flops))
    for m in methods:
        cells = []
        for f in flops:
            r = next(r for r in rows if r["method"] == m and r["flop"] == f)
            last, half = r["curve"][-1][1], r["curve"][-2][1]
            cells.append(f"{last:.1f} ({half:.1f})")
        print(f"| {m} | " + " | ".join(cells) + " |")
    iso = rows[-1]["curve"]
    print(f"| iso ({sizes[0]}/{sizes[1]}) | {iso[-1][1]:.1f} ({iso[-2][1]:.1f}) at {iso_it} iterations |")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    return rows


if __name__ == "__main__":
    main()
