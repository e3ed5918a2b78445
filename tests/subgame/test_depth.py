"""Depth-limited solving (subgame/depth.py) on a three-round small-deck no-limit game, where the
continuation values and the real game's best responses are exact and cheap."""

import numpy as np
import pytest

from abstraction.buckets import build_buckets
from abstraction.isomorphism import HandIndexer
from abstraction.tree import KIND_DECISION, KIND_SHOWDOWN
from blueprint.blueprint import Blueprint
from blueprint.trainer import make_trainer
from holdem.betting import CALL, FOLD, RAISE
from holdem.gamedef import GameDef
from subgame import kernels as K
from subgame.bets import bp_bets
from subgame.construct import blueprint_sigma, from_matchstate, map_to_blueprint
from subgame.continuation import build_leaf_model, continuation_values
from subgame.depth import DepthLimit, replay
from subgame.engine import Engine
from subgame.solver import solve, subgame_engine
from subgame.tree import SubgameError, all_hands, board_hands, build_subgame_tree

# 5 ranks x 4 suits (20 cards, 190 hands), a 3-card flop and a 1-card turn; 12 big blinds
GAME = GameDef(
    "nolimit",
    3,
    (1200, 1200),
    (100, 50),
    (0, 0, 0),
    (1, 0, 0),
    (255, 255, 255),
    4,
    5,
    2,
    (0, 3, 1),
    name="dl3",
)
BETS_TOML = 'name = "dlbets"\n[[round]]\nsizes = [1.0]\nallin = true\nmax_raises = 2\n'
FLOP = "/2c3d5h"
CONTS = ("blueprint", "fold", "call", "raise")


@pytest.fixture(scope="module")
def bp(tmp_path_factory):
    d = tmp_path_factory.mktemp("dl")
    ix = HandIndexer.for_game(GAME)
    ab = build_buckets(GAME, (ix.size(0), 6, 6), "ehs", d / "ab", progress=False, log=lambda s: None)
    (d / "bets.toml").write_text(BETS_TOML)
    tr = make_trainer(GAME, bets=str(d / "bets.toml"), cards=str(ab), algo="dcfr", seed=0)
    tr.run(3000)
    return Blueprint(tr)


def _flop_subgame(bp, dl=None, bets=None):
    sub, n = from_matchstate(bp, "MATCHSTATE:0:0:cc/:" + "6c6d|" + FLOP, bets=bets or bp_bets(bp))
    if dl is not None:
        sub.depth_limit = dl
    return sub, n


def _bias(sigma, tree, seat, which, factor):
    """The per-hand blueprint ``sigma`` biased at ``seat``'s decisions (an independent rebuild)."""
    if which == "blueprint":
        return sigma
    cls = {"fold": FOLD, "call": CALL, "raise": RAISE}[which]
    out = sigma.copy()
    for u in np.nonzero((tree.kind == KIND_DECISION) & (tree.player == seat))[0]:
        s, A, r0 = int(tree.child_start[u]), int(tree.num_actions[u]), int(tree.row[u])
        f = np.array([factor if int(tree.edge_kind[s + a]) == cls else 1.0 for a in range(A)])[:, None]
        x = sigma[r0 : r0 + A].astype(np.float64) * f
        out[r0 : r0 + A] = x / x.sum(0, keepdims=True)
    return out


def _oracle(bp, leaf_betting, board, ranges, seat, opp, which="blueprint", factor=5.0):
    """``seat``'s values (full width) from a leaf at the end of the flop to the end of the hand when
    the opponent ``opp`` plays continuation ``which`` and the other seat the blueprint: one public
    tree per turn card (the solver's own engine and the blueprint's lift onto public trees), averaged
    over the turn cards each pair of hands leaves."""
    g = bp.gamedef
    rb = replay(leaf_betting, g)
    ((n_abs, q),) = bp.node_distribution(rb)
    assert q == 1.0
    hands = all_hands(g)
    acc = np.zeros(len(hands))
    rest = [c for c in range(g.deck_size) if c not in board]
    for t in rest:
        b4 = tuple(board) + (t,)
        tree = build_subgame_tree(g, rb, b4, bp_bets(bp))
        nm = map_to_blueprint(tree, bp, n_abs)
        sigma = _bias(blueprint_sigma(bp, tree, nm), tree, opp, which, factor)
        blocked = (hands == t).any(1)
        r = np.where(blocked[None, :], 0.0, ranges)
        acc += Engine(tree).walk(sigma, r, seat, K.MODE_EV)
    return acc / (g.deck_size - len(board) - 2 * g.num_hole_cards)  # turn cards left by both hands


def test_truncated_tree_ends_with_the_round(bp):
    sub, _ = _flop_subgame(bp, DepthLimit(bp))
    t = sub.public_tree()
    assert (t.round <= 1).all() and (t.kind != 3).all()
    leaves = np.nonzero(t.kind == KIND_SHOWDOWN)[0]
    assert len(leaves) > 0
    for n in leaves:
        b = t.betting(int(n))
        rb = replay(b, GAME)
        assert rb.round == 2 or rb.finished  # the next round starts, or an all-in was called
    with pytest.raises(SubgameError, match="last round"):
        s2, _ = from_matchstate(bp, "MATCHSTATE:0:0:cc/cc/:6c6d|/2c3d5h/4s", bets=bp_bets(bp))
        s2.depth_limit = DepthLimit(bp)
        s2.public_tree()


def test_blueprint_continuation_equals_an_independent_evaluation(bp):
    """(a) With k = 1 the leaf values are the blueprint's own values from the leaf, and each biased
    continuation's values equal an independent walk of the blueprint biased the same way."""
    rng = np.random.default_rng(0)
    board = (0, 5, 14)  # 2c 3d 5h
    sub, _ = _flop_subgame(bp)
    assert sub.board == board
    for conts in (("blueprint",), CONTS):
        dl = DepthLimit(bp, continuations=conts)
        s2, _ = _flop_subgame(bp, dl)
        tree = s2.public_tree()
        me, o = s2.refine, s2.opponent
        m = build_leaf_model(tree, bp, me, dl)
        valid = board_hands(tree).valid[tree.board[0]]
        checked = 0
        for li, n in enumerate(m.leaf_nodes):
            lb = tree.betting(int(n))
            if replay(lb, GAME).finished:
                continue  # all-in leaves: checked by the solve tests
            ranges = rng.random((2, len(valid))) * valid
            v_me = continuation_values(
                m, li, me, np.stack([ranges[o] if i == 0 else 0 * ranges[o] for i in range(dl.k)])
            )[0]
            want = _oracle(
                bp, lb, board, ranges, me, o
            )  # (float32 work vectors: tolerance relative to the scale)
            np.testing.assert_allclose(v_me, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
            v_o = continuation_values(m, li, o, ranges[me])
            for i, which in enumerate(conts):
                want = _oracle(bp, lb, board, ranges, o, o, which)
                np.testing.assert_allclose(v_o[i], want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
            # the refined seat's values are linear in the opponent's reach per continuation
            split = rng.random((dl.k, len(valid))) * ranges[o]
            tot = continuation_values(m, li, me, split)[0]
            parts = sum(
                continuation_values(m, li, me, np.where(np.arange(dl.k)[:, None] == i, split, 0))[0]
                for i in range(dl.k)
            )
            np.testing.assert_allclose(tot, parts, rtol=1e-4, atol=1e-5 * np.abs(parts).max())
            checked += 1
            if checked >= 3:
                break
        assert checked >= 2


def _full_profile(bp, sub_dl, sol, sub_full):
    """The combined profile on the full-depth subgame: the depth-limited solution in the root's
    round, the blueprint after it."""
    tf = sub_full.public_tree()
    nm = map_to_blueprint(tf, bp, bp.node_of(bp.game.state("MATCHSTATE:0:0:cc/:6c6d|" + FLOP)))
    sigma = blueprint_sigma(bp, tf, nm)
    td = sub_dl.public_tree()
    rows = {tuple(td.betting(int(u)).actions): int(u) for u in np.nonzero(td.kind == KIND_DECISION)[0]}
    for u in np.nonzero((tf.kind == KIND_DECISION) & (tf.round == td.round[0]))[0]:
        v = rows[tuple(tf.betting(int(u)).actions)]
        A = int(tf.num_actions[u])
        sigma[int(tf.row[u]) : int(tf.row[u]) + A] = sol.strategy[int(td.row[v]) : int(td.row[v]) + A]
    return sigma


def _seat_exploitability(e, sigma, ranges, o):
    """The opponent's best-response value against ``sigma`` (chips per unit of reach)."""
    z = float(ranges[0] @ e.compat_mass(ranges[1]))
    return float(ranges[o] @ e.walk(sigma, ranges, o, K.MODE_BR)) / z


@pytest.mark.slow  # 200 iterations and a whole-flop evaluation; the safe methods run below
def test_unsafe_depth_limited_solve_converges_and_is_not_worse_than_the_blueprint(bp):
    """(b) The depth-limited game's exploitability falls to near 0; played in the real game (the
    solution in the flop, the blueprint after) the refined seat is not more exploitable than the
    blueprint beyond a small tolerance."""
    dl = DepthLimit(bp)
    sub, n = _flop_subgame(bp, dl)
    few = solve(sub, "unsafe", iterations=5)
    sol = solve(sub, "unsafe", iterations=200, algo="dcfr")
    assert sol.diagnostics()["depth_limited"] and sol.diagnostics()["leaves"] == dl.model.num_leaves
    assert sol.exploitability_pct_pot < 1.0 and sol.exploitability_pct_pot < few.exploitability_pct_pot
    sub_full, _ = _flop_subgame(bp)
    e = Engine(sub_full.public_tree())
    sig = _full_profile(bp, sub, sol, sub_full)
    tf = sub_full.public_tree()
    nm = map_to_blueprint(tf, bp, n)
    base = blueprint_sigma(bp, tf, nm)
    o = sub.opponent
    mine = _seat_exploitability(e, sig, sub.ranges, o)
    blue = _seat_exploitability(e, base, sub.ranges, o)
    print(
        f"depth-limited game: {few.exploitability_pct_pot:.2f}% of the pot after 5 iterations, "
        f"{sol.exploitability_pct_pot:.3f}% after 200; opponent's best response vs the refined seat in the real "
        f"game: depth-limited {mine:.2f}, blueprint {blue:.2f} chips (pot {sub.pot})"
    )
    assert mine <= blue + 0.02 * sub.pot


@pytest.mark.parametrize("method", ["resolve", "maxmargin", "reach-maxmargin"])
def test_safe_methods_run_depth_limited(bp, method):
    """(c) The safe gadgets at the root of a depth-limited subgame."""
    sub, _ = _flop_subgame(bp, DepthLimit(bp))
    sol = solve(sub, method, iterations=150)
    d = sol.diagnostics()
    assert d["depth_limited"] and np.isfinite(d["exploitability"]) and d["exploitability"] >= -1e-6
    assert sol.min_margin is not None and np.isfinite(sol.min_margin)
    hs = sol.hand_strategy((16, 17))  # 6c6d
    assert abs(sum(hs.values()) - 1) < 1e-5


def test_sampled_deals_are_unbiased(bp):
    """A CFR iteration may walk a sample of the next cards (``samples``): averaged over every
    sample of two cards, the leaf values are the exact ones."""
    import itertools

    dl = DepthLimit(bp)
    sub, _ = _flop_subgame(bp, dl)
    tree = sub.public_tree()
    m = build_leaf_model(tree, bp, sub.refine, dl)
    me, o = sub.refine, sub.opponent
    rest = [c for c in range(GAME.deck_size) if c not in sub.board]
    li = next(i for i, n in enumerate(m.leaf_nodes) if not replay(tree.betting(int(n)), GAME).finished)
    exact = continuation_values(m, li, o, sub.ranges[me])
    acc = np.zeros_like(exact)
    pairs = list(itertools.combinations(rest, 2))
    for pair in pairs:
        mask = np.zeros(GAME.deck_size, np.bool_)
        mask[list(pair)] = True
        acc += continuation_values(m, li, o, sub.ranges[me], mask)
    np.testing.assert_allclose(acc / len(pairs), exact, rtol=1e-4, atol=1e-5 * np.abs(exact).max())


@pytest.mark.parametrize("samples,rule", [(4, "regret"), (None, "best")])
def test_sampled_and_best_response_choices_converge(bp, samples, rule):
    sub, _ = _flop_subgame(bp, DepthLimit(bp, samples=samples, leaf_choice=rule))
    sol = solve(sub, "unsafe", iterations=200)
    print(f"samples {samples}, leaf choice {rule}: {sol.exploitability_pct_pot:.3f}% of the pot")
    assert sol.exploitability_pct_pot < (6.0 if samples else 1.5)  # sampled deals converge more slowly


def test_a_check_on_a_sample_of_cards_estimates_high_and_leaves_the_strategy_alone(bp):
    """``measure_samples``: the exploitability check walks a fixed sample of the next cards; the
    strategy is the exact run's, the solution says how many cards the check walked, and over many
    samples the estimate is at least the exact figure on average (a best response to a sample of
    the cards does at least as well there as the real one)."""
    exact = solve(_flop_subgame(bp, DepthLimit(bp))[0], "unsafe", iterations=40)
    sub, _ = _flop_subgame(bp, DepthLimit(bp))
    est = solve(sub, "unsafe", iterations=40, measure_samples=4)
    assert exact.measure_cards is None and est.measure_cards == 4
    np.testing.assert_array_equal(est.strategy, exact.strategy)
    assert est.exploitability >= 0
    far = solve(
        _flop_subgame(bp, DepthLimit(bp))[0], "unsafe", iterations=40, measure_samples=4, deadline=1e12
    )
    assert far.measure_cards is None  # with a deadline, sampled only when an exact check would not fit
    assert far.exploitability == pytest.approx(exact.exploitability)
    e = subgame_engine(sub, np.float32)
    sigma = e.compress(exact.strategy)
    figures = []
    for seed in range(24):
        assert e.set_measure_sample(4, seed) == 4
        figures.append(e.exploitability(sub.ranges, sigma)[0])
    assert e.set_measure_sample(None) is None
    full = e.exploitability(sub.ranges, sigma)[0]  # (a fresh engine: uniform leaf choices)
    assert np.mean(figures) >= full * 0.98, (np.mean(figures), full)
    with pytest.raises(SubgameError, match="at least 2 cards"):
        e.set_measure_sample(1)


def test_a_depth_limited_solution_does_not_count_the_blueprint_it_refers_to(bp):
    from subgame.cache import nbytes

    sub, _ = _flop_subgame(bp, DepthLimit(bp))
    sol = solve(sub, "unsafe", iterations=3)
    with_bp = nbytes(sol)
    sub.depth_limit.blueprint = None
    assert nbytes(sol) == with_bp  # the blueprint is the process's: not followed


def test_solve_state_is_depth_limited_before_the_last_round(bp):
    from subgame.nested import hand_strategy, solve_state

    st = "MATCHSTATE:0:0:cc/:6c6d|" + FLOP
    sol, node = solve_state(bp, st, "maxmargin", time_budget=None, iterations=30, bets=bp_bets(bp))
    d = sol.diagnostics()
    assert d["depth_limited"] and d["leaves"] > 0 and node == 0
    hs = hand_strategy(sol, node, bp.game.state(st))
    assert abs(sum(hs.values()) - 1) < 1e-5
    last = "MATCHSTATE:0:0:cc/cc/:6c6d|" + FLOP + "/4s"
    sol3, _ = solve_state(bp, last, "unsafe", time_budget=None, iterations=5, bets=bp_bets(bp))
    assert not sol3.diagnostics()["depth_limited"]
    with pytest.raises(SubgameError, match="last round"):
        solve_state(bp, last, "unsafe", iterations=5, bets=bp_bets(bp), depth_limit=True)
    with pytest.raises(SubgameError, match="continuation"):
        DepthLimit(bp, continuations=("blueprint", "bluff"))


@pytest.mark.slow  # the flop to the end of the hand: the biggest subgame of these tests
def test_solve_state_on_the_flop_without_a_depth_limit(bp):
    from subgame.nested import solve_state

    st = "MATCHSTATE:0:0:cc/:6c6d|" + FLOP
    sol, _ = solve_state(
        bp, st, "unsafe", time_budget=None, iterations=5, bets=bp_bets(bp), depth_limit=False
    )
    assert not sol.diagnostics()["depth_limited"]


def test_solve_cli_depth_limited(bp, tmp_path, capsys):
    import json

    from mccfr.cli import main

    (tmp_path / "bets.toml").write_text(BETS_TOML)
    run = tmp_path / "run"
    ix = HandIndexer.for_game(GAME)
    ab = build_buckets(GAME, (ix.size(0), 6, 6), "ehs", tmp_path / "ab", progress=False, log=lambda s: None)
    tr = make_trainer(GAME, bets=str(tmp_path / "bets.toml"), cards=str(ab), algo="dcfr", seed=0)
    tr.run(500)
    tr.save(run)
    with pytest.raises(SystemExit) as e:
        main(
            [
                "solve",
                str(run),
                "--matchstate",
                "MATCHSTATE:0:0:cc/:6c6d|" + FLOP,
                "--method",
                "unsafe",
                "--iterations",
                "20",
                "--samples",
                "4",
                "--continuations",
                "blueprint,raise",
                "--bias",
                "10",
                "--leaf-cards",
                "5",
                "--save",
                str(tmp_path / "dl.solve"),
                "--json",
            ]
        )
    assert e.value.code in (0, None)
    lines = capsys.readouterr().out.strip().splitlines()
    out = json.loads(lines[-1])
    assert out["depth_limited"] and out["continuations"] == ["blueprint", "raise"] and out["bias"] == 10
    assert len(out["leaf_cards"]) == 5 and any("fixed sample of 5" in ln for ln in lines)
    assert out["iterations"] == 20 and out["exploitability_pct_pot"] >= 0
    assert any("depth-limited" in ln for ln in lines)
    # reopened and continued: with RUN_DIR, or with the blueprint file the saved solve names
    for args in ([str(run)], []):
        with pytest.raises(SystemExit) as e:
            main(["solve", *args, "--load", str(tmp_path / "dl.solve"), "--iterations", "3", "--json"])
        assert e.value.code in (0, None)
        again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert (
            again["iterations"] == 23 and again["depth_limited"] and again["leaf_cards"] == out["leaf_cards"]
        )
    with pytest.raises(SystemExit) as e:
        main(
            [
                "solve",
                str(run),
                "--matchstate",
                "MATCHSTATE:0:0:cc/:6c6d|" + FLOP,
                "--full-depth",
                "--iterations",
                "5",
                "--json",
            ]
        )
    assert e.value.code in (0, None)
    assert not json.loads(capsys.readouterr().out.strip().splitlines()[-1])["depth_limited"]


# a four-round game: 3 suits x 4 ranks (12 cards), flop 3, turn 1, river 1; 8 big blinds
G4 = GameDef(
    "nolimit",
    4,
    (800, 800),
    (100, 50),
    (0, 0, 0, 0),
    (1, 0, 0, 0),
    (255, 255, 255, 255),
    3,
    4,
    2,
    (0, 3, 1, 1),
    name="dl4",
)


@pytest.fixture(scope="module")
def bp4(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("dl4")
    ix = HandIndexer.for_game(G4)
    ab = build_buckets(G4, (ix.size(0), 4, 4, 4), "ehs", tmp_path / "ab", progress=False, log=lambda s: None)
    (tmp_path / "bets.toml").write_text(BETS_TOML)
    tr = make_trainer(G4, bets=str(tmp_path / "bets.toml"), cards=str(ab), algo="dcfr", seed=0)
    tr.run(500)
    return Blueprint(tr)


def test_two_later_rounds_continuation_equals_an_independent_evaluation(bp4):
    """From the flop of a four-round game the continuation deals the turn, plays it, deals the river
    (two chance layers, and two after an all-in): with k = 1 and each biased continuation the leaf
    values equal the independent per-turn-card evaluation."""
    g = G4
    rng = np.random.default_rng(1)
    dl = DepthLimit(bp4)
    sub, _ = from_matchstate(bp4, FLOP4, bets=bp_bets(bp4), with_gifts=False, depth_limit=dl)
    tree = sub.public_tree()
    me, o = sub.refine, sub.opponent
    m = build_leaf_model(tree, bp4, me, dl)
    assert (m.kind == 3).sum() > m.num_leaves  # more than one chance node per leaf
    valid = board_hands(tree).valid[tree.board[0]]
    checked = 0
    for li, n in enumerate(m.leaf_nodes):
        lb = tree.betting(int(n))
        if replay(lb, g).finished:
            continue
        ranges = rng.random((2, len(valid))) * valid
        want = _oracle(bp4, lb, sub.board, ranges, me, o)
        got = continuation_values(m, li, me, np.stack([ranges[o]] + [0 * ranges[o]] * (dl.k - 1)))[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
        v_o = continuation_values(m, li, o, ranges[me])
        for i, which in enumerate(CONTS):
            want = _oracle(bp4, lb, sub.board, ranges, o, o, which)
            np.testing.assert_allclose(v_o[i], want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
        checked += 1
        if checked >= 2:
            break
    assert checked == 2
    sol = solve(sub, "unsafe", iterations=100)
    assert sol.diagnostics()["depth_limited"] and sol.exploitability_pct_pot < 2.0


FLOP4 = "MATCHSTATE:0:0:cc/:5c5d|/2c3d4h"


def _exact_leaf(bp4, dl):
    """The flop subgame of ``FLOP4`` with ``dl``, its exact leaf model (every later card), a leaf
    that is not all-in, opponent reach per continuation, and both seats' exact values there."""
    sub, _ = from_matchstate(bp4, FLOP4, bets=bp_bets(bp4), with_gifts=False, depth_limit=dl)
    tree = sub.public_tree()
    me, o = sub.refine, sub.opponent
    exact = build_leaf_model(tree, bp4, me, DepthLimit(bp4))
    li = next(i for i, n in enumerate(exact.leaf_nodes) if not replay(tree.betting(int(n)), G4).finished)
    r_op = np.stack([sub.ranges[o]] * dl.k) * np.arange(1, dl.k + 1)[:, None]
    want_me = continuation_values(exact, li, me, r_op)
    want_o = continuation_values(exact, li, o, sub.ranges[me])
    return sub, tree, me, o, exact, li, r_op, want_me, want_o


def test_a_fixed_sample_of_the_later_cards_is_unbiased(bp4):
    """``leaf_cards``: the turn and the river are dealt from a fixed sample of the cards left; the
    leaf values averaged over every sample of 4 of the 9 cards are the exact ones (both seats'
    walks, all continuations), and one sample differs from them."""
    import itertools

    dl = DepthLimit(bp4, leaf_cards=4)
    sub, tree, me, o, exact, li, r_op, want_me, want_o = _exact_leaf(bp4, dl)
    rest = [c for c in range(G4.deck_size) if c not in sub.board]
    subsets = list(itertools.combinations(rest, 4))
    acc_me, acc_o = np.zeros_like(want_me), np.zeros_like(want_o)
    for cards in subsets:
        m = build_leaf_model(tree, bp4, me, dl, sample=cards)
        assert m.num_nodes < exact.num_nodes and sorted(m.sample.tolist()) == list(cards)
        acc_me += continuation_values(m, li, me, r_op)
        acc_o += continuation_values(m, li, o, sub.ranges[me])
    np.testing.assert_allclose(acc_me / len(subsets), want_me, rtol=1e-4, atol=1e-5 * np.abs(want_me).max())
    np.testing.assert_allclose(acc_o / len(subsets), want_o, rtol=1e-4, atol=1e-5 * np.abs(want_o).max())
    one = continuation_values(build_leaf_model(tree, bp4, me, dl), li, o, sub.ranges[me])
    assert np.abs(one - want_o).max() > 1e-3 * np.abs(want_o).max()
    with pytest.raises(SubgameError, match="sample"):
        build_leaf_model(tree, bp4, me, dl, sample=[sub.board[0], rest[0], rest[1]])
    with pytest.raises(SubgameError, match="at least 3"):
        DepthLimit(bp4, leaf_cards=2)


def test_sampled_runouts_are_unbiased(bp4, monkeypatch):
    """``leaf_deals``: the continuations are dealt along sampled runouts (here 3 of the 9 turn cards,
    then every river). The leaf values averaged over every set of 3 turn cards are the exact ones
    (both seats' walks, all continuations); every leaf has the same runouts; enough deals to cover
    every card give the exact model itself."""
    import itertools

    import subgame.continuation as continuation

    dl = DepthLimit(bp4, leaf_deals=(3, 8))
    sub, tree, me, o, exact, li, r_op, want_me, want_o = _exact_leaf(bp4, dl)

    m = build_leaf_model(tree, bp4, me, dl)  # drawn: the same 3 turn cards under every leaf
    turns = {b for b in m.boards if len(b) == 4}
    assert len(turns) == 3 and m.leaf_deals == (3, 8) and m.num_nodes < exact.num_nodes
    one = continuation_values(m, li, o, sub.ranges[me])
    assert np.abs(one - want_o).max() > 1e-3 * np.abs(want_o).max()

    rest = [c for c in range(G4.deck_size) if c not in sub.board]
    subsets = list(itertools.combinations(rest, 3))
    acc_me, acc_o = np.zeros_like(want_me), np.zeros_like(want_o)
    for cards in subsets:
        monkeypatch.setattr(continuation, "_draw_deals", lambda rest, kk, want, rng: [(c,) for c in cards])
        m = build_leaf_model(tree, bp4, me, dl)
        acc_me += continuation_values(m, li, me, r_op)
        acc_o += continuation_values(m, li, o, sub.ranges[me])
    np.testing.assert_allclose(acc_me / len(subsets), want_me, rtol=1e-4, atol=1e-5 * np.abs(want_me).max())
    np.testing.assert_allclose(acc_o / len(subsets), want_o, rtol=1e-4, atol=1e-5 * np.abs(want_o).max())

    full = build_leaf_model(tree, bp4, me, DepthLimit(bp4, leaf_deals=(9, 8)))
    assert full.num_nodes == exact.num_nodes
    np.testing.assert_array_equal(continuation_values(full, li, o, sub.ranges[me]), want_o)
    for bad in ((0, 1), (), (2.5,)):
        with pytest.raises(SubgameError, match="leaf_deals"):
            DepthLimit(bp4, leaf_deals=bad)
    with pytest.raises(SubgameError, match="neither"):
        DepthLimit(bp4, leaf_deals=(3, 1), samples=4)


def test_pre_flop_the_default_depth_limit_deals_sampled_runouts(bp4):
    """The default run's part of the next test: from pre-flop the default depth limit deals the
    continuations along sampled runouts. (A pre-flop depth-limited solve along them, solved within
    5% of the pot, runs by default in tests/blueprint/test_every_state.py's
    test_dead_ends_are_solved_on_every_round.)"""
    from subgame.depth import DEFAULT_LEAF_DEALS, default_depth_limit

    dft = default_depth_limit(bp4, root_round=0)
    assert dft.leaf_deals == DEFAULT_LEAF_DEALS and dft.samples is None and dft.leaf_cards is None


# slow: each solve_state from this game's pre-flop builds the whole rest of the hand's public
# tree for the blueprint's values (about 30 s a call on one core)
@pytest.mark.slow
def test_a_pre_flop_subgame_is_solved_along_sampled_runouts(bp4):
    """From pre-flop (three deals after it) the default depth limit deals the continuations along
    sampled runouts, and the depth-limited game is solved (its exploitability falls and is small)."""
    from subgame.depth import DEFAULT_LEAF_DEALS, default_depth_limit
    from subgame.nested import solve_state

    dft = default_depth_limit(bp4, root_round=0)
    assert dft.leaf_deals == DEFAULT_LEAF_DEALS and dft.samples is None and dft.leaf_cards is None
    state = "MATCHSTATE:1:0::|5c5d"
    first, _ = solve_state(bp4, state, "unsafe", time_budget=None, iterations=2, bets=bp_bets(bp4))
    sol, n = solve_state(bp4, state, "unsafe", time_budget=None, iterations=200, bets=bp_bets(bp4))
    d = sol.diagnostics()
    assert d["depth_limited"] and d["leaf_deals"] == list(DEFAULT_LEAF_DEALS)
    assert sol.exploitability_pct_pot < min(2.0, first.exploitability_pct_pot / 5)


def test_depth_limited_blueprint_values_agree_with_the_whole_hands(bp4):
    """The gadgets' values from the depth-limited game (for a flop whose rest of the hand is too big
    to walk): the blueprint's own values equal those of the blueprint walked to the end of the hand,
    and the best-response values (the best of the continuations per hand) lie between them and the
    unrestricted best response."""
    from subgame.construct import blueprint_ranges, blueprint_values
    from subgame.tree import all_hands

    st = bp4.game.state(FLOP4)
    n = bp4.node_of(st)
    board = tuple(int(c) for c in st.board_cards)
    me = st.current_player()
    o = 1 - me
    ranges = blueprint_ranges(bp4, n, board, all_hands(G4))
    br, ev, _ = blueprint_values(bp4, n, board, ranges, o)
    br_dl, ev_dl, _ = blueprint_values(bp4, n, board, ranges, o, depth_limit=DepthLimit(bp4))
    live = ranges[o] > 0
    tol = 1e-5 * np.abs(ev).max()
    np.testing.assert_allclose(ev_dl[live], ev[live], rtol=1e-4, atol=tol)
    assert (br_dl[live] >= ev_dl[live] - tol).all() and (br_dl[live] <= br[live] + tol).all()
    assert (br_dl[live] > ev_dl[live] + tol).any()


def test_a_flop_too_big_to_walk_is_solved_safely_depth_limited(bp4, monkeypatch):
    """A flop whose rest of the hand is over the size limit (forced here) gets its gadget values from
    the depth-limited game on a fixed sample of the later cards (by default from a round with two
    deals after it), and a safe solve converges with the opponent's best responses within them (a
    margin of at least 0); without a depth limit the state is refused with the size named."""
    import subgame.construct as C
    import subgame.depth as depth
    from subgame.depth import DEFAULT_LEAF_CARDS, DEFAULT_SAMPLES, FLOP_SAMPLES, default_depth_limit
    from subgame.nested import solve_state

    assert default_depth_limit(bp4, root_round=1).leaf_cards == DEFAULT_LEAF_CARDS == 12
    assert default_depth_limit(bp4, root_round=2).leaf_cards is None  # the turn: every river card
    # CFR iterations sample 2 river cards from a turn (at equal time, less exploitable than 4),
    # 4 of the 12 leaf cards from a flop; a given count wins
    assert default_depth_limit(bp4, root_round=2).samples == DEFAULT_SAMPLES == 2
    assert default_depth_limit(bp4, root_round=1).samples == FLOP_SAMPLES == 4
    assert default_depth_limit(bp4, samples=6, root_round=2).samples == 6
    assert default_depth_limit(bp4, root_round=0).leaf_cards is None  # pre-flop: sampled runouts
    monkeypatch.setattr(C, "MAX_REST_ENTRIES", 10)
    monkeypatch.setattr(depth, "DEFAULT_LEAF_CARDS", 8)  # this game has 9 cards left after the flop
    with pytest.raises(SubgameError, match="too big for exact values"):
        solve_state(
            bp4, FLOP4, "maxmargin", time_budget=None, iterations=5, bets=bp_bets(bp4), depth_limit=False
        )
    sol, _ = solve_state(bp4, FLOP4, "reach-maxmargin", time_budget=None, iterations=20, bets=bp_bets(bp4))
    assert sol.diagnostics()["depth_limited"] and len(sol.subgame.depth_limit.model.sample) == 8  # of 9
    assert sol.subgame.gifts is not None
    for method in ("maxmargin", "reach-maxmargin"):
        dl = DepthLimit(bp4, samples=None, leaf_cards=8)
        sol, _ = solve_state(
            bp4, FLOP4, method, time_budget=None, iterations=300, bets=bp_bets(bp4), depth_limit=dl
        )
        assert sol.min_margin >= -1e-3 * sol.subgame.pot, (method, sol.min_margin)
        assert sol.exploitability_pct_pot < 0.5, (method, sol.exploitability_pct_pot)


def test_an_earlier_decision_too_big_for_exact_values_gives_depth_limited_gifts(bp4, monkeypatch):
    """The rest of the hand from the state (a flop bet faced) fits exact values; from the opponent's
    bet earlier in the round it does not (forced here): that decision's gifts come from the
    depth-limited game, the state's alternative values stay exact. Walked exactly, such gifts took
    20 s of a 24.5 s flop construction on the main job's blueprint (a pre-flop re-raised pot)."""
    import subgame.construct as C
    import subgame.depth as depth
    from subgame.nested import solve_state

    state = "MATCHSTATE:0:0:cc/cr300:5c5d|/2c3d4h"
    n = bp4.walk(bp4.game.state(state)).node
    m = bp4.walk(bp4.game.state("MATCHSTATE:1:0:cc/c:|5c5d/2c3d4h")).node  # the opponent's bet
    exact = C.check_rest_size

    def sized(bp, node, board):
        if node == m:
            raise SubgameError("too big for exact values (forced)")
        exact(bp, node, board)

    walked = []
    engine = C._values_engine

    def record(bp, node, board, seat, cache, depth_limit=None):
        walked.append((node, depth_limit is not None))
        return engine(bp, node, board, seat, cache, depth_limit)

    monkeypatch.setattr(C, "check_rest_size", sized)
    monkeypatch.setattr(C, "_values_engine", record)
    monkeypatch.setattr(depth, "DEFAULT_LEAF_CARDS", 8)  # this game has 9 cards left after the flop
    sol, _ = solve_state(bp4, state, "reach-maxmargin", time_budget=None, iterations=5, bets=bp_bets(bp4))
    assert walked == [(n, False), (m, True)]
    assert np.isfinite(sol.subgame.gifts).all() and (sol.subgame.gifts >= 0).all()


def test_a_stopped_solve_ends_inside_the_subgames_construction(bp, monkeypatch):
    """``stop`` set while the subgame is being built from the blueprint (here: as soon as the
    blueprint's strategy has been lifted onto a tree) ends the solve at the construction's next
    checkpoint, before the depth-limited continuations are built or any iteration runs."""
    import threading

    import subgame.construct as C
    import subgame.solver as S
    from subgame.interrupt import SolveInterrupted, checkpoint, interruptible
    from subgame.nested import solve_state

    stop = threading.Event()
    lifted, built = [], []
    real_sigma, real_model = C.blueprint_sigma, S.build_leaf_model

    def sigma(*a, **k):
        out = real_sigma(*a, **k)
        lifted.append(1)
        stop.set()
        return out

    def model(*a, **k):
        built.append(1)
        return real_model(*a, **k)

    monkeypatch.setattr(C, "blueprint_sigma", sigma)
    for module in (C, S):  # the two places that build continuations
        monkeypatch.setattr(module, "build_leaf_model", model)
    st = "MATCHSTATE:0:0:cc/:6c6d|" + FLOP
    with pytest.raises(SolveInterrupted):
        solve_state(bp, st, "maxmargin", time_budget=None, iterations=30, bets=bp_bets(bp), stop=stop)
    assert lifted == [1] and built == []
    # without bounds the checkpoints do nothing; a block's bounds end with it (and nest)
    checkpoint()
    with interruptible(0.0):
        with pytest.raises(SolveInterrupted):
            checkpoint()
        with interruptible(None):
            checkpoint()
        with pytest.raises(SolveInterrupted):
            checkpoint()
    checkpoint()


@pytest.mark.parametrize("method,rule", [("unsafe", "regret"), ("reach-maxmargin", "best")])
def test_a_depth_limited_solve_is_saved_and_continued_exactly(bp, tmp_path, method, rule):
    """Saved with its leaf choices and card-sampling generator: n iterations, save, load with the
    blueprint, m more equal n + m in one go; without the blueprint, or with another, a clear error."""
    import copy

    from blueprint.io.errors import CheckpointError
    from subgame.saved import read_saved, save_solve

    def sub():
        s, _ = _flop_subgame(bp, DepthLimit(bp, samples=3, leaf_choice=rule, continuations=CONTS[:3]))
        return s

    first = solve(sub(), method, iterations=4, keep_state=True)
    path = tmp_path / "dl.solve"
    save_solve(path, first)
    with pytest.raises(CheckpointError, match="depth-limited.*give that blueprint"):
        read_saved(path)
    other = copy.copy(bp)
    other.__dict__.pop("_strategy_hash", None)
    other.probs = bp.probs.copy()
    other.probs.reshape(-1)[-1] += 0.25
    with pytest.raises(CheckpointError, match="not the one it was solved with"):
        read_saved(path, blueprint=other)
    saved = read_saved(path, blueprint=lambda rec: bp)
    assert saved.subgame.depth_limit.continuations == CONTS[:3]
    for k in ("reg", "sum", "pick"):
        np.testing.assert_array_equal(getattr(saved.state.leaf, k), getattr(first.state.leaf, k))
    shown = solve(saved.subgame, method, iterations=0, resume=saved.state)
    np.testing.assert_array_equal(shown.strategy, first.strategy)
    cont = solve(saved.subgame, method, iterations=3, resume=saved.state, keep_state=True)
    whole = solve(sub(), method, iterations=7, keep_state=True)
    np.testing.assert_array_equal(cont.strategy, whole.strategy)
    np.testing.assert_array_equal(cont.state.regret, whole.state.regret)
    np.testing.assert_array_equal(cont.state.leaf.sum, whole.state.leaf.sum)
    assert cont.exploitability == whole.exploitability


def test_the_blueprint_tables_are_reused_and_change_nothing(bp):
    """The leaves' continuation rows and the hands' card buckets are computed once per blueprint
    (:mod:`subgame.tables`): a second solve's leaf model reads them, equal to one built afresh."""
    from subgame.continuation import build_leaf_model
    from subgame.tables import LRU, tables_of

    tb = tables_of(bp)
    tb.clear()
    sub, _ = _flop_subgame(bp, DepthLimit(bp))
    t = sub.public_tree()
    fresh = build_leaf_model(t, bp, sub.seat, sub.depth_limit)
    rows, buckets = tb.leaf_rows.misses, tb.buckets.misses
    assert len(tb.leaf_rows) > 0 and len(tb.buckets) > 0
    again = build_leaf_model(t, bp, sub.seat, sub.depth_limit)
    assert (tb.leaf_rows.misses, tb.buckets.misses) == (rows, buckets)  # all from the tables
    assert tb.leaf_rows.hits >= len(fresh.leaf_nodes)
    for name in ("s_me", "s_op", "bucket", "order", "kind", "child_start", "edge_child", "srow"):
        np.testing.assert_array_equal(getattr(again, name), getattr(fresh, name), err_msg=name)
    # a table holds at most its bytes, least recently used out first
    lru = LRU(3 * 800)
    for k in range(5):
        assert lru.get(k, lambda: np.zeros(100)).nbytes == 800
    assert len(lru) == 3 and lru.bytes <= 3 * 800 and lru.misses == 5
    lru.get(2, lambda: None)
    assert lru.hits == 1
    assert lru.get(9, lambda: np.zeros(1000)).shape == (1000,) and 9 not in lru._d  # too big: not kept
