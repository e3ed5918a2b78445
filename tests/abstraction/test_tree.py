"""The one flat tree type: node kinds, a blueprint tree and subgame trees from the same builder."""

from math import comb

import numpy as np
import pytest

from abstraction.bets import BetAbstractionError, load_bets, parse_bets
from abstraction.tree import (
    DEAL,
    KIND_CHANCE,
    KIND_DECISION,
    KIND_FOLD,
    KIND_SHOWDOWN,
    NodeKind,
    build_tree,
)
from holdem.betting import CALL, RAISE, Betting, parse_betting
from holdem.gamedef import PRESETS, GameDef

# three rounds, 6 ranks x 4 suits: small enough to deal every board
TINY = GameDef(
    "nolimit",
    3,
    (1200, 1200),
    (100, 50),
    (0, 0, 0),
    (1, 0, 0),
    (255, 255, 255),
    4,
    6,
    2,
    (0, 3, 1),
    name="tiny3",
)
TINY_BETS = parse_bets("[[round]]\nfirst_sizes = [0.5, 1.0]\nsizes = []\nraise_mults = [2.5]\nallin = true\n")


def test_node_kinds_are_one_enum_and_plain_ints():
    assert [int(k) for k in NodeKind] == [0, 1, 2, 3]
    for const, member in (
        (KIND_DECISION, NodeKind.DECISION),
        (KIND_FOLD, NodeKind.FOLD),
        (KIND_SHOWDOWN, NodeKind.SHOWDOWN),
        (KIND_CHANCE, NodeKind.CHANCE),
    ):
        assert type(const) is int and const == member


def _same_subtree(a, na, b, nb, skip_chance=False):
    """Walk ``a`` from ``na`` and ``b`` from ``nb`` in lockstep (``skip_chance``: ``a``'s chance nodes
    are passed through by their first deal); returns the number of nodes compared."""
    count = 0
    stack = [(na, nb)]
    while stack:
        u, v = stack.pop()
        while skip_chance and a.kind[u] == KIND_CHANCE:
            u = int(a.children(u)[0])
        count += 1
        assert a.kind[u] == b.kind[v] and a.player[u] == b.player[v] and a.round[u] == b.round[v]
        assert tuple(a.spent[u]) == tuple(b.spent[v])
        if a.kind[u] == KIND_DECISION:
            assert a.action_labels(u) == b.action_labels(v)
            su, sv, k = int(a.child_start[u]), int(b.child_start[v]), int(a.num_actions[u])
            np.testing.assert_array_equal(a.edge_frac[su : su + k], b.edge_frac[sv : sv + k])
            stack.extend(zip(a.children(u).tolist(), b.children(v).tolist()))
    return count


def test_a_tree_from_any_node_is_that_nodes_subtree():
    game, bets = PRESETS["hunl"], load_bets("small")
    full = build_tree(game, bets)
    for n in list(full.decision_nodes()[::97]) + [int(full.decision_nodes()[-1])]:
        n = int(n)
        sub = build_tree(game, bets, root=full.betting(n))
        assert _same_subtree(full, n, sub, 0) == sub.num_nodes
        assert sub.betting_string(0) == full.betting_string(n)
        assert (sub.board == 0).all() and sub.boards == [()] and (sub.deal_count == 0).all()


def test_chance_nodes_deal_the_board_and_leave_the_betting_alone():
    root = Betting.initial(TINY).apply(CALL).apply(CALL)  # the flop, nothing bet
    board = (0, 5, 9)
    plain = build_tree(TINY, TINY_BETS, root=root, board=board)
    dealt = build_tree(TINY, TINY_BETS, root=root, board=board, deal_boards=True)
    assert not (plain.kind == KIND_CHANCE).any() and (dealt.kind == KIND_CHANCE).any()
    # the betting is the same tree once the chance nodes are passed through
    assert _same_subtree(dealt, 0, plain, 0, skip_chance=True) == plain.num_nodes
    for n in np.nonzero(dealt.kind == KIND_CHANCE)[0]:
        n = int(n)
        here = dealt.boards[dealt.board[n]]
        kids = dealt.children(n)
        s = int(dealt.child_start[n])
        assert (dealt.edge_kind[s : s + len(kids)] == DEAL).all()
        assert len(kids) == comb(TINY.deck_size - len(here), 1)
        assert dealt.deal_count[n] == comb(TINY.deck_size - len(here) - 2 * TINY.num_hole_cards, 1)
        for c in kids:
            assert set(here) < set(dealt.boards[dealt.board[c]]) and len(dealt.boards[dealt.board[c]]) == 4
            assert dealt.betting(int(c)) == dealt.betting(n) and dealt.parent[c] == n
        with pytest.raises(ValueError, match="deals cards"):
            dealt.edge_label(s)
    # after an all-in the rest of the board is dealt before the showdown
    shove = build_tree(TINY, TINY_BETS, root=root.apply(RAISE, 1200), board=board, deal_boards=True)
    assert shove.kind[0] == KIND_DECISION and shove.action_labels(0) == ["f", "c"]
    called = int(shove.children(0)[1])
    assert shove.kind[called] == KIND_CHANCE
    assert all(shove.kind[c] == KIND_SHOWDOWN for c in shove.children(called))


def test_per_node_arrays_agree():
    t = build_tree(
        TINY, TINY_BETS, root=Betting.initial(TINY).apply(CALL).apply(CALL), board=(0, 5, 9), deal_boards=True
    )
    dec = t.decision_nodes()
    assert t.num_rows == int(t.num_actions[dec].sum())
    np.testing.assert_array_equal(t.row[dec], np.concatenate([[0], np.cumsum(t.num_actions[dec])[:-1]]))
    assert (t.row[t.kind != KIND_DECISION] == -1).all()
    assert sorted(t.edge_child.tolist()) == list(range(1, t.num_nodes))
    np.testing.assert_array_equal(t.edge_child[t.parent_edge[1:]], np.arange(1, t.num_nodes))
    assert (t.parent[1:] < np.arange(1, t.num_nodes)).all()
    for n in range(0, t.num_nodes, 37):
        b = t.betting(n)
        assert tuple(t.spent[n]) == b.spent and t.round[n] == b.round
        assert parse_betting(t.betting_string(n), TINY) == b


def test_action_filter_adds_a_move():
    root = Betting.initial(TINY).apply(CALL).apply(CALL)

    def add_r250(b, moves):
        return sorted(moves + [(RAISE, 250)]) if b is root else moves

    t = build_tree(TINY, TINY_BETS, root=root, board=(0, 5, 9), action_filter=add_r250)
    assert t.action_labels(0) == ["c", "r200", "r250", "r300", "r1200"]
    s = int(t.child_start[0])
    np.testing.assert_array_equal(t.edge_frac[s : s + 5], np.array([0.0, 0.5, 0.0, 1.0, -1.0], np.float32))


def test_size_and_abstraction_errors():
    with pytest.raises(BetAbstractionError, match="needs a bet abstraction"):
        build_tree(PRESETS["hunl"])
    with pytest.raises(BetAbstractionError, match="exceeds 100 nodes"):
        build_tree(PRESETS["hunl"], load_bets("small"), max_nodes=100)
