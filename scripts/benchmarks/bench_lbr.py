"""Benchmark the evaluation of big games: local best response of hunl100 blueprints at two
training lengths, head-to-head duplicate matches, and match / LBR throughput.

    mccfr train --time 60 --out runs/bp60                     # the default main job, 60 s
    cp -r runs/bp60 runs/bp600 && mccfr resume runs/bp600 --time 540
    python scripts/benchmarks/bench_lbr.py runs/bp60 runs/bp600 [--lbr-hands 4000] [--match-hands 20000]
        [--menu fcpa] [--skip-lbr | --skip-matches] [--out bench_lbr.json]
    python scripts/benchmarks/bench_lbr.py --validate [--lbr-hands 2000]
    python scripts/benchmarks/bench_lbr.py runs/bp60 runs/bpLong --skip-matches --seeds 7,9 --pairs-out DIR [--breakdown]
    python scripts/benchmarks/bench_lbr.py --combine DIR

``--pairs-out DIR`` saves each run's per-deal LBR values (mbb/game, both seats averaged) as
``DIR/<run>.it<N>.seed<S>.npy``, so that several processes (different ``--seed`` or ``--seeds``,
each seed played by every run in turn) can add hands to the same comparison; ``--combine DIR`` pools them: each run's LBR over all its deals, and the paired
change from each run to the next (by iterations) and from the first to the last, over the deals both played (a seed
deals the same cards in the same order to every run, whatever the number of hands).
``--breakdown`` also splits LBR's winnings by what the opponent did after LBR's bets: hands where
it re-raised one of LBR's raises (LBR's one-step valuation assumes fold or call) and the rest.

``--validate``: on no-limit Leduc (``tests/data/leduc_nolimit.game``, fcpa bets, CFR+ after
0, 3, 30 and 300 iterations) the exact best-response value per seat beside LBR's exact value
(every equity is exact on that deck, so LBR is a deterministic strategy and
``mccfr.evaluation.match.exact_value`` evaluates it) and LBR's sampled value with its interval.

For every run: LBR (``--menu``, ``--preflop``) over ``--lbr-hands`` hands; for the last run also
duplicate matches against always-call and random over ``--match-hands`` hands. Prints one JSON
object per measurement as it goes (and all of them into ``--out``), then a Markdown table.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
from harness import load, machine

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.blueprint import Blueprint
from mccfr.evaluation.lbr import LocalBestResponse
from mccfr.evaluation.match import play_match
from mccfr.evaluation.players import BlueprintPlayer, player_from_spec
from mccfr_util.reporting import chips_to_mbb, ci95, mbb_per_chip


def emit(rows: list, row: dict, out: str | None) -> None:
    rows.append(row)
    print(json.dumps(row), flush=True)
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))


def validate(hands: int, seed: int) -> None:
    from blueprint.trainer import make_trainer
    from mccfr.evaluation.lbr import LBRPlayer
    from mccfr.evaluation.match import exact_value

    game = str(Path(__file__).resolve().parents[2] / "tests" / "data" / "leduc_nolimit.game")
    print(f"{datetime.datetime.now().isoformat(timespec='seconds')}, {machine()}, load {load():.1f}")
    print(
        "| CFR+ iterations | exact BR seat 0 / seat 1 | exploitability | exact LBR seat 0 / seat 1 | exact LBR | "
        "sampled LBR (95%) |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for iters in (0, 3, 30, 300):
        tr = make_trainer(game, algo="cfr+", bets="fcpa")
        tr.run(iters)
        expl, brv = tr.exploitability()
        bp = Blueprint(tr)
        lbr = LocalBestResponse(bp.game, bp, menu="fcpa", preflop="menu")
        ex = exact_value(bp.game, LBRPlayer(lbr), BlueprintPlayer(bp), max_states=5_000_000)
        res = lbr.run(hands, seed=seed)
        k = mbb_per_chip(bp.gamedef.big_blind)
        print(
            f"| {iters} | {brv[0] * k:,.0f} / {brv[1] * k:,.0f} | {expl * k:,.0f} | "
            f"{ex.seat_chips[0] * k:,.0f} / {ex.seat_chips[1] * k:,.0f} | {ex.chips_per_hand * k:,.0f} | "
            f"{res.lbr:,.0f} +- {res.lbr_ci95:,.0f} |",
            flush=True,
        )


class _Flags(list):
    originals: tuple = ()


def instrument(lbr: LocalBestResponse) -> list:
    """Record per hand whether the opponent re-raised after one of LBR's raises: returns the list
    that ``lbr.run`` fills with ``(re-raised, LBR's chips)`` per hand (in play order)."""
    flags = _Flags()
    state = {"lbr_raised": False, "punished": False}
    decide, act, play_hand = lbr.decide, lbr.opp.act, lbr.play_hand
    flags.originals = (decide, act, play_hand)

    def my_decide(st, weights, rng):
        a = decide(st, weights, rng)
        state["lbr_raised"] = a.startswith("r")
        return a

    def my_act(st, hand, rng):
        a, lik = act(st, hand, rng)
        if a.startswith("r") and state["lbr_raised"]:
            state["punished"] = True
        state["lbr_raised"] = False
        return a, lik

    def my_play_hand(*a, **k):
        state.update(lbr_raised=False, punished=False)
        v = play_hand(*a, **k)
        flags.append((state["punished"], v))
        return v

    lbr.decide, lbr.opp.act, lbr.play_hand = my_decide, my_act, my_play_hand
    return flags


def breakdown(flags: list, res, scale: float) -> dict:
    """LBR's winnings (mbb per hand of the whole sample) from hands where the opponent re-raised
    an LBR raise and from the rest, and the share of such hands."""
    f = np.array([x for x, _ in flags[-res.hands :]], bool)
    v = np.array([y for _, y in flags[-res.hands :]]) * scale
    return {
        "hands_reraised": float(f.mean()),
        "lbr_from_reraised_hands": float(v[f].sum() / len(v)),
        "lbr_from_other_hands": float(v[~f].sum() / len(v)),
        "mean_per_reraised_hand": float(v[f].mean()) if f.any() else None,
    }


def combine(d: Path) -> None:
    """Pool the per-deal LBR values that ``--pairs-out`` saved in ``d`` (see the module docstring)."""
    import re

    runs: dict = {}
    for f in sorted(d.glob("*.npy")):
        m = re.fullmatch(r"(.+)\.it(\d+)\.seed(-?\d+)\.npy", f.name)
        if not m:
            continue
        runs.setdefault((int(m.group(2)), m.group(1)), {})[int(m.group(3))] = np.load(f)
    if not runs:
        raise SystemExit(f"no per-deal files (<run>.it<N>.seed<S>.npy) in {d}")
    keys = sorted(runs)
    print("| run | iterations | LBR (mbb/game) | 95% interval | hands | seeds |")
    print("|---|---:|---:|---:|---:|---:|")
    for it, name in keys:
        v = np.concatenate([runs[(it, name)][s] for s in sorted(runs[(it, name)])])
        half = ci95(v)
        print(
            f"| {name} | {it:,} | {v.mean():+,.0f} | +-{half:,.0f} | {2 * len(v):,} | {len(runs[(it, name)])} |"
        )
    # paired changes over the deals both runs played: each run to the next, and the first to the last
    steps = list(itertools.pairwise(keys))
    if len(keys) > 2:
        steps.append((keys[0], keys[-1]))
    for ka, kb in steps:
        a, b = runs[ka], runs[kb]
        diffs = []
        for s in sorted(set(a) & set(b)):
            n = min(len(a[s]), len(b[s]))
            diffs.append(b[s][:n] - a[s][:n])
        if diffs:
            dv = np.concatenate(diffs)
            half = ci95(dv)
            print(
                f"| paired change {ka[1]} -> {kb[1]} | | {dv.mean():+,.0f} | +-{half:,.0f} | "
                f"{2 * len(dv):,} per run | {len(diffs)} |"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", help="run directories, shortest training first")
    ap.add_argument(
        "--validate", action="store_true", help="LBR against exact best response on no-limit Leduc"
    )
    ap.add_argument("--lbr-hands", type=int, default=4000)
    ap.add_argument("--match-hands", type=int, default=20000)
    ap.add_argument("--menu", default="fcpa")
    ap.add_argument("--preflop", default="menu", choices=["menu", "call"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--seeds", default=None, help="comma list of LBR seeds, run one after another (overrides --seed)"
    )
    ap.add_argument("--skip-matches", action="store_true")
    ap.add_argument("--skip-lbr", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--pairs-out", default=None, metavar="DIR", help="save per-deal LBR values (see above)")
    ap.add_argument("--combine", default=None, metavar="DIR", help="pool the per-deal values saved in DIR")
    ap.add_argument(
        "--breakdown", action="store_true", help="split LBR's winnings by the opponent's re-raises"
    )
    ap.add_argument(
        "--reraise",
        action="store_true",
        help="LBR sees the opponent's re-raises when it values a raise (per-deal files named RUN.rr...)",
    )
    args = ap.parse_args()
    if args.validate:
        validate(args.lbr_hands, args.seed)
        return
    if args.combine:
        combine(Path(args.combine))
        return
    if not args.runs:
        ap.error("give run directories, or --validate")
    rows: list = []
    head = {
        "what": "setup",
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average_start": load(),
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
    }
    emit(rows, head, args.out)
    bps = {run: Blueprint.load(run) for run in args.runs}
    seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else [args.seed]
    pairs: dict = {run: [] for run in args.runs}
    lbrs: dict = {}
    for seed in [] if args.skip_lbr else seeds:  # seed by seed, every run: the pairs accumulate evenly
        for run in args.runs:
            bp = bps[run]
            if run not in lbrs:
                lbrs[run] = LocalBestResponse(
                    bp.game, bp, menu=args.menu, preflop=args.preflop, reraise=args.reraise
                )
                lbrs[run].run(2, seed=12345)  # compile / warm up
            lbr = lbrs[run]
            cats = instrument(lbr) if args.breakdown else None
            c0 = time.process_time()
            res = lbr.run(args.lbr_hands, seed=seed)
            row = {
                "what": "lbr",
                "run": run,
                "iterations": bp.iteration,
                **res.to_json(),
                "hands_per_second": res.hands / res.seconds,
                "cpu_seconds": time.process_time() - c0,
                "load_average": load(),
            }
            if cats is not None:
                row["breakdown"] = breakdown(cats, res, mbb_per_chip(bp.gamedef.big_blind))
                lbr.decide, lbr.opp.act, lbr.play_hand = cats.originals
            emit(rows, row, args.out)
            v = chips_to_mbb(res.per_pair, bp.gamedef.big_blind)
            pairs[run].append(v)
            if args.pairs_out:
                Path(args.pairs_out).mkdir(parents=True, exist_ok=True)
                name = Path(run).name + (".rr" if args.reraise else "")
                np.save(Path(args.pairs_out) / f"{name}.it{bp.iteration}.seed{seed}.npy", v)
    pairs = {run: np.concatenate(v) for run, v in pairs.items() if v}
    if len(args.runs) > 1 and not args.skip_lbr:
        # the same seed deals the same cards to every run: a paired interval for the change
        first, last = args.runs[0], args.runs[-1]
        d = pairs[last] - pairs[first]
        half = ci95(d)
        emit(
            rows,
            {
                "what": "lbr_change",
                "from": first,
                "to": last,
                "change": float(d.mean()),
                "ci95": half,
                "unit": "mbb/game",
                "pairs": len(d),
            },
            args.out,
        )
    if not args.skip_matches:
        run = args.runs[-1]
        bp = bps[run]
        for vs in ("always-call", "random"):
            a = BlueprintPlayer(bp, name=Path(run).name)
            b = player_from_spec(vs, bp.game)
            t = time.perf_counter()
            res = play_match(bp.game, a, b, args.match_hands, seed=args.seed)
            dt = time.perf_counter() - t
            row = {
                "what": "match",
                "run": run,
                "iterations": bp.iteration,
                **res.to_json(),
                "seconds": dt,
                "hands_per_second": res.hands / dt,
                "fallbacks": a.fallbacks,
                "load_average": load(),
            }
            emit(rows, row, args.out)
    print()
    print(f"{head['date']}, {head['machine']}, load average at start {head['load_average_start']:.1f}")
    print(f"`python benchmarks/{head['command']}`")
    print()
    print("| measurement | iterations | value (mbb/game) | 95% interval | hands | seconds |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows[1:]:
        if r["what"] == "lbr_change":
            print(
                f"| LBR change {Path(r['from']).name} -> {Path(r['to']).name} (same deals, paired) | | "
                f"{r['change']:+,.0f} | +-{r['ci95']:,.0f} | {2 * r['pairs']:,} | |"
            )
        elif r["what"] == "lbr":
            print(
                f"| LBR ({r['lbr_actions']}) vs {Path(r['run']).name} | {r['iterations']:,} | {r['lbr']:+,.0f} | "
                f"+-{r['lbr_ci95']:,.0f} | {r['hands']:,} | {r['seconds']:.0f} |"
            )
        else:
            print(
                f"| {r['player']} vs {r['opponent']} | {r['iterations']:,} | {r['mean']:+,.0f} | "
                f"+-{r['ci95']:,.0f} | {r['hands']:,} | {r['seconds']:.0f} |"
            )


if __name__ == "__main__":
    main()
