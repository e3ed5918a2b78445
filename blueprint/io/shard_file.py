"""Shard files: one shard's slice of a run's tables in the container format (magic ``MCCFRSHD``,
:mod:`blueprint.io.container` has the format), written by the trainer (one shard) or by each of
the Ray job's shards."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from blueprint.io.container import ArraySpec, FileFormat, decode_container, read_container, write_container
from blueprint.io.errors import CheckpointError
from mccfr_util.files import BoundedReader

__all__ = [
    "SHARD_FORMAT",
    "SHARD_FORMAT_VERSION",
    "SHARD_MAGIC",
    "fuzz_read_shard_bytes",
    "read_shard",
    "read_shard_bytes",
    "shard_index",
    "shard_name",
    "write_shard",
]

SHARD_MAGIC = b"MCCFRSHD"
SHARD_FORMAT_VERSION = 1
_SHARD_RE = re.compile(r"^shard-(0|[1-9][0-9]{0,17})\.msgpack\.lz4$")

SHARD_FORMAT = FileFormat(SHARD_MAGIC, SHARD_FORMAT_VERSION, "shard file", "shard", "shard")


def shard_name(shard: int) -> str:
    """File name of shard ``shard`` inside a checkpoint directory."""
    return f"shard-{shard}.msgpack.lz4"


def shard_index(name: str) -> int | None:
    """k for a canonical shard file name ``shard-<k>.msgpack.lz4``, else None."""
    match = _SHARD_RE.match(name)
    return int(match.group(1)) if match else None


def write_shard(
    ckpt_dir: str | os.PathLike[str],
    shard: int,
    arrays: Mapping[str, np.ndarray],
    meta: Mapping[str, Any],
) -> dict[str, Any]:
    """Write one shard file, ``ckpt_dir/shard-<shard>.msgpack.lz4``, atomically.

    Args:
        ckpt_dir: the checkpoint directory (from :func:`new_checkpoint_dir`).
        shard: shard index k >= 0.
        arrays: name -> array; any shape, dtype bool/int/uint/float/complex (any byte order).
            Stored as raw C-order bytes, so reading gives back byte-identical arrays.
        meta: msgpack-able metadata stored with the arrays (e.g. the shard's row range).

    Returns:
        The manifest entry ``{"file": name, "bytes": size, "blake2b": hexdigest}`` of the final
        file, hashed while it was written.

    Raises:
        ValueError / TypeError: an array or a metadata value that cannot be stored (nothing is
            written).
        CheckpointError: an array holds NaN or inf (nothing is written: a reader would refuse
            the file), or the write failed (e.g. disk full; the temporary file is removed).
    """
    if not isinstance(shard, (int, np.integer)) or isinstance(shard, bool) or shard < 0:
        raise ValueError(f"shard index must be an int >= 0, got {shard!r}")
    shard = int(shard)
    return write_container(
        Path(ckpt_dir), shard_name(shard), SHARD_FORMAT, {"shard": shard}, arrays, meta, f"shard {shard}"
    )


def read_shard(
    path: str | os.PathLike[str], spec: Mapping[str, ArraySpec] | None = None
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read one shard file.

    Args:
        path: the shard file (a regular file, or a symlink to one).
        spec: optional name -> :class:`ArraySpec` the shard must hold exactly (checked before
            anything is allocated).

    Returns:
        ``(arrays, meta)``: name -> writable array with the stored dtype and shape; the metadata.

    Raises:
        CheckpointError: missing, not a regular file, truncated, bad magic, unknown version,
            sizes its file cannot hold, non-finite values, or otherwise corrupt content.
    """
    arrays, meta, _ = read_container(Path(path), fmt=SHARD_FORMAT, spec=spec)
    return arrays, meta


def read_shard_bytes(
    data: bytes, name: str = "<bytes>", spec: Mapping[str, ArraySpec] | None = None
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Parse a whole shard file from memory, with every check :func:`read_shard` makes.

    ``name`` stands for the file in error messages. For fuzzing: any input ends in a result or
    :class:`CheckpointError`; any other exception is a bug (see :func:`fuzz_read_shard_bytes`).
    """
    data = bytes(data)
    src = BoundedReader(io.BytesIO(data), len(data))
    arrays, meta, _ = decode_container(src, name, len(data), spec, SHARD_FORMAT)
    return arrays, meta


def fuzz_read_shard_bytes(data: bytes) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """Fuzz entry point: parse ``data`` as a shard file; None when it is refused.

    Only :class:`CheckpointError` counts as a refusal: any other exception escaping is a bug.
    """
    try:
        return read_shard_bytes(data, "<fuzz>")
    except CheckpointError:
        return None
