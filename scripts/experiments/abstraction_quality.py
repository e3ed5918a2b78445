"""Abstraction quality: exploitability in the real game of blueprints trained on each card
abstraction, at equal bucket counts.

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
``--turn 0`` makes the turn one bucket per suit class and ``--preflop P`` gives the preflop ``P``
buckets, so one lossy round at a time can be compared (``--buckets 0``: the flop lossless too).

    python scripts/experiments/abstraction_quality.py --ranks 5 --buckets 5,10,20,40 --seeds 0,1 --iterations 256 --json rows.jsonl
    python scripts/experiments/abstraction_quality.py summary [--at 256] rows.jsonl   # mean [min-max, n] (change)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from abstraction.buckets import build_buckets
from abstraction.cards import from_file
from abstraction.isomorphism import HandIndexer
from abstraction.tree import build_tree
from blueprint.vector_cfr import VectorCFR
from holdem.gamedef import small_deck_game
from mccfr_util.reporting import chips_to_mbb


def solve_curve(game, cards_dir, iterations, points):
    cards = None if cards_dir is None else from_file(game, cards_dir)
    tree = build_tree(game)
    t0 = time.perf_counter()
    cfr = VectorCFR(tree, cards)
    curve = []
    for target in points:
        cfr.iterate(target - cfr.iteration)
        expl, _ = cfr.exploitability()
        curve.append((target, chips_to_mbb(expl, game.big_blind)))
    return curve, time.perf_counter() - t0


def parse_methods(text: str) -> list[tuple[str, str]]:
    """``ehs,distribution:hs,potential:ochs`` -> ``[(method, last_round)]`` (clustered default: hs)."""
    out = []
    for item in text.split(","):
        m, _, lr = item.partition(":")
        if m not in ("ehs", "ehs2", "distribution", "potential", "iso", "lossless"):
            raise SystemExit(f"--methods: unknown method {m!r}")
        if lr and m not in ("distribution", "potential"):
            raise SystemExit(
                f"--methods: {item!r}: a last-round choice only applies to distribution/potential"
            )
        if not (lr in ("", "hs", "ochs") or (lr.startswith("ochs") and lr[4:].isdigit())):
            raise SystemExit(
                f"--methods: {item!r}: the last round is hs, ochs or ochsK (K opponent clusters)"
            )
        out.append((m, lr or ("hs" if m in ("distribution", "potential") else "")))
    return out


def _key(method, buckets, seed, iterations):
    """A blueprint's identity in a --json file (iso / lossless have one bucket set per game)."""
    return method, None if method in ("iso", "lossless") else tuple(buckets), seed, iterations


def row_name(m: str, lr: str) -> str:
    return f"{m}:{lr}" if lr else m


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=5)
    ap.add_argument("--flop", type=int, default=2, help="flop cards")
    ap.add_argument("--max-raises", type=int, default=2)
    ap.add_argument(
        "--buckets",
        default="5,10,20,40",
        help="flop = turn bucket counts (the curve); 0: one "
        "bucket per suit class (lossless up to suits, imperfect recall)",
    )
    ap.add_argument(
        "--turn",
        type=int,
        default=-1,
        help="turn (last round) buckets (default: B, as the flop; "
        "0: one per suit class, so that only the flop's buckets differ between methods)",
    )
    ap.add_argument(
        "--preflop",
        type=int,
        default=0,
        help="preflop buckets (default 0: one per suit class, "
        "lossless); a lossy first round, clustered by the method too",
    )
    ap.add_argument(
        "--methods",
        default="ehs,ehs2,distribution:hs,potential:hs,lossless",
        help="comma-separated; distribution/potential take :hs (hand-strength percentiles on the "
        "last round, the default) or :ochs (k-means of OCHS vectors); iso, lossless: no buckets",
    )
    ap.add_argument(
        "--seeds", default="0", help="k-means seeds of the clustered methods (ehs/ehs2 are deterministic)"
    )
    ap.add_argument("--iterations", type=int, default=256)
    ap.add_argument(
        "--points", type=int, default=3, help="exploitability measured at iterations / 2**k, k < points"
    )
    ap.add_argument(
        "--plan",
        default=None,
        help="instead of buckets x methods x seeds: an ordered list "
        "METHOD[:LAST]@B[/SEED], e.g. distribution:hs@10,ehs@5,lossless@0",
    )
    ap.add_argument("--shard", default="0/1", help="i/n: run every n-th configuration from the i-th")
    ap.add_argument("--work", default="/tmp/abstraction_quality3")
    ap.add_argument(
        "--json",
        default=None,
        help="append rows (one JSON object a line); configurations already "
        "there with the same iterations are skipped",
    )
    args = ap.parse_args(argv)
    game = small_deck_game(args.ranks, args.max_raises, args.flop)
    ix = HandIndexer.for_game(game)
    sizes = tuple(ix.size(r) for r in range(3))
    work = Path(args.work) / f"lim3r{args.ranks}f{args.flop}"  # buckets do not depend on the betting
    quiet = lambda m: None
    points = [args.iterations >> k for k in range(args.points - 1, -1, -1)]
    out_json = Path(args.json) if args.json else None
    done = []
    if out_json and out_json.exists():
        done = [json.loads(x) for x in out_json.read_text().splitlines() if x.strip()]
    print(
        f"game {game.name}: {args.ranks} ranks x 4 suits, limit, 3 rounds (0/{args.flop}/1 board cards), "
        f"classes {sizes}; CFR+ x {args.iterations} iterations; load {os.getloadavg()}",
        flush=True,
    )
    seeds = [int(x) for x in args.seeds.split(",")]
    configs = []
    for b in [int(x) for x in args.buckets.split(",")]:
        for m, lr in parse_methods(args.methods):
            if m in ("iso", "lossless"):
                if (m, lr, None, 0) not in configs:
                    configs.append((m, lr, None, 0))
                continue
            for sd in seeds if m in ("distribution", "potential") else [0]:
                configs.append((m, lr, b, sd))
    if args.plan:
        configs = []
        for item in args.plan.split(","):
            spec, _, rest = item.partition("@")
            b, _, sd = rest.partition("/")
            ((m, lr),) = parse_methods(spec)
            configs.append((m, lr, None if m in ("iso", "lossless") else int(b), int(sd or 0)))
    i, n = (int(x) for x in args.shard.split("/"))
    configs = configs[i::n]
    prix = HandIndexer.for_game(game, perfect_recall=True)
    rows = []
    done_keys = {_key(r["method"], r["buckets"], r["seed"], r["iterations"]) for r in done}
    for m, lr, b, sd in configs:
        name = row_name(m, lr)
        pre = args.preflop or sizes[0]
        if m not in ("iso", "lossless"):
            turn = b if args.turn < 0 else args.turn
            bk = (pre, b or sizes[1], turn or sizes[2])
        if _key(name, None if m in ("iso", "lossless") else bk, sd, args.iterations) in done_keys:
            continue
        t0 = time.perf_counter()
        if m == "lossless":  # perfect recall: suit classes of (hole, flop, turn) as separate groups
            d, bk = None, tuple(prix.size(r) for r in range(3))
        else:
            bk = sizes if m == "iso" else bk
            tag = {"": "", "hs": "-lasths", "ochs": ""}.get(lr, f"-{lr}")
            ptag = ("" if pre == sizes[0] else f"-p{pre}") + ("" if args.turn < 0 else f"-t{args.turn}")
            d = work / ("iso" if m == "iso" else f"{m}{tag}{ptag}-{b}-s{sd}")
            if not (d / "abstraction.bin").exists():
                k = int(lr[4:]) if lr.startswith("ochs") and lr != "ochs" else None
                build_buckets(
                    game,
                    bk,
                    "ehs" if m == "iso" else m,
                    d,
                    progress=False,
                    log=quiet,
                    seed=sd,
                    last_round="hs" if lr == "hs" else "ochs",
                    ochs_clusters=k,
                )
        tb = time.perf_counter() - t0
        c0 = time.process_time()
        curve, tt = solve_curve(game, d, args.iterations, points)
        row = {
            "game": game.name,
            "method": name,
            "buckets": list(bk),
            "seed": sd,
            "iterations": args.iterations,
            "build_s": tb,
            "solve_s": tt,
            "solve_cpu_s": time.process_time() - c0,
            "load": os.getloadavg(),
            "curve": curve,
        }
        rows.append(row)
        print(
            f"{name:>17} {'/'.join(map(str, bk)):<16} s{sd} build {tb:6.1f}s solve+BR {tt:7.1f}s "
            f"(cpu {row['solve_cpu_s']:.0f}s)  " + "  ".join(f"{it:>5}:{v:8.2f}" for it, v in curve),
            flush=True,
        )
        if out_json:
            with out_json.open("a") as f:
                f.write(json.dumps(row) + "\n")
    return rows


def summarize(paths, at=None):
    """Markdown table from --json files: per method and bucket count the mean over seeds of the
    exploitability at iteration ``at`` (default: each row's last point), the spread [min-max, n]
    when there are several seeds, and (in brackets) the change from the point before (half as many
    iterations). A blueprint that appears twice (e.g. run to 256 and to 512) counts once."""
    rows, seen = [], set()
    for p in paths:
        for x in Path(p).read_text().splitlines():
            if not x.strip():
                continue
            r = json.loads(x)
            its = [it for it, _ in r["curve"]]
            k = its.index(at) if at is not None and at in its else (len(its) - 1 if at is None else -1)
            key = (r["method"], tuple(r["buckets"]), r["seed"])
            if k < 1 or key in seen:
                continue
            seen.add(key)
            rows.append((r, r["curve"][k][1], r["curve"][k - 1][1]))
    bs = sorted({tuple(r["buckets"]) for r, _, _ in rows if r["method"] not in ("iso", "lossless")})
    methods = list(dict.fromkeys(r["method"] for r, _, _ in rows))
    # one axis (the flop's B) when the preflop is the same everywhere and the turn follows the flop
    # or is the same everywhere; otherwise every column names its whole bucket set
    one_axis = len({b[0] for b in bs}) == 1 and (
        all(b[2] == b[1] for b in bs) or len({b[2] for b in bs}) == 1
    )
    lines = [
        "| method | " + " | ".join(f"B = {b[1]}" if one_axis else "/".join(map(str, b)) for b in bs) + " |",
        "|---|" + "---:|" * len(bs),
    ]
    for m in methods:
        if m in ("iso", "lossless"):
            for r, v, pv in rows:
                if r["method"] == m:
                    lines.append(f"| {m} ({'/'.join(map(str, r['buckets']))}) | {v:.1f} ({v - pv:+.1f}) |")
            continue
        cells = []
        for b in bs:
            rs = [(v, pv) for r, v, pv in rows if r["method"] == m and tuple(r["buckets"]) == b]
            if not rs:
                cells.append("")
                continue
            last = [v for v, _ in rs]
            mean = sum(last) / len(last)
            cell = f"{mean:.1f}"
            if len(rs) > 1:
                cell += f" [{min(last):.1f}-{max(last):.1f}, n={len(rs)}]"
            cell += f" ({mean - sum(pv for _, pv in rs) / len(rs):+.1f})"
            cells.append(cell)
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "summary":  # summary [--at N] FILE...
        at = int(sys.argv[3]) if sys.argv[2:3] == ["--at"] else None
        print(summarize(sys.argv[4:] if at is not None else sys.argv[2:], at))
    else:
        main()
