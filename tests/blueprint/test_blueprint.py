"""Blueprint queries by MATCHSTATE, off-tree histories, export."""

import numpy as np
import pytest

from blueprint.blueprint import Blueprint, BlueprintError
from blueprint.players import BlueprintPlayer
from blueprint.trainer import make_trainer
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


def test_a_bet_that_is_not_all_in_never_maps_to_all_in(hunl_bp):
    g = Game.load("hunl20")
    # 1,900 of a 2,000 stack: closer to all-in than to the pot raise, but not all-in
    st = g.state("MATCHSTATE:0:0:r1900:AhAd|")
    n = hunl_bp.node_of(st)
    t = hunl_bp.tree
    assert t.kind[n] == 0 and tuple(t.spent[n]) != (2000, 100)


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
