"""Blueprint queries by MATCHSTATE, off-tree histories, export."""

import numpy as np
import pytest

from abstraction.translation import pseudo_harmonic
from abstraction.tree import KIND_DECISION, KIND_SHOWDOWN
from blueprint.blueprint import Blueprint, BlueprintError
from blueprint.trainer import make_trainer
from evaluation.players import BlueprintPlayer
from holdem.game import Game


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


def test_an_overbet_maps_to_all_in_and_the_committed_player_calls_down(hunl_bp):
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
    # called: the abstract hand is over (all-in) while 100 chips remain behind; the blueprint
    # checks and calls from then on, as its answer (not a fallback)
    player = BlueprintPlayer(hunl_bp)
    for ms in (
        "MATCHSTATE:0:1:r1900c/:AhAd|/2c3d4h",
        "MATCHSTATE:1:1:r1900c/r2000:|KsKd/2c3d4h",
        "MATCHSTATE:1:1:r1900c/cc/r2000:|KsKd/2c3d4h/5s",
    ):
        st3 = g.state(ms)
        assert t.kind[hunl_bp.node_of(st3)] == KIND_SHOWDOWN
        assert hunl_bp.strategy(st3) == {"c": 1.0}
        assert player.act(st3, np.random.default_rng(0)) == "c"
    assert player.fallbacks == 0


def test_off_tree_history_errors_and_the_player_falls_back_to_call(hunl_bp):
    g = Game.load("hunl20")
    # three raises in a round: the 'small' abstraction caps raises at two
    st = g.state("MATCHSTATE:0:0:r200r400r600:AhAd|")
    with pytest.raises(BlueprintError, match="raise"):
        hunl_bp.strategy(st)
    player = BlueprintPlayer(hunl_bp)
    assert player.act(st, np.random.default_rng(0)) == "c" and player.fallbacks == 1


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
