"""Checkpoints in a storage path every node can reach: a directory (a shared mount) or a pyarrow
filesystem URI (``s3://bucket/prefix``, ``gs://...``, ``file:///abs/path``).

Layout: ``<root>/checkpoints/<iteration, 12 digits>/`` holding the shard files and the manifest,
as in a run directory (:mod:`blueprint.checkpoints`), so a checkpoint fetched from storage into a
local run directory is read by :func:`blueprint.checkpoints.load_latest` (``Trainer.load``,
``RayJob.load``, ``Blueprint.load``) unchanged.

Streams are opened with ``compression=None`` (pyarrow would otherwise (de)compress by the
``.lz4`` extension). Writes are atomic per file: a file is written (by :func:`blueprint.io.shard_file.write_shard` /
``write_manifest``, in the writer's own local temporary directory: each node's, never the driver's
run directory) and uploaded under a temporary name, then moved to its name. The manifest is
uploaded last (after every shard file is in place), so a checkpoint is complete exactly when its
manifest is there; a crash mid-way leaves a directory without a manifest, which readers skip and
the next prune removes.

The job writes a checkpoint from the *published snapshot* (the shards' immutable slices in the
object store, :meth:`cluster.job.RayJob.save_to_storage`): one Ray task per shard on the shard's
node writes its slice and uploads it, one writes the blueprint file (the average strategy, from
every slice's strategy sums), and one more task, which Ray starts only once all of those have
returned, uploads the manifest. The driver only submits these tasks (a few ms) and the
rounds go on meanwhile; it notices the completion at a later round (``ray.wait`` with no wait).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from blueprint.checkpoints import CHECKPOINTS_DIRNAME, list_checkpoints, load_latest, new_checkpoint_dir
from blueprint.io.blueprint_file import write_blueprint
from blueprint.io.errors import CheckpointError
from blueprint.io.manifest import MANIFEST_NAME, read_manifest_bytes, write_manifest
from blueprint.io.shard_file import write_shard
from blueprint.tables import average_strategy32

_DIGITS = 12  # blueprint.checkpoints' directory names: the iteration, zero-padded


class StorageError(CheckpointError):
    """The storage path cannot be opened, written or read."""


def is_uri(target: str | os.PathLike[str]) -> bool:
    """Whether ``target`` is a filesystem URI (``scheme://...``) rather than a directory."""
    return "://" in str(target)


def normalize_target(target: str | os.PathLike[str]) -> str:
    """``target`` as recorded in ``run.toml``: a URI as given, a directory made absolute (a later
    command may run from another working directory)."""
    target = str(target)
    return target if is_uri(target) else str(Path(target).expanduser().resolve())


def _fs(target: str):
    import pyarrow.fs as pafs  # lazily: a slow import, needed only with storage

    if is_uri(target):
        try:
            return pafs.FileSystem.from_uri(target)
        except Exception as exc:  # an unknown scheme, no credentials, ...
            raise StorageError(f"cannot open storage {target!r}: {exc}") from exc
    if not target.strip():
        raise StorageError("the storage path is empty")
    return pafs.LocalFileSystem(), str(Path(target).expanduser().resolve())


class Storage:
    """A checkpoint root in a directory or a pyarrow filesystem URI (see the module docstring).

    Picklable by its ``target`` string (a shard's task re-opens it on its own node)."""

    def __init__(self, target: str | os.PathLike[str]):
        self.target = str(target)
        self.fs, self.root = _fs(self.target)
        self.root = self.root.rstrip("/")

    def __reduce__(self):
        return (Storage, (self.target,))

    def __repr__(self) -> str:
        return f"Storage({self.target!r})"

    # -- paths --------------------------------------------------------------------------------
    def checkpoint_path(self, iteration: int) -> str:
        return f"{self.root}/{CHECKPOINTS_DIRNAME}/{int(iteration):0{_DIGITS}d}"

    def describe(self, iteration: int) -> str:
        """What a message names for checkpoint ``iteration`` (the URI form when given one)."""
        if "://" in self.target:
            return f"{self.target.rstrip('/')}/{CHECKPOINTS_DIRNAME}/{int(iteration):0{_DIGITS}d}"
        return self.checkpoint_path(iteration)

    def _exists(self, path: str) -> bool:
        import pyarrow.fs as pafs  # lazily, as in _fs

        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    # -- writing ------------------------------------------------------------------------------
    def check_writable(self) -> None:
        """Create the checkpoints root and write and remove a small file there, so that a target
        that cannot take checkpoints fails before training rather than at the first checkpoint."""
        root = f"{self.root}/{CHECKPOINTS_DIRNAME}"
        probe = f"{root}/.probe-{uuid.uuid4().hex[:12]}"
        try:
            self.fs.create_dir(root, recursive=True)
            with self.fs.open_output_stream(probe, compression=None) as out:
                out.write(b"mccfr")
            self.fs.delete_file(probe)
        except Exception as exc:
            raise StorageError(f"cannot write checkpoints to {self.target}: {exc}") from exc

    def upload(self, local_file: str | os.PathLike[str], iteration: int) -> None:
        """Copy ``local_file`` into checkpoint ``iteration`` under its own name, atomically (a
        temporary name, then a move)."""
        name = Path(local_file).name
        dest = self.checkpoint_path(iteration)
        tmp = f"{dest}/.{name}.tmp-{uuid.uuid4().hex[:12]}"
        try:
            self.fs.create_dir(dest, recursive=True)
            with open(local_file, "rb") as src, self.fs.open_output_stream(tmp, compression=None) as out:
                shutil.copyfileobj(src, out, 1 << 20)
            self.fs.move(tmp, f"{dest}/{name}")
        except Exception as exc:
            with contextlib.suppress(Exception):
                self.fs.delete_file(tmp)
            raise StorageError(f"uploading {name} to {self.describe(iteration)} failed: {exc}") from exc

    def upload_checkpoint(self, local_dir: str | os.PathLike[str], iteration: int) -> str:
        """Copy a complete local checkpoint directory (``RUN_DIR/checkpoints/<it>``, as
        ``Trainer.save`` writes it) into checkpoint ``iteration``: every file, then the manifest
        last, so it is complete in storage exactly when it is complete locally. Returns what a
        message names it by."""
        local = Path(local_dir)
        names = sorted(p.name for p in local.iterdir() if p.is_file() and not p.name.startswith("."))
        if MANIFEST_NAME not in names:
            raise StorageError(f"{local} has no {MANIFEST_NAME}: not a complete checkpoint")
        for name in [n for n in names if n != MANIFEST_NAME] + [MANIFEST_NAME]:
            self.upload(local / name, iteration)
        return self.describe(iteration)

    def write_shard(self, iteration: int, shard: int, arrays: dict, meta: dict) -> dict[str, Any]:
        """Write shard ``shard`` of checkpoint ``iteration`` (through a local temporary directory
        of this process's node) and upload it; returns its manifest entry."""
        with tempfile.TemporaryDirectory(prefix="mccfr-shard-") as tmp:
            entry = write_shard(tmp, shard, arrays, meta)
            self.upload(Path(tmp) / entry["file"], iteration)
        return entry

    def write_manifest(self, iteration: int, manifest: dict, files: list[dict]) -> str:
        """Upload checkpoint ``iteration``'s manifest (last: the checkpoint is complete once it
        is there); every file it lists must be uploaded already. Returns its storage path."""
        with tempfile.TemporaryDirectory(prefix="mccfr-manifest-") as tmp:
            local = Path(tmp) / f"{int(iteration):0{_DIGITS}d}"  # the name write_manifest checks
            local.mkdir()
            path = write_manifest(local, manifest, files)
            self.upload(path, iteration)
        return f"{self.checkpoint_path(iteration)}/{MANIFEST_NAME}"

    # -- reading ------------------------------------------------------------------------------
    def checkpoints(self) -> list[tuple[int, bool]]:
        """``(iteration, complete)`` of every checkpoint directory, newest first (complete: its
        manifest is there; whether its files verify is for the reader)."""
        import pyarrow.fs as pafs  # lazily, as in _fs

        root = f"{self.root}/{CHECKPOINTS_DIRNAME}"
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
        except Exception as exc:
            raise StorageError(f"cannot list {self.target}: {exc}") from exc
        out = []
        for info in infos:
            name = info.base_name
            if info.type == pafs.FileType.Directory and name.isascii() and name.isdigit():
                out.append((int(name), self._exists(f"{info.path}/{MANIFEST_NAME}")))
        return sorted(out, reverse=True)

    def read_manifest(self, iteration: int) -> dict[str, Any]:
        """The manifest of checkpoint ``iteration`` (parsed and checked as a local one is)."""
        name = f"{self.checkpoint_path(iteration)}/{MANIFEST_NAME}"
        try:
            with self.fs.open_input_stream(name, compression=None) as inp:
                data = inp.read()
        except Exception as exc:
            raise StorageError(f"reading the manifest of {self.describe(iteration)} failed: {exc}") from exc
        return read_manifest_bytes(data, name=self.describe(iteration))

    def download(self, iteration: int, name: str, local_dir: str | os.PathLike[str]) -> str:
        """Copy file ``name`` of checkpoint ``iteration`` into ``local_dir``; returns its path."""
        dest = Path(local_dir) / name
        try:
            with (
                self.fs.open_input_stream(
                    f"{self.checkpoint_path(iteration)}/{name}", compression=None
                ) as inp,
                open(dest, "wb") as out,
            ):
                shutil.copyfileobj(inp, out, 1 << 20)
        except Exception as exc:
            raise StorageError(f"reading {name} of {self.describe(iteration)} failed: {exc}") from exc
        return str(dest)

    def fetch(self, run_dir: str | os.PathLike[str], iteration: int | None = None) -> Path:
        """Copy a complete checkpoint (the newest, or ``iteration``'s) into
        ``run_dir/checkpoints/`` (files first, the manifest last), where ``load_latest`` and the
        loaders read it; returns its local directory. Checkpoints that fail to verify are skipped
        by the reader as usual; fetch the next older one with ``iteration``."""
        import pyarrow.fs as pafs  # lazily, as in _fs

        done = [it for it, complete in self.checkpoints() if complete]
        if iteration is not None:
            done = [it for it in done if it == int(iteration)]
        if not done:
            raise StorageError(
                f"no complete checkpoint in {self.target}"
                + (f" for iteration {iteration}" if iteration is not None else "")
            )
        it = done[0]
        src = self.checkpoint_path(it)
        dest = Path(new_checkpoint_dir(run_dir, it, replace=True))
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(src))
            names = sorted(
                i.base_name for i in infos if i.type == pafs.FileType.File and not i.base_name.startswith(".")
            )
            for name in [n for n in names if n != MANIFEST_NAME] + [MANIFEST_NAME]:
                with (
                    self.fs.open_input_stream(f"{src}/{name}", compression=None) as inp,
                    open(dest / name, "wb") as out,
                ):
                    shutil.copyfileobj(inp, out, 1 << 20)
        except Exception as exc:
            shutil.rmtree(dest, ignore_errors=True)
            raise StorageError(f"fetching {self.describe(it)} failed: {exc}") from exc
        return dest

    def newest(self) -> int | None:
        """The iteration of the newest complete checkpoint, or None."""
        return next((it for it, complete in self.checkpoints() if complete), None)

    def sync(self, run_dir: str | os.PathLike[str]) -> Path | None:
        """Fetch the newest complete checkpoint into ``run_dir/checkpoints/`` when it is newer
        than the newest complete one there (or there is none); returns the fetched directory, or
        None when the local one is as new. Raises :class:`StorageError` when storage cannot be
        read, or holds no complete checkpoint and neither does ``run_dir``."""
        newest = self.newest()
        local = next((i.iteration for i in list_checkpoints(run_dir) if i.complete), None)
        if newest is None:
            if local is None:
                raise StorageError(f"no complete checkpoint in {self.target}")
            return None
        if local is not None and local >= newest:
            return None
        return self.fetch(run_dir, newest)

    def load_latest(self, cache_dir: str | os.PathLike[str], **kwargs):
        """:func:`blueprint.checkpoints.load_latest` of the newest complete checkpoint, fetched into
        ``cache_dir`` (a local run directory or scratch directory)."""
        self.fetch(cache_dir)
        return load_latest(cache_dir, **kwargs)

    def prune(self, keep: int) -> list[int]:
        """Keep the newest ``keep`` complete checkpoints; remove older ones and any incomplete
        directory older than the newest complete one. Returns the iterations removed."""
        found = self.checkpoints()
        complete = [it for it, ok in found if ok]
        if not complete:
            return []
        kept = set(complete[: max(keep, 1)])
        gone = [it for it, ok in found if it not in kept and (ok or it < complete[0])]
        for it in gone:
            with contextlib.suppress(Exception):
                # the manifest first: a half-deleted checkpoint never looks complete
                with contextlib.suppress(Exception):
                    self.fs.delete_file(f"{self.checkpoint_path(it)}/{MANIFEST_NAME}")
                self.fs.delete_dir(self.checkpoint_path(it))
        return gone


def write_slice_task(
    storage: Storage, iteration: int, shard: int, meta: dict, slice_: dict
) -> dict[str, Any]:
    """Ray task body: write one published slice (``{"regret", "strat"}``, read zero-copy from the
    node's object store) as shard ``shard`` of checkpoint ``iteration``."""
    return storage.write_shard(iteration, shard, {"regret": slice_["regret"], "strat": slice_["strat"]}, meta)


def write_blueprint_task(storage: Storage, iteration: int, static: tuple, *slices: dict) -> dict[str, Any]:
    """Ray task body: the checkpoint's blueprint file (what ``Blueprint.load`` reads) from the
    published slices' strategy sums; ``static`` is ``(header, arrays, tree)`` of
    :func:`blueprint.io.blueprint_file.blueprint_file_payload` without ``probs`` (put once per job)."""
    header, arrays, tree = static
    strat = np.concatenate([s["strat"] for s in slices])
    arrays = dict(arrays)
    arrays["probs"] = average_strategy32(tree, arrays["row_offset"], arrays["num_buckets"], strat)
    header = dict(header)
    header["iteration"] = int(iteration)
    with tempfile.TemporaryDirectory(prefix="mccfr-blueprint-") as tmp:
        entry = write_blueprint(tmp, header, arrays)
        storage.upload(Path(tmp) / entry["file"], iteration)
    return entry


def write_manifest_task(
    storage: Storage, iteration: int, manifest: dict, keep: int | None, *files: dict
) -> str:
    """Ray task body, started by Ray once every slice task returned (``files``, their entries):
    upload the manifest, then prune to ``keep``. Returns the manifest's storage path."""
    path = storage.write_manifest(iteration, manifest, list(files))
    if keep is not None:
        storage.prune(keep)
    return path
