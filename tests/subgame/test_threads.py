"""Walking chance nodes' children on several threads (Engine ``threads``, issue 14 item 2): the same
values, tables and solutions as one thread, bit for bit, also when solves run concurrently."""

import threading

import numpy as np
import pytest

from abstraction.bets import parse_bets
from abstraction.tree import KIND_CHANCE
from holdem.betting import CALL, Betting
from holdem.gamedef import GameDef
from subgame import kernels as K
from subgame.engine import Engine
from subgame.solver import solve
from subgame.tree import board_hands, build_subgame_tree
from subgame.types import Subgame

# test_solver's three-round small game: 6 ranks x 4 suits
GAME = GameDef(
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
BETS = parse_bets("[[round]]\nfirst_sizes = [0.5, 1.0]\nsizes = []\nraise_mults = [2.5]\nallin = true\n")


def flop_root():
    return Betting.initial(GAME).apply(CALL).apply(CALL)


def random_ranges(tree, rng):
    r = rng.random((2, board_hands(tree).num_hands)) ** 3
    return r * board_hands(tree).valid[tree.board[0]]


def flop_subgame(seed=3):
    """A flop subgame: chance nodes deal the turn (top) and then the river (below them)."""
    tree = build_subgame_tree(GAME, flop_root(), (0, 5, 9), BETS)
    assert (tree.kind == KIND_CHANCE).sum() > 1
    rng = np.random.default_rng(seed)
    return Subgame(GAME, flop_root(), (0, 5, 9), random_ranges(tree, rng), BETS, tree=tree)


def test_walks_are_the_same_on_one_and_two_threads():
    sub = flop_subgame()
    tree = sub.tree
    one, two = Engine(tree, np.float32, threads=1), Engine(tree, np.float32, threads=2)
    assert one.par_work is None and two.threads == 2 and two.par_work is not None
    assert two.memory_bytes() > one.memory_bytes()
    # every walk on several threads but the periodic probes of one (as when that measures faster)
    two._wall = {(p, m): (1.0, 0.0) for p in (0, 1) for m in (K.MODE_CFR, K.MODE_BR, K.MODE_EV)}
    rng = np.random.default_rng(0)
    sigma = rng.random((tree.num_rows, board_hands(tree).num_hands)).astype(np.float32)
    K.strategy_from(sigma, sigma, tree.kind, tree.num_actions, tree.row)
    for p in (0, 1):
        for mode in (K.MODE_EV, K.MODE_BR):
            np.testing.assert_array_equal(
                two.walk(sigma, sub.ranges, p, mode), one.walk(sigma, sub.ranges, p, mode)
            )
    tables = {e: (np.zeros(e.size, np.float32), np.zeros(e.size, np.float32)) for e in (one, two)}
    for it in range(1, 4):
        for p in (0, 1):
            v = [
                e.walk_compact(None, sub.ranges, p, K.MODE_CFR, *tables[e], (1.0, 0.5, False, 0.9, 1.0))
                for e in (one, two)
            ]
            np.testing.assert_array_equal(v[1], v[0])
    for a, b in zip(tables[one], tables[two]):
        np.testing.assert_array_equal(b, a)
    assert two.parallel_walks >= 8 and one.parallel_walks == 0


def test_solutions_do_not_depend_on_threads_or_concurrency():
    sub = flop_subgame()
    ref = solve(sub, "unsafe", iterations=6, threads=1)
    got = {}

    def run(i):
        got[i] = solve(flop_subgame(), "unsafe", iterations=6, threads=2)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in [solve(sub, "unsafe", iterations=6, threads=2), *got.values()]:
        np.testing.assert_array_equal(s.strategy, ref.strategy)
        assert s.exploitability == ref.exploitability


def test_bad_thread_count():
    with pytest.raises(ValueError, match="at least 1"):
        Engine(flop_subgame().tree, threads=0)
