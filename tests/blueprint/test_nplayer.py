"""N-player MCCFR on small flattened games (blueprint.nplayer): exact NashConv equals OpenSpiel's
on 3-player Kuhn and Leduc and the Python walk of mccfr.evaluation.nashconv_n; training converges,
is deterministic; games too big are refused before allocating."""

from __future__ import annotations

import numpy as np
import pytest

from blueprint.nplayer import (
    ESSolver,
    FlattenError,
    NPlayerGame,
    best_response_values,
    nash_conv,
    openspiel_policy,
    policy_values,
    train_es,
    uniform_policy,
)
from holdem import Game
from holdem.gamedef import MULTIWAY_PRESETS, PRESETS, small_deck_game


@pytest.fixture(scope="module")
def kuhn3() -> NPlayerGame:
    return NPlayerGame.from_gamedef("kuhn.limit.3p")


@pytest.fixture(scope="module")
def leduc3() -> NPlayerGame:
    return NPlayerGame.from_gamedef("leduc.limit.3p")


def random_policy(game: NPlayerGame, seed: int, zeros: float = 0.2) -> np.ndarray:
    """An uneven policy: random weights, some actions at probability 0 (never all of a set's)."""
    rng = np.random.default_rng(seed)
    w = rng.random(game.num_actions_total) + 0.01
    w[rng.random(w.size) < zeros] = 0.0
    ioff = game.tree.ioff
    nact = np.diff(ioff)
    sums = np.add.reduceat(w, ioff[:-1])
    empty = np.repeat(sums == 0.0, nact)
    w = np.where(empty, 1.0, w)
    return w / np.repeat(np.add.reduceat(w, ioff[:-1]), nact)


# -- OpenSpiel: the same policy on kuhn_poker / leduc_poker, information sets matched by what the
#    seat sees (its card, the public card, the betting), never by position in a list ----------------


@pytest.mark.parametrize("seed", [0, 1])
def test_kuhn3_nash_conv_equals_openspiel(kuhn3, seed):
    pyspiel = pytest.importorskip("pyspiel")
    os_game = pyspiel.load_game("kuhn_poker(players=3)")
    pol = random_policy(kuhn3, seed)
    theirs = pyspiel.nash_conv(os_game, openspiel_policy(os_game, kuhn3, pol))
    ours = nash_conv(kuhn3, pol)
    assert ours == pytest.approx(theirs, abs=1e-9) and ours > 0.01


@pytest.mark.slow  # OpenSpiel's nash_conv takes 100-200 s here; the next test is the fast variant
def test_leduc3_nash_conv_equals_openspiel(leduc3):
    pyspiel = pytest.importorskip("pyspiel")
    os_game = pyspiel.load_game("leduc_poker(players=3)")
    pol = random_policy(leduc3, 0)
    theirs_pol = openspiel_policy(os_game, leduc3, pol)
    assert len(theirs_pol) == leduc3.num_infosets == 25_800
    theirs = pyspiel.nash_conv(os_game, theirs_pol)
    ours = nash_conv(leduc3, pol)
    assert ours == pytest.approx(theirs, abs=1e-9) and ours > 0.1


def test_leduc3_policy_values_equal_openspiel(leduc3):
    # the fast variant: on-policy values against OpenSpiel's C++ expected_returns (under a second),
    # the mapping of all 25,800 information sets, and the uniform NashConv below
    pyspiel = pytest.importorskip("pyspiel")
    os_game = pyspiel.load_game("leduc_poker(players=3)")
    pol = random_policy(leduc3, 1)
    theirs_pol = pyspiel.TabularPolicy(openspiel_policy(os_game, leduc3, pol))
    theirs = pyspiel.expected_returns(os_game.new_initial_state(), theirs_pol, -1, True)
    np.testing.assert_allclose(policy_values(leduc3, pol), theirs, rtol=0, atol=1e-9)


def test_leduc3_uniform_is_openspiels(leduc3):
    # OpenSpiel's exploitability.nash_conv(leduc_poker(players=3), UniformRandomPolicy): 12.6112213...
    assert nash_conv(leduc3, uniform_policy(leduc3)) == pytest.approx(12.611221340388003, abs=1e-9)
    assert abs(policy_values(leduc3, uniform_policy(leduc3)).sum()) < 1e-12


def test_kuhn3_equals_the_python_walk(kuhn3):
    from mccfr.evaluation import nashconv_n

    pol = random_policy(kuhn3, 7)
    by_view = {}
    for i in range(kuhn3.num_infosets):
        seat, hole, board, betting = kuhn3.infoset_view(i)
        by_view[(seat, hole, board, betting)] = i

    def policy(state):
        i = by_view[nashconv_n.infoset_key(state)]
        off = int(kuhn3.tree.ioff[i])
        names = kuhn3.actions[int(kuhn3.infoset_node[i])]
        return {a: float(pol[off + k]) for k, a in enumerate(names)}

    game = Game.load("kuhn.limit.3p")
    walk = nashconv_n.nash_conv(game, policy, method="walk")
    assert nash_conv(kuhn3, pol) == pytest.approx(walk, abs=1e-12)
    assert kuhn3.policy_from(policy) == pytest.approx(pol, abs=0)  # MATCHSTATE views map back
    np.testing.assert_allclose(
        policy_values(kuhn3, pol), nashconv_n.policy_values(game, policy, method="walk"), atol=1e-12
    )
    for seat in range(3):
        assert best_response_values(kuhn3, pol)[seat] == pytest.approx(
            nashconv_n.best_response_value(game, policy, seat), abs=1e-12
        )


# -- training ---------------------------------------------------------------------------------------


def test_kuhn3_training_reaches_0_005(kuhn3):
    solver = train_es(kuhn3, 1_000_000, seed=0)
    assert nash_conv(kuhn3, solver.average_policy()) <= 0.005


def test_nash_conv_falls_with_training(kuhn3, leduc3):
    for game, steps in ((kuhn3, (1_000, 10_000, 100_000)), (leduc3, (2_000, 20_000, 100_000))):
        solver = ESSolver(game, seed=1)
        curve, done = [], 0
        for it in steps:
            solver.run(it - done)
            done = it
            curve.append(nash_conv(game, solver.average_policy()))
        assert curve[0] > curve[1] > curve[2], curve
    assert curve[-1] < 1.0  # 3-player Leduc after 100k iterations (uniform: 12.6)


def test_same_seed_same_tables(leduc3):
    a, b = train_es(leduc3, 3_000, seed=5), train_es(leduc3, 3_000, seed=5)
    assert np.array_equal(a.regret, b.regret) and np.array_equal(a.strat, b.strat)
    c = ESSolver(leduc3, seed=5).run(1_000).run(2_000)  # resumed in two calls: the same run
    assert np.array_equal(a.regret, c.regret) and np.array_equal(a.strat, c.strat)
    d = train_es(leduc3, 3_000, seed=6)
    assert not np.array_equal(a.regret, d.regret)


def test_dcfr_and_uniform_weightings(kuhn3):
    a = ESSolver(kuhn3, seed=2, weighting="dcfr", discount_every=100).run(30_000)
    b = ESSolver(kuhn3, seed=2, weighting="dcfr", discount_every=100).run(12_345).run(17_655)
    assert np.array_equal(a.regret, b.regret) and np.array_equal(a.strat, b.strat)  # split anywhere
    assert nash_conv(kuhn3, a.average_policy()) < 0.05
    assert nash_conv(kuhn3, train_es(kuhn3, 30_000, seed=2, weighting="uniform").average_policy()) < 0.05
    with pytest.raises(ValueError, match="weighting"):
        ESSolver(kuhn3, weighting="cfr+")


@pytest.mark.parametrize("name", ["kuhn", "leduc"])
def test_two_players_converge(name):
    game = NPlayerGame.from_gamedef(PRESETS[name])
    assert nash_conv(game, uniform_policy(game)) == pytest.approx(
        {"kuhn": 0.9166666666666666, "leduc": 4.747222222222222}[name], abs=1e-9
    )  # OpenSpiel's uniform NashConv (twice the exploitability)
    solver = train_es(game, 200_000, seed=0)
    # the two-player trainer's ballpark at this many iterations
    assert nash_conv(game, solver.average_policy()) < {"kuhn": 0.01, "leduc": 0.3}[name]


# -- bad input ---------------------------------------------------------------------------------------


def test_too_big_is_refused_naming_the_size():
    with pytest.raises(FlattenError, match=r"holdem.limit.3p.*too big to flatten: [0-9,]+ deals"):
        NPlayerGame.from_gamedef(MULTIWAY_PRESETS["holdem.limit.3p"])
    with pytest.raises(FlattenError, match=r"betting nodes x 498,960 deals"):
        NPlayerGame.from_gamedef(small_deck_game(3))  # cells: refused during the walk, at once
    with pytest.raises(FlattenError, match=r"more than 100 betting nodes"):
        NPlayerGame.from_gamedef("leduc.limit.3p", max_nodes=100)


def test_bad_policy_shape(kuhn3):
    with pytest.raises(ValueError, match="shape"):
        nash_conv(kuhn3, np.ones(3))
    with pytest.raises(ValueError, match="iterations"):
        ESSolver(kuhn3).run(-1)
