"""The Kuhn walkthrough: the hand-worked first iteration, exactly, and convergence to -1/18.

The example (``examples/kuhn_walkthrough.py``) runs the production full-traversal CFR kernel;
these tests check its figures against the classic tutorial numbers and the exact per-information-
set values of :mod:`examples.walkthrough` against the kernel's own regret increments.
"""

import importlib.util
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

from blueprint.trainer import make_trainer
from examples.walkthrough import DealSet, betting_words, info_set_values, info_sets, set_current_strategy

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kuhn_walkthrough.py"


@pytest.fixture(scope="module")
def ex():
    spec = importlib.util.spec_from_file_location("kuhn_walkthrough", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def run(ex):
    lines = []
    result = ex.walkthrough(iterations=5000, algo="cfr", out=lines.append)
    result["lines"] = lines
    return result


def entries(tr, ex, betting: str, card: str) -> slice:
    n = ex.node_by_betting(tr)[betting]
    s = int(tr.row_offset[n]) + ex.bucket_of(tr, card) * 2
    return slice(s, s + 2)


# the first player's root, actions (check, bet): tutorial figures, ordered (bet, check) there
TUTORIAL = {
    "K": {"values": (F(3, 2), F(5, 4)), "mixed": F(4, 3), "check_regret": F(1, 6)},
    "Q": {"values": (F(-1, 3), F(-1, 2)), "mixed": F(-5, 12), "check_regret": F(1, 12)},
    "J": {"values": (F(-1), F(-5, 4)), "mixed": F(-13, 12), "check_regret": F(1, 12)},
}


@pytest.mark.parametrize("card", ["K", "Q", "J"])
def test_first_player_values_match_the_hand_worked_case(run, ex, card):
    tr, step = run["trainer"], run["step"]
    v = step.before
    s = entries(tr, ex, "", card)
    want = TUTORIAL[card]
    assert v.conditional()[s] == pytest.approx([float(x) for x in want["values"]], abs=1e-12)
    assert v.conditional_mixed()[s][0] == pytest.approx(float(want["mixed"]), abs=1e-12)
    regret = v.conditional()[s] - v.conditional_mixed()[s]
    assert regret[0] == pytest.approx(float(want["check_regret"]), abs=1e-12)
    # counterfactual: times the chance probability 1/3 of holding the card
    assert v.reach[s][0] == pytest.approx(1 / 3, abs=1e-15)
    assert v.action_cfv[s] == pytest.approx([float(x / 3) for x in want["values"]], abs=1e-12)
    assert v.regret[s][0] == pytest.approx(float(want["check_regret"] / 3), abs=1e-12)
    # the kernel added exactly these regrets (float32 table)
    assert step.regret_delta[s] == pytest.approx(v.regret[s], abs=1e-6)


def test_starting_strategy_is_the_hand_worked_one(run, ex):
    tr, v = run["trainer"], run["step"].before
    for betting, by_card in ex.HAND_WORKED.items():
        for card, p in by_card.items():
            assert v.probs[entries(tr, ex, betting, card)] == pytest.approx(
                [float(1 - p), float(p)], abs=1e-15
            )


def test_kernel_increments_equal_exact_cf_regrets_for_both_seats(run):
    tr, step = run["trainer"], run["step"]
    for seat in (0, 1):
        vals = step.values_for(seat)
        for n, b in info_sets(tr.tree, tr.num_buckets, seat):
            s = slice(int(tr.row_offset[n]) + 2 * b, int(tr.row_offset[n]) + 2 * b + 2)
            assert step.regret_delta[s] == pytest.approx(vals.regret[s], abs=1e-6), (seat, n, b)
            # a counterfactual regret vector has mean zero under the strategy
            assert float(vals.probs[s] @ vals.regret[s]) == pytest.approx(0.0, abs=1e-12)


def test_labels_and_order(run, ex):
    tr = run["trainer"]
    first = [ex.label(tr, n, b) for n, b in info_sets(tr.tree, tr.num_buckets, 0)]
    second = [ex.label(tr, n, b) for n, b in info_sets(tr.tree, tr.num_buckets, 1)]
    assert first == ["K", "Q", "J", "K/check/bet", "Q/check/bet", "J/check/bet"]
    assert sorted(second) == sorted(["K/bet", "Q/bet", "J/bet", "K/check", "Q/check", "J/check"])
    text = "\n".join(run["lines"])
    assert "(3/2, 5/4)" in text and "-13/12" in text and "(1/6, -1/12)" in text


def test_converges_to_the_value_minus_one_eighteenth(run, ex):
    tr, avg = run["trainer"], run["average"]
    assert tr.iteration == 5000
    assert run["value"] == pytest.approx(-1 / 18, abs=1e-3)
    assert run["exploitability"] < 2e-3
    # Kuhn's equilibrium family: bet K = 3 alpha, call Q after check-bet = alpha + 1/3
    alpha = run["alpha"]
    assert 0 <= alpha <= 1 / 3 + 0.01
    assert avg[entries(tr, ex, "", "K")][1] == pytest.approx(3 * alpha, abs=0.02)
    assert avg[entries(tr, ex, "cr", "Q")][1] == pytest.approx(alpha + 1 / 3, abs=0.02)
    # the second player's equilibrium strategy is unique
    assert avg[entries(tr, ex, "c", "J")][1] == pytest.approx(1 / 3, abs=0.02)
    assert avg[entries(tr, ex, "r", "Q")][1] == pytest.approx(1 / 3, abs=0.02)


def test_exact_values_agree_with_expected_value_and_are_general():
    """The per-information-set routine on Leduc: game value = the evaluator's, and every
    information set's counterfactual regrets average to zero under the strategy."""
    from blueprint.best_response import expected_value

    tr = make_trainer("leduc", algo="cfr")
    rng = np.random.default_rng(0)
    tr.regret[:] = rng.random(tr.size).astype(np.float32)
    deals = DealSet(tr.game, tr.cards)
    probs = tr.current_strategy()
    vals = info_set_values(tr.tree, deals, tr.row_offset, probs)
    assert vals.value == pytest.approx(expected_value(tr.tree, tr.cards, tr.row_offset, probs), abs=1e-12)
    # at the root the first player's reach is chance alone: the root's cf values sum to the value
    n0 = 0
    na = int(tr.tree.num_actions[n0])
    root = slice(0, int(tr.num_buckets[0]) * na)
    assert vals.cfv[root].reshape(-1, na)[:, 0].sum() == pytest.approx(vals.value, abs=1e-12)
    assert vals.reach[root].reshape(-1, na)[:, 0].sum() == pytest.approx(1.0, abs=1e-12)
    assert betting_words(tr.tree, int(tr.tree.edge_child[tr.tree.child_start[0] + 1])) == ["bet"]


def test_set_current_strategy_validates():
    tr = make_trainer("kuhn", algo="cfr")
    with pytest.raises(ValueError, match="2 probabilities"):
        set_current_strategy(tr, {(0, 0): [1.0]})
    with pytest.raises(ValueError, match="not an information set"):
        set_current_strategy(tr, {(3, 0): [0.5, 0.5]})
