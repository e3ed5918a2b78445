"""MCCFR speed against OpenSpiel's C++ external-sampling MCCFR, measured in one run.

    python scripts/benchmarks/bench_mccfr.py leduc   # whole-process time to exploitability 0.03 on Leduc
    python scripts/benchmarks/bench_mccfr.py hunl    # iterations/s on heads-up no-limit fcpa, 20 s windows
    python scripts/benchmarks/bench_mccfr.py memory  # bytes per (information set, action)
    python scripts/benchmarks/bench_mccfr.py lookup  # throughput cost of the card-abstraction tables
    python scripts/benchmarks/bench_mccfr.py lookup-kernel  # the per-deal bucket lookup against the order it replaced
    python scripts/benchmarks/bench_mccfr.py prefetch [CARDS[:BETS][:THREADS] ...]  # the kernel's row prefetch on and off

Leduc: ours is the wall time of the whole ``mccfr train --game leduc --target-exploitability
0.03`` process (interpreter start, imports, JIT or cache load, training and the periodic exact
evaluation), once with an empty numba cache (cold) and then warm. OpenSpiel's
``ExternalSamplingMCCFRSolver`` on the same game (``universal_poker`` loaded from the same game
definition) is timed for its training only: its exploitability checks (every 10,000 iterations)
are excluded, which favours the peer. Beside them, the fixed costs in our figure (best of 3 warm
runs each): the bare interpreter, ``import numpy``, a process that imports numba and calls one
cached kernel, and ``mccfr train --game leduc --iterations 1``.

hunl: the heads-up no-limit ``fcpa`` tree at 200 big blinds; ours with the simple ``rank`` card
buckets (the peer has no card abstraction; it stores its tables in hash maps as it goes). Each side
runs for the same 20 s window after a short warm-up; RSS is read from /proc.

Each command prints a table and a final JSON line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import machine

from mccfr_util.numba_cache import configure

ROOT = Path(__file__).resolve().parents[2]


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def ours_leduc(target: float, cache: str, algo: str) -> dict:
    out = tempfile.mkdtemp(prefix="bench-leduc-")
    env = dict(os.environ, MCCFR_CACHE=cache)
    env.pop("NUMBA_CACHE_DIR", None)
    cmd = [
        sys.executable,
        "-m",
        "mccfr",
        "train",
        "--game",
        "leduc",
        "--algo",
        algo,
        "--target-exploitability",
        str(target),
        "--eval-every",
        "0.1",
        "--report-every",
        "0.1",
        "--iterations",
        "50000000",
        "--out",
        str(Path(out) / "run"),
        "--json",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    shutil.rmtree(out, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"mccfr train failed:\n{proc.stderr}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "wall_s": wall,
        "iterations": res["iterations"],
        "exploitability": res["exploitability"],
        "train_s": res["seconds"],
    }


def openspiel_leduc(target: float, check_every: int = 10_000, limit_s: float = 600) -> dict:
    import pyspiel

    from holdem.gamedef import load_gamedef

    game = pyspiel.load_game("universal_poker", load_gamedef("leduc").openspiel_params("fcpa"))
    solver = pyspiel.ExternalSamplingMCCFRSolver(game, 1, pyspiel.MCCFRAverageType.SIMPLE)
    it, train = 0, 0.0
    while train < limit_s:
        t0 = time.perf_counter()
        for _ in range(check_every):
            solver.run_iteration()
        train += time.perf_counter() - t0
        it += check_every
        e = pyspiel.exploitability(game, solver.average_policy())
        if e <= target:
            return {"train_s": train, "iterations": it, "exploitability": e}
    return {"train_s": train, "iterations": it, "exploitability": e, "gave_up": True}


_NUMBA_FLOOR = """
import numba, numpy as np
@numba.njit(cache=True, nogil=True)
def add(a):
    s = 0.0
    for x in a:
        s += x
    return s
add(np.ones(4))
"""


def _wall(cmd: list[str], env: dict, cwd) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return time.perf_counter() - t0


def leduc_floors(cache: str, algo: str, repeats: int = 3) -> dict:
    """The fixed cost in the whole-process figure, best of ``repeats`` warm runs each: the bare
    interpreter, ``import numpy``, a process that imports numba and calls one cached kernel (any
    numba program pays it), and ``mccfr train --game leduc --iterations 1`` (our imports, the
    kernels' cache load, the tables, one evaluation and the checkpoint: everything but training)."""
    env = dict(os.environ, MCCFR_CACHE=cache)
    env.pop("NUMBA_CACHE_DIR", None)
    tmp = Path(tempfile.mkdtemp(prefix="bench-floor-"))
    (tmp / "numba_floor.py").write_text(_NUMBA_FLOOR)
    nenv = dict(env, NUMBA_CACHE_DIR=str(tmp / "cache"))
    one = [sys.executable, "-m", "mccfr", "train", "--game", "leduc", "--algo", algo]
    one += ["--iterations", "1", "--json"]
    cmds = {
        "python": ([sys.executable, "-c", "pass"], env, ROOT),
        "numpy": ([sys.executable, "-c", "import numpy"], env, ROOT),
        "numba_cached_call": ([sys.executable, "numba_floor.py"], nenv, tmp),
    }
    out = {}
    for name, (cmd, e, cwd) in cmds.items():
        _wall(cmd, e, cwd)  # the numba one compiles and caches here
        out[name] = min(_wall(cmd, e, cwd) for _ in range(repeats))
    runs = []
    for _ in range(repeats + 1):
        run = tmp / f"one{len(runs)}"
        runs.append(_wall([*one, "--out", str(run)], env, ROOT))
    out["mccfr_train_1_iteration"] = min(runs[1:])
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def cmd_leduc(target: float = 0.03, algo: str = "pluribus") -> dict:
    cache = tempfile.mkdtemp(prefix="bench-numba-")
    cold = ours_leduc(target, cache, algo)
    warm = [ours_leduc(target, cache, algo) for _ in range(3)]
    warm_best = min(warm, key=lambda r: r["wall_s"])
    floors = leduc_floors(cache, algo)
    shutil.rmtree(cache, ignore_errors=True)
    peer = openspiel_leduc(target)
    res = {
        "machine": machine(),
        "target": target,
        "algo": algo,
        "ours_cold": cold,
        "ours_warm": warm_best,
        "ours_warm_all_s": [round(w["wall_s"], 3) for w in warm],
        "openspiel": peer,
        "speedup_warm": peer["train_s"] / warm_best["wall_s"],
        "speedup_cold": peer["train_s"] / cold["wall_s"],
        "floors_s": floors,
    }
    print(f"{'':28s}{'seconds':>10s}{'iterations':>14s}{'exploitability':>16s}")
    for name, r, key in (
        ("ours, whole process, cold", cold, "wall_s"),
        ("ours, whole process, warm", warm_best, "wall_s"),
        ("OpenSpiel ES, training only", peer, "train_s"),
    ):
        print(f"{name:28s}{r[key]:10.2f}{r['iterations']:14,d}{r['exploitability']:16.4f}")
    print(f"speed-up: {res['speedup_warm']:.1f}x warm, {res['speedup_cold']:.1f}x cold")
    for name, sec in floors.items():
        print(f"floor, {name:25s}{sec:8.3f} s  (the peer's time / 30: {peer['train_s'] / 30:.3f} s)")
    return res


def cmd_hunl(window: float = 20.0) -> dict:
    import pyspiel

    from blueprint.trainer import make_trainer
    from holdem.gamedef import load_gamedef

    tr = make_trainer("hunl", bets="fcpa", cards="rank", algo="pluribus")
    tr.run(200)  # compile / load the kernels
    it0, v0, t0 = tr.iteration, tr.node_visits, time.perf_counter()
    tr.run_for(window)
    dt = time.perf_counter() - t0
    ours = {
        "iterations_per_s": (tr.iteration - it0) / dt,
        "node_visits_per_s": (tr.node_visits - v0) / dt,
        "table_bytes": int(tr.regret.nbytes + tr.strat.nbytes),
        "rss_bytes": rss_bytes(),
    }

    game = pyspiel.load_game("universal_poker", load_gamedef("hunl").openspiel_params("fcpa"))
    solver = pyspiel.ExternalSamplingMCCFRSolver(game, 1, pyspiel.MCCFRAverageType.SIMPLE)
    for _ in range(10):
        solver.run_iteration()
    m0, n, t0 = rss_bytes(), 0, time.perf_counter()
    while time.perf_counter() - t0 < window:
        for _ in range(20):
            solver.run_iteration()
        n += 20
    dt = time.perf_counter() - t0
    peer = {"iterations_per_s": n / dt, "rss_growth_bytes_per_s": (rss_bytes() - m0) / dt}
    res = {
        "machine": machine(),
        "window_s": window,
        "ours": ours,
        "openspiel": peer,
        "speedup": ours["iterations_per_s"] / peer["iterations_per_s"],
    }
    print(
        f"ours:      {ours['iterations_per_s']:12,.0f} iterations/s  {ours['node_visits_per_s']:14,.0f} node visits/s"
    )
    print(
        f"OpenSpiel: {peer['iterations_per_s']:12,.0f} iterations/s  memory +{peer['rss_growth_bytes_per_s'] / 1e6:.1f} MB/s"
    )
    print(f"speed-up: {res['speedup']:.1f}x")
    return res


def cmd_lookup(window: float = 40.0, rounds: int = 8) -> dict:
    """Cost of the card-abstraction tables in the hot loop: the same tree and kernel with the
    ``rank`` bucketing (a handful of evaluator calls per deal, no tables) and with the ``small``
    recipe (isomorphism index + table read per seat and round), alternating ``rounds`` windows
    each; rates per CPU second of this process (``time.process_time``), the best window of each,
    and the load average before and after."""
    from blueprint.trainer import make_trainer

    res = {"load_before": os.getloadavg()}
    trainers = {
        name: make_trainer("hunl100", bets="small", cards=name, algo="pluribus") for name in ("rank", "small")
    }
    for tr in trainers.values():
        tr.run(500)
    rates = {name: [] for name in trainers}
    for _ in range(rounds):
        for name, tr in trainers.items():
            it0, t0 = tr.iteration, time.process_time()
            tr.run_for(window / rounds)
            rates[name].append((tr.iteration - it0) / (time.process_time() - t0))
    for name in trainers:
        res[name] = max(rates[name])
    res["table_cost"] = 1.0 - res["small"] / res["rank"]
    # each small window against the rank window just before it: the pairs share the load
    pairs = sorted(1.0 - s / r for r, s in zip(rates["rank"], rates["small"]))
    res["table_cost_median_pair"] = (
        pairs[len(pairs) // 2]
        if len(pairs) % 2
        else 0.5 * (pairs[len(pairs) // 2 - 1] + pairs[len(pairs) // 2])
    )
    res["load_after"] = os.getloadavg()
    print(f"rank buckets:  {res['rank']:12,.0f} iterations per CPU second (best window)")
    print(f"small tables:  {res['small']:12,.0f} iterations per CPU second (best window)")
    print(
        f"cost of the tables: {100 * res['table_cost']:.1f}% (best windows), "
        f"{100 * res['table_cost_median_pair']:.1f}% (median of {len(pairs)} adjacent pairs)"
    )
    print(f"load average before {res['load_before']}, after {res['load_after']}")
    return {"machine": machine(), **res, "all": rates}


def cmd_prefetch(window: float = 5.0, rounds: int = 5) -> dict:
    """The kernel's prefetch of each node's children's rows (``ESOptions.prefetch``) on and off,
    on one trainer per configuration (hunl100; ``CARDS[:BETS][:THREADS]`` arguments, default the
    main job's ``fine`` cards, ``small`` cards, and ``small`` cards with ``standard`` bets, one
    thread), alternating ``window``-second windows ``rounds`` times so both see the same load and
    the same point of training; node visits/s per window, the ratio of each pair and of the best
    windows. The switch is :data:`blueprint.trainer.PREFETCH_MIN_ENTRIES` (the default turns it on
    from that many table entries)."""
    import blueprint.trainer as trainer_module
    from blueprint.trainer import make_trainer

    specs = sys.argv[2:] or ["fine", "small", "small:standard"]
    default_min = trainer_module.PREFETCH_MIN_ENTRIES
    rows = []
    try:
        for spec in specs:
            cards, bets, threads = (spec.split(":") + ["", ""])[:3]
            tr = make_trainer(
                "hunl100",
                bets=bets or "small",
                cards=cards or None,
                algo="pluribus",
                threads=int(threads or 1),
            )
            tr.run(30_000)  # past the pruning warm-up's first spans and the kernels' compilation
            rates: dict[str, list[float]] = {"off": [], "on": []}
            for _ in range(rounds):
                for arm, at in (("off", 1 << 62), ("on", 0)):
                    trainer_module.PREFETCH_MIN_ENTRIES = at
                    v0, t0 = tr.node_visits, time.perf_counter()
                    tr.run_for(window)
                    rates[arm].append((tr.node_visits - v0) / (time.perf_counter() - t0))
            pairs = sorted(on / off for on, off in zip(rates["on"], rates["off"]))
            row = {
                "cards": cards or "fine",
                "bets": bets or "small",
                "threads": int(threads or 1),
                "entries": tr.size,
                "default_on": tr.size >= default_min,
                "off_best": max(rates["off"]),
                "on_best": max(rates["on"]),
                "ratio_best": max(rates["on"]) / max(rates["off"]),
                "ratio_median_pair": pairs[len(pairs) // 2],
                "all": rates,
            }
            rows.append(row)
            print(
                f"{row['cards']:>10s} {row['bets']:>9s} {row['threads']:2d} thr {row['entries']:>10,d} entries: "
                f"off {row['off_best'] / 1e6:6.2f}M on {row['on_best'] / 1e6:6.2f}M visits/s, best {row['ratio_best']:.2f}x, "
                f"median pair {row['ratio_median_pair']:.2f}x (default {'on' if row['default_on'] else 'off'})",
                flush=True,
            )
    finally:
        trainer_module.PREFETCH_MIN_ENTRIES = default_min
    return {"machine": machine(), "window_s": window, "rounds": rounds, "rows": rows}


def cmd_lookup_kernel(deals: int = 1_000_000, rounds: int = 4) -> dict:
    """``deal_buckets`` with the ``small`` tables on random ``hunl100`` deals, against the order
    it replaced (each seat and round: index, then read the entry at once), in one process:
    mismatches over 2M deals and CPU nanoseconds per deal, alternating ``rounds`` times."""
    import numba
    import numpy as np

    from abstraction.cards import deal_buckets, default_card_abstraction
    from abstraction.isomorphism import iso_index_masks
    from blueprint.kernels import sample_deal
    from holdem.evaluator import card_bit, rank_hand
    from holdem.gamedef import load_gamedef

    @numba.njit
    def sequential(deal, board_per_round, out, work, iso, table, offsets):
        num_rounds = board_per_round.shape[0]
        s = np.zeros(2, np.int64)
        for p in range(2):
            for i in range(2):
                work[i] = deal[2 * p + i]
            for i in range(5):
                work[2 + i] = deal[4 + i]
            s[p] = rank_hand(work, 7, 4, 13)
            hole_m = card_bit(work[0], 4) | card_bit(work[1], 4)
            board_m = np.int64(0)
            pos = 2
            for r in range(num_rounds):
                for i in range(board_per_round[r]):
                    board_m |= card_bit(work[pos], 4)
                    pos += 1
                if r == 0:
                    out[p, 0] = table[offsets[num_rounds] + work[0] * 52 + work[1]]
                else:
                    out[p, r] = table[offsets[r] + iso_index_masks(iso, r, hole_m, board_m, 0, 0, 0)]
        return 0 if s[0] > s[1] else 1 if s[1] > s[0] else -1

    @numba.njit
    def loop(which, n, kind, bpr, iso, table, offsets, seed, check):
        rng = np.array([seed, 12345, 777, 99], np.uint64)
        perm = np.empty(52, np.int64)
        deal = np.empty(9, np.int64)
        out = np.zeros((2, 4), np.int64)
        out2 = np.zeros((2, 4), np.int64)
        work = np.empty(20, np.int64)
        acc = 0
        for _ in range(n):
            sample_deal(rng, perm, 52, deal)
            if check:
                w1 = deal_buckets(kind, deal, 2, bpr, 52, 4, 13, out, work, iso, table, offsets)
                w2 = sequential(deal, bpr, out2, work, iso, table, offsets)
                acc += w1 != w2
                for p in range(2):
                    for r in range(4):
                        acc += out[p, r] != out2[p, r]
                continue
            if which == 0:
                acc += sequential(deal, bpr, out, work, iso, table, offsets)
            else:
                acc += deal_buckets(kind, deal, 2, bpr, 52, 4, 13, out, work, iso, table, offsets)
            acc += out[0, 3] + out[1, 2] + out[0, 1] + out[1, 0]
        return acc

    g = load_gamedef("hunl100")
    kind, iso, table, offsets = default_card_abstraction(g, "small").kernel_args()
    bpr = np.array(g.num_board_cards, np.int64)
    res = {
        "load_before": os.getloadavg(),
        "mismatches": int(loop(0, 2_000_000, kind, bpr, iso, table, offsets, 3, True)),
    }
    ns = {"sequential": [], "prefetched": []}
    for rep in range(rounds):
        for which, name in enumerate(ns):
            t0 = time.process_time()
            loop(which, deals, kind, bpr, iso, table, offsets, rep + 7, False)
            ns[name].append((time.process_time() - t0) * 1e9 / deals)
    res.update({k: min(v) for k, v in ns.items()}, all=ns, load_after=os.getloadavg())
    res["ratio"] = res["prefetched"] / res["sequential"]
    print(f"mismatches over 2,000,000 deals: {res['mismatches']}")
    print(
        f"CPU ns per deal (best of {rounds}): sequential {res['sequential']:.0f}, prefetched {res['prefetched']:.0f} "
        f"(ratio {res['ratio']:.3f}); load {res['load_before']} -> {res['load_after']}"
    )
    return {"machine": machine(), **res}


def cmd_memory() -> dict:
    from blueprint.trainer import make_trainer

    rows = []
    for game, bets, cards in (("hunl", "fcpa", "rank"), ("hunl", "standard", "rank"), ("leduc", None, None)):
        tr = make_trainer(game, bets=bets, cards=cards, algo="pluribus")
        tree_bytes = sum(a.nbytes for a in tr.tree.arrays().values())
        table = tr.regret.nbytes + tr.strat.nbytes
        meta = tr.row_offset.nbytes
        rows.append(
            {
                "game": game,
                "bets": bets or "limit",
                "cards": tr.cards.name,
                "entries": tr.size,
                "table_bytes_per_entry": table / tr.size,
                "with_offsets": (table + meta) / tr.size,
                "with_tree": (table + meta + tree_bytes) / tr.size,
            }
        )
    print(f"{'game':8s}{'bets':10s}{'cards':10s}{'entries':>12s}{'tables':>9s}{'+offsets':>10s}{'+tree':>9s}")
    for r in rows:
        print(
            f"{r['game']:8s}{r['bets']:10s}{r['cards']:10s}{r['entries']:12,d}{r['table_bytes_per_entry']:9.3f}"
            f"{r['with_offsets']:10.3f}{r['with_tree']:9.3f}"
        )
    return {"machine": machine(), "rows": rows}


if __name__ == "__main__":
    configure()  # numba's cache, before the project's kernels load (docs/training.md)
    which = sys.argv[1] if len(sys.argv) > 1 else "leduc"
    fn = {
        "leduc": cmd_leduc,
        "hunl": cmd_hunl,
        "memory": cmd_memory,
        "lookup": cmd_lookup,
        "lookup-kernel": cmd_lookup_kernel,
        "prefetch": cmd_prefetch,
    }[which]
    print(json.dumps(fn()))
