"""Files written whole or not at all (the project's one atomic-write helper), and files that may be
hostile read within bounds.

A file is written under a temporary name in its own directory
(``.<name>.tmp-<pid>-<random><suffix>``), flushed and fsynced, renamed over the final name with
:func:`os.replace`, and then the directory is fsynced (where the platform allows it). A reader sees
the old file or the new one, never a torn one. On any error (an exception in the caller's block
included) the temporary file is removed, the final name is untouched and the error propagates.

* :func:`atomic_write_bytes` writes ``data`` in one call;
* :func:`atomic_writer` is a context manager that yields a binary file object to write to;
* :func:`atomic_path` is a context manager that yields the temporary path, for writers that want a
  file name (``pyarrow.parquet``); the file must exist when the block ends.

Reading a file that may be hostile (a file a user was given):

* :func:`open_regular` opens a regular file (symlinks followed to one) and returns it with its
  size; a device (``/dev/zero`` would never end), FIFO (would block), socket or directory is
  refused by ``stat`` before it is opened and by ``fstat`` after (opened non-blocking, so a FIFO
  swapped in between cannot hang it either);
* :class:`BoundedReader` never reads past the size ``fstat`` gave;
* :class:`Lz4FrameReader` decompresses exactly one lz4 frame, a bounded amount at a time, and
  refuses truncation, data after the frame, more output than a limit or than the frame's declared
  content size (:func:`lz4_content_size`; lz4 never expands data more than :data:`LZ4_MAX_RATIO`
  times, so the file's size bounds it too).

They raise the caller's error type (``error(message)``), with the message naming the file.

It lives in :mod:`mccfr_util`, the lowest layer, so every package can use it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

log_ = logging.getLogger(__name__)

__all__ = [
    "LZ4_MAX_RATIO",
    "BoundedReader",
    "Lz4FrameReader",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_writer",
    "file_kind",
    "fsync_dir",
    "lz4_content_size",
    "open_regular",
]


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


# ---------------------------------------------------------------------------------------------
# reading hostile files

LZ4_MAX_RATIO = 255  # no lz4 frame decompresses to more than 255x its size (a match byte codes <= 255)
_LZ4_FRAME_MAGIC = 0x184D2204
_READ_CHUNK = 1 << 20
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def file_kind(mode: int) -> str:
    """What a file that is not regular is, from its ``st_mode`` ("a FIFO", ...)."""
    for test, kind in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def open_regular(
    path: str | os.PathLike, error: Callable[[str], Exception], what: str
) -> tuple[BinaryIO, int]:
    """``(file, size)``: ``path`` opened for binary reading if it is a regular file (module
    docstring); else ``error`` raised with a message starting ``"{what} {path}"``."""

    def refuse(mode: int) -> Exception:
        return error(f"{what} {path} is {file_kind(mode)}, not a regular file; refusing to read it")

    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise refuse(st.st_mode)
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC)
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist") from None
    except (OSError, ValueError) as exc:  # permissions, a loop of symlinks, an embedded NUL...
        raise error(f"{what} {path} cannot be read: {exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refuse(st.st_mode)
        return open(fd, "rb", closefd=True), st.st_size
    except BaseException:
        os.close(fd)
        raise


class BoundedReader:
    """``read`` over ``raw`` that returns at most ``limit`` bytes in all (the size ``fstat`` gave),
    whatever the file does meanwhile."""

    def __init__(self, raw: Any, limit: int) -> None:
        self._raw = raw
        self.remaining = limit

    def read(self, n: int = -1) -> bytes:
        if self.remaining <= 0:
            return b""
        if n is None or n < 0:
            n = _READ_CHUNK
        data = self._raw.read(min(n, self.remaining))
        self.remaining -= len(data)
        return data


def lz4_content_size(lead: bytes) -> int | None:
    """The content size an lz4 frame header (the frame's first 14 bytes or more) declares, else
    None (not declared, or not an lz4 frame: the decompressor says so itself)."""
    if len(lead) < 14 or int.from_bytes(lead[:4], "little") != _LZ4_FRAME_MAGIC:
        return None
    if not lead[4] & 0x08:  # FLG bit 3: content size present
        return None
    return int.from_bytes(lead[6:14], "little")


class Lz4FrameReader:
    """``read(n)`` (at most ``n`` bytes; ``b""`` at the frame's end) over exactly one lz4 frame read
    from ``raw``. ``error(message)`` is raised, the message starting with ``name``, on a corrupt or
    truncated frame, data after it, more output than ``limit`` bytes, or output that differs from
    ``content_size`` (the size the frame declares, :func:`lz4_content_size`). ``lead``: bytes of
    the frame already read from ``raw`` (to look at its header). ``limit`` may be lowered between
    reads, once the caller knows more."""

    def __init__(
        self,
        raw: Any,
        name: str,
        error: Callable[[str], Exception],
        limit: int,
        content_size: int | None = None,
        lead: bytes = b"",
    ) -> None:
        import lz4.frame  # a dependency of the readers only

        self._raw = raw
        self._name = name
        self._error = error
        self._dec = lz4.frame.LZ4FrameDecompressor()
        self._pending = lead
        self.limit = limit
        self._content_size = content_size
        self.produced = 0
        self._stalls = 0
        self.finished = False

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = _READ_CHUNK
        while not self.finished:
            data = b""
            if self._dec.needs_input:
                if self._pending:
                    data, self._pending = self._pending, b""
                else:
                    data = self._raw.read(_READ_CHUNK)
                if not data:
                    raise self._error(
                        f"{self._name} is truncated: the compressed stream ends before the end of its lz4 frame"
                    )
            try:
                out = self._dec.decompress(data, max_length=max(1, min(n, self.limit - self.produced + 1)))
            except RuntimeError as exc:  # lz4's report of a corrupt frame
                raise self._error(f"{self._name} is corrupt: its lz4 frame does not decode ({exc})") from None
            if not data and not out and not self._dec.eof:
                self._stalls += 1
                if self._stalls > 2:  # no input taken, no output given: never loop forever
                    raise self._error(f"{self._name}: its lz4 frame makes no progress")
            else:
                self._stalls = 0
            self.produced += len(out)
            if self.produced > self.limit:
                raise self._error(
                    f"{self._name} decompresses to more than {self.limit:,} bytes, more than its size "
                    "and its header allow"
                )
            if self._dec.eof:
                self.finished = True
                if self._content_size is not None and self.produced != self._content_size:
                    raise self._error(
                        f"{self._name}: its lz4 frame declares {self._content_size:,} bytes of content "
                        f"but holds {self.produced:,}"
                    )
                if self._dec.unused_data or self._pending or self._raw.read(1):
                    raise self._error(f"{self._name} has data after the end of its lz4 frame")
            if out:
                return out
        return b""
