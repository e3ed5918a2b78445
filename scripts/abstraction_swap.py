"""Which round makes clustered buckets lose: solve the abstraction_quality game with one round's
table swapped between the ehs2 build and a clustered build (run abstraction_quality.py --ranks 5
--buckets 10 first; it leaves the builds under /tmp/abstraction_quality3).

    python scripts/abstraction_swap.py
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from abstraction.buckets import read_abstraction, write_abstraction
from scripts.abstraction_quality import small_game, solve_curve

g = small_game(5, 2, 2)
W = Path("/tmp/abstraction_quality3") / g.name
_, e = read_abstraction(W / "ehs2-10-s0")
out = {}
for m in ("distribution", "potential"):
    h, c = read_abstraction(W / f"{m}-10-s0")
    for name, tabs in (
        (f"{m}-flop+ehs2-turn", [e[0], c[1], e[2]]),
        (f"ehs2-flop+{m}-turn", [e[0], e[1], c[2]]),
    ):
        d = Path("/tmp/abstraction_swap") / name
        write_abstraction(d, g, "mixed", h["buckets"], h["sizes"], tabs)
        curve, tt = solve_curve(g, d, 32, [8, 16, 32])
        out[name] = curve
        print(name, round(tt), curve, flush=True)
Path("/tmp/abstraction_swap.json").write_text(json.dumps(out))
