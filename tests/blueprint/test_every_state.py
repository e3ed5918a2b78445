"""Every legal state gets an answer, labelled by where it came from (issue 19): random legal play of
every preset game, the 4-bet the bet abstraction lacks, a called translated all-in with chips
behind (hand-aware, never a blind check/call), the player's own raises staying on the tree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abstraction.tree import KIND_DECISION
from blueprint.blueprint import SOURCES, Blueprint
from blueprint.trainer import make_trainer
from holdem.betting import RAISE
from holdem.game import Game
from holdem.gamedef import PRESETS
from mccfr.evaluation.match import play_hand
from mccfr.evaluation.players import BlueprintPlayer
from mccfr.serving.responders import BlueprintResponder
from subgame.tree import SubgameError

_BPS: dict[str, tuple[Blueprint, BlueprintResponder]] = {}


def _blueprint(name: str) -> tuple[Blueprint, BlueprintResponder]:
    """A small blueprint of preset ``name`` (hold'em with the table-free ``rank`` buckets)."""
    if name not in _BPS:
        holdem = name.startswith(("hunl", "hulhe"))
        kw = {"cards": "rank", "algo": "pluribus"} if holdem else {}
        if name.startswith("hunl"):
            kw["bets"] = "small"
        tr = make_trainer(name, seed=1, **kw)
        tr.run(400)
        bp = Blueprint(tr)
        _BPS[name] = (bp, BlueprintResponder(bp))
    return _BPS[name]


class _Probe:
    """A random raiser (a raise of a random legal size half the time it may raise, else fold or
    call) that first asks the blueprint and the service for the state: both must answer."""

    name = "probe"

    def __init__(self, bp: Blueprint, responder: BlueprintResponder, seen: dict):
        self.bp, self.responder, self.seen = bp, responder, seen

    def act(self, state, rng: np.random.Generator) -> str:
        ans = self.bp.answer(state)
        assert ans.source in SOURCES and ans.source != "subgame"
        assert sum(ans.strategy.values()) == pytest.approx(1.0)
        for a in ans.strategy:
            state.apply(a)  # every key legal in the real state (apply returns a new state)
        out = self.responder.answer(str(state))
        assert out["source"] == ans.source and out["strategy"] == ans.strategy
        self.seen[ans.source] = self.seen.get(ans.source, 0) + 1
        b = state.betting
        rr = b.raise_range()
        if rr is not None and rng.random() < 0.5:
            return "r" if state.gamedef.is_limit else f"r{int(rng.integers(rr[0], rr[1] + 1))}"
        return "f" if b.can_fold() and rng.random() < 0.2 else "c"


@settings(max_examples=70, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(PRESETS)), seed=st.integers(0, 2**32 - 1))
def test_random_legal_play_of_every_preset_always_gets_an_answer(name, seed):
    bp, responder = _blueprint(name)
    game = bp.game
    g = game.gamedef
    rng = np.random.default_rng(seed)
    seen: dict = {}
    probes = (_Probe(bp, responder, seen), _Probe(bp, responder, seen))
    for hand in range(3):
        deal = rng.choice(g.deck_size, g.cards_per_deal, replace=False)
        play_hand(game, probes, (rng, rng), deal, hand)


@pytest.fixture(scope="module")
def hunl100_bp() -> Blueprint:
    # the main job's game and bets (hunl100, 'small': two raises a round), table-free buckets
    tr = make_trainer("hunl100", bets="small", cards="rank", algo="pluribus", seed=1)
    tr.run(3000)
    return Blueprint(tr)


def test_the_four_bet_the_abstraction_lacks_gets_an_answer(hunl100_bp):
    # the opponent opens to 300, the player 3-bets to 900, the opponent 4-bets to 2,700
    ms = "MATCHSTATE:0:0:r300r900r2700:AhKd|"
    ans = hunl100_bp.answer(ms)
    assert ans.source == "fallback" and "abstraction has none" in ans.reason
    state = Game.load("hunl100").state(ms)
    for a in ans.strategy:
        state.apply(a)
    t = hunl100_bp.tree
    n = ans.node
    assert t.kind[n] == KIND_DECISION and int(t.player[n]) == 0 and int(t.round[n]) == 0
    assert t.spent[n][0] != t.spent[n][1]  # facing a raise, as the real state is
    assert len(ans.strategy) > 1 and any(a.startswith("r") for a in ans.strategy)


def test_after_a_called_translated_all_in_the_answer_depends_on_the_hand(hunl100_bp):
    # a pre-flop raise to 2,000 (9.5 pots) maps to the abstract all-in; called, 8,000 remain behind
    strategies = {}
    for hole in ("AhKd", "7h2h"):
        for line in ("r2000c/", "r2000c/cr4000"):
            ans = hunl100_bp.answer(f"MATCHSTATE:0:0:{line}:{hole}|/Ks9c2d")
            assert ans.source in ("fallback", "translated")
            assert ans.strategy != {"c": 1.0}
            strategies[hole, line] = ans.strategy
    assert strategies["AhKd", "r2000c/"] != strategies["7h2h", "r2000c/"]
    assert strategies["AhKd", "r2000c/cr4000"] != strategies["7h2h", "r2000c/cr4000"]


def test_the_players_own_raises_never_leave_the_tree(hunl100_bp):
    """Own raises are the blueprint's abstract choices, sized on the real pot after an opponent's
    off-tree open: the walk maps them back to their edge whatever the translation drew."""
    bp = hunl100_bp
    t = bp.tree
    game = Game.load("hunl100")
    after_open = "MATCHSTATE:0:0:r250:AhKd|"  # off-tree open (the abstract opens are 300 and all-in)
    raises = [a for a in bp.strategy(after_open) if a.startswith("r") and a != "r10000"]
    assert raises
    for own in raises:
        st_ = game.state(f"MATCHSTATE:0:0:r250{own}c/:AhKd|/Ks9c2d")
        for seed in range(20):
            w = bp.walk(st_, np.random.default_rng(seed))
            assert w.dead_end is None and t.kind[w.node] == KIND_DECISION
            # the edge taken at the player's raise is the abstract raise whose real size it is
            path = []
            n = w.node
            while t.parent[n] >= 0:
                path.append(int(t.parent_edge[n]))
                n = int(t.parent[n])
            own_edge = path[::-1][1]
            assert int(t.edge_kind[own_edge]) == RAISE
            opened = int(t.parent[t.edge_child[own_edge]])
            keys = bp.action_keys(opened, game.state("MATCHSTATE:0:0:r250:AhKd|").betting)
            assert keys[own_edge - int(t.child_start[opened])] == own


def test_the_blueprint_player_labels_its_answers_in_a_match(hunl100_bp):
    from mccfr.evaluation.match import play_match
    from mccfr.evaluation.players import player_from_spec

    game = hunl100_bp.game
    player = BlueprintPlayer(hunl100_bp)
    res = play_match(game, player, player_from_spec("minraise", game), 40, seed=3)
    counts = res.to_json()["sources"]["player"]
    assert sum(counts.values()) > 40 and set(counts) <= {"blueprint", "translated", "fallback"}
    assert counts.get("fallback", 0) > 0  # min-raise wars go past the abstraction's two raises


def test_dead_ends_are_solved_on_every_round(hunl100_bp):
    from mccfr.evaluation.solving import SolvingPlayer
    from subgame.nested import solve_state

    game = hunl100_bp.game
    # a third raise on the river: no abstract node; the subgame from the state itself is solved
    # (no blueprint values there: unsafe)
    river = game.state("MATCHSTATE:1:0:r300c/cc/cc/r600r1800r5400:|AhKd/Ks9c2d/4h/5s")
    assert hunl100_bp.walk(river).dead_end is not None
    sol, n = solve_state(hunl100_bp, river, "reach-maxmargin", iterations=30, time_budget=None)
    assert sol.method == "unsafe" and sol.iterations == 30
    player = SolvingPlayer(hunl100_bp, iterations=30)
    strat, source = player.strategy(river)
    assert source == "subgame" and sum(strat.values()) == pytest.approx(1.0)
    # pre-flop (the 4-bet the abstraction lacks) the dead end's subgame is depth-limited at the
    # flop, its continuations dealt along sampled runouts, and solved within the time budget
    four_bet = game.state("MATCHSTATE:0:0:r300r900r2700:AhKd|")
    sol, n = solve_state(hunl100_bp, four_bet, iterations=20, time_budget=None)
    d = sol.diagnostics()
    assert sol.method == "unsafe" and d["depth_limited"] and d["leaf_deals"]
    assert sol.exploitability_pct_pot < 5.0
    strat, source = player.strategy(four_bet)
    assert source == "subgame" and sum(strat.values()) == pytest.approx(1.0)
    aces = game.state("MATCHSTATE:0:0:r300r900r2700:AsAc|")
    assert player.strategy(aces)[0].get("f", 0.0) < 0.05  # aces never fold to a 4-bet


def test_off_tree_opens_are_solved_nested_and_pre_flop_solutions_serve_every_deal(hunl100_bp):
    """With ``off_tree`` the solving player answers an opponent's off-tree pre-flop open (to 700:
    the abstraction has pot raises and all-in) from the nested subgame rooted right after it instead
    of translating it; that subgame has no board card, so its solution answers the same public state
    in later hands with other cards without a new solve. Without ``off_tree`` the open is translated."""
    from mccfr.evaluation.solving import HAND, SolvingPlayer
    from subgame.nested import opponent_off_tree_split

    game = hunl100_bp.game
    plain = SolvingPlayer(hunl100_bp, iterations=10)
    assert plain.strategy(game.state("MATCHSTATE:0:0:r700:AhKd|"))[1] == "translated"
    assert plain.solves == 0
    player = SolvingPlayer(hunl100_bp, iterations=10, off_tree=True)
    first = player.strategy(game.state("MATCHSTATE:0:0:r700:AhKd|"))
    assert first[1] == "subgame" and player.solves == 1
    ahkd = game.state("MATCHSTATE:0:0:r700:AhKd|")
    sol = player.policy.hands.get(HAND, player._key(ahkd))  # the hand's solved subgame
    assert sol.subgame.alt is not None and sol.diagnostics()["depth_limited"]  # nested: safe, at the flop
    other = player.strategy(game.state("MATCHSTATE:0:1:r700:7h2c|"))
    assert other[1] == "subgame" and player.solves == 1 and player.reused == 1
    seven_deuce = game.state("MATCHSTATE:0:1:r700:7h2c|")
    assert player.policy.hands.get(HAND, player._key(seven_deuce)) is sol  # the public one, now the hand's
    assert hand_strategy_of(sol, game, "MATCHSTATE:0:1:r700:7h2c|") == other[0]
    # on the tree, and after a board card, nothing is shared across hands
    assert player.strategy(game.state("MATCHSTATE:0:2:r300:AhKd|"))[1] == "blueprint"
    assert player.policy.public.snapshot()["cache_entries"] == 1
    # an open close to an abstract size is translated: a min-raise (below the pot raise, the
    # smallest size) and an open to 4,000 (94% of it mapped to the all-in); 0 solves every one
    for ms, split in (("MATCHSTATE:0:3:r200:AhKd|", 0.0), ("MATCHSTATE:0:3:r4000:AhKd|", 0.06)):
        assert opponent_off_tree_split(hunl100_bp, game.state(ms)) == pytest.approx(split, abs=0.005)
        assert player.strategy(game.state(ms))[1] == "translated"
    assert player.solves == 1
    assert opponent_off_tree_split(hunl100_bp, game.state("MATCHSTATE:0:0:r700:AhKd|")) > 0.4
    every = SolvingPlayer(hunl100_bp, iterations=2, off_tree=0.0)
    assert every.strategy(game.state("MATCHSTATE:0:3:r200:AhKd|"))[1] == "subgame" and every.solves == 1
    with pytest.raises(SubgameError, match="translation split"):
        SolvingPlayer(hunl100_bp, off_tree=0.6)


def test_later_subgames_give_the_player_the_range_it_really_played(hunl100_bp):
    """The solving player called the off-tree open to 700 from the nested solve. The hand's later
    subgames (the river's, a dead end rooted at the state) weigh its range by what it played there,
    the solve's call for every hand, not by what the blueprint does at the translated open."""
    from mccfr.evaluation.solving import HAND, SolvingPlayer
    from subgame.construct import history_ranges
    from subgame.nested import node_of_state
    from subgame.tree import all_hands

    bp = hunl100_bp
    game = bp.game
    hands = all_hands(bp.gamedef)
    player = SolvingPlayer(bp, iterations=10, off_tree=True)
    opened = game.state("MATCHSTATE:0:0:r700:Kc9d|")
    acts = [player.act(opened, np.random.default_rng(seed)) for seed in range(40)]
    assert player.solves == 1 and "c" in acts  # the solve calls with Kc9d (about 3/4 of the time)
    sol = player.policy.hands.get(HAND, player._key(opened))  # the hand's solved subgame
    call = sol.node_strategy(node_of_state(sol.tree, opened))["c"].astype(np.float64)
    called = game.state("MATCHSTATE:0:0:r700c/:Kc9d|/Ks9c2d")
    key = player._key(called)
    played = player.policy.played(HAND, key, called)
    assert list(played) == [1]
    np.testing.assert_array_equal(played[1], call)
    # the range after the call is the solve's call, not the blueprint's at the translated open
    blocked = [
        i for i, h in enumerate(hands) if set(int(c) for c in h) & set(int(c) for c in called.board_cards)
    ]
    mine = history_ranges(bp, called, hands, played=played)[0]
    want = call.copy()
    want[blocked] = 0.0
    np.testing.assert_array_equal(mine, want)
    translated = history_ranges(bp, called, hands)[0]
    assert np.abs(translated / translated.sum() - want / want.sum()).sum() > 0.1  # they differ
    # another action the solve has is weighed by its own probabilities; one it lacks is left to
    # the blueprint's model
    shove = player.policy.played(HAND, key, game.state("MATCHSTATE:0:0:r700r10000:Kc9d|"))
    np.testing.assert_array_equal(shove[1], sol.node_strategy(node_of_state(sol.tree, opened))["r10000"])
    assert player.policy.played(HAND, key, game.state("MATCHSTATE:0:0:r700r5000:Kc9d|")) == {}
    # ... and another hand of the match starts afresh
    assert player.policy.played(HAND, ("other", key[1]), called) == {}
    # the river's subgame (a dead end: the off-tree open was pre-flop) starts from that range
    river = game.state("MATCHSTATE:0:0:r700c/cc/cc/:Kc9d|/Ks9c2d/4h/5s")
    assert player.strategy(river)[1] == "subgame" and player.solves == 2
    np.testing.assert_allclose(
        player.policy.hands.get(HAND, player._key(river)).subgame.ranges[0],
        history_ranges(bp, river, hands, played=played)[0],
        rtol=1e-12,
    )


def hand_strategy_of(sol, game, ms):
    from subgame.nested import hand_strategy, node_of_state

    state = game.state(ms)
    return hand_strategy(sol, node_of_state(sol.tree, state), state)


def test_a_flop_dead_end_after_a_translated_all_in_is_solved_by_hand(hunl100_bp):
    """The pre-flop raise to 2,000 was translated to all-in and called: the real hand has 80 big
    blinds behind, the abstract one none (a dead end). A flop bet there is solved depth-limited
    from the state (the turn and river from a fixed sample of 12 cards, unsafe: no blueprint values
    there), so the answer depends on the hand: AhKd on Ks9c2d moves in, 7h4d (no pair, no draw) folds."""
    from mccfr.evaluation.solving import SolvingPlayer

    player = SolvingPlayer(hunl100_bp, iterations=20)
    game = hunl100_bp.game
    strong = game.state("MATCHSTATE:1:0:r2000c/r4000:|AhKd/Ks9c2d")
    weak = game.state("MATCHSTATE:1:0:r2000c/r4000:|7h4d/Ks9c2d")
    assert hunl100_bp.walk(strong).dead_end is not None
    s_strong, src_strong = player.strategy(strong)
    s_weak, src_weak = player.strategy(weak)
    assert src_strong == src_weak == "subgame"
    assert s_strong.get("f", 0.0) < 0.05 and s_weak.get("f", 0.0) > 0.5, (s_strong, s_weak)


def test_an_earlier_rounds_off_tree_bet_is_re_solved_from_the_state(hunl100_bp):
    from subgame.nested import solve_state, state_subgame

    # the opponent's half-pot flop bet (off the tree: pot bets only) was translated; on the river a
    # nested subgame rooted at that flop bet would run to the end of the hand (millions of
    # nodes), so the subgame is rooted at the river state with the translated history's ranges
    state = hunl100_bp.game.state("MATCHSTATE:1:0:r300c/r450c/cc/c:|AhKd/Ks9c2d/4h/5s")
    sub = state_subgame(hunl100_bp, state)
    assert sub.root.round == 3 and sub.alt is None
    sol, _ = solve_state(hunl100_bp, state, "reach-maxmargin", iterations=20, time_budget=None)
    assert sol.method == "unsafe" and sol.iterations == 20
    # the same for the viewer's own earlier off-tree bet (a flop or turn answer of a server
    # solving from there, in the subgame's finer sizes): rooted at the river state, not re-solved
    # from the flop decision to the end of the hand
    own = hunl100_bp.game.state("MATCHSTATE:0:0:r300c/r450c/cc/:AhKd|/Ks9c2d/4h/5s")
    sub = state_subgame(hunl100_bp, own)
    assert sub.root.round == 3 and sub.alt is None and sub.seat == 0
    sol, _ = solve_state(hunl100_bp, own, "reach-maxmargin", iterations=20, time_budget=None)
    assert sol.method == "unsafe" and sol.iterations == 20 and sol.tree.num_nodes < 5_000


def test_history_ranges_follow_the_blueprint_on_its_tree_and_ignore_off_tree_raises(hunl100_bp):
    from subgame.construct import blueprint_ranges, history_ranges
    from subgame.tree import all_hands

    bp = hunl100_bp
    game = bp.game
    hands = all_hands(bp.gamedef)
    # on the tree: the same reach as the abstract path's (computed the other way, node by node)
    on = game.state("MATCHSTATE:1:0:r300c/r900:|AhKd/Ks9c2d")
    board = tuple(int(c) for c in on.board_cards)
    np.testing.assert_allclose(
        history_ranges(bp, on, hands),
        blueprint_ranges(bp, bp.node_of(on), board, hands),
        rtol=1e-6,
        atol=1e-12,
    )
    # an action played from another strategy (a solve's) is weighed by it, the same both ways
    v = np.linspace(0.1, 1.0, len(hands))
    played = history_ranges(bp, on, hands, played={1: v})
    np.testing.assert_allclose(
        played, blueprint_ranges(bp, bp.node_of(on), board, hands, played={1: v}), rtol=1e-6, atol=1e-12
    )
    plain = history_ranges(bp, on, hands)
    np.testing.assert_array_equal(played[1], plain[1])  # index 1 is seat 0's call
    assert not np.allclose(played[0], plain[0])
    # a raise no abstract action becomes (the third of the round) leaves its taker's range alone
    before = game.state("MATCHSTATE:0:0:r300r900:AhKd|")
    after = game.state("MATCHSTATE:0:0:r300r900r2700:AhKd|")
    rb, ra = history_ranges(bp, before, hands), history_ranges(bp, after, hands)
    np.testing.assert_array_equal(ra[1], rb[1])
    np.testing.assert_array_equal(ra[0], rb[0])
