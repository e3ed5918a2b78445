"""Duplicate-match speed of a blueprint against random and always-call (ms per hand).

python scripts/benchmarks/bench_match_speed.py RUN_DIR [--hands 1000]
"""

from __future__ import annotations

import argparse
import time

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

import blueprint
from blueprint.blueprint import Blueprint
from mccfr.evaluation.match import play_match
from mccfr.evaluation.players import BlueprintPlayer, player_from_spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--hands", type=int, default=1000)
    args = ap.parse_args()
    bp = Blueprint.load(args.run)
    for vs in ("random", "always-call"):
        a, b = BlueprintPlayer(bp), player_from_spec(vs, bp.game)
        play_match(bp.game, a, b, 20)  # warm up: kernels, caches
        t = time.perf_counter()
        r = play_match(bp.game, a, b, args.hands)
        dt = time.perf_counter() - t
        print(
            f"{blueprint.__file__}: vs {vs}: {dt / args.hands * 1e3:.2f} ms/hand, mean {r.mean:+.1f} {r.unit}"
        )


if __name__ == "__main__":
    main()
