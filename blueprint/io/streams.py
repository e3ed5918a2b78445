"""File streams of the checkpoint files: atomic hashed writes, and readers that trust nothing:
regular files only, never past a size, one lz4 frame with a bound on its output, hashing as they go
(the rules are in :mod:`blueprint.io.container`)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from blueprint.io.errors import CheckpointError
from mccfr_util.files import atomic_writer, file_kind

__all__ = [
    "IO_BUFFER",
    "HashingReader",
    "HashingWriter",
    "atomic_write",
    "digest_problem",
    "file_kind",
    "open_regular",
    "write_failed",
]

IO_BUFFER = 1 << 20
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class HashingWriter:
    """File-like sink that counts and hashes the bytes it passes on."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.hash = hashlib.blake2b()
        self.size = 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self._raw.write(view)
        self.hash.update(view)
        self.size += view.nbytes
        return view.nbytes

    def flush(self) -> None:
        self._raw.flush()


def atomic_write(directory: Path, name: str, body: Callable[[HashingWriter], None]) -> dict[str, Any]:
    """Write ``directory/name`` atomically (:func:`mccfr_util.files.atomic_writer`: a temporary name,
    fsync, rename, fsync of the directory); ``body`` writes the content. Returns the file entry.

    OSError propagates after the temporary file is removed; the final name is untouched.
    """
    with atomic_writer(directory / name, buffering=IO_BUFFER) as raw:
        sink = HashingWriter(raw)
        body(sink)
    return {"file": name, "bytes": sink.size, "blake2b": sink.hash.hexdigest()}


def write_failed(path: Path, exc: OSError) -> CheckpointError:
    return CheckpointError(
        f"writing checkpoint file {path} failed: {exc}; the temporary file was removed and the "
        "previous checkpoint is kept"
    )


def open_regular(path: Path, what: str, missing: str | None = None) -> tuple[BinaryIO, int]:
    """Open ``path`` for reading if it is a regular file (symlinks followed); return it and its size.

    Devices, FIFOs, sockets and directories are refused before they are opened (``/dev/zero``
    would never end, a FIFO would block), and again on the opened descriptor (the name may have
    been replaced in between). The open is non-blocking, so even a FIFO swapped in at the last
    moment cannot hang it.
    """
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise CheckpointError(
                f"{what} {path} is {file_kind(st.st_mode)}, not a regular file; refusing to read it"
            )
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC)
    except FileNotFoundError as exc:
        raise CheckpointError(missing or f"{what} {path} is missing") from exc
    except OSError as exc:
        raise CheckpointError(f"{what} {path} cannot be read: {exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CheckpointError(
                f"{what} {path} is {file_kind(st.st_mode)}, not a regular file; refusing to read it"
            )
        return open(fd, "rb", buffering=IO_BUFFER, closefd=True), st.st_size
    except BaseException:
        os.close(fd)
        raise


class HashingReader:
    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.hash = hashlib.blake2b()
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        self.hash.update(data)
        self.size += len(data)
        return data

    def drain(self) -> None:
        while self.read(IO_BUFFER):
            pass


def digest_problem(path: Path, expected: Mapping[str, Any], size: int, digest: str) -> str | None:
    if size != expected["bytes"]:
        return f"size mismatch for {path}: the manifest says {expected['bytes']} bytes, the file has {size}"
    if digest != expected["blake2b"]:
        return (
            f"checksum mismatch for {path}: blake2b {digest} differs from the manifest's "
            f"{expected['blake2b']}"
        )
    return None
