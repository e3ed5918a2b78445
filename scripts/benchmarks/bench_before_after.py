"""The main speed figures of two revisions of this repository, measured side by side.

    python scripts/benchmarks/bench_before_after.py BEFORE_REV [AFTER_REV|WORKTREE] [--rounds 5] [--only mccfr-hunl,...]

Each revision is checked out into a temporary git worktree (the working tree itself when AFTER
is ``.``, the default), and every measurement runs in a fresh subprocess whose ``sys.path``
starts at that tree, alternating BEFORE, AFTER, BEFORE, AFTER... for ``--rounds`` rounds, so that
both see the same machine load. Each measurement first warms up (numba compiles or loads its
kernels), then times a fixed amount of work in CPU seconds of the process:

* ``mccfr-hunl``: 200,000 external-sampling MCCFR (``pluribus``) iterations on heads-up no-limit
  ``fcpa`` at 200 big blinds with ``rank`` card buckets (no card tables), one core;
* ``mccfr-leduc``: 2,000,000 of the same on Leduc (lossless buckets);
* ``query``: ``Blueprint.strategy`` on 2,000 match states of self-play of ``hunl20`` (a
  1,000-iteration ``small``-bets blueprint with ``rank`` buckets), each answered 25 times;
* ``solve-river``: the Libratus river endgame ``subgame4`` (unsafe, DCFR, 60 iterations), 30 times;
* ``solve-turn``: the Libratus turn endgame ``subgame2`` (unsafe, DCFR, 20 iterations), one thread;
* ``construct-turn``: depth-limited turn subgames of the ``query`` blueprint (``hunl20``) at 20
  turn decisions of its self-play, each built and solved for one ``reach-maxmargin`` iteration
  (``subgame.nested.solve_state``, the service's call; mostly the construction from the
  blueprint), one thread.

The figure of each measurement is the median over rounds of AFTER / BEFORE throughput (above 1:
AFTER is faster), with both medians. Prints a table and a final JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAMS = {
    "mccfr-hunl": """
        from blueprint.trainer import make_trainer
        tr = make_trainer("hunl", bets="fcpa", cards="rank", algo="pluribus", seed=0)
        tr.run(300)
        t = time.process_time(); tr.run(200_000); cpu = time.process_time() - t
        out(200_000 / cpu, "iterations/s")
    """,
    "mccfr-leduc": """
        from blueprint.trainer import make_trainer
        tr = make_trainer("leduc", algo="pluribus", seed=0)
        tr.run(1_000)
        t = time.process_time(); tr.run(2_000_000); cpu = time.process_time() - t
        out(2_000_000 / cpu, "iterations/s")
    """,
    "query": """
        import numpy as np
        from blueprint.blueprint import Blueprint
        from blueprint.trainer import make_trainer
        from holdem.game import Game
        tr = make_trainer("hunl20", bets="small", cards="rank", algo="pluribus", seed=1)
        tr.run(1_000)
        bp = Blueprint(tr)
        game = Game.load("hunl20")
        states = self_play(bp, game, 2_000)
        for ms in states[:200]:
            bp.strategy(ms)
        t = time.process_time()
        for _ in range(25):
            for ms in states:
                bp.strategy(ms)
        cpu = time.process_time() - t
        out(25 * len(states) / cpu, "answers/s")
    """,
    "solve-river": """
        from subgame.libratus import read_libratus
        from subgame.solver import solve
        sub = read_libratus(ROOT + "/tests/data/libratus/subgame4.txt")
        solve(sub, method="unsafe", iterations=5)
        t = time.process_time()
        for _ in range(30):
            solve(sub, method="unsafe", iterations=60)
        cpu = time.process_time() - t
        out(30 / cpu, "solves/s")
    """,
    "solve-turn": """
        import os
        os.environ["NUMBA_NUM_THREADS"] = "1"  # one core, both revisions (before numba starts)
        from subgame.libratus import read_libratus
        from subgame.solver import solve
        sub = read_libratus(ROOT + "/tests/data/libratus/subgame2.txt")
        solve(sub, method="unsafe", iterations=2)
        t = time.process_time()
        solve(sub, method="unsafe", iterations=20)
        cpu = time.process_time() - t
        out(20 / cpu, "iterations/s")
    """,
    "construct-turn": """
        import os
        os.environ["NUMBA_NUM_THREADS"] = "1"
        import numpy as np
        from blueprint.blueprint import Blueprint
        from blueprint.trainer import make_trainer
        from holdem.game import Game
        from subgame.nested import solve_state
        tr = make_trainer("hunl20", bets="small", cards="rank", algo="pluribus", seed=1)
        tr.run(1_000)
        bp = Blueprint(tr)
        game = Game.load("hunl20")
        states = self_play(bp, game, 20, only_round=2)
        solve_state(bp, states[0], "reach-maxmargin", time_budget=None, iterations=1)
        t = time.process_time()
        for ms in states:
            solve_state(bp, ms, "reach-maxmargin", time_budget=None, iterations=1)
        cpu = time.process_time() - t
        out(len(states) / cpu, "subgames/s")
    """,
}

PRELUDE = """
import json, sys, time
ROOT = sys.argv[1]
sys.path.insert(0, ROOT)
try:  # numba's cache (a revision before mccfr_util set it on `import holdem`)
    from mccfr_util.numba_cache import configure
except ImportError:
    pass
else:
    configure()
def out(value, unit):
    print(json.dumps({"value": value, "unit": unit}))
def self_play(bp, game, n, only_round=None):
    # n match states of the blueprint's self-play (every state on its tree), seed 0
    import numpy as np
    rng = np.random.default_rng(0)
    g = game.gamedef
    states = []
    while len(states) < n:
        deck = rng.permutation(g.deck_size)
        s, i = game.initial_state(hand_id=len(states)), 0
        while not s.is_terminal():
            if s.is_chance():
                k = 2 * g.num_hole_cards if i == 0 else g.board_cards_through(s.round) - len(s.board_cards)
                s = s.deal([int(c) for c in deck[i : i + k]])
                i += k
                continue
            ms = s.matchstate(s.current_player())
            strat = bp.strategy(ms)
            if only_round is None or s.round == only_round:
                states.append(ms)
            acts = list(strat)
            p = np.array([strat[a] for a in acts]) / sum(strat.values())
            s = s.apply(acts[int(rng.choice(len(acts), p=p))])
    return states[:n] if only_round is None else states
"""


def run_one(tree: Path, name: str, env: dict[str, str]) -> float:
    code = PRELUDE + textwrap.dedent(PROGRAMS[name])
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tree)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{name} in {tree} failed:\n{proc.stderr[-3000:]}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["value"])


def worktree(rev: str, tmp: Path) -> Path:
    if rev == ".":
        return ROOT
    path = tmp / rev.replace("/", "_")
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev],
        check=True,
        capture_output=True,
    )
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after", nargs="?", default=".")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=",".join(PROGRAMS))
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    for n in names:
        if n not in PROGRAMS:
            raise SystemExit(f"unknown measurement {n!r}: expected one of {', '.join(PROGRAMS)}")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    tmp = Path(tempfile.mkdtemp(prefix="bench-ba-"))
    trees = {"before": worktree(args.before, tmp), "after": worktree(args.after, tmp)}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results: dict[str, dict] = {}
    try:
        for name in names:
            ratios, vals = [], {"before": [], "after": []}
            for r in range(args.rounds):
                order = ("before", "after") if r % 2 == 0 else ("after", "before")
                got = {side: run_one(trees[side], name, env) for side in order}
                for side in got:
                    vals[side].append(got[side])
                ratios.append(got["after"] / got["before"])
                print(
                    f"{name} round {r + 1}: before {got['before']:.4g} after {got['after']:.4g} "
                    f"ratio {ratios[-1]:.3f}",
                    file=sys.stderr,
                    flush=True,
                )
            results[name] = {
                "before_median": statistics.median(vals["before"]),
                "after_median": statistics.median(vals["after"]),
                "ratio_median": statistics.median(ratios),
                "ratios": ratios,
            }
    finally:
        for side, path in trees.items():
            if path != ROOT:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], capture_output=True
                )
    print(
        f"{args.before} -> {args.after}, {args.rounds} alternating rounds, started {started}, "
        f"load {os.getloadavg()[0]:.1f} at the end"
    )
    print(f"{'measurement':14s} {'before':>12s} {'after':>12s} {'after/before':>13s}")
    for name, r in results.items():
        print(f"{name:14s} {r['before_median']:12.5g} {r['after_median']:12.5g} {r['ratio_median']:13.3f}")
    print(
        json.dumps(
            {
                "before": args.before,
                "after": args.after,
                "rounds": args.rounds,
                "started": started,
                "results": results,
            }
        )
    )


if __name__ == "__main__":
    main()
