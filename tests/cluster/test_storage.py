"""Checkpoints in a storage path (cluster/storage.py): a directory that is not the run directory
and pyarrow's local filesystem URI (``file:///...``), first as plain calls, then from a Ray job on
a simulated two-node cluster (``ray.cluster_utils.Cluster``) writing from the published snapshot
while its rounds go on; the checkpoint loads (``RayJob.load``, ``Trainer.load``) with the tables
of an uninterrupted run, and a shard killed afterwards is restored from it."""

from __future__ import annotations

import numpy as np
import pytest

from blueprint.checkpoints import CHECKPOINTS_DIRNAME
from blueprint.trainer import Trainer, make_trainer
from cluster.storage import Storage, StorageError


def _targets(tmp_path):
    return [str(tmp_path / "store-dir"), (tmp_path / "store-uri").as_uri()]


@pytest.mark.parametrize("kind", [0, 1], ids=["directory", "file-uri"])
def test_storage_write_list_fetch_prune(tmp_path, kind):
    st = Storage(_targets(tmp_path)[kind])
    tr = make_trainer("leduc", seed=1)
    tr.run(200)
    arrays = {"regret": tr.regret, "strat": tr.strat}
    for it in (100, 200, 300):
        entry = st.write_shard(it, 0, arrays, {"shard": 0, "row_lo": 0, "row_hi": tr.size, "iteration": it})
        if it != 300:  # 300: a write interrupted before its manifest
            m = tr.manifest()
            m["iteration"] = it
            st.write_manifest(it, m, [entry])
    assert st.checkpoints() == [(300, False), (200, True), (100, True)]
    # nothing left under a temporary name
    import pyarrow.fs as pafs

    names = [i.base_name for i in st.fs.get_file_info(pafs.FileSelector(st.root, recursive=True))]
    assert not [n for n in names if ".tmp-" in n]
    local = tmp_path / "local"
    manifest, shards = st.load_latest(local)
    assert manifest["iteration"] == 200
    assert shards[0][0]["regret"].tobytes() == tr.regret.tobytes()
    assert st.prune(1) == [100] and st.checkpoints() == [(300, False), (200, True)]
    with pytest.raises(StorageError):
        st.fetch(local, iteration=100)


def test_storage_bad_uri():
    with pytest.raises(StorageError):
        Storage("nosuchscheme://bucket/x")


# -- a Ray job on simulated nodes ---------------------------------------------------------------
ray = pytest.importorskip("ray")


# the directory kind is slow (the job's code is the same for both; Storage differs, and is tested
# above for both); the checkpoint pause's 50 ms bound wants the cores to itself: timing
@pytest.mark.timing
@pytest.mark.parametrize("kind", [pytest.param(0, marks=pytest.mark.slow), 1], ids=["directory", "file-uri"])
def test_job_checkpoints_to_storage_while_training(two_nodes, tmp_path, kind):
    """Two nodes, a worker and a shard each: a checkpoint into storage at iteration 1,200 is
    submitted between rounds (pause under 50 ms), written while the job runs on, has exactly the
    tables of an uninterrupted 1,200-iteration run, and nothing lands in the run directory. Then
    shard 1 is killed: it is restored from the storage checkpoint plus the retained deltas, and the
    job ends as an uninterrupted one."""
    from job_reference import reference

    from cluster.job import RayJob

    target = _targets(tmp_path)[kind]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    notes = []
    with RayJob(make_trainer("leduc", seed=4), workers=2, shards=2, batch=300, log=notes.append) as job:
        assert len({p["leader"] for p in job.placement()}) == 2

        def cb(j):
            if j.iteration == 1200:
                j.save_to_storage(target, keep=2)
            elif j.iteration == 2400:
                j.wait_saves()  # (written meanwhile or not: the kill must follow it)
                assert j.base_storage is not None and j.ckpt_round == 2, notes
                j.ray.kill(j.shards[1], no_restart=True)
            return False

        job.run(3600, cb)
        job.wait_saves()
        got = job.sync()
        st = job.stats()
    print(
        f"storage checkpoint: pause {st['checkpoint_pause_seconds'] * 1e3:.1f} ms, written in "
        f"{st['storage_checkpoint_seconds']:.2f} s while the rounds went on"
    )
    # the rounds pause for the snapshot only, not for the write (a few ms idle; up to about 0.1 s
    # on 2 loaded cores): a checkpoint written in place would pause them for the whole write
    pause, write = st["checkpoint_pause_seconds"], st["storage_checkpoint_seconds"]
    assert pause < 0.15 and pause < 0.5 * write, (pause, write)
    assert st["shard_restores"] == 1 and st["lost_deltas"] == 0
    assert any("shard 1 died" in m and "000000001200" in m for m in notes), notes
    ref_r, ref_s = reference(4, 2, 2, 2, 300, 3600)
    assert got.regret.tobytes() == ref_r.tobytes() and got.strat.tobytes() == ref_s.tobytes()
    assert not (run_dir / CHECKPOINTS_DIRNAME).exists()
    assert Storage(target).checkpoints() == [(1200, True)]
    # it loads: into a fresh local directory, as the job and as the trainer
    with RayJob.load(tmp_path / "resume", storage=target) as job2:
        tr2 = job2.sync()
        assert (job2.num_workers, job2.num_shards, job2.round) == (2, 2, 2)
    ref_r, ref_s = reference(4, 2, 2, 2, 300, 1200)
    assert tr2.iteration == 1200
    assert tr2.regret.tobytes() == ref_r.tobytes() and tr2.strat.tobytes() == ref_s.tobytes()
    loaded = Trainer.load(tmp_path / "resume")
    assert np.array_equal(loaded.regret, ref_r)
    # and the blueprint file, what queries load: the average strategy of those tables
    from blueprint.blueprint import Blueprint

    bp = Blueprint.load(tmp_path / "resume")
    assert np.allclose(bp.probs, loaded.average_strategy(), atol=1e-6)
