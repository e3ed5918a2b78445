"""Checkpoint manifests: ``manifest.msgpack``, written last, lists every file of a checkpoint with
its size and digest and records the run's progress (format and rules in
:mod:`blueprint.io.container`)."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from blueprint.io.codec import DECODE_ERRORS, is_int, is_real, normalized, packb, unpackb_limited
from blueprint.io.container import MAX_ITERATION
from blueprint.io.errors import CheckpointError
from blueprint.io.streams import atomic_write, open_regular, write_failed
from mccfr_util.files import BoundedReader

__all__ = [
    "ITERATION_SLACK",
    "MANIFEST_FORMAT_VERSION",
    "MANIFEST_MAGIC",
    "MANIFEST_NAME",
    "MAX_ITERATIONS_PER_SECOND",
    "fuzz_read_manifest_bytes",
    "manifest_digest",
    "read_manifest",
    "read_manifest_bytes",
    "write_manifest",
]

MANIFEST_MAGIC = "MCCFRMAN"
MANIFEST_FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.msgpack"
_MANIFEST_RESERVED = ("magic", "format_version", "files", "manifest_blake2b")
_MANIFEST_MAX_BYTES = 64 << 20

MAX_ITERATIONS_PER_SECOND = 10**9
ITERATION_SLACK = 2**20


def manifest_digest(fields: Mapping[str, Any]) -> str:
    return hashlib.blake2b(packb(dict(fields))).hexdigest()


def _ckpt_iteration(ckpt_dir: Path) -> int | None:
    name = ckpt_dir.name
    return int(name) if name.isascii() and name.isdigit() else None


def _progress_problem(fields: Mapping[str, Any]) -> str | None:
    """Why the run-progress keys of a manifest are impossible, or None (rules in :mod:`blueprint.io.container`)."""
    it = fields.get("iteration")
    if "iteration" in fields:
        if not is_int(it) or it < 0:
            return f"iteration {it!r} is not an iteration count (an int >= 0)"
        if it > MAX_ITERATION:
            return f"iteration {it:,} is impossible: more than 2**53"
    for key in ("t_base", "node_visits", "pruned", "saturated", "underflowed"):
        if key in fields and (not is_int(fields[key]) or fields[key] < 0):
            return f"{key} {fields[key]!r} is not a count (an int >= 0)"
    for key in ("seconds", "w_base"):
        if key in fields and (not is_real(fields[key]) or not math.isfinite(fields[key]) or fields[key] < 0):
            return f"{key} {fields[key]!r} is not a finite number >= 0"
    if not is_int(it):
        return None
    if "t_base" in fields and fields["t_base"] > it:
        return f"t_base {fields['t_base']:,} (the last discount boundary) is after iteration {it:,}"
    if "w_base" in fields and "t_base" in fields and fields["w_base"] > fields["t_base"] * (1 + 1e-9) + 1e-6:
        return (
            f"w_base {fields['w_base']!r} (discounted iterations) exceeds t_base {fields['t_base']:,}, "
            "and discounting never adds iterations"
        )
    if "seconds" in fields and it > MAX_ITERATIONS_PER_SECOND * fields["seconds"] + ITERATION_SLACK:
        return (
            f"iteration {it:,} is implausible after {fields['seconds']:.6g} s of recorded training: "
            f"that is more than {MAX_ITERATIONS_PER_SECOND:.0e} iterations a second"
        )
    return None


def _check_manifest_fields(fields: Mapping[str, Any]) -> None:
    """Raise ValueError when ``fields`` could not be read back (the writer's side of the rules)."""
    problem = _progress_problem(fields)
    if problem:
        raise ValueError(f"manifest: {problem}")
    data = packb(dict(fields))
    if len(data) > _MANIFEST_MAX_BYTES:
        raise ValueError(
            f"manifest is {len(data):,} bytes, more than a reader accepts ({_MANIFEST_MAX_BYTES:,})"
        )
    unpackb_limited(data)  # containers too long for a reader fail here, before anything is written


def write_manifest(
    ckpt_dir: str | os.PathLike[str], manifest: Mapping[str, Any], files: Sequence[Mapping[str, Any]]
) -> Path:
    """Write ``ckpt_dir/manifest.msgpack`` atomically; call it after every file is written.

    Args:
        ckpt_dir: the checkpoint directory.
        manifest: the caller's msgpack-able record: iteration, config, config hash, abstraction
            hash, RNG states (see :func:`encode_rng_state`), ... The keys ``magic``,
            ``format_version``, ``files`` and ``manifest_blake2b`` are reserved. ``iteration``
            is filled in from the directory name, and must agree with it when given. The
            run-progress keys must pass the reader's rules (:mod:`blueprint.io.container`).
        files: the entries returned by :func:`write_shard` (and any other file in the
            directory that the checkpoint needs), in shard order.

    Returns:
        The manifest's path.
    """
    ckpt_dir = Path(ckpt_dir)
    for key in _MANIFEST_RESERVED:
        if key in manifest:
            raise ValueError(f"manifest key {key!r} is reserved by the checkpoint format")
    iteration = _ckpt_iteration(ckpt_dir)
    if iteration is not None and "iteration" in manifest and manifest["iteration"] != iteration:
        raise ValueError(
            f"manifest iteration {manifest['iteration']!r} does not match checkpoint directory {ckpt_dir}"
        )
    entries = []
    for entry in files:
        name = entry["file"]
        if (
            not isinstance(name, str)
            or os.path.basename(name) != name
            or name in ("", ".", "..", MANIFEST_NAME)
        ):
            raise ValueError(f"manifest file name must be a plain file name, got {name!r}")
        if any(e["file"] == name for e in entries):
            raise ValueError(f"manifest lists {name!r} twice")
        entries.append({"file": name, "bytes": int(entry["bytes"]), "blake2b": str(entry["blake2b"])})
    fields: dict[str, Any] = {"magic": MANIFEST_MAGIC, "format_version": MANIFEST_FORMAT_VERSION}
    if iteration is not None:
        fields["iteration"] = iteration
    fields.update(manifest)
    fields["files"] = entries
    fields["manifest_blake2b"] = manifest_digest(fields)
    _check_manifest_fields(normalized(fields))
    data = packb(fields)
    path = ckpt_dir / MANIFEST_NAME
    try:
        atomic_write(ckpt_dir, MANIFEST_NAME, lambda sink: sink.write(data))
    except OSError as exc:
        raise write_failed(path, exc) from exc
    return path


def _parse_manifest(data: bytes, path: Any) -> dict[str, Any]:
    if len(data) > _MANIFEST_MAX_BYTES:
        raise CheckpointError(
            f"manifest {path} is {len(data):,} bytes, more than any manifest ({_MANIFEST_MAX_BYTES:,}); "
            "refusing to read it"
        )
    try:
        fields = unpackb_limited(data)
    except DECODE_ERRORS as exc:
        raise CheckpointError(f"manifest {path} is corrupt: {type(exc).__name__}: {exc}") from exc
    if not isinstance(fields, dict) or fields.get("magic") != MANIFEST_MAGIC:
        raise CheckpointError(f"{path} is not an mccfr checkpoint manifest (bad magic)")
    if fields.get("format_version") != MANIFEST_FORMAT_VERSION:
        raise CheckpointError(
            f"manifest {path} has format version {fields.get('format_version')!r}; "
            f"this build reads version {MANIFEST_FORMAT_VERSION}"
        )
    claimed = fields.pop("manifest_blake2b", None)
    try:
        actual = manifest_digest(fields)
    except DECODE_ERRORS as exc:
        raise CheckpointError(f"manifest {path} is corrupt: {type(exc).__name__}: {exc}") from exc
    if claimed != actual:
        raise CheckpointError(f"checksum mismatch for manifest {path}: its content does not match its digest")
    files = fields.get("files")
    if not isinstance(files, list) or not all(
        isinstance(f, dict)
        and isinstance(f.get("file"), str)
        and os.path.basename(f["file"]) == f["file"]
        and f["file"] not in ("", ".", "..", MANIFEST_NAME)
        and "\0" not in f["file"]
        and is_int(f.get("bytes"))
        and f["bytes"] >= 0
        and isinstance(f.get("blake2b"), str)
        for f in files
    ):
        raise CheckpointError(f"manifest {path} has a malformed file list")
    names = [f["file"] for f in files]
    if len(set(names)) != len(names):
        raise CheckpointError(f"manifest {path} lists a file twice")
    problem = _progress_problem(fields)
    if problem:
        raise CheckpointError(f"manifest {path}: {problem}")
    del fields["magic"], fields["format_version"]
    return fields


def read_manifest(ckpt_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check a checkpoint's manifest (not the files it lists).

    Returns:
        The caller's keys plus ``iteration`` and ``files``; the format fields are removed.

    Raises:
        CheckpointError: missing, not a regular file, too large, unparsable, wrong magic or
            version, failing its own digest, a malformed file list, or impossible run progress.
    """
    path = Path(ckpt_dir) / MANIFEST_NAME
    raw, size = open_regular(
        path, "manifest", missing=f"{path} is missing (incomplete or interrupted checkpoint)"
    )
    with raw:
        if size > _MANIFEST_MAX_BYTES:
            raise CheckpointError(
                f"manifest {path} is {size:,} bytes, more than any manifest ({_MANIFEST_MAX_BYTES:,}); "
                "refusing to read it"
            )
        try:
            data = BoundedReader(raw, size + 1).read(size + 1)
        except OSError as exc:
            raise CheckpointError(f"{path} cannot be read: {exc}") from exc
    if len(data) != size:
        raise CheckpointError(f"manifest {path} changed size while it was read")
    return _parse_manifest(data, path)


def read_manifest_bytes(data: bytes, name: str = "<bytes>") -> dict[str, Any]:
    """Parse a manifest from memory, with every check :func:`read_manifest` makes (``name``
    stands for the file in messages). Any input ends in a result or :class:`CheckpointError`."""
    return _parse_manifest(bytes(data), name)


def fuzz_read_manifest_bytes(data: bytes) -> dict[str, Any] | None:
    """Fuzz entry point: parse ``data`` as a manifest; None when it is refused (only
    :class:`CheckpointError` counts as a refusal: any other exception escaping is a bug)."""
    try:
        return read_manifest_bytes(data, "<fuzz>")
    except CheckpointError:
        return None
