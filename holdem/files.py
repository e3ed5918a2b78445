"""Files written whole or not at all: the project's one atomic-write helper.

A file is written under a temporary name in its own directory
(``.<name>.tmp-<pid>-<random><suffix>``), flushed and fsynced, renamed over the final name with
:func:`os.replace`, and then the directory is fsynced (where the platform allows it). A reader sees
the old file or the new one, never a torn one. On any error (an exception in the caller's block
included) the temporary file is removed, the final name is untouched and the error propagates.

* :func:`atomic_write_bytes` writes ``data`` in one call;
* :func:`atomic_writer` is a context manager that yields a binary file object to write to;
* :func:`atomic_path` is a context manager that yields the temporary path, for writers that want a
  file name (``pyarrow.parquet``); the file must exist when the block ends.

It lives in ``holdem``, the base package, so every package can use it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

log_ = logging.getLogger(__name__)

__all__ = ["atomic_path", "atomic_write_bytes", "atomic_writer", "fsync_dir"]


def _temp_name(path: Path, suffix: str = "") -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}{suffix}")


def fsync_dir(path: str | os.PathLike) -> None:
    """fsync the directory ``path`` (so a rename in it is durable); a no-op where directories
    cannot be opened or fsynced."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # platforms that cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _remove(tmp: Path) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    except OSError as exc:  # keep the original error; say what is left behind
        log_.warning("could not remove the temporary file %s: %s", tmp, exc)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, *, buffering: int = -1) -> Iterator[BinaryIO]:
    """``with atomic_writer(path) as f: f.write(...)``: ``path`` replaced atomically by what the
    block wrote (module docstring); ``buffering`` as for :func:`open`."""
    path = Path(path)
    tmp = _temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with open(fd, "wb", buffering=buffering, closefd=True) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    fsync_dir(path.parent)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """``with atomic_path(path) as tmp: writer(tmp)``: the block writes the file ``tmp`` (a fresh
    name in ``path``'s directory, ending in ``suffix``); then it is fsynced and renamed over
    ``path`` (module docstring)."""
    path = Path(path)
    tmp = _temp_name(path, suffix)
    try:
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (module docstring)."""
    with atomic_writer(path) as f:
        f.write(data)
