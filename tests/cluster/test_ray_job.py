"""The Ray training job: shard slicing and idempotent deltas (plain classes, no Ray), then a small
local cluster: a 2-worker 2-shard Leduc job converges, a 1-worker job resumes bit for bit, and a
killed worker is restarted while the job finishes and reports the loss."""

from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import itertools

from job_reference import reference

from blueprint.checkpoints import list_checkpoints, load_latest
from blueprint.io.errors import CheckpointError
from blueprint.trainer import Trainer, make_trainer
from cluster.errors import JobError
from cluster.job import RayJob
from cluster.rounds import default_batch, split_round
from cluster.shard import ShardCore, pack_delta, slice_bounds, sum_deltas, unpack_delta
from cluster.worker import WorkerCore


@pytest.fixture(scope="module")
def leduc():
    return make_trainer("leduc", seed=3)


# -- plain classes ------------------------------------------------------------------------------
@pytest.mark.parametrize("num_shards", [1, 2, 3, 7, 500])
def test_slices_cover_table_once_on_block_boundaries(leduc, num_shards):
    tr = leduc
    bounds = slice_bounds(tr.row_offset, tr.size, num_shards)
    assert len(bounds) == num_shards
    assert bounds[0][0] == 0 and bounds[-1][1] == tr.size
    for (_, hi), (lo, _) in itertools.pairwise(bounds):
        assert hi == lo
    starts = {int(x) for x in tr.row_offset[tr.row_offset >= 0]} | {tr.size}
    for lo, hi in bounds:
        assert lo <= hi and lo in starts and hi in starts
    if num_shards <= 3:  # about equal sizes
        sizes = [hi - lo for lo, hi in bounds]
        assert max(sizes) - min(sizes) <= 2 * max(tr.num_buckets) * tr.max_actions


def test_split_round():
    assert split_round(10, 3) == [4, 3, 3]
    assert sum(split_round(7, 4)) == 7


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_delta_roundtrip(dtype):
    rows = np.array([0, 5, 9], np.uint32)
    dr = np.array([1.5, -2, 3], dtype)
    ds = np.array([0.25, 0, 1], np.float32)
    r, a, b = unpack_delta(pack_delta(rows, dr, ds))
    assert (
        r.tolist() == rows.tolist()
        and a.dtype == dtype
        and a.tolist() == dr.tolist()
        and b.tolist() == ds.tolist()
    )


def test_apply_delta_idempotent(leduc):
    sh = ShardCore(0, 0, 10, leduc.config.algo)
    payload = pack_delta(
        np.array([1, 3], np.uint32), np.array([1.0, -2.0], np.float32), np.array([0.5, 1.0], np.float32)
    )
    assert sh.apply_delta(0, 1, payload)
    assert not sh.apply_delta(0, 1, payload)  # a retried call
    assert sh.apply_delta(1, 1, payload)  # another worker's batch 1
    assert not sh.apply_delta(1, 0, payload)  # an older one
    assert sh.regret[[1, 3]].tolist() == [2.0, -4.0] and sh.strat[[1, 3]].tolist() == [1.0, 2.0]
    assert sh.stats()["ignored"] == 2


def test_round_merge_order_is_fixed_and_idempotent(leduc):
    """Group deltas are added in group order whatever order they arrive in; a repeated put
    replaces, a put for an ended round is ignored, ending a round twice changes nothing."""
    rng = np.random.default_rng(0)

    def delta():
        rows = np.sort(rng.choice(50, 20, replace=False)).astype(np.uint32)
        return pack_delta(
            rows, rng.normal(size=20).astype(np.float32) * 1e3, rng.random(20).astype(np.float32)
        )

    ds = [delta() for _ in range(3)]
    results = []
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        sh = ShardCore(0, 0, 50, leduc.config.algo)
        for g in order:
            assert sh.put_delta(1, g, ds[g])
        sh.put_delta(1, order[0], ds[order[0]])  # a retried group: same bytes, replaced
        snap, missing = sh.end_round(1, 0, 100, [0, 1, 2])
        assert missing == [] and not sh.put_delta(1, 0, ds[0])
        sh.end_round(1, 0, 100, [0, 1, 2])
        results.append((sh.regret.tobytes(), sh.strat.tobytes()))
    assert results[0] == results[1] == results[2]
    sh = ShardCore(0, 0, 50, leduc.config.algo)
    sh.put_delta(1, 0, ds[0])
    assert sh.end_round(1, 0, 100, [0, 1])[1] == [1]  # group 1 never arrived: reported
    # a node's sum: one delta passes through unchanged, several add up in order
    assert sum_deltas([ds[0]], 50, False) == ds[0]
    rows, r, s_ = unpack_delta(sum_deltas(ds, 50, False))
    dense = np.zeros(50, np.float32)
    for d in ds:
        a, b, _ = unpack_delta(d)
        dense[a] += b
    assert np.array_equal(dense[rows], r) and set(rows) == {int(x) for d in ds for x in unpack_delta(d)[0]}


def test_int32_shard_saturates():
    algo = make_trainer("leduc", regret_dtype="int32").config.algo
    sh = ShardCore(0, 0, 4, algo, regret=np.array([2**31 - 10, 0, 0, 0], np.int32))
    sh.apply_delta(
        0, 1, pack_delta(np.array([0], np.uint32), np.array([100], np.int64), np.zeros(1, np.float32))
    )
    assert sh.regret[0] == 2**31 - 2


def test_default_batch_is_table_entries_over_10_whatever_the_workers():
    """Chosen by exploitability per second (BENCHMARKS.md): entries / 10 within [1,000, 100,000]."""
    leduc = make_trainer("leduc")
    assert default_batch(leduc.size) == 1_000
    assert default_batch(116_463) == 11_646 and default_batch(10**9) == 100_000


def test_simulated_job_reports_the_jobs_staleness():
    """simulate_job's staleness is the job's: (workers - 1) x batch / 2 with full rounds, and 0
    with one worker, whose tables match the single process's up to the rounding of the deltas."""
    from cluster.simulate import simulate_job

    tr = make_trainer("leduc", seed=3)
    assert simulate_job(tr, 4, 10, 4_000)["staleness"] == 15.0
    one, single = make_trainer("leduc", seed=3), make_trainer("leduc", seed=3)
    assert simulate_job(one, 1, 700, 2_100)["staleness"] == 0.0
    single.run(2_100)
    np.testing.assert_allclose(one.strat, single.settled_tables()[1], rtol=1e-3, atol=1e-2)
    assert one.iteration == single.iteration == 2_100


def test_worker_and_shards_without_ray(leduc):
    """One worker against two shards, in process, batches spanning a discount boundary (pluribus
    discounts every 1,000 iterations): the shards end with the worker's tables, and those with
    the single-process trainer's (up to the rounding of adding deltas)."""
    tr = leduc
    bounds = slice_bounds(tr.row_offset, tr.size, 2)
    shards = [ShardCore(k, lo, hi, tr.config.algo) for k, (lo, hi) in enumerate(bounds)]
    w = WorkerCore(0, tr.config_dict, bounds, tr.rng, tr.abstraction_hash)
    w_base, t_base = 0.0, 0
    for seq in (1, 2, 3):
        t = (seq - 1) * 700
        snap = [s.publish() for s in shards]
        spans = [s.discount_span(t, t + 700) for s in shards]
        assert spans == ([0, 0] if seq == 1 else [1, 1])  # the boundaries at 1,000 and 2,000
        out = w.run_batch(seq, t, t, 700, t + 700, w_base, t_base, *snap)
        w_base, t_base = w.tr.w_base, w.tr.t_base
        stats, payloads = out[0], out[1:]
        assert stats["iterations"] == 700 and stats["node_visits"] > 0 and stats["bytes"] > 0
        for s, p in zip(shards, payloads):
            assert s.apply_delta(0, seq, p)
            assert not s.apply_delta(0, seq, p)
    full_r = np.concatenate([s.regret for s in shards])
    full_s = np.concatenate([s.strat for s in shards])
    np.testing.assert_allclose(full_r, w.tr.regret, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(full_s, w.tr.strat, rtol=1e-5, atol=1e-4)
    assert np.count_nonzero(full_s) > 0
    single = make_trainer("leduc", seed=3)
    single.run(2100)
    assert (single.w_base, single.t_base) == (w_base, t_base) and t_base == 2000
    np.testing.assert_allclose(full_s, single.settled_tables()[1], rtol=1e-3, atol=1e-2)


def test_worker_skips_other_workers_iterations(leduc):
    """A worker whose batch starts after a boundary of the round discounts the snapshot through it
    first: with an empty batch its delta is empty, whatever boundaries the round spans."""
    tr = make_trainer("leduc", seed=4)
    tr.run(900)
    bounds = slice_bounds(tr.row_offset, tr.size, 1)
    w = WorkerCore(1, tr.config_dict, bounds, tr.rng, tr.abstraction_hash)
    out = w.run_batch(1, 900, 3100, 0, 3100, tr.w_base, tr.t_base, {"regret": tr.regret, "strat": tr.strat})
    assert out[0]["touched_rows"] == 0
    sh = ShardCore(0, 0, tr.size, tr.config.algo, tr.regret, tr.strat)
    assert sh.discount_span(900, 3100) == 3
    np.testing.assert_array_equal(sh.regret, w.tr.regret)
    tr.skip_to(3100)
    assert (w.tr.w_base, w.tr.t_base) == (tr.w_base, tr.t_base) and tr.t_base == 3000
    np.testing.assert_array_equal(tr.strat, w.tr.strat)


# a 24-card, three-round hold'em with a built card table (as in tests/abstraction/test_buckets.py)
def _tiny_game():
    from holdem.gamedef import GameDef

    return GameDef(
        "nolimit",
        3,
        (2000, 2000),
        (100, 50),
        (0, 0, 0),
        (1, 0, 0),
        (255, 255, 255),
        4,
        6,
        2,
        (0, 3, 1),
        "tiny",
    )


@pytest.fixture(scope="module")
def tiny_cards():
    """A TABLE card abstraction of the tiny game with random buckets (no build: the kernels only
    read the table), as the driver would hold it."""
    from abstraction.cards import TABLE, CardAbstraction
    from abstraction.isomorphism import HandIndexer

    game = _tiny_game()
    ix = HandIndexer.for_game(game)
    buckets = (10, 8, 8)
    rng = np.random.default_rng(0)
    parts = [rng.integers(0, b, ix.size(r), dtype=np.uint16) for r, b in enumerate(buckets)]
    parts.append(rng.integers(0, buckets[0], game.deck_size**2, dtype=np.uint16))  # preflop lookup
    offsets = np.cumsum([0] + [len(p) for p in parts[:-1]]).astype(np.int64)
    return CardAbstraction(
        "tiny-random",
        TABLE,
        buckets,
        iso=ix.tables,
        table=np.concatenate(parts),
        offsets=offsets,
        source_hash="tiny-random",
    )


def _tiny_trainer(cards, seed=0):
    from blueprint.defaults import run_config

    config = run_config("tiny", _tiny_game(), bets="small", cards="lossless", algo="pluribus", seed=seed)
    return Trainer.from_manifest_config(config.to_dict(), cards=cards)


def _read_only_cards(cards):
    """The abstraction as a worker gets it from the object store: read-only views of one buffer."""
    import dataclasses

    def ro(a):
        v = np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape)
        assert not v.flags.writeable
        return v

    return dataclasses.replace(cards, iso=ro(cards.iso), table=ro(cards.table), offsets=ro(cards.offsets))


def test_worker_reads_the_drivers_card_table_and_builds_nothing(tiny_cards, monkeypatch):
    """A worker given the driver's card abstraction as read-only views (as from the object store)
    computes the same batch, bit for bit, as one holding its own copy; it never builds or loads one."""
    import abstraction.buckets
    import abstraction.cards
    import abstraction.storage
    import blueprint.session
    import blueprint.trainer

    tr = _tiny_trainer(tiny_cards)
    bounds = slice_bounds(tr.row_offset, tr.size, 2)

    def no_build(*a, **k):
        raise AssertionError("a worker built or loaded a card abstraction")

    for mod, name in (
        (blueprint.trainer, "card_abstraction"),
        (blueprint.session, "default_card_abstraction"),
        (abstraction.cards, "default_card_abstraction"),
        (abstraction.cards, "from_file"),
        (abstraction.cards, "lossless"),
        (abstraction.buckets, "ensure_recipe"),
        (abstraction.storage, "read_abstraction"),
    ):
        monkeypatch.setattr(mod, name, no_build)
    own = WorkerCore(
        0, tr.config_dict, bounds, tr.rng, tr.abstraction_hash, cards=tiny_cards, private_cards=True
    )
    shared = WorkerCore(
        0, tr.config_dict, bounds, tr.rng, tr.abstraction_hash, cards=_read_only_cards(tiny_cards)
    )
    assert shared.cards_zero_copy() and not own.cards_zero_copy()
    snap = [{"regret": tr.regret[lo:hi], "strat": tr.strat[lo:hi]} for lo, hi in bounds]
    a = own.run_batch(1, 0, 0, 1500, 1500, 0.0, 0, *snap)
    b = shared.run_batch(1, 0, 0, 1500, 1500, 0.0, 0, *snap)
    assert a[0]["node_visits"] == b[0]["node_visits"] > 0 and a[1:] == b[1:]


# -- on a local Ray cluster -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    # address="local": a Ray of its own, never a cluster another process started on this machine
    # (another xdist worker's simulated nodes, say), which ray.init would join and then refuse
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, logging_level="warning", log_to_driver=False
    )
    yield
    ray.shutdown()


@pytest.mark.slow  # 3 jobs and 20,000 iterations
def test_a_worker_trains_on_threads(cluster):
    """One worker of 2 threads on one copy of the tables (the node's one trainer): it reserves 2
    CPUs, says so, converges like one process, and its second thread really ran (the tables
    differ from the one-thread run of the same seed, which the job at 1 thread equals bit for bit)."""
    iters = 20_000
    tr = make_trainer("leduc", seed=1)
    uniform, _ = tr.exploitability()
    with RayJob(tr, workers=1, shards=1, threads=2, batch=2_000) as job:
        assert job.worker_cpus == 2
        job.run(iters)
        expl, _ = job.exploitability()
        regret = job.sync().regret.copy()
        st = job.stats()
    single = make_trainer("leduc", seed=1)
    single.run(iters)
    ref, _ = single.exploitability()
    assert st["threads_per_worker"] == 2 and job.iteration == iters
    assert expl < 0.2 * uniform and expl < 2.0 * ref, (expl, ref)
    assert not np.array_equal(regret, single.regret)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(JobError, match="threads"):
            RayJob(make_trainer("leduc", seed=1), workers=1, shards=1, threads=bad)
    # threads=None: the node's 2 CPUs (the fixture's) shared among its workers
    for workers, want in ((1, 2), (2, 1)):
        with RayJob(make_trainer("leduc", seed=1), workers=workers, shards=1, threads=None) as job:
            assert job.threads == want and job.worker_cpus == want
            job.run(200)


def test_worker_threads_draw_their_own_streams(leduc):
    """Thread k of one worker and thread k of another never share a stream, nor the one-process
    trainer's thread k."""
    cfg = leduc.config_dict
    bounds = [(0, leduc.size)]
    a = WorkerCore(0, cfg, bounds, threads=2, cards=leduc.cards)
    b = WorkerCore(1, cfg, bounds, threads=2, cards=leduc.cards)
    sa, sb = a.tr._thread_states(2)[0], b.tr._thread_states(2)[0]
    assert not np.array_equal(sa, sb)
    assert not np.array_equal(sa, make_trainer("leduc", seed=3)._thread_states(2)[0])


def test_two_workers_two_shards_converge_in_process():
    """The job's arithmetic for 2 workers and 2 shards (:func:`cluster.simulate.simulate_job`,
    which the Ray job equals bit for bit:
    ``test_a_failed_storage_write_then_a_killed_worker_lose_nothing``) converges like one
    process, with the staleness of half a batch."""
    from cluster.simulate import simulate_job

    iters = 20_000
    tr = make_trainer("leduc", seed=1)
    uniform, _ = tr.exploitability()
    figures = simulate_job(tr, 2, 100, iters, shards=2)
    expl, _ = tr.exploitability()
    single = make_trainer("leduc", seed=1)
    single.run(iters)
    ref, _ = single.exploitability()
    assert tr.iteration == iters
    assert expl < 0.2 * uniform
    assert expl < 2.0 * ref, (expl, ref)
    assert figures["batches"] == iters // 100
    assert 0 < figures["staleness"] <= 100


# slow: the Ray job equals the arithmetic above bit for bit (as
# test_a_failed_storage_write_then_a_killed_worker_lose_nothing shows)
@pytest.mark.slow
def test_two_workers_two_shards_converge(cluster):
    iters = 20_000
    tr = make_trainer("leduc", seed=1)
    uniform, _ = tr.exploitability()
    with RayJob(tr, workers=2, shards=2, batch=100) as job:
        job.run(iters)
        expl, _ = job.exploitability()
        stats = job.stats()
    single = make_trainer("leduc", seed=1)
    single.run(iters)
    ref, _ = single.exploitability()
    assert job.iteration == iters
    assert expl < 0.2 * uniform
    assert expl < 2.0 * ref, (expl, ref)
    assert stats["batches"] == iters // 100 and stats["bytes_per_batch"] > 0
    assert 0 < stats["staleness"] <= 100  # half the batches saw the other worker's delta lag


@pytest.mark.slow  # three jobs
def test_resume_identity_one_worker(cluster, tmp_path):
    n, b = 2_000, 250
    a = make_trainer("leduc", seed=5)
    with RayJob(a, workers=1, shards=2, batch=b) as job:
        job.run(n)
        job.save(tmp_path / "resumed")
    with RayJob.load(tmp_path / "resumed") as job:
        assert job.iteration == n and job.num_shards == 2 and job.batch == b
        job.run(n)
        job.save(tmp_path / "resumed")
        resumed = job.sync()
    straight = make_trainer("leduc", seed=5)
    with RayJob(straight, workers=1, shards=2, batch=b) as job:
        job.run(2 * n)
        job.sync()
    assert resumed.iteration == straight.iteration == 2 * n
    assert resumed.regret.tobytes() == straight.regret.tobytes()
    assert resumed.strat.tobytes() == straight.strat.tobytes()
    assert resumed.rng.tolist() == straight.rng.tolist()
    assert (resumed.w_base, resumed.t_base) == (straight.w_base, straight.t_base)
    # the job's checkpoint reads as a trainer's (mccfr eval / export / status)
    loaded = Trainer.load(tmp_path / "resumed")
    assert loaded.iteration == 2 * n and loaded.strat.tobytes() == straight.strat.tobytes()
    manifest, shards = load_latest(tmp_path / "resumed")
    assert len(shards) == 2 and manifest["job"]["workers"] == 1


@pytest.mark.slow  # a fault drill; the default run has Ray in the CLI test below
def test_a_failed_storage_write_then_a_killed_worker_lose_nothing(cluster, tmp_path):
    """A storage checkpoint that cannot be written (the path is a
    file) raises with ``wait=True``, is reported without it, and the job goes on with the previous
    restore base; then kill -9 of a worker: Ray restarts it and re-runs its batch from the same RNG
    state (the state travels with the batch), so nothing is lost and the tables are the
    uninterrupted run's, bit for bit."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    notes: list[str] = []
    with RayJob(make_trainer("leduc", seed=2), workers=2, shards=2, batch=250, log=notes.append) as job:
        job.run(1_000)
        with pytest.raises(CheckpointError):
            job.save_to_storage(str(blocker / "store"), wait=True)
        job.save_to_storage(str(blocker / "store"))
        rounds = []

        def cb(j):
            rounds.append(j.iteration)
            if len(rounds) == 2:
                j.kill_worker(1)
            return False

        job.run(3_000, cb)
        assert job.base_storage is None
        stats = job.stats()
        killed = job.sync()
        job.save(tmp_path / "run")
    assert any("failed" in m for m in notes), notes
    straight_r, straight_s = reference(2, 2, 1, 2, 250, 4_000)  # what the uninterrupted job gives
    assert killed.iteration == 4_000
    assert stats["lost_batches"] == 0 and stats["worker_restarts"] == 1 and stats["lost_iterations"] == 0
    assert any("worker 1 was restarted" in m for m in notes), notes
    assert killed.regret.tobytes() == straight_r.tobytes() and killed.strat.tobytes() == straight_s.tobytes()
    assert load_latest(tmp_path / "run")[0]["job"]["lost_batches"] == 0


@pytest.mark.slow  # two Ray jobs; by default the read-only views above, without Ray
def test_card_table_shared_zero_copy_in_ray(cluster, tiny_cards):
    """On Ray the workers read the driver's card table from the object store (zero-copy) when
    shared, or copy it (the default for one worker per node), and the job's tables are the
    in-process worker's (holding its own copy), bit for bit, either way."""
    n = 1_500
    tr = _tiny_trainer(tiny_cards, seed=4)
    bounds = slice_bounds(tr.row_offset, tr.size, 1)
    w = WorkerCore(0, tr.config_dict, bounds, None, tr.abstraction_hash, cards=tiny_cards, private_cards=True)
    sh = ShardCore(0, 0, tr.size, tr.config.algo)
    out = w.run_batch(1, 0, 0, n, n, 0.0, 0, sh.publish(), rng=tr.rng)
    sh.put_delta(1, 0, out[1])
    sh.end_round(1, 0, n, [0])
    # one worker per node (the default layout): a private copy by default; shared on request
    for share, zero_copy in ((None, False), (True, True)):
        with RayJob(
            _tiny_trainer(tiny_cards, seed=4), workers=1, shards=1, batch=n, share_cards=share
        ) as job:
            assert job.share_cards is zero_copy
            assert job.ray.get(job.leaders[0].cards_zero_copy.remote()) == [zero_copy]
            job.run(n)
            got = job.sync()
        assert got.regret.tobytes() == sh.regret.tobytes() and got.strat.tobytes() == sh.strat.tobytes()


@pytest.mark.slow  # a fault drill
def test_the_default_batch_then_a_worker_past_its_restarts(cluster):
    """Leduc with 2 workers gets the default batch,
    1,000, with no note, and one card table for both; then a worker killed more often than Ray
    restarts it (here 0 restarts) fails for good: it leaves the round with a warning and its batch
    runs on the node's other worker from the same RNG state, so the tables are still those of an
    uninterrupted run."""
    notes: list[str] = []
    with RayJob(
        make_trainer("leduc", seed=6), workers=2, shards=1, log=notes.append, timeout=60, worker_retries=0
    ) as job:
        assert job.batch == 1_000 and not any("batch" in m for m in notes), notes
        assert job.share_cards  # two workers on the one node: one card table for both
        job.run(2_000)
        assert job.iteration == 2_000 and job.stats()["batches"] == 2
        job.kill_worker(1)
        job.run(1_000)
        got = job.sync()
    ref_r, ref_s = reference(6, 2, 1, 1, 1_000, 3_000)
    assert got.regret.tobytes() == ref_r.tobytes() and got.strat.tobytes() == ref_s.tobytes()
    assert any("worker 1 died" in m and "leaves the round" in m for m in notes), notes


def test_cli_train_with_workers(cluster, tmp_path):
    import json

    from click.testing import CliRunner

    from mccfr.cli import cli

    out = tmp_path / "run"
    args = ["train", "--game", "leduc", "--iterations", "2000", "--workers", "2", "--shards", "2", "--ray"]
    res = CliRunner().invoke(cli, [*args, "--batch", "250", "--private-cards", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout.strip().splitlines()[-1])
    for key in (
        "iterations",
        "seconds",
        "iterations_per_second",
        "node_visits_per_second",
        "staleness",
        "bytes_per_batch",
    ):
        assert key in row
    assert row["iterations"] == 2000 and row["workers"] == 2
    assert "a private card table per worker" in res.stderr
    assert Trainer.load(out).iteration == 2000


@pytest.mark.slow  # a fault drill
def test_a_killed_shard_then_a_loaded_job_end_exactly(cluster, tmp_path):
    """A shard killed before any checkpoint is rebuilt from the job's starting slices, one killed
    after a checkpoint from that checkpoint, each plus the logged calls since: with one worker the
    tables end bit for bit as in an uninterrupted job (rounds span pluribus' discount boundaries).
    The job loaded from that checkpoint and run to the same iteration ends with the same tables (its
    RNG states and discount bases were restored), and the checkpoint reads as a trainer's."""
    notes = []
    with RayJob(make_trainer("leduc", seed=7), workers=1, shards=2, batch=700, log=notes.append) as job:

        def cb(j):
            if j.iteration == 1400:
                j.ray.kill(j.shards[0], no_restart=True)
            elif j.iteration == 2100:
                j.save(tmp_path / "run")
            elif j.iteration == 2800:
                j.ray.kill(j.shards[1], no_restart=True)
            return False

        job.run(4200, cb)
        restored = job.sync()
        assert job.stats()["shard_restores"] == 2
    # the same calls in process, uninterrupted
    tr = make_trainer("leduc", seed=7)
    bounds = slice_bounds(tr.row_offset, tr.size, 2)
    shards = [ShardCore(k, lo, hi, tr.config.algo) for k, (lo, hi) in enumerate(bounds)]
    w = WorkerCore(0, tr.config_dict, bounds, tr.rng, tr.abstraction_hash)
    for seq, t in enumerate(range(0, 4200, 700), start=1):
        snap = [s.publish() for s in shards]
        for s in shards:
            s.discount_span(t, t + 700)
        out = w.run_batch(seq, t, t, 700, t + 700, tr.w_base, tr.t_base, *snap)
        for s, p in zip(shards, out[1:]):
            s.apply_delta(0, seq, p)
        tr.skip_to(t + 700, tables=False)
    want_r = np.concatenate([s.regret for s in shards]).tobytes()
    want_s = np.concatenate([s.strat for s in shards]).tobytes()
    assert restored.regret.tobytes() == want_r and restored.strat.tobytes() == want_s
    assert any("shard 0 died" in m and "the job's start" in m for m in notes)
    assert any("shard 1 died" in m and "000000002100" in m for m in notes)
    # the checkpoint at 2,100: loaded as a job and run on, and read as a trainer
    manifest, shard_files = load_latest(tmp_path / "run")
    assert len(shard_files) == 2 and manifest["job"]["workers"] == 1
    assert Trainer.load(tmp_path / "run").iteration == 2100
    with RayJob.load(tmp_path / "run") as job:
        assert job.iteration == 2100 and job.num_shards == 2 and job.batch == 700
        job.run(2100)
        resumed = job.sync()
    assert resumed.iteration == 4200
    assert resumed.regret.tobytes() == want_r and resumed.strat.tobytes() == want_s


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs (root only: the full-disk drill fills a real file system), else ``None``."""
    import os
    import subprocess

    mnt = tmp_path / "disk"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        yield None
        return
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.slow  # a long fault drill
def test_checkpoint_drills_full_disk_corrupt_file_dead_shard(cluster, small_disk, tmp_path):
    """One job through three drills: a full disk (a failed write leaves the previous checkpoint
    intact and says so; the job goes on), a corrupt newest checkpoint (reported by name, the previous
    one used), and a shard that dies with the replay log over its cap (the job stops with an error
    naming the checkpoint to resume from, which resumes)."""
    import shutil

    from cluster.errors import JobError

    disk = small_disk or tmp_path
    run = disk / "run"
    notes = []
    job = RayJob(make_trainer("leduc", seed=10), workers=1, shards=2, batch=500, log=notes.append)
    try:
        job.run(500)
        first = job.save(run)
        job.run(500)
        if small_disk is not None:  # the disk fills up
            (disk / "filler").write_bytes(b"\0" * (shutil.disk_usage(disk).free - 4096))
            with pytest.raises(CheckpointError) as err:
                job.save(run)
            msg = str(err.value)
            assert "000000001000" in msg and "No space left on device" in msg
            assert f"the previous checkpoint ({first}, iteration 500) is kept" in msg
            assert [c.iteration for c in list_checkpoints(run)] == [500]
            assert job.base_dir == first  # a dead shard would be rebuilt from the intact one
            (disk / "filler").unlink()  # space again: the job goes on and checkpoints
        job.run(500)
        newest = job.save(run)
        assert job.base_dir == newest and newest.name == "000000001500"
        job.max_replay_bytes = 1  # from now on the deltas since the checkpoint are not kept
        job.run(500)
        job.ray.kill(job.shards[1], no_restart=True)
        with pytest.raises(
            JobError,
            match=r"shard\(s\) \[1\] died.*resume from the last complete checkpoint"
            r".*000000001500.*not kept",
        ):
            job.run(500)
    finally:
        job.close()
    assert any("a shard that dies before the next checkpoint stops the job" in m for m in notes)
    manifest, _ = load_latest(run)  # intact, and resumes as this job
    assert manifest["iteration"] == 1500 and RayJob.resume_kwargs(manifest)["shards"] == 2
    # a flipped bit in the newest checkpoint: reported by name, the previous one is used
    shard = newest / "shard-1.msgpack.lz4"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    notes.clear()
    manifest, shards = load_latest(run, log=notes.append)  # as RayJob.load does
    assert manifest["iteration"] == 500 and len(shards) == 2
    assert Trainer.from_checkpoint(run, manifest, shards).iteration == 500
    assert len(notes) == 1 and str(shard) in notes[0] and "skipping checkpoint" in notes[0]


@pytest.mark.slow  # a long fault drill
def test_driver_kill_9_then_resume_as_ray_run(cluster, tmp_path):
    """The driver of a Ray run (a real ``mccfr train`` process joined to this cluster) killed with
    kill -9 loses nothing older than its last complete checkpoint; ``mccfr resume`` continues it as
    a Ray run; ``mccfr status`` summarises its metrics and draws the exploitability curve."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from click.testing import CliRunner

    from mccfr.cli import cli

    run = tmp_path / "run"
    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]))
    address = ray.get_runtime_context().gcs_address
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from mccfr.cli import main; main()",
            "train",
            "--game",
            "leduc",
            "--workers",
            "2",
            "--shards",
            "1",
            "--batch",
            "500",
            "--time",
            "120",
            "--checkpoint-every",
            "0.3",
            "--eval-every",
            "0.3",
            "--report-every",
            "0.2",
            "--keep",
            "2",
            "--address",
            address,
            "--out",
            str(run),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.time() + 120
        while len([c for c in list_checkpoints(run) if c.complete]) < 2:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.time() < deadline, "no two checkpoints within 120 s"
            time.sleep(0.1)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    # Ray's own lines (its warnings, its C++ core's errors) went to the run's ray.log, not the terminal
    err = proc.stderr.read().decode()
    assert "core_worker.cc" not in err and " WARNING " not in err, err
    assert "Ray's own logs of this job" in (run / "ray.log").read_text()
    newest = max(c.iteration for c in list_checkpoints(run) if c.complete)
    assert newest >= 2 * 1000
    res = CliRunner().invoke(
        cli, ["resume", str(run), "--iterations", "2000", "--eval-every", "0.3", "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["iterations"] - out["iterations_run"] >= newest  # resumed from the newest (or newer)
    assert (out["workers"], out["shards"], out["batch"]) == (2, 1, 500)
    assert "Ray job: 2 workers of 1 thread, 1 shards, batch 500" in res.stderr
    manifest, shards = load_latest(run)
    assert manifest["iteration"] == out["iterations"] and manifest["job"]["workers"] == 2
    its = [
        json.loads(line)["iteration"]
        for line in (run / "metrics.jsonl").read_text().splitlines()
        if line.strip().endswith("}")
    ]
    assert its == sorted(its)  # rows past the resumed checkpoint were dropped

    png = tmp_path / "curve.png"
    res = CliRunner().invoke(cli, ["status", str(run), "--plot", str(png), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["iterations"] == out["iterations"] and summary["workers"] == 2
    assert summary["staleness"] > 0 and summary["bytes_per_batch"] > 0 and summary["worker_rss_bytes"] > 0
    assert summary["checkpoint_pause_seconds"] > 0 and summary["exploitability"] > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert "Ray job: 2 workers" in res.stdout and "exploitability curve" in res.stdout
