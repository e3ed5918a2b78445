"""Node locking (subgame.locking): a locked seat plays the lock, the other seat best-responds to
it, exploitability is the locked game's, and bad locks are refused by name."""

import numpy as np
import pytest
from test_solver import BETS, GAME, Brute, flop_root, random_ranges

from abstraction.tree import KIND_DECISION
from holdem.betting import CALL
from subgame import kernels as K
from subgame.engine import Engine
from subgame.locking import lock_arg, node_frequencies, nodes_at, parse_lock_spec, resolve_locks
from subgame.solver import exploitability, solve
from subgame.tree import SubgameError, board_hands, build_subgame_tree
from subgame.types import Subgame

BOARD = (0, 5, 9, 14)


def river(seed=0):
    b = flop_root().apply(CALL).apply(CALL)
    tree = build_subgame_tree(GAME, b, BOARD, BETS)
    return Subgame(GAME, b, BOARD, random_ranges(tree, np.random.default_rng(seed)), BETS, tree=tree)


def history(tree, n) -> str:
    """Node ``n``'s betting history from the subgame's root (independent of nodes_at)."""
    return tree.betting_string(n)[len(tree.betting_string(0)) :]


def seat_nodes(tree, seat):
    return [n for n in range(tree.num_nodes) if tree.kind[n] == KIND_DECISION and tree.player[n] == seat]


def random_strategy(tree, rng):
    sigma = rng.random((tree.num_rows, board_hands(tree).num_hands)).astype(np.float32) ** 3
    K.strategy_from(sigma, sigma, tree.kind, tree.num_actions, tree.row)
    return sigma


def whole_seat_lock(tree, sigma, seat):
    out = {}
    for n in seat_nodes(tree, seat):
        r0 = int(tree.row[n])
        out[history(tree, n)] = {
            a: sigma[r0 + i].astype(float).tolist() for i, a in enumerate(tree.action_labels(n))
        }
    return out


def test_histories_name_the_nodes():
    sub = river()
    t = sub.public_tree()
    for n in np.nonzero(t.kind == KIND_DECISION)[0]:
        assert nodes_at(t, history(t, n)).tolist() == [n]
    first = t.action_labels(0)
    assert first[0] == "c" and any(a.startswith("r") for a in first)


@pytest.mark.parametrize("seat", [0, 1])
def test_a_whole_locked_seat_gets_the_exact_best_response(seat):
    sub = river(seed=seat)
    t = sub.public_tree()
    sigma = random_strategy(t, np.random.default_rng(10 + seat))
    sol = solve(sub, "unsafe", iterations=600, locks=whole_seat_lock(t, sigma, seat))
    live = board_hands(t).valid[t.board[0]]
    rows = np.concatenate([np.arange(t.row[n], t.row[n] + t.num_actions[n]) for n in seat_nodes(t, seat)])
    # the locked seat plays the lock
    np.testing.assert_allclose(sol.strategy[rows][:, live], sigma[rows][:, live], atol=1e-6)
    # the other seat's values equal its best response to the lock, found independently by brute force
    o = 1 - seat
    profile = sol.strategy.copy()
    e = Engine(t)
    brute = Brute(t)
    z = float(sub.ranges[0] @ e.compat_mass(sub.ranges[1]))
    br = sum(sub.ranges[o, h] * brute.value(sigma, sub.ranges, o, True, h) for h in np.nonzero(live)[0]) / z
    got = float(sub.ranges[o] @ e.walk(profile, sub.ranges, o, K.MODE_EV)) / z
    assert got == pytest.approx(br, abs=0.002 * sub.pot)
    # exploitability is the locked game's: the locked seat cannot deviate, so it is half the
    # other seat's gain over its value
    own = float(sub.ranges[seat] @ e.walk(profile, sub.ranges, seat, K.MODE_EV)) / z
    their = float(sub.ranges[o] @ e.walk(profile, sub.ranges, o, K.MODE_BR)) / z
    assert sol.exploitability == pytest.approx((own + their) / 2, abs=1e-7 * sub.pot)  # float32 walks
    assert sol.exploitability < 0.002 * sub.pot
    # in the unlocked game the random lock is very exploitable
    assert exploitability(sub, profile)[0] > 10 * sol.exploitability


def test_locking_a_node_to_the_equilibrium_keeps_the_solution():
    sub = river(seed=5)
    free = solve(sub, "unsafe", iterations=500)
    t = sub.tree
    lock = {"": {a: v.astype(float).tolist() for a, v in free.root_strategy().items()}}
    sol = solve(sub, "unsafe", iterations=500, locks=lock)
    live = board_hands(t).valid[t.board[0]]
    for a, v in sol.root_strategy().items():
        np.testing.assert_allclose(v[live], free.root_strategy()[a][live], atol=1e-6)
    # solved in the locked game, with the same value for each seat as the unlocked equilibrium (the
    # responses to root actions the lock rarely takes may differ: only a root deviation, which the
    # lock forbids, could exploit them)
    assert sol.exploitability < 0.001 * sub.pot
    e = Engine(t)
    for p in (0, 1):
        v = [float(sub.ranges[p] @ e.walk(x.strategy, sub.ranges, p, K.MODE_EV)) for x in (sol, free)]
        z = float(sub.ranges[0] @ e.compat_mass(sub.ranges[1]))
        assert v[0] / z == pytest.approx(v[1] / z, abs=0.001 * sub.pot)


def test_one_frequency_for_the_range_and_the_inline_form():
    sub = river(seed=2)
    t = sub.public_tree()
    acts = t.action_labels(0)
    spec = parse_lock_spec(f"={acts[0]}:0.25,{acts[1]}:0.75")
    assert spec == {"": {acts[0]: 0.25, acts[1]: 0.75}}
    sol = solve(sub, "unsafe", iterations=20, locks=spec)
    live = board_hands(t).valid[t.board[0]]
    rs = sol.root_strategy()
    np.testing.assert_allclose(rs[acts[0]][live], 0.25, atol=1e-6)
    np.testing.assert_allclose(rs[acts[1]][live], 0.75, atol=1e-6)
    for a in acts[2:]:
        assert (rs[a][live] == 0).all()
    freq = node_frequencies(sol, "")
    assert freq["locked"] and freq["strategy"][acts[0]] == pytest.approx(0.25, abs=1e-6)


def test_a_locked_node_plays_the_lock_for_hands_that_never_reach_it():
    """Hands with no range in the subgame are outside the solver's lists; at a locked node they
    play the lock too (not the uniform strategy a solve leaves where nothing reached): the grid
    of every hand shows the node as locked."""
    sub = river(seed=3)
    t = sub.public_tree()
    live = board_hands(t).valid[t.board[0]]
    gone = np.nonzero(live)[0][:40]
    sub.ranges[t.player[0], gone] = 0.0  # the seat to act never holds these hands here
    acts = t.action_labels(0)
    sol = solve(sub, "unsafe", iterations=20, locks={"": {acts[0]: 0.25, acts[1]: 0.75}})
    rs = sol.root_strategy()
    np.testing.assert_allclose(rs[acts[0]][live], 0.25, atol=1e-6)
    np.testing.assert_allclose(rs[acts[1]][live], 0.75, atol=1e-6)
    unlocked = solve(sub, "unsafe", iterations=20)  # without the lock: uniform for them
    np.testing.assert_allclose(unlocked.root_strategy()[acts[0]][gone], 1 / len(acts), atol=1e-6)


def test_a_lock_file(tmp_path):
    f = tmp_path / "locks.json"
    f.write_text('{"": {"c": 1}, "r600": {"f": 0.5, "c": 0.5}}')
    assert lock_arg(str(f)) == {"": {"c": 1.0}, "r600": {"f": 0.5, "c": 0.5}}
    with pytest.raises(SubgameError, match="not valid JSON"):
        (tmp_path / "bad.json").write_text("{")
        lock_arg(str(tmp_path / "bad.json"))
    with pytest.raises(SubgameError, match="does not exist"):
        lock_arg(str(tmp_path / "missing.json"))


def test_bad_locks_are_named():
    sub = river(seed=1)
    t = sub.public_tree()
    acts = t.action_labels(0)
    H = board_hands(t).num_hands
    r = next(a for a in acts if a.startswith("r"))
    with pytest.raises(SubgameError, match=r"node '' \(the root\): the probabilities sum to 0.9, not 1"):
        resolve_locks(t, {"": {acts[0]: 0.5, acts[1]: 0.4}})
    with pytest.raises(SubgameError, match="node 'r99999'.*no action 'r99999'"):
        resolve_locks(t, {"r99999": {"c": 1.0}})
    with pytest.raises(SubgameError, match="no action 'x9'"):
        resolve_locks(t, {"": {"x9": 1.0}})
    with pytest.raises(SubgameError, match="no action 'f' there"):
        resolve_locks(t, {"": {"f": 1.0}})
    with pytest.raises(SubgameError, match=f"node '{r}f' is a fold"):
        resolve_locks(t, {r + "f": {"c": 1.0}})
    with pytest.raises(SubgameError, match="not an ACPC betting history"):
        resolve_locks(t, {"k": {"c": 1.0}})
    with pytest.raises(SubgameError, match=f"expected one probability or {H}"):
        resolve_locks(t, {"": {acts[0]: [1.0, 0.0]}})
    with pytest.raises(SubgameError, match=r"in \[0, 1\]"):
        resolve_locks(t, {"": {acts[0]: 1.5, acts[1]: -0.5}})
    per_hand = np.full(H, 0.5)
    per_hand[np.nonzero(board_hands(t).valid[t.board[0]])[0][3]] = 0.1
    with pytest.raises(SubgameError, match=r"sum to 0.6, not 1 \(hand \w+, and 0 more\)"):
        resolve_locks(t, {"": {acts[0]: per_hand.tolist(), acts[1]: 0.5}})
    with pytest.raises(SubgameError, match="expected ACTION:PROBABILITY"):
        parse_lock_spec("=c")
    with pytest.raises(SubgameError, match="locked twice"):
        parse_lock_spec("=c:1;=c:1")
    with pytest.raises(SubgameError, match="must map actions"):
        resolve_locks(t, {"": 1.0})
    with pytest.raises(SubgameError, match="no action"):
        solve(sub, "unsafe", iterations=1, locks={"r99999": {"c": 1.0}})


@pytest.mark.parametrize("seat", [0, 1])
def test_leduc_a_whole_locked_seat_gets_the_exact_best_response_of_the_game(seat):
    """The whole of Leduc hold'em as one subgame (rooted at the first action, the board card dealt
    inside it), one seat locked at every node to a random strategy of its card's rank (a lock
    past the deal applies on every board): the other seat's solved value is its best response's
    value in the real game, from the blueprint's exact best response on the game's own tree."""
    from abstraction.cards import lossless
    from abstraction.tree import build_tree
    from blueprint.best_response import BestResponse
    from blueprint.vector_cfr import VectorCFR
    from holdem.betting import Betting
    from holdem.gamedef import PRESETS
    from subgame.tree import all_hands

    g = PRESETS["leduc"]
    root = Betting.initial(g)
    t = build_subgame_tree(g, root, (), None)
    hands = all_hands(g)
    H = len(hands)
    ranges = np.ones((2, H))  # every deal: the game itself
    sub = Subgame(g, root, (), ranges, None, tree=t)
    rank = [int(h[0]) // g.num_suits for h in hands]
    rng = np.random.default_rng(20 + seat)
    lock: dict = {}
    for n in seat_nodes(t, seat):
        labels = t.action_labels(n)
        p = rng.random((len(labels), g.num_ranks)) ** 2
        p /= p.sum(axis=0)
        lock.setdefault(
            history(t, n), {a: [float(p[i, rank[h]]) for h in range(H)] for i, a in enumerate(labels)}
        )
    assert len(lock) > 10 and any("/" in k for k in lock)
    sol = solve(sub, "unsafe", iterations=3000, locks=lock)
    e = Engine(t)
    z = float(ranges[0] @ e.compat_mass(ranges[1]))
    o = 1 - seat
    got = float(ranges[o] @ e.walk(sol.strategy, ranges, o, K.MODE_EV)) / z
    # independently: the lock as a strategy per (node, lossless bucket) of the game's betting tree
    bt = build_tree(g)
    cards = lossless(g)
    vc = VectorCFR(bt, cards)  # (its table layout: row offsets per node)
    offsets = vc.row_offset
    ref = BestResponse(bt, cards, offsets)
    probs = np.zeros(vc.size)
    for n in range(bt.num_nodes):
        if bt.kind[n] != KIND_DECISION:
            continue
        na, r = int(bt.num_actions[n]), int(bt.round[n])
        s = int(offsets[n])
        block = probs[s : s + int(cards.num_buckets[r]) * na].reshape(-1, na)
        block[:] = 1.0 / na
        if bt.player[n] != seat:
            continue
        spec = lock[bt.betting_string(n)]
        for b in [()] if r == 0 else [(c,) for c in range(g.deck_size)]:
            buckets = ref._ev._buckets(b, r)
            for h in range(H):
                if int(hands[h][0]) not in b:
                    block[buckets[h]] = [spec[a][h] for a in bt.action_labels(n)]
    _, brv = ref.exploitability(probs)
    assert got == pytest.approx(brv[o], abs=1e-5)
    assert sol.exploitability == pytest.approx(0.0, abs=1e-5)  # the locked game: nothing to gain
