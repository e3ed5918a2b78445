"""Blueprint queries by MATCHSTATE, off-tree histories, export."""

import numpy as np
import pytest

from abstraction.translation import pseudo_harmonic
from abstraction.tree import KIND_DECISION, KIND_SHOWDOWN
from blueprint.blueprint import Blueprint, BlueprintError
from blueprint.trainer import make_trainer
from holdem.game import Game
from mccfr.evaluation.players import BlueprintPlayer


@pytest.fixture(scope="module")
def hunl_bp():
    tr = make_trainer("hunl20", bets="small", cards="rank", algo="pluribus", seed=1)
    tr.run(3000)
    return Blueprint(tr)


def test_keys_are_real_raise_sizes_and_sum_to_one(hunl_bp):
    s = hunl_bp.strategy("MATCHSTATE:1:0::|AhAd")
    assert sum(s.values()) == pytest.approx(1.0)
    assert set(s) == {"f", "c", "r300", "r2000"}  # pot raise of the real pot, and all-in (20 bb)
    # an off-tree open to 250: the answer is sized on the real pot (pot raise to 750)
    s = hunl_bp.strategy("MATCHSTATE:0:0:r250:AhAd|")
    assert set(s) <= {"f", "c", "r750", "r2000"} and sum(s.values()) == pytest.approx(1.0)


def test_an_overbet_maps_to_all_in_and_a_called_all_in_with_chips_behind_gets_the_fallback(hunl_bp):
    """All-in is a size of the abstraction for translation, with the pot fraction of the stack
    behind it: pre-flop in hunl20 the pot raise is 1 pot and all-in (2,000) is 9.5 pots."""
    g = Game.load("hunl20")
    t = hunl_bp.tree
    # 1,900 of a 2,000 stack is 9 pots: all-in with the pseudo-harmonic probability 1 - 1/85
    st = g.state("MATCHSTATE:0:0:r1900:AhAd|")
    n = hunl_bp.node_of(st)
    assert t.kind[n] == KIND_DECISION and tuple(int(x) for x in t.spent[n]) == (100, 2000)
    dist = dict((tuple(int(x) for x in t.spent[m]), p) for m, p in hunl_bp.node_distribution(st))
    p_pot = pseudo_harmonic(9.0, 1.0, 9.5)
    assert p_pot == pytest.approx(1 / 85)
    assert dist == pytest.approx({(100, 300): p_pot, (100, 2000): 1 - p_pot})
    # a 2-pot raise (to 500) stays nearer the pot raise: pot with probability 15/25.5
    st2 = g.state("MATCHSTATE:0:0:r500:AhAd|")
    assert tuple(int(x) for x in t.spent[hunl_bp.node_of(st2)]) == (100, 300)
    dist2 = dict((tuple(int(x) for x in t.spent[m]), p) for m, p in hunl_bp.node_distribution(st2))
    assert dist2 == pytest.approx({(100, 300): 15 / 25.5, (100, 2000): 1 - 15 / 25.5})
    # answering the overbet is fold or call only (as to an all-in), sized on the real state
    assert set(hunl_bp.strategy(st)) <= {"f", "c"}
    # called: the abstract hand is over (all-in) while 100 chips remain behind; the real hand goes
    # on, and the blueprint answers from its fallback (the abstract node most like the real
    # state: same round and seat, facing a bet or not, nearest stack-to-pot ratio), by hand
    player = BlueprintPlayer(hunl_bp)
    for ms in (
        "MATCHSTATE:0:1:r1900c/:AhAd|/2c3d4h",
        "MATCHSTATE:1:1:r1900c/r2000:|KsKd/2c3d4h",
        "MATCHSTATE:1:1:r1900c/cc/r2000:|KsKd/2c3d4h/5s",
    ):
        st3 = g.state(ms)
        assert t.kind[hunl_bp.node_of(st3)] == KIND_SHOWDOWN
        ans = hunl_bp.answer(st3)
        assert ans.source == "fallback" and "all-in was called" in ans.reason
        n = ans.node
        assert t.kind[n] == KIND_DECISION and int(t.player[n]) == st3.viewer and int(t.round[n]) == st3.round
        assert (t.spent[n][0] != t.spent[n][1]) == (st3.betting.spent[0] != st3.betting.spent[1])
        assert sum(ans.strategy.values()) == pytest.approx(1.0)
        for a in ans.strategy:
            st3.apply(a)  # legal in the real state
        player.act(st3, np.random.default_rng(0))
    assert player.sources == {"fallback": 3}


def test_more_raises_than_the_abstraction_allows_get_the_fallback(hunl_bp):
    g = Game.load("hunl20")
    # three raises in a round: the 'small' abstraction caps raises at two
    st = g.state("MATCHSTATE:0:0:r200r400r600:AhAd|")
    with pytest.raises(BlueprintError, match="raise"):
        hunl_bp.node_of(st)
    ans = hunl_bp.answer(st)
    assert ans.source == "fallback" and "abstraction has none" in ans.reason
    assert set(ans.strategy) <= {"f", "c", "r1800", "r2000"} and len(ans.strategy) > 1  # pot raise, all-in
    assert hunl_bp.strategy(st) == ans.strategy
    player = BlueprintPlayer(hunl_bp)
    assert player.act(st, np.random.default_rng(0)) in ans.strategy and player.sources == {"fallback": 1}


def test_facing_an_all_in_with_the_stack_nearly_in_the_fallback_answers_at_the_real_price(hunl_bp):
    """A raise war past the cap of two: seat 1 has put 1,800 of its 2,000 in and faces the all-in,
    200 more into a pot of 3,800. The call ends the betting, so the fallback node is the one at
    the nearest price (fraction of the pot to call), not a node facing an all-in at about even
    money (an open shove answered: 1,700 into 2,300), where most hands fold."""
    g = Game.load("hunl20")
    st = g.state("MATCHSTATE:1:0:r300r900r1800r2000:|QsJh")
    ans = hunl_bp.answer(st)
    assert ans.source == "fallback" and set(ans.strategy) <= {"f", "c"}
    real_f, _ = hunl_bp._spr(np.array([st.betting.spent]), np.array([1]))
    rnd, player, frac, _, _ = hunl_bp._node_features()
    nodes = hunl_bp._decision_index()
    seat1_facing = (rnd == 0) & (player == 1) & (frac > 0)
    chosen = frac[np.nonzero(nodes == ans.node)[0][0]]
    assert real_f[0] == pytest.approx(200 / 3800)
    assert abs(chosen - real_f[0]) == pytest.approx(np.abs(frac[seat1_facing] - real_f[0]).min())
    assert chosen < 0.5 < frac[seat1_facing].max()  # a node facing an all-in at ~even money exists
    # facing a raise that leaves chips behind, the stack-to-pot ratio still counts: after three
    # min-raises the seat to act answers from a node that can raise (fold, call and raises)
    st2 = g.state("MATCHSTATE:0:0:r200r400r600:AhAd|")
    assert hunl_bp.answer(st2).source == "fallback" and len(hunl_bp.answer(st2).strategy) > 2


def test_wrong_viewer_and_terminal_states_are_errors(hunl_bp):
    with pytest.raises(BlueprintError, match="seat 1 is to act"):
        hunl_bp.strategy("MATCHSTATE:0:0::AhAd|")
    with pytest.raises(BlueprintError, match="hand is over"):
        hunl_bp.strategy("MATCHSTATE:0:0:f:AhAd|")
    with pytest.raises(BlueprintError, match="needs a MATCHSTATE"):
        hunl_bp.strategy("STATE:0::AhAd|KsKd")


def test_export_schema_and_metadata(hunl_bp, tmp_path):
    import pyarrow.parquet as pq

    rows = hunl_bp.export(tmp_path / "s.parquet")
    table = pq.read_table(tmp_path / "s.parquet")
    assert table.num_rows == rows == len(hunl_bp.probs)
    assert [str(f.type) for f in table.schema] == ["int8", "string", "int32", "string", "float"]
    meta = table.schema.metadata
    for key in (b"mccfr.schema_version", b"mccfr.game", b"mccfr.bets_hash", b"mccfr.abstraction_hash"):
        assert key in meta
    # probabilities of each (betting, bucket) sum to one
    df = table.group_by(["betting", "bucket"]).aggregate([("probability", "sum")])
    assert np.allclose(df.column("probability_sum").to_numpy(), 1.0, atol=1e-5)
