"""The subgame walk's depth-limit hook (``subgame.kernels.walk`` with :class:`Leaves`) changes nothing
where there is no leaf: with a hook whose ``leaf_of`` marks no node, CFR iterations, best responses
and values are bit for bit those of the walk without it (a second compiled specialization of the
same body: the code outside the hook is shared, and this checks the hook's own branches)."""

import numpy as np

from abstraction.bets import parse_bets
from holdem.betting import CALL, Betting
from holdem.gamedef import GameDef
from subgame import depth_kernels as DK
from subgame import kernels as K
from subgame.engine import Engine
from subgame.solver import iteration_weights
from subgame.tree import board_hands, build_subgame_tree

# three rounds, 6 ranks x 4 suits (test_solver's game): a flop subgame has chance nodes, folds, showdowns
GAME = GameDef(
    "nolimit", 3, (1200, 1200), (100, 50), (0, 0, 0), (1, 0, 0), (255, 255, 255), 4, 6, 2, (0, 3, 1)
)
BETS = parse_bets("[[round]]\nfirst_sizes = [0.5, 1.0]\nsizes = []\nraise_mults = [2.5]\nallin = true\n")


def _no_leaves(tree, H: int, k: int = 2):
    """A hook with no leaf (every ``leaf_of`` -1) and minimal continuation arrays of the kernel's types."""
    lv = DK.Leaves(
        0,
        k,
        np.full(tree.num_nodes, -1, np.int64),
        np.zeros((1, k, H)),
        np.zeros((1, k, H)),
        np.full((1, k, H), 1.0 / k),
        np.full((1, H), -1, np.int64),
        np.ones(GAME.deck_size, np.bool_),
    )
    cm = DK.ContModel(**{f: np.zeros((1,) * nd, dt) for f, (dt, nd) in DK.CONT_DTYPES.items()})
    f32 = np.float32
    i64 = np.int64
    cw = DK.ContWork(
        np.full(H, -1, i64),
        np.zeros((k, H), f32),
        np.zeros((2, k, H), f32),
        np.zeros((2, k, H), f32),
        np.zeros(2, i64),
        np.zeros(2, i64),
        np.zeros(2, i64),
        np.zeros(2, i64),
        np.zeros(H, f32),
        np.zeros(H, f32),
        np.zeros(GAME.deck_size),
        np.zeros((k, H), f32),
        np.zeros(k),
    )
    return lv, cm, cw


def _walk(e: Engine, ranges, p, mode, st, w, hook):
    rr = e._root_reach
    for s in (0, 1):
        rr[s, : len(e._root_idx[s])] = ranges[s][e._root_idx[s]]
    K.walk(e.tree_arrays, e.hand_arrays, st, rr, K.walk_options(p, mode, w), e.work, None, 0, *hook)
    return e.out[: len(e._root_idx[p])].copy()


def test_a_hook_without_leaves_walks_exactly_like_no_hook():
    root = Betting.initial(GAME).apply(CALL).apply(CALL)  # the flop: a chance node deals the turn
    tree = build_subgame_tree(GAME, root, (0, 5, 9), BETS)
    rng = np.random.default_rng(3)
    ranges = rng.random((2, board_hands(tree).num_hands)) ** 3 * board_hands(tree).valid[tree.board[0]]
    e = Engine(tree, np.float32, threads=1)
    hooks = {"none": (None, None, None), "empty": _no_leaves(tree, board_hands(tree).num_hands)}
    tables = {k: (np.zeros(e.size, np.float32), np.zeros(e.size, np.float32)) for k in hooks}
    for it in range(1, 4):
        w = iteration_weights("dcfr", it)
        for p in (0, 1):
            got = {
                k: _walk(
                    e, ranges, p, K.MODE_CFR, K.WalkState(np.zeros(1, np.float32), *tables[k], e.fixed), w, h
                )
                for k, h in hooks.items()
            }
            np.testing.assert_array_equal(got["empty"], got["none"])
    np.testing.assert_array_equal(tables["empty"][0], tables["none"][0])  # regrets
    np.testing.assert_array_equal(tables["empty"][1], tables["none"][1])  # average-strategy sums
    assert np.abs(tables["none"][0]).max() > 0
    sigma = e.average(tables["none"][1])
    dummy = np.zeros(1, np.float32)
    for mode in (K.MODE_BR, K.MODE_EV):
        for p in (0, 1):
            got = {
                k: _walk(
                    e,
                    ranges,
                    p,
                    mode,
                    K.WalkState(sigma, dummy, dummy, e.fixed),
                    (1.0, 1.0, False, 1.0, 0.0),
                    h,
                )
                for k, h in hooks.items()
            }
            np.testing.assert_array_equal(got["empty"], got["none"])
            assert np.abs(got["none"]).max() > 0
