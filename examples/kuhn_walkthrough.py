"""CFR on Kuhn poker, step by step, with the production full-traversal kernel.

Run it from the repository root::

    python examples/kuhn_walkthrough.py [--iterations N] [--algo cfr|cfr+]

Kuhn poker (Kuhn 1950): three cards J < Q < K (ACPC writes them ``2c 3c 4c``), one card each, an
ante of 1, one betting round with at most one bet of 1. The first player checks or bets; after a
check the second player checks or bets, after a bet it folds or calls; after check-bet the first
player folds or calls.

What it prints:

1. The starting strategy, a hand-worked case from the classic tutorials. First player: bet K 2/3,
   Q 1/2, J 1/3; call after check-bet K 1, Q 1/2, J 0. Second player: call a bet K 1, Q 1/2, J 0;
   bet after a check K 1, Q 2/3, J 1/3. The trainer's regrets are set so that regret matching
   yields exactly this strategy (regret = 6 x probability).
2. The first CFR iteration per information set: the action values conditioned on the information
   set (the expected payoff given what the player knows), the mixed value under the strategy,
   the counterfactual values (the same times chance x opponent reach; 1/3 at the first player's
   first decision), and the counterfactual regrets, next to the increments the kernel actually
   added to its regret table. For the first player the tutorial's numbers appear: action values
   (bet, check) K (5/4, 3/2), Q (-1/2, -1/3), J (-5/4, -1), mixed values 4/3, -5/12, -13/12,
   regrets of checking 1/6, 1/12, 1/12. The kernel updates the players in turn (alternating
   updates, as OpenSpiel's CFR): the second player's values are against the first player's
   *updated* strategy.
3. The strategy after N iterations: the average strategy per information set, the game value
   (-1/18 for the first player at every equilibrium) and the exploitability (NashConv / 2).
   Kuhn's equilibria form a family with a parameter alpha = P(first player bets J) in [0, 1/3]:
   bet K with 3 alpha, call with Q after check-bet with alpha + 1/3; the second player's
   equilibrium strategy is unique (bet J after a check 1/3, call a bet with Q 1/3).

Checked by ``tests/blueprint/test_kuhn_walkthrough.py``.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/ is not an installed package

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.best_response import expected_value
from blueprint.blueprint import hand_bucket
from blueprint.trainer import make_trainer
from examples.walkthrough import (
    DealSet,
    action_words,
    betting_words,
    first_iteration,
    info_sets,
    set_current_strategy,
)

CARD = {"J": 0, "Q": 1, "K": 2}  # Kuhn's ranks 2 3 4
NAME = {v: k for k, v in CARD.items()}

# The hand-worked starting strategy: (betting so far, card) -> probability of the aggressive action
# (bet after no bet, call when facing one).
HAND_WORKED = {
    "": {"K": Fraction(2, 3), "Q": Fraction(1, 2), "J": Fraction(1, 3)},  # first player bets
    "cr": {"K": Fraction(1), "Q": Fraction(1, 2), "J": Fraction(0)},  # first player calls
    "r": {"K": Fraction(1), "Q": Fraction(1, 2), "J": Fraction(0)},  # second player calls
    "c": {"K": Fraction(1), "Q": Fraction(2, 3), "J": Fraction(1, 3)},  # second player bets
}


def node_by_betting(tr) -> dict[str, int]:
    return {tr.tree.betting_string(int(n)): int(n) for n in tr.tree.decision_nodes()}


def bucket_of(tr, card: str) -> int:
    return hand_bucket(tr.cards, tr.game, (CARD[card] * tr.game.num_suits,), (), 0)


def hand_worked_strategy(tr) -> dict[tuple[int, int], list[float]]:
    """``(node, bucket) -> probabilities`` in the tree's action order (passive action first)."""
    nodes = node_by_betting(tr)
    out = {}
    for betting, by_card in HAND_WORKED.items():
        n = nodes[betting]
        for card, p in by_card.items():
            out[(n, bucket_of(tr, card))] = [float(1 - p), float(p)]
    return out


def label(tr, n: int, b: int) -> str:
    card = NAME[b]  # lossless Kuhn bucket = the card (one suit)
    return "/".join([card] + betting_words(tr.tree, n))


def show(x: float, tol: float = 1e-9, max_den: int = 72) -> str:
    """A value as a small fraction when it is one (within ``tol``), else a decimal."""
    if np.isnan(x):
        return "-"
    f = Fraction(x).limit_denominator(max_den)
    return str(f) if abs(float(f) - x) < tol else f"{x:.4f}"


def pair(xs, tol: float = 1e-9) -> str:
    return "(" + ", ".join(show(float(v), tol) for v in xs) + ")"


def iteration_table(tr, step, seat: int, out=print) -> None:
    vals = step.values_for(seat)
    cond, mixed = vals.conditional(), vals.conditional_mixed()
    who = "first" if seat == 0 else "second"
    against = "" if seat == 0 else " (against the first player's updated strategy)"
    out(f"\n{who.capitalize()} player, iteration 1{against}")
    head = (
        f"  {'info set':<12} {'actions':<11} {'strategy':<11} {'action values':<18} {'mixed':>7}  "
        f"{'regrets':<17} {'reach':>6}  {'cf values':<18} {'cf regrets':<17} {'kernel increments':<17}"
    )
    out(head)
    for n, b in info_sets(tr.tree, tr.num_buckets, seat):
        na = int(tr.tree.num_actions[n])
        s = slice(int(tr.row_offset[n]) + b * na, int(tr.row_offset[n]) + (b + 1) * na)
        out(
            f"  {label(tr, n, b):<12} {'/'.join(action_words(tr.tree, n)):<11} {pair(vals.probs[s]):<11} "
            f"{pair(cond[s]):<18} {show(float(mixed[s][0])):>7}  {pair(cond[s] - mixed[s]):<17} "
            f"{show(float(vals.reach[s][0])):>6}  {pair(vals.action_cfv[s]):<18} {pair(vals.regret[s]):<17} "
            f"{pair(step.regret_delta[s], 1e-6):<17}"
        )


def strategy_table(tr, probs, out=print) -> None:
    out(f"  {'info set':<12} {'actions':<14} {'average strategy':<20}")
    for seat in (0, 1):
        for n, b in info_sets(tr.tree, tr.num_buckets, seat):
            na = int(tr.tree.num_actions[n])
            s = int(tr.row_offset[n]) + b * na
            p = probs[s : s + na]
            out(
                f"  {label(tr, n, b):<12} {'/'.join(action_words(tr.tree, n)):<14} "
                f"({', '.join(f'{v:.4f}' for v in p)})"
            )


def walkthrough(iterations: int = 10_000, algo: str = "cfr", out=print) -> dict:
    """Run the whole walkthrough, printing with ``out``; returns what the tests check."""
    tr = make_trainer("kuhn", algo=algo)
    deals = DealSet(tr.game, tr.cards)
    set_current_strategy(tr, hand_worked_strategy(tr), scale=6.0)
    out(f"Kuhn poker, {algo} (production full-traversal kernel), {len(deals.deals)} deals")
    out("\n1-2. The hand-worked starting strategy and the first iteration")
    out(
        "  action values and regrets are conditioned on the information set (regret = action value - mixed "
        "value);\n  cf values and cf regrets are those times the reach (chance x opponent reach); the kernel adds "
        "the cf regrets\n  to its float32 regret table (its increments are shown as fractions within 1e-6)"
    )
    step = first_iteration(tr, deals)
    iteration_table(tr, step, 0, out)
    iteration_table(tr, step, 1, out)

    tr.run(iterations - 1)
    avg = tr.average_strategy()
    value = expected_value(tr.tree, tr.cards, tr.row_offset, avg)
    expl, br = tr.exploitability()
    out(f"\n3. After {tr.iteration:,} iterations")
    strategy_table(tr, avg, out)
    nodes = node_by_betting(tr)

    def p_aggressive(betting: str, card: str) -> float:
        n = nodes[betting]
        return float(avg[int(tr.row_offset[n]) + bucket_of(tr, card) * 2 + 1])

    alpha = p_aggressive("", "J")
    out(
        f"  alpha = P(first player bets J) = {alpha:.4f}; bet K {p_aggressive('', 'K'):.4f} "
        f"(3 alpha = {3 * alpha:.4f}); call Q after check-bet {p_aggressive('cr', 'Q'):.4f} "
        f"(alpha + 1/3 = {alpha + 1 / 3:.4f})"
    )
    out(
        f"  second player: bet J after check {p_aggressive('c', 'J'):.4f} (1/3), call a bet with Q "
        f"{p_aggressive('r', 'Q'):.4f} (1/3)"
    )
    out(f"  value for the first player {value:+.6f} (-1/18 = {-1 / 18:+.6f})")
    out(f"  exploitability {expl:.3g} chips (best-response values {br[0]:+.6f}, {br[1]:+.6f})")
    return {
        "trainer": tr,
        "step": step,
        "deals": deals,
        "value": value,
        "exploitability": expl,
        "average": avg,
        "alpha": alpha,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=10_000)
    ap.add_argument("--algo", choices=("cfr", "cfr+"), default="cfr")
    args = ap.parse_args()
    walkthrough(args.iterations, args.algo)


if __name__ == "__main__":
    main()
