"""Which round makes clustered buckets lose: solve the abstraction_quality game with one round's
table swapped between the ehs2 build and a clustered build. Run ``abstraction_quality.py --ranks 5
--buckets 10`` first; its ``--work`` folder (default /tmp/abstraction_quality3) holds the builds
this script reads.

    python scripts/experiments/abstraction_swap.py [--work /tmp/abstraction_quality3] [--out /tmp/abstraction_swap]

writes the swapped abstractions under ``--out`` and the curves to ``OUT.json``.
"""

import argparse
import json
from pathlib import Path

from abstraction_quality import solve_curve

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from abstraction.storage import read_abstraction, write_abstraction
from holdem.gamedef import small_deck_game


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/abstraction_quality3", help="abstraction_quality.py's --work")
    ap.add_argument("--out", default="/tmp/abstraction_swap", help="the swapped builds; curves in OUT.json")
    a = ap.parse_args()
    g = small_deck_game(5, 2, 2)
    w = Path(a.work) / g.name
    if not (w / "ehs2-10-s0").is_dir():
        ap.error(
            f"no build {w / 'ehs2-10-s0'}: run abstraction_quality.py --ranks 5 --buckets 10 --work {a.work}"
        )
    _, e = read_abstraction(w / "ehs2-10-s0")
    out = {}
    for m in ("distribution", "potential"):
        h, c = read_abstraction(w / f"{m}-10-s0")
        for name, tabs in (
            (f"{m}-flop+ehs2-turn", [e[0], c[1], e[2]]),
            (f"ehs2-flop+{m}-turn", [e[0], e[1], c[2]]),
        ):
            d = Path(a.out) / name
            write_abstraction(d, g, "mixed", h["buckets"], h["sizes"], tabs)
            curve, tt = solve_curve(g, d, 32, [8, 16, 32])
            out[name] = curve
            print(name, round(tt), curve, flush=True)
    Path(a.out + ".json").write_text(json.dumps(out))


if __name__ == "__main__":
    main()
