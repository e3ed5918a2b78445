"""The range-vectorized subgame solver against a brute-force oracle over hand pairs, and its
convergence and safety guarantees."""

import numpy as np
import pytest

from abstraction.bets import parse_bets
from abstraction.tree import KIND_CHANCE, KIND_DECISION, KIND_FOLD
from holdem.betting import CALL, Betting
from holdem.evaluator import rank_hand_py
from holdem.gamedef import GameDef
from subgame import kernels as K
from subgame.engine import Engine
from subgame.solver import exploitability, iteration_weights, solve
from subgame.tree import SubgameError, board_hands, build_subgame_tree
from subgame.types import Subgame

# three rounds, 6 ranks x 4 suits (24 cards, 276 hands): a "turn hold'em" small enough for pairs
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
    b = Betting.initial(GAME).apply(CALL).apply(CALL)
    assert b.round == 1
    return b


def random_ranges(tree, rng):
    r = rng.random((2, board_hands(tree).num_hands)) ** 3
    return r * board_hands(tree).valid[tree.board[0]]


class Brute:
    """Values of one responder hand by explicit sums over opponent hands (no card-removal algebra,
    no sorting): the best responder maximises the sum over opponent hands, as an information set."""

    def __init__(self, tree):
        self.t = tree
        self.hands = board_hands(tree).hands
        hs = [set(int(c) for c in h) for h in self.hands]
        self.hs = hs
        self.compat = np.array([[not (a & b) for b in hs] for a in hs])
        self._st = {}

    def strength(self, h, board):
        key = (h, board)
        if key not in self._st:
            self._st[key] = rank_hand_py(list(self.hands[h]) + list(board), GAME.num_suits, GAME.num_ranks)
        return self._st[key]

    def value(self, sigma, ranges, p, best, h):
        t = self.t
        if self.hs[h] & set(t.root_board):
            return 0.0
        w = ranges[1 - p] * self.compat[h] * board_hands(t).valid[t.board[0]]
        return self._rec(0, sigma, p, best, h, w, t.root_board)

    def _rec(self, n, sigma, p, best, h, w, board):
        t = self.t
        k = t.kind[n]
        sp = t.spent[n]
        if k == KIND_FOLD:
            f = t.player[n]
            return w.sum() * (-sp[p] if f == p else sp[f])
        if k == KIND_CHANCE:
            tot, cnt = 0.0, 0
            for c in t.children(n):
                cards = t.boards[t.board[c]]
                new = set(cards) - set(board)
                if new & self.hs[h]:
                    continue
                cnt += 1
                w2 = w * np.array([not (new & x) for x in self.hs])
                tot += self._rec(c, sigma, p, best, h, w2, cards)
            return tot / t.deal_count[n]
        if k != KIND_DECISION:
            mine = self.strength(h, board)
            m = min(sp)
            v = 0.0
            for h2 in np.nonzero(w)[0]:
                other = self.strength(h2, board)
                v += w[h2] * (m if mine > other else -m if mine < other else 0)
            return v
        q = t.player[n]
        kids = t.children(n)
        r0 = t.row[n]
        if q == p:
            vals = [self._rec(c, sigma, p, best, h, w, board) for c in kids]
            return max(vals) if best else sum(sigma[r0 + a, h] * v for a, v in enumerate(vals))
        return sum(self._rec(c, sigma, p, best, h, w * sigma[r0 + a], board) for a, c in enumerate(kids))


@pytest.mark.parametrize("round_", [1, 2])
def test_values_match_brute_force_over_hand_pairs(round_):
    rng = np.random.default_rng(round_)
    b = flop_root()
    board = (0, 5, 9)
    if round_ == 2:
        b = b.apply(CALL).apply(CALL)
        board = board + (14,)
    tree = build_subgame_tree(GAME, b, board, BETS)
    if round_ == 1:
        assert (tree.kind == KIND_CHANCE).sum() > 0
    ranges = random_ranges(tree, rng)
    sigma = rng.random((tree.num_rows, board_hands(tree).num_hands)).astype(np.float32)
    K.strategy_from(sigma, sigma, tree.kind, tree.num_actions, tree.row)  # normalise rows
    e = Engine(tree)
    brute = Brute(tree)
    ok = np.nonzero(board_hands(tree).valid[tree.board[0]])[0]
    # flop trees are big for a per-hand walk: compare a sample of hands there, all on the river
    sample = rng.choice(ok, 4, replace=False) if round_ == 1 else ok
    for p in (0, 1):
        for mode, best in ((K.MODE_EV, False), (K.MODE_BR, True)):
            got = e.walk(sigma, ranges, p, mode)
            for h in sample:
                assert got[h] == pytest.approx(brute.value(sigma, ranges, p, best, h), rel=1e-9, abs=1e-7)


def test_compact_hand_lists_agree_with_every_unblocked_hand():
    """A seat's vectors keep only the hands of its support (here a sparse random range) on each board:
    on a flop subgame (a chance node deals the turn) the values of those hands, and five DCFR
    iterations, are those of the walk over every unblocked hand, and match brute force."""
    rng = np.random.default_rng(7)
    tree = build_subgame_tree(GAME, flop_root(), (0, 5, 9), BETS)
    assert (tree.kind == KIND_CHANCE).sum() > 0
    ranges = random_ranges(tree, rng)
    ranges[rng.random(ranges.shape) < 0.6] = 0.0
    support = ranges > 0
    wide, narrow = Engine(tree), Engine(tree, support=support)
    assert narrow.size < 0.6 * wide.size
    sigma = rng.random((tree.num_rows, board_hands(tree).num_hands)).astype(np.float32)
    K.strategy_from(sigma, sigma, tree.kind, tree.num_actions, tree.row)
    brute = Brute(tree)
    for p in (0, 1):
        for mode, best in ((K.MODE_EV, False), (K.MODE_BR, True)):
            a = wide.walk(sigma, ranges, p, mode)
            b = narrow.walk(sigma, ranges, p, mode)
            np.testing.assert_allclose(b[support[p]], a[support[p]], rtol=1e-12, atol=1e-9)
            assert (b[~support[p]] == 0).all()
            for h in rng.choice(np.nonzero(support[p])[0], 2, replace=False):
                assert b[h] == pytest.approx(brute.value(sigma, ranges, p, best, h), rel=1e-9, abs=1e-7)
    tables = {e: (np.zeros(e.size, np.float32), np.zeros(e.size, np.float32)) for e in (wide, narrow)}
    for it in range(1, 6):
        for p in (0, 1):
            for e, (reg, ss) in tables.items():
                e.walk_compact(None, ranges, p, K.MODE_CFR, reg, ss, iteration_weights("dcfr", it))
    avg = [e.expand(e.average(tables[e][1])) for e in (wide, narrow)]
    np.testing.assert_allclose(avg[1], avg[0], rtol=1e-5, atol=1e-6)
    outside = ranges.copy()
    outside[0, np.nonzero(~support[0] & board_hands(tree).valid[tree.board[0]])[0][0]] = 1.0
    with pytest.raises(SubgameError, match="outside the engine's support"):
        narrow.walk(sigma, outside, 0, K.MODE_EV)


def river_subgame(seed=0, **kw):
    b = flop_root().apply(CALL).apply(CALL)
    rng = np.random.default_rng(seed)
    tree = build_subgame_tree(GAME, b, (0, 5, 9, 14), BETS)
    return Subgame(GAME, b, (0, 5, 9, 14), random_ranges(tree, rng), BETS, tree=tree, **kw)


@pytest.mark.parametrize("algo", ["dcfr", "cfr+"])
def test_unsafe_solve_converges(algo):
    sub = river_subgame()
    early = solve(sub, "unsafe", iterations=5, algo=algo)
    late = solve(sub, "unsafe", iterations=400, algo=algo)
    assert late.exploitability < early.exploitability / 10
    assert late.exploitability_pct_pot < 0.5
    # the reported figure is what an independent best response finds
    expl, _ = exploitability(sub, late.strategy)
    assert expl == pytest.approx(late.exploitability, rel=1e-4)
    assert late.exploitability == late.subgame_exploitability
    strat = late.root_strategy()
    total = sum(strat.values())
    ok = board_hands(sub.tree).valid[sub.tree.board[0]]
    np.testing.assert_allclose(total[ok], 1.0, rtol=1e-5)


def test_target_and_time_budget_stop():
    sub = river_subgame()
    s = solve(sub, "unsafe", target_pct_pot=2.0, check_every=5)
    assert s.exploitability_pct_pot <= 2.0
    assert s.iterations < 1000
    # checks from iteration 5, at most 4 x 5 apart, the last one at the stop and the first under the target
    checks = [h[0] for h in s.history]
    assert checks[0] == 5 and checks[-1] == s.iterations
    assert all(1 <= b - a <= 20 for a, b in zip(checks, checks[1:]))
    assert all(x / sub.pot * 100 > 2.0 for _, _, x in s.history[:-1])
    s = solve(sub, "unsafe", time_budget=0.2)
    assert s.iterations >= 1


class _Clock:
    """A fake :func:`time.perf_counter` for the solver: every walk of the engine takes one second."""

    def __init__(self):
        self.t = 0.0

    def perf_counter(self) -> float:
        return self.t


@pytest.mark.parametrize(
    "min_iterations, iterations, measured",
    # an iteration is 2 walks (2 s), the final check 2 s too (unsafe: two best-response walks);
    # deadline 10 s: the solver keeps the check's time back and stops after 4 iterations (8 s; the
    # check ends at 10 s); asked for at least 5 it iterates while one fits (5 x 2 s = 10 s), the
    # check skipped; asked for at least 4 it stops as before
    [(0, 4, True), (4, 4, True), (5, 5, False)],
)
def test_min_iterations_come_before_the_final_check(monkeypatch, min_iterations, iterations, measured):
    import types

    from subgame import interrupt, solver

    clock = _Clock()
    fake = types.SimpleNamespace(perf_counter=clock.perf_counter)
    monkeypatch.setattr(solver, "time", fake)
    monkeypatch.setattr(interrupt, "time", fake)
    walk = Engine.walk_compact

    def slow_walk(self, *a, **k):
        clock.t += 1.0
        return walk(self, *a, **k)

    monkeypatch.setattr(Engine, "walk_compact", slow_walk)
    s = solve(river_subgame(), "unsafe", deadline=10.0, min_iterations=min_iterations)
    assert s.iterations == iterations
    assert (s.exploitability is not None) is measured
    assert clock.t <= 10.0  # within the deadline either way
    assert s.timing["iter_s"] == pytest.approx(2.0) and "engine_s" in s.timing


def _blueprint_values(sub, rng):
    """A deliberately poor 'blueprint' in the subgame, and the opponent's values against it."""
    t = sub.public_tree()
    bp = rng.random((t.num_rows, board_hands(t).num_hands)).astype(np.float32) ** 4
    K.strategy_from(bp, bp, t.kind, t.num_actions, t.row)
    e = Engine(t)
    o = sub.opponent
    alt = e.walk(bp, sub.ranges, o, K.MODE_BR)
    est = e.walk(bp, sub.ranges, o, K.MODE_EV)
    return bp, alt, est


@pytest.mark.parametrize("method", ["resolve", "maxmargin", "reach-maxmargin"])
def test_safe_methods_never_give_the_opponent_more_than_its_alternative(method):
    rng = np.random.default_rng(3)
    sub = river_subgame(seed=3)
    bp, alt, est = _blueprint_values(sub, rng)
    sub.alt = alt
    sub.gifts = np.zeros_like(alt)
    s = solve(sub, method, iterations=600)
    # margin >= 0 for every opponent hand: the refined strategy is no more exploitable there
    assert s.min_margin > -0.02 * sub.pot
    assert s.gadget_gap < 0.02 * sub.pot
    if method != "resolve":
        # a poor blueprint leaves room: max-margin finds a strictly positive minimum margin
        assert s.min_margin > 0


def test_maxmargin_margin_at_least_resolve_margin():
    rng = np.random.default_rng(4)
    sub = river_subgame(seed=4)
    _, alt, _ = _blueprint_values(sub, rng)
    sub.alt = alt
    mm = solve(sub, "maxmargin", iterations=600)
    rs = solve(sub, "resolve", iterations=600)
    assert mm.min_margin >= rs.min_margin - 0.01 * sub.pot


def test_estimate_needs_values_and_unknown_method_errors():
    sub = river_subgame()
    with pytest.raises(SubgameError, match="alternative"):
        solve(sub, "maxmargin", iterations=1)
    with pytest.raises(SubgameError, match="blueprint's own values"):
        solve(sub, "estimate", iterations=1)
    with pytest.raises(SubgameError, match="unknown method 'safe'"):
        solve(sub, "safe", iterations=1)


def test_bad_ranges_are_named():
    b = flop_root().apply(CALL).apply(CALL)
    tree = build_subgame_tree(GAME, b, (0, 5, 9, 14), BETS)
    r = np.ones((2, board_hands(tree).num_hands))
    with pytest.raises(SubgameError, match="shares a card with the board"):
        Subgame(GAME, b, (0, 5, 9, 14), r, BETS, tree=tree).validate()
    r = r * board_hands(tree).valid[tree.board[0]]
    r[1] = 0
    with pytest.raises(SubgameError, match="seat 1's range is empty"):
        Subgame(GAME, b, (0, 5, 9, 14), r, BETS, tree=tree).validate()
    with pytest.raises(SubgameError, match="2 x 276"):
        Subgame(GAME, b, (0, 5, 9, 14), r[:, :10], BETS, tree=tree).validate()
    with pytest.raises(SubgameError, match="needs 4 board cards"):
        build_subgame_tree(GAME, b, (0, 5, 9), BETS)


def test_raise_mults_follow_the_last_bet():
    b = flop_root().apply(CALL).apply(CALL)
    tree = build_subgame_tree(GAME, b, (0, 5, 9, 14), BETS)
    # pot 200: half a pot (100 more) is the minimum bet of one big blind, so r200; a pot r300; all-in
    assert tree.action_labels(0) == ["c", "r200", "r300", "r1200"]
    # facing a bet of 200 into the round (street start 100): 2.5x raises to 100 + 2.5 * 200 = 600
    assert tree.action_labels(int(tree.children(0)[2])) == ["f", "c", "r600", "r1200"]
    # facing the 100 bet: 2.5x is 350
    assert tree.action_labels(int(tree.children(0)[1])) == ["f", "c", "r350", "r1200"]
