"""Node locking and saved solves: a locked river solve's time per iteration against an unlocked one
on the same subgame (interleaved, one process), and the size of a saved turn solve; with
``--run RUN_DIR`` (a hold'em blueprint) also a saved depth-limited turn solve from it.

    python scripts/benchmarks/bench_locking.py [REPS] [ITERATIONS] [--run RUN_DIR]
"""

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from abstraction.tree import KIND_DECISION
from subgame.libratus import read_libratus
from subgame.saved import read_saved, save_solve
from subgame.solver import solve

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "libratus"
argv = sys.argv[1:]
run_dir = None
if "--run" in argv:
    i = argv.index("--run")
    run_dir = argv[i + 1]
    del argv[i : i + 2]
reps = int(argv[0]) if len(argv) > 0 else 5
iters = int(argv[1]) if len(argv) > 1 else 100
river = read_libratus(DATA / "subgame4.txt")
t = river.public_tree()
root = {"": {"c": 0.5, "r3750": 0.5}}
# every decision of seat 0 locked to one frequency vector (uniform over its actions)
seat0 = {}
for n in range(t.num_nodes):
    if t.kind[n] == KIND_DECISION and t.player[n] == 0:
        h = t.betting_string(n)[len(t.betting_string(0)) :]
        acts = t.action_labels(n)
        seat0[h] = {a: 1.0 / len(acts) for a in acts}
cases = {"unlocked": None, "root locked": root, "seat 0 locked everywhere": seat0}
for lk in cases.values():
    solve(river, "unsafe", iterations=2, locks=lk, threads=1)  # compile, warm
per_it = {k: [] for k in cases}
for _ in range(reps):
    for k, lk in cases.items():
        s = solve(river, "unsafe", iterations=iters, locks=lk, threads=1)
        per_it[k].append(s.timing["iter_s"])
base = statistics.median(per_it["unlocked"])
out = {
    k: {
        "ms_per_iteration": round(statistics.median(v) * 1e3, 3),
        "ratio": round(statistics.median(v) / base, 3),
    }
    for k, v in per_it.items()
}
turn = read_libratus(DATA / "subgame2.txt")
t0 = time.perf_counter()
sol = solve(turn, "unsafe", iterations=10, keep_state=True)
solve_s = time.perf_counter() - t0
with tempfile.TemporaryDirectory() as d:
    n = save_solve(Path(d) / "turn.msgpack.lz4", sol)
    t1 = time.perf_counter()
    read_saved(Path(d) / "turn.msgpack.lz4")
    load_s = time.perf_counter() - t1
raw = sol.state.regret.nbytes + sol.state.strat_sum.nbytes
out["turn_saved"] = {
    "bytes": n,
    "table_entries": int(sol.state.regret.size),
    "raw_table_bytes": raw,
    "nodes": int(turn.tree.num_nodes),
    "solve_s_10_iterations": round(solve_s, 2),
    "load_s": round(load_s, 2),
}
if run_dir is not None:
    from blueprint.blueprint import Blueprint
    from subgame.nested import solve_state

    bp = Blueprint.load(run_dir)
    state = bp.game.state("MATCHSTATE:0:0:cc/cc/:AhKd|/2c7d9s/Tc")  # the turn, checked to
    t0 = time.perf_counter()
    sol, _ = solve_state(bp, state, "reach-maxmargin", iterations=10, keep_state=True)
    solve_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "dl.solve"
        n = save_solve(f, sol)
        fresh = Blueprint.load(run_dir)  # its strategy hash not yet computed
        t1 = time.perf_counter()
        back = read_saved(f, blueprint=fresh)
        load_s = time.perf_counter() - t1
        t2 = time.perf_counter()
        solve(back.subgame, back.method, iterations=0, resume=back.state)  # rebuilds the leaves
        reopen_s = time.perf_counter() - t2
    d = sol.diagnostics()
    out["depth_limited_turn_saved"] = {
        "bytes": n,
        "table_entries": int(sol.state.regret.size),
        "leaf_state_bytes": int(
            sol.state.leaf.reg.nbytes + sol.state.leaf.sum.nbytes + sol.state.leaf.pick.nbytes
        ),
        "leaves": d["leaves"],
        "continuation_nodes": d["continuation_nodes"],
        "blueprint_entries": int(bp.probs.size),
        "solve_s_10_iterations": round(solve_s, 2),
        "load_s_with_strategy_hash": round(load_s, 2),
        "reopen_s_leaves_rebuilt_and_measured": round(reopen_s, 2),
    }
print(json.dumps(out))
