"""Regret matching on rock-paper-scissors, with the production regret-matching kernel.

Run it from the repository root::

    python examples/rps.py [--iterations N]

It prints four tables, each checked by ``tests/blueprint/test_matrix.py``:

1. Rock-paper-scissors from a skewed start: the *average* strategies of both players go to
   (1/3, 1/3, 1/3) and the value to 0, while the current strategies keep cycling.
2. The variant where rock beats scissors for 3 (row payoffs rock (0, -1, 3), paper (1, 0, -1),
   scissors (-1, 1, 0)): the averages go to row (1/5, 7/15, 1/3), column (1/3, 7/15, 1/5), value
   2/15 (every pure reply to the equilibrium earns exactly 2/15).
3. One hand-worked step of that variant from cumulative regrets (1, 1, 1): standard regret
   matching (add the instantaneous regrets) and the variant of some course notes that adds only
   their positive parts.
4. A fixed opponent (0.4, 0.3, 0.3) at rock-paper-scissors: the learner's average goes to the
   best response (all paper) and its reward to 0.1.

The same runs are available as ``mccfr matrix examples/rps.csv`` and
``mccfr matrix examples/rps_variant.csv`` (``--positive-only``, ``--json``).
"""

from __future__ import annotations

import argparse
from fractions import Fraction

import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.matrix import MatrixGame, RegretMatching, report_points

ACTIONS = ("rock", "paper", "scissors")
RPS = MatrixGame(np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], float), "rock-paper-scissors")
RPS3 = MatrixGame(np.array([[0, -1, 3], [1, 0, -1], [-1, 1, 0]], float), "rock beats scissors for 3")


def fmt(p) -> str:
    return "(" + ", ".join(f"{v:.4f}" for v in p) + ")"


def frac(p, max_den: int = 1000) -> str:
    return "(" + ", ".join(str(Fraction(float(v)).limit_denominator(max_den)) for v in p) + ")"


def convergence_table(title: str, rm: RegretMatching, iterations: int) -> None:
    print(f"\n{title}")
    print(
        f"{'iteration':>10}  {'row average':<28}  {'column average':<28}  {'value':>9}  {'exploitability':>14}"
    )

    def row(r: RegretMatching) -> None:
        s = r.summary()
        print(
            f"{s['iterations']:>10,}  {fmt(s['row']):<28}  {fmt(s['column']):<28}  {s['value']:>+9.5f}  "
            f"{s['exploitability']:>14.6f}"
        )

    rm.run(iterations, callback=row, report_at=report_points(iterations, per_decade=1))
    print(
        f"{'':>10}  current strategies at the end: row {fmt(rm.current_strategies()[0])}, "
        f"column {fmt(rm.current_strategies()[1])}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=1_000_000)
    args = ap.parse_args()

    print("Row player's payoffs (rows and columns: " + ", ".join(ACTIONS) + ")")
    for g in (RPS, RPS3):
        print(f"  {g.source}: " + "; ".join(fmt(r) for r in g.payoff))

    convergence_table(
        "1. Rock-paper-scissors, cumulative regrets starting at row (5, 0, 0), column (0, 0, 3)",
        RegretMatching(RPS, initial_regret=([5.0, 0, 0], [0, 0, 3.0])),
        args.iterations,
    )
    rm = RegretMatching(RPS3)
    convergence_table(
        "2. Rock beats scissors for 3 (equilibrium row (1/5, 7/15, 1/3), column (1/3, 7/15, 1/5),"
        " value 2/15)",
        rm,
        args.iterations,
    )
    x, y = rm.average_strategies()
    print(
        f"{'':>10}  as fractions: row {frac(x, 20)}, column {frac(y, 20)}, value "
        f"{Fraction(rm.value()).limit_denominator(20)}"
    )

    print("\n3. One step of the variant from cumulative regrets (1, 1, 1) for both players")
    print(f"   {'update':<34} {'row strategy':<24} {'column strategy':<24}")
    for positive_only, name in ((False, "standard (R += r)"), (True, "positive-only (R += max(r, 0))")):
        rm = RegretMatching(RPS3, positive_only=positive_only, initial_regret=([1, 1, 1], [1, 1, 1]))
        rm.run(1)
        x, y = rm.current_strategies()
        print(f"   {name:<34} {frac(x):<24} {frac(y):<24}")

    print("\n4. Learner against a fixed opponent (0.4, 0.3, 0.3) at rock-paper-scissors")
    print(f"{'iteration':>10}  {'learner average':<28}  {'expected reward':>15}")
    rm = RegretMatching(RPS, fixed_column=[0.4, 0.3, 0.3])

    def line(r: RegretMatching) -> None:
        print(f"{r.iteration:>10,}  {fmt(r.average_strategies()[0]):<28}  {r.value():>+15.5f}")

    rm.run(100_000, callback=line, report_at=report_points(100_000, per_decade=1))
    print(f"{'':>10}  best response: paper, reward {RPS.payoff[1] @ np.array([0.4, 0.3, 0.3]):+.1f}")


if __name__ == "__main__":
    main()
