"""LBR against a blueprint alone and against blueprint + subgame solving on the same deals, and
the four LBR settings of Lisy & Bowling 2017 against the blueprint.

    python scripts/experiments/lbr_solving.py RUN_DIR --hands 400 --seed 1 --settings blueprint,river
        [--solve-iterations 150] [--method reach-maxmargin] [--menu fcpa] [--out FILE.json]
    python scripts/experiments/lbr_solving.py RUN_DIR --hands 400 --seed 1 --settings lb

Settings (a comma list, run in this order):

* ``blueprint``: LBR (``--menu``, the menu in every round) against the blueprint;
* ``river`` / ``turn`` / ``flop``: the same LBR against blueprint + solving from the river / the
  turn / the flop (:class:`mccfr.evaluation.solving.SolvingPlayer` with ``--method``,
  ``--solve-iterations`` per solve; the turn's and the flop's subgames are depth-limited), LBR modelling it by :class:`mccfr.evaluation.lbr_solving.SolvingOpponent`;
* ``lb``: the four settings of the 2017 study against the blueprint: pre-flop check/call or the
  menu x flop check/call or the menu (``--lbr-setting``'s is ``blueprint``, not run twice).

``--lbr-setting`` picks the LBR of ``blueprint`` and the solving settings: ``menu/menu`` (the
default) or one of the study's other three, e.g. ``call/call`` (its setting (2): check/call
pre-flop and on the flop, the menu on the turn and river).

Every setting plays the same deals (``--seed``: LBR's deals do not depend on the play), each deal
from both seats, so each solving setting is compared with ``blueprint`` deal by deal: the paired
difference (solving minus blueprint: positive means LBR wins more against the solving player)
with its 95% interval, and, when that interval contains 0, how many deals would make the
measured difference significant at the measured per-deal spread. Always-fold's value (folding
every hand: minus the average blind) is printed beside the four settings for scale. Prints one
JSON object per setting as it finishes (``--out`` gets all of them with the per-deal values).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.blueprint import Blueprint
from mccfr.evaluation.lbr import LocalBestResponse
from mccfr.evaluation.solving import SolvingPlayer
from mccfr_util.reporting import Z95, big_blind_of, ci95, mbb_per_chip

ROOT = Path(__file__).resolve().parents[2]

LB = {  # name: (pre-flop, call_rounds)
    "call/call": ("call", (1,)),
    "call/menu": ("call", ()),
    "menu/call": ("menu", (1,)),
    "menu/menu": ("menu", ()),
}
SOLVE_FROM = {"river": 1, "turn": 2, "flop": 3}  # setting: rounds from the end


def deals_needed(diff: np.ndarray) -> float:
    """Deals for a 95% interval of half-width ``|mean|`` at the per-deal spread of ``diff``."""
    m = abs(float(diff.mean()))
    sd = float(diff.std(ddof=1))
    return math.inf if m == 0 else (Z95 * sd / m) ** 2


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", help="a run directory, or a blueprint file (CKPT/blueprint.msgpack.lz4)")
    ap.add_argument("--hands", type=int, default=400, help="hands per setting (whole pairs: each deal twice)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--settings", default="blueprint,river", help="blueprint, river, turn, flop, lb (comma list)"
    )
    ap.add_argument("--menu", default="fcpa")
    ap.add_argument("--method", default="reach-maxmargin")
    ap.add_argument("--solve-iterations", type=int, default=150)
    ap.add_argument(
        "--lbr-setting",
        default="menu/menu",
        choices=list(LB),
        help="the LBR of the blueprint and solving settings: pre-flop / flop check-call or the menu "
        "(Lisy & Bowling's setting (2) is call/call)",
    )
    ap.add_argument("--out", default=None, help="JSON file: every result with its per-deal values")
    a = ap.parse_args(argv)
    lb_pre, lb_calls = LB[a.lbr_setting]
    settings = [s.strip() for s in a.settings.split(",") if s.strip()]
    bad = [s for s in settings if s not in ("blueprint", *SOLVE_FROM, "lb")]
    if bad:
        ap.error(f"unknown settings {bad}: use blueprint, river, turn, flop, lb")
    src = Path(a.run_dir)
    bp = Blueprint.read_file(src) if src.is_file() else Blueprint.load(src)
    g = bp.gamedef
    scale = mbb_per_chip(big_blind_of(g))
    fold_value = -sum(g.blind) / 2 * scale  # folding every hand: each seat's blind once per pair
    results: dict[str, dict] = {}
    per_pair: dict[str, np.ndarray] = {}

    def record(name: str, lbr: LocalBestResponse, res) -> None:
        pp = np.asarray(res.per_pair) * scale
        per_pair[name] = pp
        out = {
            "setting": name,
            "lbr": float(pp.mean()),
            "ci95": ci95(pp),
            "sd_per_deal": float(pp.std(ddof=1)),
            "hands": res.hands,
            "pairs": res.pairs,
            "seats": [v * scale for v in res.seat_chips],
            "seconds": res.seconds,
            "opponent": res.opponent,
            "unit": res.unit,
        }
        opp = lbr.opp
        if hasattr(opp, "solves"):
            out.update(
                solves=opp.solves,
                reused=opp.reused,
                blueprint_fallbacks=opp.fallbacks,
                from_round=opp.from_round,
                iterations=opp.iterations,
                method=opp.method,
            )
        if name in SOLVE_FROM and "blueprint" in per_pair:
            d = pp - per_pair["blueprint"]
            out.update(paired_diff=float(d.mean()), paired_ci95=ci95(d), deals_to_separate=deals_needed(d))
        results[name] = out
        print(json.dumps(out), flush=True)
        if a.out:
            Path(a.out).write_text(
                json.dumps(
                    {
                        "run_dir": a.run_dir,
                        "seed": a.seed,
                        "menu": a.menu,
                        "lbr_setting": a.lbr_setting,
                        "always_fold": fold_value,
                        "results": results,
                        "per_pair": {k: v.tolist() for k, v in per_pair.items()},
                    }
                )
            )

    def run(name: str, opponent, preflop: str = "menu", call_rounds=()) -> None:
        lbr = LocalBestResponse(bp.game, opponent, menu=a.menu, preflop=preflop, call_rounds=call_rounds)
        t0 = time.perf_counter()
        res = lbr.run(a.hands, seed=a.seed)
        print(f"# {name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        record(name, lbr, res)

    for s in settings:
        if s == "blueprint":
            run("blueprint", bp, lb_pre, lb_calls)
        elif s in SOLVE_FROM:
            sp = SolvingPlayer(
                bp,
                a.method,
                name=f"blueprint+solve:{a.method}",
                iterations=a.solve_iterations,
                from_round=g.num_rounds - SOLVE_FROM[s],
            )
            run(s, sp, lb_pre, lb_calls)
        else:
            for name, (pre, cr) in LB.items():
                if name == a.lbr_setting and "blueprint" in per_pair:
                    results[name] = dict(results["blueprint"], setting=name)
                    per_pair[name] = per_pair["blueprint"]
                    continue
                run(name, bp, pre, cr)

    u = "mbb/game" if big_blind_of(g) else "chips/hand"
    print(
        f"\nLBR ({a.menu}, {a.lbr_setting}) on {a.run_dir}, seed {a.seed}, {a.hands} hands per setting ({u}):"
    )
    for name, r in results.items():
        line = f"  {name:10s} {r['lbr']:+9.1f} +- {r['ci95']:7.1f}"
        if "paired_diff" in r:
            line += (
                f"   paired vs blueprint {r['paired_diff']:+8.1f} +- {r['paired_ci95']:6.1f}"
                f" (deals to separate at this spread: {r['deals_to_separate']:,.0f})"
            )
        print(line)
    if any(n in results for n in LB):
        print(f"  always-fold {fold_value:+9.1f} (exact: minus the average blind)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
