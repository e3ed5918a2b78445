"""Subgames from a blueprint (ranges, alternative values), nested solving of off-tree bets, and the
`mccfr solve` command, on a small two-round no-limit game."""

import json

import numpy as np
import pytest

from abstraction.bets import parse_bets
from blueprint.blueprint import Blueprint
from blueprint.trainer import make_trainer
from holdem.gamedef import GameDef
from subgame import kernels as K
from subgame.construct import blueprint_values, from_matchstate
from subgame.engine import Engine
from subgame.nested import first_off_tree, hand_strategy, nested_subgame, solve_state
from subgame.solver import solve
from subgame.tree import SubgameError

GAME = GameDef(
    "nolimit", 2, (1200, 1200), (100, 50), (0, 0), (1, 0), (255, 255), 4, 6, 2, (0, 3), name="tiny2"
)
BETS_TOML = 'name = "tinybets"\n[[round]]\nsizes = [1.0]\nallin = true\nmax_raises = 2\n'
FINE = parse_bets("[[round]]\nfirst_sizes = [0.5, 0.75, 1.0]\nsizes = [1.0]\nallin = true\nmax_raises = 2\n")


@pytest.fixture(scope="module")
def bp(tmp_path_factory):
    d = tmp_path_factory.mktemp("bp")
    (d / "bets.toml").write_text(BETS_TOML)
    tr = make_trainer(GAME, bets=str(d / "bets.toml"), algo="dcfr", seed=0)
    tr.run(20000)
    return Blueprint(tr)


def test_blueprint_ranges_and_values(bp):
    sub, n = from_matchstate(bp, "MATCHSTATE:0:0:cc/:7c7d|/2c3c4d", bets=FINE)
    assert sub.refine == 0 and sub.pot == 200
    # after limp-check both ranges are the blueprint's probabilities of 'c' for each hand
    st = bp.game.state("MATCHSTATE:0:0:c:7c7d|")
    assert bp.strategy(st.matchstate(0)) is not None
    from holdem.cards import parse_cards
    from subgame.tree import hand_index

    i = hand_index(GAME)[tuple(sorted(parse_cards("7c7d", 4, 6)))]
    p_call = bp.strategy("MATCHSTATE:1:0::|7c7d")["c"]
    p_check = bp.strategy("MATCHSTATE:0:0:c:7c7d|")["c"]
    assert sub.ranges[1, i] == pytest.approx(p_call, rel=1e-6)
    assert sub.ranges[0, i] == pytest.approx(p_check, rel=1e-6)
    # the alternative values are a best response: at least the blueprint's own values
    assert np.all(sub.alt >= sub.estimate - 1e-6)


def test_safe_resolve_keeps_every_opponent_hand_at_or_below_its_alternative(bp):
    sub, n = from_matchstate(bp, "MATCHSTATE:0:0:cc/:7c7d|/2c3c4d", bets=FINE)
    for method in ("resolve", "maxmargin", "reach-maxmargin"):
        sol = solve(sub, method, iterations=400)
        assert sol.min_margin > -0.01 * sub.pot, method
    # the refined strategy, scored against the opponent's best response on the fine tree, is no
    # worse for the refined seat than the blueprint is on its own tree
    sol = solve(sub, "maxmargin", iterations=400)
    e = Engine(sub.public_tree())
    rr = sub.ranges.copy()
    v_new = e.walk(sol.strategy, rr, sub.opponent, K.MODE_BR)
    w = e.compat_mass(rr[sub.refine])
    ok = w > 0
    assert np.all((v_new - sub.alt)[ok] / w[ok] <= 0.01 * sub.pot)


def test_off_tree_bet_is_solved_by_a_nested_subgame(bp):
    ms = "MATCHSTATE:1:0:cc/r250:|7c7d/2c3c4d"  # seat 0 bets 250 (0.25 pot more): not in the blueprint
    st = bp.game.state(ms)
    m, i, before = first_off_tree(bp, st)
    assert bp.tree.betting_string(m) == "cc/" and i == 2
    sub = nested_subgame(bp, st, FINE)
    assert sub.root.spent == (250, 100) and sub.refine == 1
    # the alternative: seat 0's best in-abstraction value at the decision it bet from
    alt, _, _ = blueprint_values(bp, m, (0, 1, 9), sub.ranges * 0 + _ranges_at(bp, m), 0)
    sol, node = solve_state(bp, st, "reach-maxmargin", iterations=200, bets=FINE)
    assert node == 0
    hs = hand_strategy(sol, node, st)
    assert set(hs) == set(sol.tree.action_labels(0)) and abs(sum(hs.values()) - 1) < 1e-5
    assert alt.shape == sub.alt.shape
    # later states of the same hand are found in the same tree (the real raise is put in)
    st2 = bp.game.state("MATCHSTATE:0:0:cc/r250r777:7c7d|/2c3c4d")
    sol2, node2 = solve_state(bp, st2, "unsafe", iterations=50, bets=FINE)
    assert sol2.tree.action_labels(node2) and sol2.tree.betting(node2).spent == (250, 777)


def _ranges_at(bp, m):
    from subgame.construct import blueprint_ranges
    from subgame.tree import all_hands

    return blueprint_ranges(bp, m, (0, 1, 9), all_hands(GAME))


def test_bad_states_are_named(bp):
    with pytest.raises(SubgameError, match="not the viewer"):
        solve_state(bp, "MATCHSTATE:1:0:cc/:|7c7d/2c3c4d", "unsafe", iterations=1)
    with pytest.raises(SubgameError, match="unknown method"):
        solve_state(bp, "MATCHSTATE:0:0:cc/:7c7d|/2c3c4d", "safest", iterations=1)
    with pytest.raises(SubgameError, match="hand is over"):
        solve_state(bp, "MATCHSTATE:0:0:f:7c7d|", "unsafe", iterations=1)


def test_solve_cli(bp, tmp_path, capsys):
    from mccfr.cli import main

    (tmp_path / "bets.toml").write_text(BETS_TOML)
    run = tmp_path / "run"
    tr = make_trainer(GAME, bets=str(tmp_path / "bets.toml"), algo="dcfr", seed=0)
    tr.run(2000)
    tr.save(run)
    with pytest.raises(SystemExit) as e:
        main(
            [
                "solve",
                str(run),
                "--matchstate",
                "MATCHSTATE:1:0:cc/r250:|7c7d/2c3c4d",
                "--method",
                "maxmargin",
                "--iterations",
                "50",
                "--json",
            ]
        )
    assert e.value.code in (0, None)
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["nested"] and out["iterations"] == 50 and abs(sum(out["strategy"].values()) - 1) < 1e-5
    assert out["exploitability_pct_pot"] >= 0
    with pytest.raises(SystemExit) as e:
        main(["solve", str(run), "--matchstate", "MATCHSTATE:1:0:cc/r250:|7c7d", "--iterations", "5"])
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["solve", str(run), "--matchstate", "MATCHSTATE:0:0:cc/:7c7d|/2c3c4d", "--method", "bogus"])
    assert e.value.code == 2
    assert "unknown method 'bogus'" in capsys.readouterr().err


def test_solving_player_plays_a_match_and_reuses_its_subgame(bp):
    from holdem.game import Game
    from mccfr.evaluation.match import play_match
    from mccfr.evaluation.players import AlwaysCall, player_from_spec
    from mccfr.evaluation.solving import SolvingPlayer

    g = Game(GAME)
    sp = SolvingPlayer(bp, "maxmargin", iterations=30, bets=FINE)
    res = play_match(g, sp, AlwaysCall(), 20, seed=1)
    assert res.hands == 20
    assert sp.solves > 0 and sp.fallbacks == 0
    st = g.state("MATCHSTATE:0:7:cc/:7c7d|/2c3c4d")
    probs, source = sp.strategy(st)
    assert source == "subgame" and abs(sum(probs.values()) - 1) < 1e-5
    before = sp.solves
    probs2, _ = sp.strategy(st)  # the same decision again: answered from the solved subgame
    assert sp.solves == before and probs2 == probs
    pre, source = sp.strategy(g.state("MATCHSTATE:1:8::|7c7d"))
    assert source == "blueprint"
    with pytest.raises(Exception, match="RUN_DIR\\+solve:METHOD"):
        player_from_spec("x+solve:", g)


def test_a_nested_solve_is_saved_with_its_off_tree_action(bp, tmp_path):
    """The off-tree raise the real hand put in the tree (r777, not in the bet abstraction) is
    recorded: the reader rebuilds the same tree, and the continued solve equals an uninterrupted one."""
    from subgame.saved import read_saved, save_solve

    st2 = bp.game.state("MATCHSTATE:0:0:cc/r250r777:7c7d|/2c3c4d")
    first, node = solve_state(bp, st2, "unsafe", iterations=6, bets=FINE, keep_state=True)
    assert "r777" in first.tree.action_labels(int(first.tree.parent[node]))
    path = tmp_path / "nested.solve"
    save_solve(path, first)
    saved = read_saved(path)
    assert saved.subgame.public_tree().content_hash() == first.tree.content_hash()
    assert saved.meta["subgame"]["real_path"] == "cc/r250r777"
    cont = solve(saved.subgame, "unsafe", iterations=4, resume=saved.state, keep_state=True)
    whole, _ = solve_state(bp, st2, "unsafe", iterations=10, bets=FINE, keep_state=True)
    np.testing.assert_array_equal(cont.strategy, whole.strategy)
    np.testing.assert_array_equal(cont.state.regret, whole.state.regret)


def test_a_subgame_with_a_custom_action_filter_is_not_saved(bp, tmp_path):
    from subgame.saved import save_solve

    sub, _ = from_matchstate(bp, "MATCHSTATE:0:0:cc/:7c7d|/2c3c4d", bets=FINE)
    sub.action_filter = lambda b, moves: moves
    sol = solve(sub, "unsafe", iterations=2, keep_state=True)
    with pytest.raises(SubgameError, match="custom action_filter"):
        save_solve(tmp_path / "x", sol)
