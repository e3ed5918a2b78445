"""The Ray job's checkpoints: written into the run directory by the shards (the driver writes the
blueprint file and the manifest), or into storage from the published snapshot while the rounds go
on; and a job resumed from one.

Checkpoints: :meth:`RayJob.save` writes into the run directory (every shard writes its slice
there, then the driver the manifest: the job pauses for the write, and the directory must be one
every node reaches). :meth:`RayJob.save_to_storage` writes into a storage path every node reaches
(a directory or a pyarrow URI such as ``s3://``, :mod:`cluster.storage`) from the published
snapshot: per shard a task on its node writes the slice through the node's own temporary
directory and uploads it, and a last task uploads the manifest once they all returned; the driver
only submits them (the pause: ``stats()["checkpoint_pause_seconds"]``), and the checkpoint becomes
the restore base when a later round sees it complete. ``RayJob.load(run_dir, storage=...)`` fetches
the newest complete one into ``run_dir/checkpoints`` and resumes. ``mccfr train --storage TARGET``
checkpoints this way (:mod:`blueprint.session`; the target is recorded in ``run.toml``, where ``mccfr
resume`` and the commands that read a run find it).

:class:`CheckpointingMixin` holds these methods of :class:`cluster.job.RayJob` (one class, split
by concern: :mod:`cluster.placement`, :mod:`cluster.rounds`, :mod:`cluster.recovery`).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import numpy as np

from blueprint.checkpoints import load_latest, new_checkpoint_dir, previous_kept, prune_checkpoints
from blueprint.io.blueprint_file import blueprint_file_payload, write_blueprint_file
from blueprint.io.errors import CheckpointError
from blueprint.io.manifest import write_manifest
from blueprint.tables import average_strategy32
from blueprint.trainer import Trainer
from cluster.config import RayJobConfig
from cluster.storage import Storage, write_blueprint_task, write_manifest_task, write_slice_task

__all__ = ["CheckpointingMixin"]


class CheckpointingMixin:
    """Checkpoint methods of :class:`cluster.job.RayJob` (module docstring)."""

    def manifest(self) -> dict[str, Any]:
        m = self.tr.manifest()
        m["rng_state"] = [int(x) for x in self.worker_rng[0]]
        m["job"] = {
            "workers": self.num_workers,
            "shards": self.num_shards,
            "batch": self.batch,
            "nodes": self.num_nodes,
            "group_size": self.group_size,
            "round": self.round,
            "bounds": [[lo, hi] for lo, hi in self.bounds],
            "layout_size": self.tr.size,
            "worker_rng": [[int(x) for x in r] for r in self.worker_rng],
            "worker_seq": list(self.worker_seq),
            "lost_batches": len(self.lost),
            "lost_iterations": sum(x["iterations"] for x in self.lost),
        }
        return m

    def save(self, run_dir: Path, keep: int | None = None) -> Path:
        """Checkpoint: every shard writes its slice (in parallel), then the driver the manifest.

        A failed write (disk full, ...) removes the partial directory and raises
        :class:`CheckpointError` saying which checkpoint is kept; the job can go on."""
        t_start = time.perf_counter()
        if self._save_pending is not None:
            self._poll_save(block=True)
        run_dir = Path(run_dir)
        it = self.tr.iteration
        kept = previous_kept(run_dir, it)
        ckpt_dir = new_checkpoint_dir(run_dir, it, replace=True)
        try:
            files = self._get(
                [s.write.remote(str(ckpt_dir), it) for s in self.shards], what="the shards to write"
            )
            files.append(self._write_blueprint(ckpt_dir))
            write_manifest(ckpt_dir, self.manifest(), files)
        except BaseException as exc:
            shutil.rmtree(ckpt_dir, ignore_errors=True)
            if isinstance(exc, Exception):
                cause = getattr(exc, "cause", None) or exc  # a shard's error comes as RayTaskError
                raise CheckpointError(
                    f"writing checkpoint {ckpt_dir} (iteration {it}) failed: {cause}; {kept}"
                ) from exc
            raise
        # a shard that dies from now on is rebuilt from this checkpoint (the leaders drop their
        # retained deltas up to this round with the next round's call)
        self.base_dir, self.base_refs, self.base_storage = ckpt_dir, None, None
        self.ckpt_round, self.round_log, self.replay_ok = self.round, [], True
        if keep is not None:
            prune_checkpoints(run_dir, keep)
        self.checkpoint_pauses.append(time.perf_counter() - t_start)
        return ckpt_dir

    def _write_blueprint(self, ckpt_dir: Path) -> dict[str, Any]:
        """The checkpoint's blueprint file (what queries load): the average strategy of the
        shards' published snapshot, which is their state between rounds; only the strategy sums
        are used."""
        slices = self._get(list(self.snapshot), what="the shards' snapshot")
        strat = np.concatenate([s["strat"] for s in slices])
        probs = average_strategy32(self.tr.tree, self.tr.row_offset, self.tr.num_buckets, strat)
        return write_blueprint_file(ckpt_dir, self.tr, probs=probs)

    def save_to_storage(self, storage, keep: int | None = None, wait: bool = False) -> int:
        """Checkpoint into ``storage`` (a :class:`cluster.storage.Storage`, a directory or a pyarrow
        URI) from the published snapshot, without stopping the rounds: one task per shard on its
        node writes the slice it published at the end of the last round (immutable in the object
        store) and uploads it, one writes the blueprint file from the slices' strategy sums; a
        last task, started by Ray once they all returned, uploads the manifest and prunes to
        ``keep``. The driver only submits them (the pause,
        ``stats()["checkpoint_pause_seconds"]``) and sees the result at a later round (or now with
        ``wait``); until then the previous complete checkpoint stays the restore base. A save
        while one is still being written waits for it first. Returns the iteration saved; a failed
        write is logged at completion (raised with ``wait``) and leaves the previous one.
        """
        t_start = time.perf_counter()
        if not isinstance(storage, Storage):
            storage = Storage(storage)
        if self._save_pending is not None:
            self._poll_save(block=True)
        ray = self.ray
        it = self.tr.iteration
        manifest = self.manifest()
        slice_task = ray.remote(write_slice_task)
        refs = []
        for k, (lo, hi) in enumerate(self.bounds):
            meta = {
                "shard": k,
                "row_lo": lo,
                "row_hi": hi,
                "iteration": it,
                "last_seq": {},
                "round": self.round,
            }
            opts = {"num_cpus": 0, "max_retries": 2, **self._in_bundle(self.shard_nodes[k])}
            refs.append(slice_task.options(**opts).remote(storage, it, k, meta, self.snapshot[k]))
        if self._blueprint_static is None:  # the blueprint file's header and layout: once per job
            header, arrays = blueprint_file_payload(self.tr, probs=np.zeros(0, np.float32))
            arrays.pop("probs")
            self._blueprint_static = ray.put((header, arrays, self.tr.tree))
        refs.append(
            ray.remote(write_blueprint_task)
            .options(num_cpus=0, max_retries=2)
            .remote(storage, it, self._blueprint_static, *self.snapshot)
        )
        mref = (
            ray.remote(write_manifest_task)
            .options(num_cpus=0, max_retries=2)
            .remote(storage, it, manifest, keep, *refs)
        )
        self._save_pending = {
            "storage": storage,
            "iteration": it,
            "round": self.round,
            "ref": mref,
            "started": t_start,
        }
        self.checkpoint_pauses.append(time.perf_counter() - t_start)
        if wait:
            self._poll_save(block=True, raise_errors=True)
        return it

    def _poll_save(self, block: bool, raise_errors: bool = False) -> bool:
        """Take in a storage checkpoint that has finished (``block``: wait for it, within the
        job's deadline). Returns True if none is pending any more."""
        pending = self._save_pending
        if pending is None:
            return True
        ready, _ = self.ray.wait([pending["ref"]], timeout=self.timeout if block else 0)
        if not ready:
            if block:
                self._save_pending = None
                msg = (
                    f"checkpoint {pending['storage'].describe(pending['iteration'])} was not written within "
                    f"{self.timeout:.0f} s; the last complete one is {self._last_checkpoint()}"
                )
                self.log(msg)
                if raise_errors:
                    raise CheckpointError(msg)
            return not block
        self._save_pending = None
        storage, it, saved_round = pending["storage"], pending["iteration"], pending["round"]
        try:
            self.ray.get(pending["ref"])
        except Exception as exc:
            cause = getattr(exc, "cause", None) or exc
            msg = (
                f"writing checkpoint {storage.describe(it)} (iteration {it}) failed: {cause}; "
                f"the last complete one is {self._last_checkpoint()}"
            )
            self.log(msg)
            if raise_errors:
                raise CheckpointError(msg) from exc
            return True
        self.storage_save_seconds.append(time.perf_counter() - pending["started"])
        if saved_round < self.ckpt_round:  # a newer base came meanwhile (a re-base after a node died)
            return True
        # the restore base from now on; the leaders drop their deltas up to that round with the
        # next call, the rounds after it stay in the log (they ran while the checkpoint was written)
        self.base_storage, self.base_dir, self.base_refs = (storage, it), None, None
        self.ckpt_round = saved_round
        self.round_log = [e for e in self.round_log if e[0] > saved_round]
        if not self.replay_ok:
            # a leader stopped retaining: deltas after this checkpoint may be gone; its retention
            # restarts with the next round, so a checkpoint of that round or later restores it
            if self._replay_resume is not None and saved_round >= self._replay_resume - 1:
                self.replay_ok = True
            elif self._replay_resume is None:
                self._replay_resume = self.round + 1
        return True

    def wait_saves(self) -> None:
        """Wait for a storage checkpoint still being written (raises :class:`CheckpointError` if it
        failed)."""
        self._poll_save(block=True, raise_errors=True)

    @staticmethod
    def resume_kwargs(manifest: dict[str, Any], **overrides) -> dict[str, Any]:
        """Constructor keywords that continue the job of a checkpoint's manifest: its workers,
        shards, batch, nodes, round, worker RNG states and batch numbers (a single-process
        checkpoint: one worker continuing the trainer's RNG). ``overrides`` (None values ignored)
        replace them."""
        return RayJobConfig.resume_options(manifest, **overrides)

    @classmethod
    def load(cls, run_dir: Path, log: Callable[[str], Any] | None = None, storage=None, **kwargs) -> Self:
        """Resume from the newest complete checkpoint of ``run_dir`` (written by a job with any
        number of shards, or by the single-process trainer), or of ``storage`` (a directory or
        pyarrow URI, fetched into ``run_dir/checkpoints`` first). ``kwargs`` as for the
        constructor; ``workers``/``shards``/``batch`` default to the checkpoint's."""
        if storage is not None:
            storage = storage if isinstance(storage, Storage) else Storage(storage)
            manifest, shards = storage.load_latest(Path(run_dir), log=log)
        else:
            manifest, shards = load_latest(Path(run_dir), log=log)
        tr = Trainer.from_checkpoint(Path(run_dir), manifest, shards)
        del shards
        return cls(tr, RayJobConfig.of(**cls.resume_kwargs(manifest, **kwargs)), log=log)
