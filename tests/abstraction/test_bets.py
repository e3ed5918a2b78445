"""The abstract betting tree: fcpa agrees with OpenSpiel's universal_poker node by node."""

import numpy as np
import pytest

from abstraction.bets import ALLIN, BetAbstractionError, load_bets, parse_bets
from abstraction.tree import KIND_DECISION, build_tree
from holdem.betting import CALL, FOLD, RAISE
from holdem.gamedef import PRESETS


def _walk_openspiel(game, tree):
    """DFS both trees in lockstep; returns the number of decision nodes compared."""
    pyspiel = pytest.importorskip("pyspiel")
    os_game = pyspiel.load_game("universal_poker", game.openspiel_params("fcpa"))
    count = 0

    def settle(s):
        while s.is_chance_node():
            s.apply_action(s.legal_actions()[0])
        return s

    def rec(s, n):
        nonlocal count
        s = settle(s)
        if tree.kind[n] != KIND_DECISION:
            assert s.is_terminal(), tree.betting_string(n)
            contrib = s.to_dict()["player_contributions"]
            assert list(tree.spent[n]) == list(contrib)
            return
        assert not s.is_terminal()
        assert s.current_player() == tree.player[n]
        count += 1
        start = tree.child_start[n]
        ours = []
        for e in range(start, start + tree.num_actions[n]):
            k = tree.edge_kind[e]
            if k == FOLD:
                ours.append(0)
            elif k == CALL:
                ours.append(1)
            else:
                ours.append(3 if tree.edge_frac[e] == ALLIN else 2)
        assert ours == list(s.legal_actions()), tree.betting_string(n)
        for i, a in enumerate(ours):
            c = s.clone()
            c.apply_action(a)
            rec(c, tree.edge_child[start + i])

    rec(os_game.new_initial_state(), 0)
    return count


@pytest.mark.parametrize("name", ["hunl20", "hunl50"])
def test_fcpa_matches_openspiel(name):
    game = PRESETS[name]
    tree = build_tree(game, load_bets("fcpa"))
    assert _walk_openspiel(game, tree) == len(tree.decision_nodes())


def test_limit_trees_have_known_sizes():
    # Kuhn: 4 decision nodes (info sets per card); Leduc: 6 + 30 betting sequences.
    assert len(build_tree(PRESETS["kuhn"]).decision_nodes()) == 4
    leduc = build_tree(PRESETS["leduc"])
    assert [int((leduc.round[leduc.decision_nodes()] == r).sum()) for r in (0, 1)] == [6, 30]
    # heads-up limit hold'em has 6,378 betting sequences at decision points
    assert len(build_tree(PRESETS["hulhe"]).decision_nodes()) == 6378


def test_tree_arrays_are_consistent():
    tree = build_tree(PRESETS["hunl"], load_bets("standard"))
    dec = tree.decision_nodes()
    # every non-root node has exactly one incoming edge
    assert sorted(tree.edge_child.tolist()) == list(range(1, tree.num_nodes))
    # raises strictly increase within a node, and come after fold/call
    for n in dec[:2000]:
        s, k = tree.child_start[n], tree.num_actions[n]
        kinds = tree.edge_kind[s : s + k]
        assert list(kinds) == sorted(kinds)
        tos = tree.edge_to[s : s + k][kinds == RAISE]
        assert np.all(np.diff(tos) > 0)
    # betting strings replay through the rules
    from holdem.betting import parse_betting

    for n in range(0, tree.num_nodes, 97):
        b = parse_betting(tree.betting_string(n), tree.game)
        assert tuple(b.spent) == tuple(tree.spent[n])


def test_pot_fraction_arithmetic():
    tree = build_tree(PRESETS["hunl"], load_bets("standard"))
    # first preflop decision: small blind 50 facing 100; pot after call 200
    assert tree.action_labels(0) == ["f", "c", "r200", "r300", "r500", "r20000"]


@pytest.mark.parametrize(
    "text, msg",
    [
        ("name = 3\n[[round]]\nsizes=[1.0]", "'name' must be a string"),
        ("[[round]]\nsizes=[-1.0]", "positive pot fractions"),
        ("[[round]]\nsizes=[1.0]\nallin='yes'", "'allin' must be true or false"),
        ("[[round]]\nsizez=[1.0]", "unknown key 'sizez'"),
        ("name='x'", "needs at least one [[round]]"),
        ("[[round]\n", "not valid TOML"),
    ],
)
def test_bad_bet_files_name_the_problem(text, msg):
    with pytest.raises(BetAbstractionError, match=msg.replace("[", r"\[")):
        parse_bets(text, "bad.toml")


def test_unknown_bets_name():
    with pytest.raises(BetAbstractionError, match="unknown bet abstraction 'nope'"):
        load_bets("nope")


def test_rich_is_standard_with_one_more_raise_a_round():
    """``rich``: ``standard``'s sizes and one raise more in every round: on hunl100 a pot-raise war
    stays on the tree one raise longer (4 pre-flop, 3 after), and the tree is a superset."""
    from abstraction.tree import KIND_DECISION

    game = PRESETS["hunl100"]
    std, rich = build_tree(game, load_bets("standard")), build_tree(game, load_bets("rich"))
    assert rich.num_nodes > std.num_nodes and rich.action_labels(0) == std.action_labels(0)

    def longest_raises(tree, rnd):
        best = 0
        for n in np.flatnonzero((tree.kind == KIND_DECISION) & (tree.round == rnd)):
            b = tree.betting_string(int(n)).split("/")[-1]
            best = max(best, b.count("r"))
        return best

    assert [longest_raises(std, r) for r in range(4)] == [3, 2, 2, 2]
    assert [longest_raises(rich, r) for r in range(4)] == [4, 3, 3, 3]
    std_lines = {std.betting_string(int(n)) for n in range(std.num_nodes)}
    assert std_lines <= {rich.betting_string(int(n)) for n in range(rich.num_nodes)}
