"""16-bit tables (``--table-bits 16``): bfloat16 regrets with stochastic rounding, strategy sums
in block floating point (16-bit mantissas, one exponent per row); convergence against 32 bits,
exact resume, the width-mismatch errors, saturation counted and never wrapped, bytes per entry."""

import numba
import numpy as np
import pytest
from click.testing import CliRunner

from blueprint.algo import AlgoError, algo_dict, get_algo
from blueprint.io.errors import CheckpointError
from blueprint.kernels import Rows, es_iterations
from blueprint.numerics import (
    BF16_MAX_BITS,
    bf16_decode,
    bf16_encode,
    bf16_load,
    bf16_round_sr,
    sums_values,
)
from blueprint.trainer import Trainer, make_trainer
from blueprint.trainer_checkpoint import check_table_bits
from mccfr.cli import cli
from mccfr.cli.common import example_matchstate

BF16_MAX = float(bf16_decode(np.array([BF16_MAX_BITS], np.uint16))[0])


@numba.njit
def _mean_of_rounding(x, n):
    counts = np.zeros(2, np.int64)
    s = 0.0
    for i in range(n):
        s += bf16_load(bf16_round_sr(x, i % 65536, counts))
    return s / n


def test_bfloat16_codec_round_trips_and_stochastic_rounding_is_unbiased():
    x = np.array([0.0, 1.0, -2.5, 3.0e38, 1.0e-30], np.float32)
    bits, over, under = bf16_encode(x)
    assert (over, under) == (0, 0)
    assert np.allclose(bf16_decode(bits), x, rtol=2**-8)
    assert bf16_decode(bf16_encode(np.array([1.0 + 2**-7], np.float32))[0])[0] == 1.0 + 2**-7  # exact
    # every 16-bit rounding offset once: the mean is the value (0.4 of the spacing above 1.0)
    x = 1.0 + 0.4 * 2**-7
    assert _mean_of_rounding(x, 65536) == pytest.approx(x, rel=1e-7)


def test_sixteen_bit_config_keeps_old_hashes_and_refuses_what_it_cannot_do():
    assert "table_bits" not in algo_dict(get_algo("dcfr"))  # 32 bits: the config hash of old runs
    assert algo_dict(get_algo("dcfr", table_bits=16))["table_bits"] == 16
    with pytest.raises(AlgoError, match="table_bits"):
        get_algo("dcfr", table_bits=8)
    with pytest.raises(AlgoError, match="16-bit"):
        get_algo("cfr", table_bits=16)
    with pytest.raises(AlgoError, match="int32"):
        get_algo("pluribus", table_bits=16, regret_dtype="int32")


def test_bytes_per_entry():
    """32 bits: 8 bytes per entry; 16 bits: 4, plus one byte per row (the sums' exponent)."""
    a = make_trainer("leduc", algo="dcfr", table_bits=32)
    b = make_trainer("leduc", algo="dcfr", table_bits=16)
    assert a.table_bytes == 8 * a.size
    assert b.table_bytes == 4 * b.size + b.num_rows
    assert b.regret.dtype == np.uint16 and b.strat.dtype == np.uint16 and b.strat_exp.dtype == np.int8
    assert b.table_bytes / b.size <= 4.5


def _exploitability(game: str, algo: str, bits: int, iterations: int, seeds=range(3)) -> float:
    out = []
    for seed in seeds:
        tr = make_trainer(game, algo=algo, seed=seed, table_bits=bits)
        tr.run(iterations)
        assert tr.saturated == 0 and tr.underflowed == 0
        out.append(tr.exploitability()[0])
    return float(np.mean(out))


@pytest.mark.parametrize(
    "game,algo,factor", [("kuhn", "pluribus", 2.0), ("leduc", "pluribus", 1.5), ("leduc", "dcfr", 1.5)]
)
def test_sixteen_bits_converge_within_a_factor_of_thirty_two(game, algo, factor):
    """Mean exploitability over 3 seeds at 100,000 iterations: 16 bits within ``factor`` of 32.
    Measured at 500,000 iterations, 4 seeds (docs/training.md): kuhn/pluribus 1.26x, leduc/pluribus
    1.32x, leduc/dcfr 1.04x; with bfloat16 strategy sums instead, kuhn 7.5x, and growing."""
    e32 = _exploitability(game, algo, 32, 100_000)
    e16 = _exploitability(game, algo, 16, 100_000)
    assert e16 <= factor * e32, (e16, e32)


@pytest.mark.parametrize("algo", ["dcfr", "pluribus"])
def test_sixteen_bit_resume_is_bit_identical(tmp_path, algo):
    kw = dict(discount_every=100, prune_start=500, prune_threshold_pots=-1.0, floor_pots=-2.0, table_bits=16)
    full = make_trainer("leduc", algo=algo, seed=5, **kw)
    full.run(4_050)
    half = make_trainer("leduc", algo=algo, seed=5, **kw)
    half.run(2_050)  # between discount boundaries: rows pending
    half.save(tmp_path)
    resumed = Trainer.load(tmp_path)
    assert resumed.iteration == 2_050 and resumed.table_bits == 16
    assert resumed.strat_exp.tobytes() == half.strat_exp.tobytes()
    resumed.run(2_000)
    for name in ("regret", "strat", "strat_exp", "rng", "row_epoch"):
        assert getattr(resumed, name).tobytes() == getattr(full, name).tobytes(), name
    assert full.pruned > 0
    # the strategies read from the 16-bit tables are probabilities
    avg = full.average_strategy()
    assert np.isfinite(avg).all() and avg.min() >= 0.0


def test_blueprint_loads_from_a_sixteen_bit_run(tmp_path):
    from blueprint.blueprint import Blueprint

    tr = make_trainer("leduc", algo="dcfr", seed=2, table_bits=16)
    tr.run(3_000)
    tr.save(tmp_path)
    state = example_matchstate(tr.game)
    probs = Blueprint.load(tmp_path).strategy(state)  # from the checkpoint's blueprint file
    assert sum(probs.values()) == pytest.approx(1.0)
    direct = Blueprint(tr).strategy(state)  # from the trainer's decoded sums
    assert probs.keys() == direct.keys()
    assert [probs[k] for k in probs] == pytest.approx([direct[k] for k in probs], abs=1e-6)
    values = sums_values(tr.strat, tr.strat_exp, tr.row_layout.width, tr.row_layout.rows)
    assert values.dtype == np.float32 and (values >= 0).all() and values.max() > 0


def test_width_mismatch_is_a_clear_error(tmp_path):
    t16 = make_trainer("leduc", algo="dcfr", seed=1, table_bits=16)
    t32 = make_trainer("leduc", algo="dcfr", seed=1)
    with pytest.raises(CheckpointError, match="16-bit tables.*32-bit tables"):
        check_table_bits(t32, {"tables_format": 3})
    with pytest.raises(CheckpointError, match="32-bit tables.*16-bit tables"):
        check_table_bits(t16, {"tables_format": 2})
    # through the command line, each way
    for bits, other in ((16, 32), (32, 16)):
        run = tmp_path / f"run{bits}"
        r = CliRunner().invoke(
            cli,
            ["train", "--game", "leduc", "--iterations", "500", "--threads", "1", "--table-bits", str(bits)]
            + ["--out", str(run)],
            catch_exceptions=False,
        )
        assert r.exit_code == 0, r.output
        r = CliRunner().invoke(cli, ["resume", str(run), "--iterations", "10", "--table-bits", str(other)])
        assert r.exit_code != 0
        assert f"{bits}-bit tables" in r.output and f"--table-bits {other}" in r.output
    r = CliRunner().invoke(
        cli, ["resume", str(tmp_path / "run16"), "--iterations", "10", "--table-bits", "16"]
    )
    assert r.exit_code == 0, r.output


def test_saturation_and_underflow_are_counted_not_wrapped(monkeypatch):
    """A huge regret scale drives regrets past the largest bfloat16: they stop there, with their
    sign, and are counted; a tiny one rounds updates to zero, counted as underflow."""
    for scale, counter in ((1e38, 2), (1e-42, 3)):
        tr = make_trainer("kuhn", algo="vanilla", seed=0, table_bits=16)
        opts = tr._opts()._replace(scale=scale, ceil=1e300)
        tree, cards, tables = tr._kernel_args()
        sched = tr._lazy_window().kernel()
        stats = es_iterations(
            2_000,
            0,
            1,
            tree,
            tr.live,
            cards,
            tables,
            Rows(tr.node_row, tr.row_epoch),
            sched,
            tr.rng,
            opts,
            tr.max_depth,
            tr.max_actions,
        )
        assert stats[counter] > 0
        values = bf16_decode(tr.regret)
        assert np.isfinite(values).all()
        if counter == 2:
            assert np.abs(values).max() == BF16_MAX
            assert (values == BF16_MAX).any() and (values == -BF16_MAX).any()  # no sign wrapped
    # through the trainer: counted, kept in the checkpoint's manifest
    orig = Trainer._opts
    monkeypatch.setattr(Trainer, "_opts", lambda self: orig(self)._replace(scale=1e38, ceil=1e300))
    tr = make_trainer("kuhn", algo="vanilla", seed=0, table_bits=16)
    tr.run(2_000)
    assert tr.saturated > 0 and tr.manifest()["saturated"] == tr.saturated


def test_threads_share_one_sixteen_bit_table():
    tr = make_trainer("leduc", algo="pluribus", seed=0, table_bits=16, discount_until=0)
    tr.set_threads(2)
    assert not tr.copies_used(10**9) and tr._copy_span() == 0
    tr.run(20_000)
    assert tr.iteration == 20_000 and tr.exploitability()[0] < 0.5


def test_a_sixteen_bit_checkpoint_with_bad_tables_is_refused(tmp_path):
    """Non-finite bfloat16 regrets, or a shard without the sums' exponents: CheckpointError."""
    from blueprint.checkpoints import load_latest

    tr = make_trainer("leduc", algo="dcfr", seed=4, table_bits=16)
    tr.run(1_000)
    tr.save(tmp_path)
    manifest, shards = load_latest(tmp_path)
    assert manifest["tables_format"] == 3 and "strat_exp" in shards[0][0]
    arrays, meta = shards[0]
    bad = dict(arrays, regret=arrays["regret"].copy())
    bad["regret"][7] = 0x7FC0  # a NaN
    with pytest.raises(CheckpointError, match="non-finite bfloat16"):
        Trainer.from_checkpoint(tmp_path, manifest, [(bad, meta)])
    lacking = {k: v for k, v in arrays.items() if k != "strat_exp"}
    with pytest.raises(CheckpointError, match="strat_exp"):
        Trainer.from_checkpoint(tmp_path, manifest, [(lacking, meta)])
    assert Trainer.from_checkpoint(tmp_path, manifest, shards).strat_exp.tobytes() == tr.strat_exp.tobytes()
