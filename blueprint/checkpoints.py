"""Checkpoint directories: write a whole checkpoint, list a run's checkpoints, load the newest
complete one, prune old ones.

A checkpoint is a directory per iteration, written by one process (the single-process trainer,
one shard) or by many (the Ray job: S shard writers plus the driver's manifest)::

    RUN_DIR/checkpoints/<iteration:012d>/shard-<k>.msgpack.lz4    k = 0 .. S-1
    RUN_DIR/checkpoints/<iteration:012d>/blueprint.msgpack.lz4     the average strategy (queries)
    RUN_DIR/checkpoints/<iteration:012d>/manifest.msgpack          written LAST

A checkpoint is complete only when its manifest exists and verifies (every file it lists has the
listed size and, when asked, digest); an incomplete or damaged one is reported and skipped. The
file formats and the rules every reader enforces are in :mod:`blueprint.io.container`; the files
are written by :mod:`blueprint.io.shard_file`, :mod:`blueprint.io.blueprint_file` and
:mod:`blueprint.io.manifest`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from blueprint.io.blueprint_file import write_blueprint
from blueprint.io.codec import normalized
from blueprint.io.container import ArraySpec, read_container
from blueprint.io.errors import CheckpointError
from blueprint.io.manifest import MANIFEST_NAME, read_manifest, write_manifest
from blueprint.io.shard_file import SHARD_FORMAT, shard_index, write_shard
from blueprint.io.streams import IO_BUFFER, digest_problem, open_regular
from mccfr_util.files import BoundedReader, file_kind, fsync_dir

__all__ = [
    "CHECKPOINTS_DIRNAME",
    "CheckpointInfo",
    "list_checkpoints",
    "load_latest",
    "new_checkpoint_dir",
    "previous_kept",
    "prune_checkpoints",
    "save_checkpoint",
]

log_ = logging.getLogger(__name__)

CHECKPOINTS_DIRNAME = "checkpoints"
_ITERATION_DIGITS = 12


@dataclasses.dataclass(frozen=True)
class CheckpointInfo:
    """One directory under ``RUN_DIR/checkpoints``.

    Attributes:
        iteration: the iteration parsed from the directory name.
        path: the checkpoint directory.
        complete: True when its manifest parses, passes its digest and the run-progress rules,
            and every file it lists is a regular file with the listed size (digests are checked
            only when asked: ``list_checkpoints(verify=True)`` or ``load_latest``).
        problem: why it is not complete, else None.
        bytes: total size of the regular files in the directory.
    """

    iteration: int
    path: Path
    complete: bool
    problem: str | None
    bytes: int


def _iteration_dirname(iteration: int) -> str:
    return f"{iteration:0{_ITERATION_DIGITS}d}"


def _checkpoints_root(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / CHECKPOINTS_DIRNAME


def _files_problem(ckpt_dir: Path, files: Sequence[Mapping[str, Any]]) -> str | None:
    """Cheap completeness check: every listed file is a regular file with the listed size; shards
    are 0..S-1."""
    shards = []
    for entry in files:
        path = ckpt_dir / entry["file"]
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return f"{path} is missing"
        except OSError as exc:
            return f"{path} cannot be read: {exc}"
        if not stat.S_ISREG(st.st_mode):
            return f"{path} is {file_kind(st.st_mode)}, not a regular file"
        if st.st_size != entry["bytes"]:
            return f"size mismatch for {path}: the manifest says {entry['bytes']} bytes, the file has {st.st_size}"
        k = shard_index(entry["file"])
        if k is not None:
            shards.append(k)
    if sorted(shards) != list(range(len(shards))):
        return f"manifest in {ckpt_dir} lists shards {sorted(shards)}, not 0..S-1"
    return None


def new_checkpoint_dir(run_dir: str | os.PathLike[str], iteration: int, *, replace: bool = False) -> Path:
    """Create ``RUN_DIR/checkpoints/<iteration>`` and return it.

    A directory left by an interrupted write (no manifest) is cleared first. A complete
    checkpoint for the same iteration is refused unless ``replace`` is True, in which case its
    manifest is removed first (so it can never look complete with new and old files mixed).
    """
    if not isinstance(iteration, (int, np.integer)) or isinstance(iteration, bool) or iteration < 0:
        raise ValueError(f"iteration must be an int >= 0, got {iteration!r}")
    root = _checkpoints_root(run_dir)
    path = root / _iteration_dirname(int(iteration))
    if path.exists():
        manifest = path / MANIFEST_NAME
        if manifest.exists():
            if not replace:
                raise CheckpointError(f"a checkpoint for iteration {iteration} already exists: {path}")
            manifest.unlink()
            fsync_dir(path)
        shutil.rmtree(path)
    try:
        root.mkdir(parents=True, exist_ok=True)
        path.mkdir()
        fsync_dir(root)
    except OSError as exc:
        raise CheckpointError(f"cannot create checkpoint directory {path}: {exc}") from exc
    return path


def _dir_bytes(path: Path) -> int:
    total = 0
    try:
        for entry in os.scandir(path):
            if entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return total


def _checkpoint_dirs(run_dir: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    root = _checkpoints_root(run_dir)
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return []
    found = [
        (int(e.name), Path(e.path))
        for e in entries
        if e.name.isascii() and e.name.isdigit() and e.is_dir(follow_symlinks=False)
    ]
    return sorted(found, key=lambda item: item[0], reverse=True)


def _verify_files(ckpt_dir: Path, files: Sequence[Mapping[str, Any]]) -> str | None:
    for entry in files:
        path = ckpt_dir / entry["file"]
        h = hashlib.blake2b()
        size = 0
        try:
            raw, actual = open_regular(path, "checkpoint file")
            with raw:
                if actual != entry["bytes"]:
                    return digest_problem(path, entry, actual, "")
                src = BoundedReader(raw, actual)  # never past the recorded size
                while block := src.read(IO_BUFFER):
                    h.update(block)
                    size += len(block)
        except CheckpointError as exc:
            return str(exc)
        except OSError as exc:
            return f"{path} cannot be read: {exc}"
        problem = digest_problem(path, entry, size, h.hexdigest())
        if problem:
            return problem
    return None


def list_checkpoints(run_dir: str | os.PathLike[str], *, verify: bool = False) -> list[CheckpointInfo]:
    """The checkpoints of a run, newest first.

    Args:
        run_dir: the run directory.
        verify: also check every file's blake2b digest (reads every byte); by default only the
            manifest and the file sizes are checked.
    """
    infos = []
    for iteration, path in _checkpoint_dirs(run_dir):
        problem = None
        try:
            manifest = read_manifest(path)
        except CheckpointError as exc:
            problem = str(exc)
        else:
            if manifest.get("iteration") != iteration:
                problem = f"manifest in {path} is for iteration {manifest.get('iteration')!r}"
            else:
                problem = _files_problem(path, manifest["files"])
            if problem is None and verify:
                problem = _verify_files(path, manifest["files"])
        infos.append(CheckpointInfo(iteration, path, problem is None, problem, _dir_bytes(path)))
    return infos


def load_latest(
    run_dir: str | os.PathLike[str],
    verify: bool = True,
    expect: Mapping[str, Any] | None = None,
    log: Callable[[str], Any] | None = None,
    layout: Callable[[dict[str, Any]], Sequence[Mapping[str, ArraySpec]] | None] | None = None,
) -> tuple[dict[str, Any], list[tuple[dict[str, np.ndarray], dict[str, Any]]]]:
    """Load the newest complete checkpoint, skipping (and reporting) any that is not.

    Args:
        run_dir: the run directory.
        verify: check every file's blake2b digest against the manifest (in the same pass that
            reads it). Sizes are always checked, and no byte past the recorded size is read;
            without ``verify`` the files' own lz4 checksums still catch most damage.
        expect: manifest key -> required value (e.g. ``{"config_hash": h, "abstraction_hash": a}``).
            A mismatch raises at once: it is a different run, not a corrupt checkpoint.
        log: called with one message per skipped checkpoint; default: this module's logger.
        layout: called with each candidate manifest (after ``expect``) before any shard is read;
            returns, per shard in order, name -> :class:`ArraySpec` (the arrays the run's layout
            needs), or None for no layout check. The manifest must list exactly that many
            shards, and each shard's arrays must match before anything is allocated. A
            :class:`CheckpointError` it raises marks that checkpoint as damaged (it is skipped);
            any other exception propagates.

    Returns:
        ``(manifest, shards)``: the manifest (caller's keys, ``iteration``, ``files``) and, in
        shard order, ``(arrays, meta)`` of every shard.

    Raises:
        CheckpointError: an ``expect`` mismatch (naming the key and both values), or no
            complete checkpoint (naming the run directory and every problem found).
    """
    report = log if log is not None else log_.warning
    problems = []

    def skip(info: CheckpointInfo, why: Any) -> None:
        problem = f"skipping checkpoint {info.path}: {why}"
        problems.append(problem)
        report(problem)

    for info in list_checkpoints(run_dir):
        if not info.complete:
            skip(info, info.problem)
            continue
        try:
            manifest = read_manifest(info.path)
            if manifest.get("iteration") != info.iteration:  # changed since it was listed
                raise CheckpointError(
                    f"manifest in {info.path} is for iteration {manifest.get('iteration')!r}"
                )
        except CheckpointError as exc:
            skip(info, exc)
            continue
        for key, value in (expect or {}).items():
            if key not in manifest:
                raise CheckpointError(f"checkpoint {info.path} has no {key!r}; expected {key} = {value!r}")
            if manifest[key] != normalized(value):
                raise CheckpointError(
                    f"checkpoint {info.path} belongs to a different run: {key} is {manifest[key]!r}, "
                    f"expected {value!r}"
                )
        try:
            specs = layout(manifest) if layout is not None else None
            shard_entries = [(k, e) for e in manifest["files"] if (k := shard_index(e["file"])) is not None]
            if specs is not None and len(specs) != len(shard_entries):
                raise CheckpointError(
                    f"manifest {info.path / MANIFEST_NAME} lists {len(shard_entries)} shard(s); this run's "
                    f"layout has {len(specs)}"
                )
            shards = []
            for entry in manifest["files"]:
                k = shard_index(entry["file"])
                if k is None:
                    bad = _verify_files(info.path, [entry]) if verify else None
                    if bad:
                        raise CheckpointError(bad)
                    continue
                path = info.path / entry["file"]
                spec = specs[k] if specs is not None else None
                arrays, meta, held = read_container(path, entry, fmt=SHARD_FORMAT, verify=verify, spec=spec)
                if held != k:
                    raise CheckpointError(f"shard file {path} holds shard {held}")
                shards.append((k, arrays, meta))
        except CheckpointError as exc:
            skip(info, exc)
            continue
        shards.sort(key=lambda item: item[0])
        return manifest, [(arrays, meta) for _, arrays, meta in shards]
    detail = "; ".join(problems) if problems else "no checkpoints found"
    raise CheckpointError(f"no complete checkpoint in {_checkpoints_root(run_dir)}: {detail}")


def _remove_checkpoint(path: Path) -> None:
    # Manifest first: a half-removed directory must read as incomplete, never as corrupt-complete.
    try:
        (path / MANIFEST_NAME).unlink()
    except FileNotFoundError:
        pass
    shutil.rmtree(path)


def prune_checkpoints(run_dir: str | os.PathLike[str], keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` complete checkpoints, and every incomplete one older
    than the newest complete one (newer incomplete ones may still be being written).

    Returns:
        The deleted directories.
    """
    if not isinstance(keep, int) or isinstance(keep, bool) or keep < 1:
        raise ValueError(f"keep must be an int >= 1, got {keep!r}")
    infos = list_checkpoints(run_dir)
    complete = [info for info in infos if info.complete]
    if not complete:
        return []
    # Only checkpoints whose every byte verifies count towards ``keep`` (newest first): a corrupt
    # one (say, a flipped bit that the cheap size check misses) must not push a good one out. It
    # is left in place, and removed once it is older than the kept ones.
    kept = 0
    cutoff = None
    for info in complete:
        if _verify_files(info.path, read_manifest(info.path)["files"]) is None:
            kept += 1
            if kept == keep:
                cutoff = info.iteration
                break
    if cutoff is None:
        return []
    doomed = [i for i in infos if i.iteration < cutoff]
    removed = []
    for info in sorted(doomed, key=lambda i: i.iteration):
        try:
            _remove_checkpoint(info.path)
        except OSError as exc:
            log_.warning("could not delete old checkpoint %s: %s", info.path, exc)
            continue
        removed.append(info.path)
    if removed:
        fsync_dir(_checkpoints_root(run_dir))
    return removed


def previous_kept(run_dir: str | os.PathLike[str], iteration: int) -> str:
    """What a failed write of checkpoint ``iteration`` leaves to resume from, in words."""
    previous = next((i for i in list_checkpoints(run_dir) if i.complete and i.iteration != iteration), None)
    if previous is None:
        return "there is no earlier complete checkpoint"
    return f"the previous checkpoint ({previous.path}, iteration {previous.iteration}) is kept"


def save_checkpoint(
    run_dir: str | os.PathLike[str],
    iteration: int,
    shards: Sequence[tuple[Mapping[str, np.ndarray], Mapping[str, Any]]],
    manifest: Mapping[str, Any],
    keep: int | None = None,
    *,
    replace: bool = False,
    blueprint: tuple[Mapping[str, Any], Mapping[str, np.ndarray]] | None = None,
) -> Path:
    """Write a whole checkpoint from one process: every shard, the blueprint file, then the
    manifest, then prune.

    Args:
        run_dir: the run directory.
        iteration: the iteration the tables are at.
        shards: ``(arrays, meta)`` per shard, in shard order (one for the single-process trainer).
        manifest: see :func:`write_manifest`.
        keep: if given, keep only the newest ``keep`` complete checkpoints afterwards.
        replace: overwrite a complete checkpoint of the same iteration.
        blueprint: ``(header, arrays)`` of the blueprint file (:func:`write_blueprint`), written
            after the shards and listed in the manifest.

    Returns:
        The checkpoint directory.

    Raises:
        CheckpointError: the write failed; the partial directory is removed and the previous
            checkpoint is kept.
    """
    if not shards:
        raise ValueError("a checkpoint needs at least one shard")
    kept = previous_kept(run_dir, iteration)
    ckpt_dir = new_checkpoint_dir(run_dir, iteration, replace=replace)
    try:
        files = [write_shard(ckpt_dir, k, arrays, meta) for k, (arrays, meta) in enumerate(shards)]
        if blueprint is not None:
            files.append(write_blueprint(ckpt_dir, *blueprint))
        write_manifest(ckpt_dir, manifest, files)
    except BaseException as exc:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
        if isinstance(exc, (CheckpointError, OSError)):
            cause = exc.__cause__ if isinstance(exc, CheckpointError) and exc.__cause__ else exc
            raise CheckpointError(
                f"writing checkpoint {ckpt_dir} (iteration {iteration}) failed: {cause}; {kept}"
            ) from exc
        raise
    if keep is not None:
        prune_checkpoints(run_dir, keep)
    return ckpt_dir
