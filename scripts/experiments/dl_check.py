"""How far a sampled exploitability check of a depth-limited subgame is from the exact one.

    python scripts/experiments/dl_check.py RUN_DIR [--states 8] [--iterations 30] [--cards 12] [--method reach-maxmargin] [--seed 0]

Turn decisions from self-play of the run's blueprint (the service benchmark's pool) are solved
depth-limited (:func:`subgame.nested.solve_state`) for a fixed number of iterations, twice: with the
exact check (every river card) and with ``solve(..., measure_samples=CARDS)`` (a fixed sample of
the river cards, what ``mccfr serve --solve-from turn`` reports when an exact check would not fit
its budget). The strategy is the same in both (the check does not touch it), so the two figures
measure the same strategy; the table gives both in % of the pot, their ratio and each check's
seconds.
"""

from __future__ import annotations

import argparse
import statistics

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.blueprint import Blueprint
from blueprint.player import self_play_states
from subgame.nested import solve_state
from subgame.tree import SubgameError


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--states", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--cards", type=int, default=12)
    ap.add_argument("--method", default="reach-maxmargin")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    bp = Blueprint.load(a.run_dir)
    game = bp.game
    turn = bp.gamedef.num_rounds - 2
    pool = self_play_states(game, 40 * a.states, a.seed, lambda ms: bp.strategy(ms))
    states = [ms for ms in pool if game.state(ms).round == turn][: a.states]
    print(
        "| turn state | iterations | exact, % pot | sampled, % pot | sampled / exact | exact check s | sampled check s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    ratios = []
    for ms in states:
        try:
            ex, _ = solve_state(bp, ms, a.method, time_budget=None, iterations=a.iterations)
            sa, _ = solve_state(
                bp, ms, a.method, time_budget=None, iterations=a.iterations, measure_samples=a.cards
            )
        except SubgameError as exc:
            print(f"| `{ms}` | skipped: {exc} |||||")
            continue
        r = (
            sa.exploitability_pct_pot / ex.exploitability_pct_pot
            if ex.exploitability_pct_pot
            else float("nan")
        )
        ratios.append(r)
        print(
            f"| `{ms}` | {ex.iterations} | {ex.exploitability_pct_pot:.2f} | {sa.exploitability_pct_pot:.2f} | "
            f"{r:.2f} | {ex.timing['measure_s']:.3f} | {sa.timing['measure_s']:.3f} |",
            flush=True,
        )
    if ratios:
        print(
            f"\nsampled / exact over {len(ratios)} states: median {statistics.median(ratios):.2f}, "
            f"min {min(ratios):.2f}, max {max(ratios):.2f} ({a.cards} cards, {a.method}, {a.iterations} iterations)"
        )


if __name__ == "__main__":
    main()
