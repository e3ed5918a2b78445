"""Kernels compiled without numba's reference counting (``_nrt=False``: the sampling loop, the
deal's buckets, the N-seat payoffs, the N-seat search, the subgame solver's terminal values) stay safe: none returns an array or a
record of arrays (the caller would count down a reference it never got, and free the array under
its owner). Compiled from a clean cache in a child process, so that every such kernel is typed
here rather than loaded with its callers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, sys
    ROOT = sys.argv[1]
    import numba
    from numba.core import types
    from numba.core.registry import CPUDispatcher
    from mccfr_util.numba_cache import configure
    configure()
    from blueprint.blueprint import Blueprint
    from blueprint.player import self_play_states
    from blueprint.trainer import make_trainer
    from subgame.multiway import MultiwaySearch, SearchConfig

    for game, algo in (("leduc", "vanilla"), ("leduc", "dcfr"), ("leduc.limit.3p", "linear")):
        tr = make_trainer(game, algo=algo, seed=0)
        tr.run(300)
    bp = Blueprint(tr)
    import numpy as np
    from blueprint.kernels import discount_tables
    discount_tables(np.ones(4, np.float32), np.ones(4, np.float32), 1.0, 0.5, 1.0, False)
    # threads on copies (a vanilla run's table of 396,201 entries; copies from 2 threads here): merge_copy
    import blueprint.threads
    blueprint.threads.COPY_MIN_THREADS = 2
    cp = make_trainer("hunl", bets="fcpa", cards="rank", algo="vanilla", seed=0, threads=2)
    cp.run(40_000)
    ms = MultiwaySearch(bp, SearchConfig(iterations=50, from_round=0))
    for m in self_play_states(bp.game, 20, 0, bp.strategy)[:3]:
        ms.answer(m)

    from subgame.libratus import read_libratus
    from subgame.nested import solve_state
    from subgame.solver import solve
    solve(read_libratus(ROOT + "/tests/data/libratus/subgame4.txt"), method="unsafe", iterations=2)
    tr = make_trainer("hunl20", bets="small", cards="rank", algo="pluribus", seed=1)
    tr.run(1000)
    hu = Blueprint(tr)
    turn = [m for m in self_play_states(hu.game, 400, 0, hu.strategy) if hu.game.state(m).round == 2]
    solve_state(hu, turn[0], "reach-maxmargin", time_budget=None, iterations=1)

    PACKAGES = ("holdem", "abstraction", "blueprint", "subgame", "mccfr", "cluster")
    found = {}
    for name, mod in list(sys.modules.items()):
        if not name.split(".")[0] in PACKAGES:
            continue
        for attr, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.targetoptions.get("_nrt") is False:
                inline = obj.targetoptions.get("inline", "never") == "always"
                rets = [str(c.signature.return_type) for c in obj.overloads.values()]
                bad = [
                    r for c in obj.overloads.values()
                    for r in [c.signature.return_type]
                    if not isinstance(r, (types.Number, types.Boolean, types.NoneType))
                ]
                found[f"{obj.py_func.__module__}.{obj.__name__}"] = {
                    "inline": inline, "returns": rets, "bad": [str(b) for b in bad],
                }
    print(json.dumps(found))
    """
)


@pytest.mark.slow
def test_kernels_without_reference_counting_return_no_arrays(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # the sampling path and the search are among them (the test would pass on an empty list)
    for name in (
        "blueprint.kernels._es_loop",
        "abstraction.cards.deal_buckets",
        "abstraction.cards.card_buckets_n",
        "blueprint.payoffs.nseat_utility",
        "subgame.multiway_kernels.search_iterations",
        "subgame.multiway_kernels.rollout",
        "blueprint.range_kernels.showdown_values",
        "subgame.kernels._terminal",
        "blueprint.kernels.merge_copy",
    ):
        assert name in found, sorted(found)
    for name, info in found.items():
        if info["inline"]:
            continue  # inlined into its caller, under the caller's counting
        assert info["returns"], f"{name} was never compiled here, so its return type is unchecked"
        assert not info["bad"], f"{name} returns {info['bad']} without reference counting"
