"""The MCCFR trainer: kernels on hand-built arrays, determinism, exact resume, every variant."""

import itertools

import numpy as np
import pytest

from abstraction.tree import KIND_DECISION
from blueprint.algo import AlgoError, get_algo
from blueprint.kernels import discount_tables, regret_matching, terminal_utility
from blueprint.trainer import Trainer, make_trainer


def test_regret_matching_on_hand_built_blocks():
    out = np.zeros(6)
    regret_matching(np.array([0, 0, 3.0, -1.0, 1.0, 0], np.float32), 2, 3, out, 1)
    assert out[1:4] == pytest.approx([0.75, 0.0, 0.25])
    regret_matching(np.array([-1, -2], np.int32), 0, 2, out, 0)
    assert out[:2] == pytest.approx([0.5, 0.5])  # no positive regret: uniform


def test_terminal_utility_fold_and_showdown():
    kind = np.array([1, 2], np.int8)
    player = np.array([0, -1], np.int8)
    spent = np.array([[300, 900], [900, 500]], np.int32)
    assert terminal_utility(0, 0, kind, player, spent, -1) == -300  # seat 0 folded
    assert terminal_utility(0, 1, kind, player, spent, -1) == 300
    assert terminal_utility(1, 0, kind, player, spent, 0) == 500  # only min(spent) is contested
    assert terminal_utility(1, 1, kind, player, spent, 0) == -500
    assert terminal_utility(1, 1, kind, player, spent, -1) == 0


def test_discount_tables_scales_signs_separately():
    r = np.array([4.0, -4.0, 0.0], np.float32)
    s = np.array([2.0, 2.0, 2.0], np.float32)
    discount_tables(r, s, 0.5, 0.25, 0.1, False)
    assert r.tolist() == [2.0, -1.0, 0.0]
    assert s == pytest.approx([0.2, 0.2, 0.2])
    ri = np.array([3, -3], np.int32)
    discount_tables(ri, s, 0.5, 0.5, 1.0, True)
    assert ri.tolist() == [2, -1]  # rounded half up


def test_same_seed_same_tables_other_seed_differs():
    a = make_trainer("leduc", algo="pluribus", seed=7, prune_start=100)
    b = make_trainer("leduc", algo="pluribus", seed=7, prune_start=100)
    c = make_trainer("leduc", algo="pluribus", seed=8, prune_start=100)
    for t in (a, b, c):
        t.run(3000)
    assert np.array_equal(a.regret, b.regret) and np.array_equal(a.strat, b.strat)
    assert not np.array_equal(a.regret, c.regret)


def test_prefetching_the_childrens_rows_leaves_the_tables_bit_identical(monkeypatch):
    import blueprint.trainer as trainer_module

    assert make_trainer("leduc")._opts().prefetch is False  # 2,604 entries: in the caches, no prefetch
    runs = []
    for at in (1 << 62, 0):  # off, then on for any table
        monkeypatch.setattr(trainer_module, "PREFETCH_MIN_ENTRIES", at)
        t = make_trainer("leduc", algo="pluribus", seed=3, prune_start=500)
        assert t._opts().prefetch == (at == 0)
        t.run(3000)
        runs.append(t)
    assert runs[0].node_visits == runs[1].node_visits
    assert np.array_equal(runs[0].regret, runs[1].regret) and np.array_equal(runs[0].strat, runs[1].strat)


@pytest.mark.parametrize("algo", ["dcfr", "pluribus", "linear"])
def test_chunking_does_not_change_the_result(algo):
    kw = dict(discount_every=50, prune_start=200) if algo == "pluribus" else dict(discount_every=50)
    a = make_trainer("leduc", algo=algo, seed=1, **kw)
    a.run(1000)
    b = make_trainer("leduc", algo=algo, seed=1, **kw)
    for n in (1, 37, 262, 700):
        b.run(n, report_seconds=1e-9)
    assert np.array_equal(a.regret, b.regret) and np.array_equal(a.strat, b.strat)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_resume_is_bit_identical(tmp_path, dtype):
    kw = dict(discount_every=100, prune_start=500, regret_dtype=dtype)
    full = make_trainer("leduc", algo="pluribus", seed=5, **kw)
    full.run(4000)
    half = make_trainer("leduc", algo="pluribus", seed=5, **kw)
    half.run(2000)
    half.save(tmp_path)
    resumed = Trainer.load(tmp_path)
    assert resumed.iteration == 2000
    resumed.run(2000)
    assert np.array_equal(full.regret, resumed.regret)
    assert np.array_equal(full.strat, resumed.strat)
    assert np.array_equal(full.rng, resumed.rng)


def test_pruning_fires_on_leduc_and_never_on_one_round_kuhn():
    leduc = make_trainer("leduc", algo="pluribus", seed=2, prune_start=1000)
    leduc.run(20000)
    assert leduc.pruned > 0
    kuhn = make_trainer("kuhn", algo="pluribus", seed=2, prune_start=0, prune_prob=1.0)
    kuhn.run(20000)
    assert kuhn.pruned == 0  # every Kuhn node is on the last (only) round


def test_pruning_never_skips_the_last_round_or_hand_ending_actions():
    tr = make_trainer(
        "leduc",
        algo="pluribus",
        seed=4,
        prune_start=0,
        prune_prob=1.0,
        prune_threshold_bb=-1e-6,
        floor_bb=-1e-5,
    )
    tr.run(5000)
    t = tr.tree
    # an action is prunable only on round 0 with a decision node below it; every regret of the
    # other actions must have been updated (non-zero) in 5000 iterations
    for n in t.decision_nodes():
        s, k = t.child_start[n], t.num_actions[n]
        nb = tr.num_buckets[t.round[n]]
        block = tr.regret[tr.row_offset[n] : tr.row_offset[n] + nb * k].reshape(nb, k)
        for a in range(k):
            child = t.edge_child[s + a]
            if t.round[n] == 1 or t.kind[child] != KIND_DECISION:
                assert np.any(block[:, a] != 0), (t.betting_string(n), a)
    assert tr.pruned > 0


@pytest.mark.parametrize(
    "discount, prune, dtype",
    list(itertools.product(["none", "linear", "dcfr"], [False, True], ["float32", "int32"])),
)
def test_every_variant_learns_leduc(discount, prune, dtype):
    tr = make_trainer(
        "leduc",
        algo="vanilla",
        seed=0,
        discount=discount,
        prune=prune,
        prune_start=2000,
        discount_every=200,
        regret_dtype=dtype,
    )
    tr.run(60000)
    assert tr.exploitability()[0] < 0.12  # uniform play is 4.75; Nash is 0


def test_bad_algo_options():
    with pytest.raises(AlgoError, match="unknown algorithm 'cfrx'"):
        get_algo("cfrx")
    with pytest.raises(AlgoError, match="discount_every"):
        get_algo("dcfr", discount_every=0)
    with pytest.raises(AlgoError, match="regret_dtype"):
        get_algo("vanilla", regret_dtype="int8")


def test_explore_trains_against_a_trembling_opponent(tmp_path):
    """``explore``: the opponent's actions sampled from a mixture with the uniform strategy. The
    plain run's config (and hash) has no such key; the perturbed game's equilibrium sits above the
    plain one in Leduc's exploitability; the option survives a checkpoint and resumes exactly."""
    base = make_trainer("leduc", algo="pluribus", seed=3)
    assert "explore" not in base.config_dict["algo"]  # runs from before the option keep their hash
    tr = make_trainer("leduc", algo="pluribus", seed=3, explore=0.3)
    assert tr.config_dict["algo"]["explore"] == 0.3 and tr.config_hash != base.config_hash
    base.run(60000)
    tr.run(30000)
    tr.save(tmp_path)
    back = Trainer.load(tmp_path)
    assert back.config.algo.explore == 0.3 and back.config_hash == tr.config_hash
    back.run(30000)
    tr.run(30000)
    assert np.array_equal(back.regret, tr.regret) and np.array_equal(back.strat, tr.strat)
    e0, e1 = base.exploitability()[0], tr.exploitability()[0]
    assert e0 < 0.1 and 2 * e0 < e1 < 1.0  # uniform play is 4.75
    with pytest.raises(AlgoError, match="explore"):
        get_algo("pluribus", explore=1.0)
    with pytest.raises(AlgoError, match="explore"):
        get_algo("cfr+", explore=0.1)
