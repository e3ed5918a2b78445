"""Regret matching on matrix games: the classic figures, the hand-worked step, CSV errors."""

from fractions import Fraction as F

import numpy as np
import pytest

from blueprint.matrix import MatrixGame, MatrixGameError, RegretMatching, load_csv, parse_csv, report_points

RPS = [[0, -1, 1], [1, 0, -1], [-1, 1, 0]]
# rock beats scissors for 3: row payoffs of rock, paper, scissors against rock, paper, scissors
RPS3 = [[0, -1, 3], [1, 0, -1], [-1, 1, 0]]


def game(a):
    return MatrixGame(np.array(a, float))


def test_rps_converges_to_uniform_from_a_skewed_start():
    rm = RegretMatching(game(RPS), initial_regret=([5.0, 0, 0], [0, 0, 3.0]))
    rm.run(100_000)
    x, y = rm.average_strategies()
    assert x == pytest.approx([1 / 3] * 3, abs=0.01)
    assert y == pytest.approx([1 / 3] * 3, abs=0.01)
    assert rm.value() == pytest.approx(0.0, abs=0.01)
    assert rm.exploitability() < 0.01


def test_rps_variant_equilibrium_is_exact():
    """x* = (1/5, 7/15, 1/3), y* = (1/3, 7/15, 1/5), value 2/15: every pure reply earns 2/15."""
    a = [[F(v) for v in row] for row in RPS3]
    x = [F(1, 5), F(7, 15), F(1, 3)]
    y = [F(1, 3), F(7, 15), F(1, 5)]
    assert [sum(a[i][j] * y[j] for j in range(3)) for i in range(3)] == [F(2, 15)] * 3
    assert [sum(x[i] * a[i][j] for i in range(3)) for j in range(3)] == [F(2, 15)] * 3
    g = game(RPS3)
    assert g.value(np.array(x, float), np.array(y, float)) == pytest.approx(2 / 15, abs=1e-15)
    assert g.exploitability(np.array(x, float), np.array(y, float)) == pytest.approx(0.0, abs=1e-15)


def test_rps_variant_converges():
    rm = RegretMatching(game(RPS3))
    rm.run(200_000)
    x, y = rm.average_strategies()
    assert x == pytest.approx([1 / 5, 7 / 15, 1 / 3], abs=0.01)
    assert y == pytest.approx([1 / 3, 7 / 15, 1 / 5], abs=0.01)
    assert rm.value() == pytest.approx(2 / 15, abs=0.003)
    assert rm.exploitability() < 0.005


@pytest.mark.parametrize(
    "positive_only, row, col",
    [
        (False, [F(13, 27), F(7, 27), F(7, 27)], [F(11, 27), F(11, 27), F(5, 27)]),
        (True, [F(13, 31), F(9, 31), F(9, 31)], [F(11, 31), F(11, 31), F(9, 31)]),
    ],
)
def test_hand_worked_first_step(positive_only, row, col):
    """From cumulative regrets (1, 1, 1) for both, one iteration of the 3-for-rock variant."""
    rm = RegretMatching(game(RPS3), positive_only=positive_only, initial_regret=([1, 1, 1], [1, 1, 1]))
    assert [float(v) for v in rm.current_strategies()[0]] == pytest.approx([1 / 3] * 3, abs=1e-15)
    rm.run(1)
    x, y = rm.current_strategies()
    assert x == pytest.approx([float(v) for v in row], abs=1e-15)
    assert y == pytest.approx([float(v) for v in col], abs=1e-15)
    # the regrets themselves: u_row = A y = (2/3, 0, 0), x.u = 2/9; u_col = (0, 0, -2/3), y.u = -2/9
    inst_row = np.array([4 / 9, -2 / 9, -2 / 9])
    inst_col = np.array([2 / 9, 2 / 9, -4 / 9])
    if positive_only:
        inst_row, inst_col = np.maximum(inst_row, 0), np.maximum(inst_col, 0)
    assert rm.regret_row == pytest.approx(1 + inst_row, abs=1e-15)
    assert rm.regret_col == pytest.approx(1 + inst_col, abs=1e-15)


def test_fixed_opponent_learner_goes_to_best_response():
    rm = RegretMatching(game(RPS), fixed_column=[0.4, 0.3, 0.3])
    rm.run(10_000)
    x, y = rm.average_strategies()
    assert y == pytest.approx([0.4, 0.3, 0.3])
    assert x[1] > 0.999  # all paper
    assert rm.value() == pytest.approx(0.1, abs=1e-3)
    # the learner's own gain from deviating vanishes; the fixed side stays exploitable
    g_row, g_col = rm.game.best_response_gains(x, y)
    assert g_row < 1e-3
    assert g_col > 0.5


def test_fixed_row_mirrors_fixed_column():
    rm = RegretMatching(game(RPS), fixed_row=[0.4, 0.3, 0.3])
    rm.run(10_000)
    _, y = rm.average_strategies()
    assert y[1] > 0.999  # paper against a rock-heavy row player
    assert rm.value() == pytest.approx(-0.1, abs=1e-3)


def test_uses_the_production_kernel_and_chunking_does_not_matter():
    a = RegretMatching(game(RPS3))
    a.run(1000)
    b = RegretMatching(game(RPS3))
    seen = []
    b.run(1000, callback=lambda rm: seen.append(rm.iteration), report_at=report_points(1000))
    assert seen == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
    assert np.array_equal(a.sum_row, b.sum_row) and np.array_equal(a.regret_col, b.regret_col)


def test_summary_keys():
    rm = RegretMatching(game(RPS3))
    rm.run(10)
    s = rm.summary()
    assert {"row", "column", "value", "exploitability"} <= set(s)
    assert sum(s["row"]) == pytest.approx(1.0) and sum(s["column"]) == pytest.approx(1.0)


def test_non_square_game():
    # 2 x 3: the row player's second (all-zero) row guarantees 0; column 2 holds row 1 to -1
    rm = RegretMatching(game([[1, -1, 2], [0, 0, 0]]))
    rm.run(50_000)
    assert rm.exploitability() < 0.01
    assert rm.value() == pytest.approx(0.0, abs=0.01)


# -- CSV -------------------------------------------------------------------------------------------
def test_csv_loads_rps(tmp_path):
    p = tmp_path / "rps.csv"
    p.write_text("0,-1,1\n1,0,-1\n-1,1,0\n\n")
    g = load_csv(p)
    assert g.payoff.tolist() == RPS


def test_shipped_example_csvs():
    from pathlib import Path

    ex = Path(__file__).resolve().parents[2] / "examples"
    assert load_csv(ex / "rps.csv").payoff.tolist() == RPS
    assert load_csv(ex / "rps_variant.csv").payoff.tolist() == RPS3


@pytest.mark.parametrize(
    "text, words",
    [
        ("", ["empty"]),
        ("\n\n", ["empty"]),
        ("0,1\n1\n", ["row 2", "1 entries", "row 1", "2"]),
        ("0,1,2\n1,x,3\n", ["row 2", "column 2", "'x'", "not a number"]),
        ("1,2\n3,\n", ["row 2", "column 2", "empty entry"]),
        ("1,nan\n", ["row 1", "column 2", "finite"]),
        ("1,2\n\n3,inf\n", ["row 2 (line 3)", "column 2"]),
    ],
)
def test_csv_errors_name_row_and_column(text, words):
    with pytest.raises(MatrixGameError) as exc:
        parse_csv(text, "game.csv")
    msg = str(exc.value)
    assert msg.startswith("game.csv")
    for w in words:
        assert w in msg


def test_csv_missing_file(tmp_path):
    with pytest.raises(MatrixGameError, match="cannot read"):
        load_csv(tmp_path / "nope.csv")


def test_bad_fixed_strategy():
    with pytest.raises(MatrixGameError, match="3 probabilities"):
        RegretMatching(game(RPS), fixed_column=[0.5, 0.5])
    with pytest.raises(MatrixGameError, match="summing to 1"):
        RegretMatching(game(RPS), fixed_column=[0.5, 0.6, 0.0])
