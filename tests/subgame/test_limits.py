"""``SolveLimits``: one record for a solve's stop rule, checked when it is made."""

from __future__ import annotations

import math
import threading

import pytest

from subgame.limits import SolveLimits
from subgame.tree import SubgameError


@pytest.mark.parametrize(
    "fields, name",
    [
        ({"time_budget": 0}, "time_budget"),
        ({"time_budget": -1.0}, "time_budget"),
        ({"time_budget": math.nan}, "time_budget"),
        ({"time_budget": math.inf}, "time_budget"),
        ({"time_budget": 1e12}, "time_budget"),
        ({"iterations": -1}, "iterations"),
        ({"iterations": 10**12}, "iterations"),
        ({"iterations": 2.5}, "iterations"),
        ({"iterations": True}, "iterations"),
        ({"target_pct_pot": 0.0}, "target_pct_pot"),
        ({"target_pct_pot": -0.5}, "target_pct_pot"),
        ({"target_pct_pot": math.nan}, "target_pct_pot"),
        ({"deadline": math.nan}, "deadline"),
        ({"threads": 0}, "threads"),
        ({"measure_samples": 1}, "measure_samples"),
        ({"check_every": 0}, "check_every"),
        ({"stop": "now"}, "stop"),
        ({"locks": ["c"]}, "locks"),
        ({"keep_state": 1}, "keep_state"),
        ({"min_iterations": -1}, "min_iterations"),
        ({"min_iterations": 2.5}, "min_iterations"),
        ({"final_check": 1}, "final_check"),
    ],
)
def test_a_bad_limit_is_a_clear_error_naming_the_field(fields, name):
    with pytest.raises(SubgameError, match=name):
        SolveLimits(**fields)
    with pytest.raises(ValueError, match=name):  # a SubgameError is a ValueError
        SolveLimits(**fields)


def test_good_limits_are_kept_and_built_from_keywords():
    stop = threading.Event()
    lim = SolveLimits(iterations=0, time_budget=2, target_pct_pot=0.5, stop=stop, threads=2)
    assert (lim.iterations, lim.time_budget, lim.target_pct_pot, lim.stop) == (0, 2.0, 0.5, stop)
    assert lim.bounded and not SolveLimits().bounded
    base = SolveLimits(time_budget=2.0)
    assert SolveLimits.build(None, base=base, iterations=5) == SolveLimits(time_budget=2.0, iterations=5)
    assert SolveLimits.build(lim) is lim and SolveLimits.build(None, base=base) is base
    assert SolveLimits.build(lim, time_budget=None).time_budget is None
    with pytest.raises(TypeError, match="budget_s"):
        SolveLimits.build(None, budget_s=1.0)
    with pytest.raises(SubgameError, match="time_budget"):
        SolveLimits.build(base, time_budget=0)


def test_the_solvers_check_their_limits_before_solving():
    from subgame import solve, solve_state

    with pytest.raises(SubgameError, match="time_budget"):
        solve(None, "unsafe", time_budget=0)  # refused before the subgame is looked at
    with pytest.raises(SubgameError, match="iterations"):
        solve_state(None, "MATCHSTATE:0:0::AsAh|", "unsafe", iterations=-3)
    with pytest.raises(TypeError, match="itterations"):
        solve(None, "unsafe", itterations=3)


def test_without_the_final_check_the_strategy_is_the_same_and_unmeasured():
    """``final_check=False`` (what evaluation's solving players ask): the same strategy, bit for
    bit, without the exploitability check after the last iteration."""
    from pathlib import Path

    import numpy as np

    from subgame import read_libratus, solve

    sub = read_libratus(Path(__file__).resolve().parents[1] / "data" / "libratus" / "subgame4.txt")
    checked = solve(sub, "unsafe", iterations=12)
    bare = solve(sub, "unsafe", iterations=12, final_check=False)
    assert bare.iterations == checked.iterations == 12
    assert np.array_equal(bare.strategy, checked.strategy)
    assert checked.exploitability is not None and checked.timing["measure_s"] is not None
    assert bare.exploitability is None and bare.timing["measure_s"] is None
