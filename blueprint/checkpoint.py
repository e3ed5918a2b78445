"""Checkpoints: the one module that writes and reads them.

A checkpoint is a directory per iteration, written by one process (the single-process trainer,
one shard) or by many (the Ray job: S shard writers plus the driver's manifest)::

    RUN_DIR/checkpoints/<iteration:012d>/shard-<k>.msgpack.lz4    k = 0 .. S-1
    RUN_DIR/checkpoints/<iteration:012d>/manifest.msgpack          written LAST

A checkpoint is complete only when its manifest exists and verifies: the manifest lists every
file with its size and blake2b digest, so a crash at any moment leaves either a complete
checkpoint or a directory without a manifest, which is reported and skipped. Directory names are
zero-padded so they sort as text, but they are always parsed as integers.

Every file is written atomically: to a temporary name in the same directory, flushed, fsynced,
renamed over the final name with ``os.replace``, then the directory is fsynced. A failed write
(disk full, ...) removes its temporary file and raises :class:`CheckpointError`; the previous
checkpoint is never touched.

Shard file format (version 1)::

    offset 0   8 bytes   magic b"MCCFRSHD"
    offset 8   uint32 LE format version (1)
    offset 12  uint32 LE codec (1 = one lz4 frame, block and content checksums on)
    offset 16  the lz4 frame; decompressed, a stream of msgpack objects:
                 1. header map {"shard": k, "meta": {...},
                                "arrays": [{"name", "dtype" (numpy dtype.str, e.g. "<f4"),
                                            "shape" [ints], "nbytes", "chunks"}, ...]}
                 2. for each array in header order, its raw C-order bytes as ``chunks``
                    msgpack bin objects of at most 16 MiB each (bin is capped at 4 GiB,
                    and chunking bounds the memory a reader needs beyond the array itself)
                 3. trailer map {"end": number of arrays}
               nothing may follow the frame.

Manifest format: one msgpack map, the caller's keys plus ``magic`` ("MCCFRMAN"),
``format_version``, ``iteration``, ``files`` ([{"file", "bytes", "blake2b"}]) and
``manifest_blake2b``, the digest of the map packed without that key (msgpack packing of the
decoded map is deterministic, so the reader re-packs and compares).

Values in ``meta`` and in manifests must be msgpack types (None, bool, int within 64 bits, float,
str, bytes, lists, maps); numpy scalars are converted, arrays are refused (put them in ``arrays``).
Tuples come back as lists. Generator state (128-bit integers, arrays) goes through
:func:`encode_rng_state` / :func:`decode_rng_state`.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import io
import logging
import os
import re
import secrets
import shutil
import struct
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import lz4.frame
import msgpack
import numpy as np

__all__ = [
    "CheckpointError",
    "CheckpointInfo",
    "SHARD_MAGIC",
    "SHARD_FORMAT_VERSION",
    "MANIFEST_MAGIC",
    "MANIFEST_FORMAT_VERSION",
    "MANIFEST_NAME",
    "shard_name",
    "write_shard",
    "read_shard",
    "write_manifest",
    "read_manifest",
    "new_checkpoint_dir",
    "list_checkpoints",
    "load_latest",
    "prune_checkpoints",
    "save_checkpoint",
    "previous_kept",
    "encode_rng_state",
    "decode_rng_state",
]

log_ = logging.getLogger(__name__)

SHARD_MAGIC = b"MCCFRSHD"
SHARD_FORMAT_VERSION = 1
_CODEC_LZ4_FRAME = 1
_SHARD_HEADER = struct.Struct("<8sII")  # magic, format version, codec

MANIFEST_MAGIC = "MCCFRMAN"
MANIFEST_FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.msgpack"
_MANIFEST_RESERVED = ("magic", "format_version", "files", "manifest_blake2b")

CHECKPOINTS_DIRNAME = "checkpoints"
_ITERATION_DIGITS = 12
_SHARD_RE = re.compile(r"^shard-(\d+)\.msgpack\.lz4$")

_CHUNK_BYTES = 16 << 20  # bytes of array data per msgpack bin object
_IO_BUFFER = 1 << 20
_UNPACK_MAX_BUFFER = 256 << 20  # caps the header object (meta) and any single chunk on read
_ARRAY_KINDS = "biufc"  # bool, signed, unsigned, float, complex: raw bytes are the whole value


class CheckpointError(Exception):
    """A checkpoint could not be written, or a file is missing, corrupt or from the wrong run.

    The message names the file (or directory) and what is wrong with it.
    """


@dataclasses.dataclass(frozen=True)
class CheckpointInfo:
    """One directory under ``RUN_DIR/checkpoints``.

    Attributes:
        iteration: the iteration parsed from the directory name.
        path: the checkpoint directory.
        complete: True when its manifest parses and every file it lists exists with the listed
            size (digests are checked only when asked: ``list_checkpoints(verify=True)`` or
            ``load_latest``).
        problem: why it is not complete, else None.
        bytes: total size of the regular files in the directory.
    """

    iteration: int
    path: Path
    complete: bool
    problem: str | None
    bytes: int


# ---------------------------------------------------------------------------------------------
# small helpers


def shard_name(shard: int) -> str:
    """File name of shard ``shard`` inside a checkpoint directory."""
    return f"shard-{shard}.msgpack.lz4"


def _iteration_dirname(iteration: int) -> str:
    return f"{iteration:0{_ITERATION_DIGITS}d}"


def _checkpoints_root(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / CHECKPOINTS_DIRNAME


def _msgpack_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        raise TypeError(
            f"numpy array (shape {obj.shape}, dtype {obj.dtype}) in checkpoint metadata: "
            "pass arrays in `arrays`, or convert with .tolist()"
        )
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (os.PathLike,)):
        return os.fspath(obj)
    raise TypeError(f"cannot store a {type(obj).__name__} in checkpoint metadata: {obj!r}")


def _packb(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True, default=_msgpack_default)


def _unpackb(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def _fsync_dir(path: Path) -> None:
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


class _HashingWriter:
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


def _atomic_write(directory: Path, name: str, body: Callable[[_HashingWriter], None]) -> dict[str, Any]:
    """Write ``directory/name`` atomically; ``body`` writes the content. Returns the file entry.

    OSError propagates after the temporary file is removed; the final name is untouched.
    """
    tmp = directory / f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with io.open(fd, "wb", buffering=_IO_BUFFER, closefd=True) as raw:
            sink = _HashingWriter(raw)
            body(sink)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, directory / name)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        except OSError as exc:  # keep the original error; say what is left behind
            log_.warning("could not remove temporary checkpoint file %s: %s", tmp, exc)
        raise
    _fsync_dir(directory)
    return {"file": name, "bytes": sink.size, "blake2b": sink.hash.hexdigest()}


def _write_failed(path: Path, exc: OSError) -> CheckpointError:
    return CheckpointError(
        f"writing checkpoint file {path} failed: {exc}; the temporary file was removed and the "
        "previous checkpoint is kept"
    )


# ---------------------------------------------------------------------------------------------
# shards


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
        CheckpointError: the write failed (e.g. disk full); the temporary file is removed.
    """
    ckpt_dir = Path(ckpt_dir)
    if not isinstance(shard, (int, np.integer)) or isinstance(shard, bool) or shard < 0:
        raise ValueError(f"shard index must be an int >= 0, got {shard!r}")
    shard = int(shard)
    descriptors = []
    contiguous = []
    for name, arr in arrays.items():
        if not isinstance(name, str):
            raise TypeError(f"array names must be str, got {name!r}")
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"array {name!r} is a {type(arr).__name__}, not a numpy array")
        if arr.dtype.kind not in _ARRAY_KINDS or arr.dtype.fields is not None:
            raise ValueError(
                f"array {name!r} has dtype {arr.dtype}; only bool, integer, float and complex "
                "arrays can be checkpointed"
            )
        if not arr.flags.c_contiguous:
            arr = arr.copy(order="C")  # (np.ascontiguousarray would turn 0-d arrays into 1-d)
        nbytes = int(arr.nbytes)
        descriptors.append(
            {
                "name": name,
                "dtype": arr.dtype.str,
                "shape": [int(n) for n in arr.shape],
                "nbytes": nbytes,
                "chunks": -(-nbytes // _CHUNK_BYTES),
            }
        )
        contiguous.append(arr)
    # Packed before any file is opened: a bad metadata value fails here with nothing on disk.
    header = _packb({"shard": shard, "meta": dict(meta), "arrays": descriptors})
    trailer = _packb({"end": len(descriptors)})

    def body(sink: _HashingWriter) -> None:
        sink.write(_SHARD_HEADER.pack(SHARD_MAGIC, SHARD_FORMAT_VERSION, _CODEC_LZ4_FRAME))
        with lz4.frame.LZ4FrameFile(
            sink, mode="wb", block_checksum=True, content_checksum=True
        ) as out:
            out.write(header)
            for arr in contiguous:
                data = memoryview(arr.reshape(-1)).cast("B") if arr.nbytes else memoryview(b"")
                for start in range(0, len(data), _CHUNK_BYTES):
                    chunk = data[start : start + _CHUNK_BYTES]
                    out.write(b"\xc6" + struct.pack(">I", len(chunk)))  # msgpack bin 32 header
                    out.write(chunk)
            out.write(trailer)

    name = shard_name(shard)
    try:
        return _atomic_write(ckpt_dir, name, body)
    except OSError as exc:
        raise _write_failed(ckpt_dir / name, exc) from exc


class _Lz4FrameReader:
    """Minimal file-like ``read`` over exactly one lz4 frame, refusing truncation and trailing data."""

    def __init__(self, raw: Any, path: Path) -> None:
        self._raw = raw
        self._path = path
        self._dec = lz4.frame.LZ4FrameDecompressor()
        self.finished = False

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = _IO_BUFFER
        while not self.finished:
            data = b""
            if self._dec.needs_input:
                data = self._raw.read(_IO_BUFFER)
                if not data:
                    raise CheckpointError(
                        f"shard file {self._path} is truncated: the compressed stream ends before "
                        "the end of its lz4 frame"
                    )
            out = self._dec.decompress(data, max_length=n)
            if self._dec.eof:
                self.finished = True
                if self._dec.unused_data or self._raw.read(1):
                    raise CheckpointError(f"shard file {self._path} has data after the end of its lz4 frame")
            if out:
                return out
        return b""


class _HashingReader:
    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.hash = hashlib.blake2b()
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        self.hash.update(data)
        self.size += len(data)
        return data

    def drain(self) -> None:
        while self.read(_IO_BUFFER):
            pass


_DECODE_ERRORS = (
    msgpack.UnpackException,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    OverflowError,
    EOFError,
    RuntimeError,  # lz4 reports a corrupt frame as RuntimeError
)


def _decode_shard(src: Any, path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any], int]:
    head = src.read(_SHARD_HEADER.size)
    if len(head) < _SHARD_HEADER.size:
        raise CheckpointError(f"shard file {path} is truncated: {len(head)} bytes, shorter than its header")
    magic, version, codec = _SHARD_HEADER.unpack(head)
    if magic != SHARD_MAGIC:
        raise CheckpointError(
            f"{path} is not an mccfr shard file: bad magic {magic!r}, expected {SHARD_MAGIC!r}"
        )
    if version != SHARD_FORMAT_VERSION:
        raise CheckpointError(
            f"shard file {path} has format version {version}; this build reads version {SHARD_FORMAT_VERSION}"
        )
    if codec != _CODEC_LZ4_FRAME:
        raise CheckpointError(f"shard file {path} has unknown codec {codec}")
    frame = _Lz4FrameReader(src, path)
    unpacker = msgpack.Unpacker(
        frame,
        read_size=_IO_BUFFER,
        max_buffer_size=_UNPACK_MAX_BUFFER,
        raw=False,
        strict_map_key=False,
    )
    try:
        header = unpacker.unpack()
        if not isinstance(header, dict) or not isinstance(header.get("arrays"), list):
            raise CheckpointError(f"shard file {path}: malformed header object")
        shard = header["shard"]
        meta = header["meta"]
        if not isinstance(shard, int) or not isinstance(meta, dict):
            raise CheckpointError(f"shard file {path}: malformed header object")
        arrays: dict[str, np.ndarray] = {}
        for desc in header["arrays"]:
            name = desc["name"]
            dtype = np.dtype(desc["dtype"])
            shape = tuple(int(n) for n in desc["shape"])
            nbytes = int(desc["nbytes"])
            if dtype.kind not in _ARRAY_KINDS or any(n < 0 for n in shape):
                raise CheckpointError(f"shard file {path}: array {name!r} has a bad dtype or shape")
            if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != nbytes:
                raise CheckpointError(
                    f"shard file {path}: array {name!r} shape {shape} dtype {dtype} does not match "
                    f"its {nbytes} bytes"
                )
            if int(desc["chunks"]) != -(-nbytes // _CHUNK_BYTES):
                raise CheckpointError(f"shard file {path}: array {name!r} has a bad chunk count")
            arr = np.empty(shape, dtype=dtype)
            flat = memoryview(arr.reshape(-1)).cast("B") if nbytes else memoryview(bytearray())
            filled = 0
            for _ in range(int(desc["chunks"])):
                chunk = unpacker.unpack()
                if not isinstance(chunk, bytes) or filled + len(chunk) > nbytes:
                    raise CheckpointError(f"shard file {path}: array {name!r} has a malformed data chunk")
                flat[filled : filled + len(chunk)] = chunk
                filled += len(chunk)
            if filled != nbytes:
                raise CheckpointError(
                    f"shard file {path}: array {name!r} has {filled} bytes of data, expected {nbytes}"
                )
            if name in arrays:
                raise CheckpointError(f"shard file {path}: array {name!r} appears twice")
            arrays[name] = arr
        trailer = unpacker.unpack()
        if trailer != {"end": len(arrays)}:
            raise CheckpointError(f"shard file {path}: missing or wrong end marker")
        try:
            unpacker.unpack()
        except msgpack.OutOfData:
            pass
        else:
            raise CheckpointError(f"shard file {path}: unexpected data after the end marker")
        if not frame.finished:
            raise CheckpointError(f"shard file {path}: data after the end marker inside the lz4 frame")
    except msgpack.OutOfData as exc:
        raise CheckpointError(f"shard file {path} is truncated: its data ends early") from exc
    except _DECODE_ERRORS as exc:
        raise CheckpointError(f"shard file {path} is corrupt: {type(exc).__name__}: {exc}") from exc
    return arrays, meta, shard


def _read_shard(
    path: Path, expected: Mapping[str, Any] | None = None
) -> tuple[dict[str, np.ndarray], dict[str, Any], int]:
    """Read a shard, optionally checking its size and digest in the same pass.

    A digest or size mismatch is reported in preference to the decoding error it causes.
    """
    try:
        with open(path, "rb", buffering=_IO_BUFFER) as raw:
            src = _HashingReader(raw)
            try:
                result = _decode_shard(src, path)
            except CheckpointError as exc:
                if expected is None:
                    raise
                src.drain()
                mismatch = _digest_problem(path, expected, src.size, src.hash.hexdigest())
                if mismatch:
                    raise CheckpointError(mismatch) from exc
                raise
            src.drain()
    except FileNotFoundError as exc:
        raise CheckpointError(f"shard file {path} is missing") from exc
    except OSError as exc:
        raise CheckpointError(f"shard file {path} cannot be read: {exc}") from exc
    if expected is not None:
        mismatch = _digest_problem(path, expected, src.size, src.hash.hexdigest())
        if mismatch:
            raise CheckpointError(mismatch)
    return result


def _digest_problem(path: Path, expected: Mapping[str, Any], size: int, digest: str) -> str | None:
    if size != expected["bytes"]:
        return f"size mismatch for {path}: the manifest says {expected['bytes']} bytes, the file has {size}"
    if digest != expected["blake2b"]:
        return (
            f"checksum mismatch for {path}: blake2b {digest} differs from the manifest's "
            f"{expected['blake2b']}"
        )
    return None


def read_shard(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read one shard file.

    Returns:
        ``(arrays, meta)``: name -> writable array with the stored dtype and shape; the metadata.

    Raises:
        CheckpointError: missing, truncated, bad magic, unknown version, or corrupt content.
    """
    arrays, meta, _ = _read_shard(Path(path))
    return arrays, meta


# ---------------------------------------------------------------------------------------------
# manifests


def _manifest_digest(fields: Mapping[str, Any]) -> str:
    return hashlib.blake2b(_packb(dict(fields))).hexdigest()


def _ckpt_iteration(ckpt_dir: Path) -> int | None:
    return int(ckpt_dir.name) if ckpt_dir.name.isdigit() else None


def write_manifest(
    ckpt_dir: str | os.PathLike[str], manifest: Mapping[str, Any], files: Sequence[Mapping[str, Any]]
) -> Path:
    """Write ``ckpt_dir/manifest.msgpack`` atomically; call it after every file is written.

    Args:
        ckpt_dir: the checkpoint directory.
        manifest: the caller's msgpack-able record: iteration, config, config hash, abstraction
            hash, RNG states (see :func:`encode_rng_state`), ... The keys ``magic``,
            ``format_version``, ``files`` and ``manifest_blake2b`` are reserved. ``iteration``
            is filled in from the directory name, and must agree with it when given.
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
        if not isinstance(name, str) or os.path.basename(name) != name or name in ("", ".", ".."):
            raise ValueError(f"manifest file name must be a plain file name, got {name!r}")
        entries.append({"file": name, "bytes": int(entry["bytes"]), "blake2b": str(entry["blake2b"])})
    fields: dict[str, Any] = {"magic": MANIFEST_MAGIC, "format_version": MANIFEST_FORMAT_VERSION}
    if iteration is not None:
        fields["iteration"] = iteration
    fields.update(manifest)
    fields["files"] = entries
    fields["manifest_blake2b"] = _manifest_digest(fields)
    data = _packb(fields)
    path = ckpt_dir / MANIFEST_NAME
    try:
        _atomic_write(ckpt_dir, MANIFEST_NAME, lambda sink: sink.write(data))
    except OSError as exc:
        raise _write_failed(path, exc) from exc
    return path


def read_manifest(ckpt_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check a checkpoint's manifest (not the files it lists).

    Returns:
        The caller's keys plus ``iteration`` and ``files``; the format fields are removed.

    Raises:
        CheckpointError: missing, unparsable, wrong magic or version, or failing its own digest.
    """
    path = Path(ckpt_dir) / MANIFEST_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise CheckpointError(f"{path} is missing (incomplete or interrupted checkpoint)") from exc
    except OSError as exc:
        raise CheckpointError(f"{path} cannot be read: {exc}") from exc
    try:
        fields = _unpackb(data)
    except _DECODE_ERRORS as exc:
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
        actual = _manifest_digest(fields)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CheckpointError(f"manifest {path} is corrupt: {exc}") from exc
    if claimed != actual:
        raise CheckpointError(
            f"checksum mismatch for manifest {path}: its content does not match its digest"
        )
    files = fields.get("files")
    if not isinstance(files, list) or not all(
        isinstance(f, dict)
        and isinstance(f.get("file"), str)
        and os.path.basename(f["file"]) == f["file"]
        and isinstance(f.get("bytes"), int)
        and isinstance(f.get("blake2b"), str)
        for f in files
    ):
        raise CheckpointError(f"manifest {path} has a malformed file list")
    del fields["magic"], fields["format_version"]
    return fields


def _files_problem(ckpt_dir: Path, files: Sequence[Mapping[str, Any]]) -> str | None:
    """Cheap completeness check: every listed file exists with the listed size; shards are 0..S-1."""
    shards = []
    for entry in files:
        path = ckpt_dir / entry["file"]
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return f"{path} is missing"
        except OSError as exc:
            return f"{path} cannot be read: {exc}"
        if size != entry["bytes"]:
            return f"size mismatch for {path}: the manifest says {entry['bytes']} bytes, the file has {size}"
        match = _SHARD_RE.match(entry["file"])
        if match:
            shards.append(int(match.group(1)))
    if sorted(shards) != list(range(len(shards))):
        return f"manifest in {ckpt_dir} lists shards {sorted(shards)}, not 0..S-1"
    return None


# ---------------------------------------------------------------------------------------------
# checkpoint directories


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
            _fsync_dir(path)
        shutil.rmtree(path)
    try:
        root.mkdir(parents=True, exist_ok=True)
        path.mkdir()
        _fsync_dir(root)
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
        if e.name.isdigit() and e.is_dir(follow_symlinks=False)
    ]
    return sorted(found, key=lambda item: item[0], reverse=True)


def _verify_files(ckpt_dir: Path, files: Sequence[Mapping[str, Any]]) -> str | None:
    for entry in files:
        path = ckpt_dir / entry["file"]
        h = hashlib.blake2b()
        size = 0
        try:
            with open(path, "rb", buffering=0) as f:
                while block := f.read(_IO_BUFFER):
                    h.update(block)
                    size += len(block)
        except OSError as exc:
            return f"{path} cannot be read: {exc}"
        problem = _digest_problem(path, entry, size, h.hexdigest())
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


def _normalized(value: Any) -> Any:
    """The value as it comes back from msgpack (tuples -> lists, numpy scalars -> Python)."""
    try:
        return _unpackb(_packb(value))
    except (TypeError, ValueError, OverflowError):
        return value


def load_latest(
    run_dir: str | os.PathLike[str],
    verify: bool = True,
    expect: Mapping[str, Any] | None = None,
    log: Callable[[str], Any] | None = None,
) -> tuple[dict[str, Any], list[tuple[dict[str, np.ndarray], dict[str, Any]]]]:
    """Load the newest complete checkpoint, skipping (and reporting) any that is not.

    Args:
        run_dir: the run directory.
        verify: check every file's size and blake2b digest against the manifest (in the same
            pass that reads it). Without it only sizes and the files' own checksums are checked.
        expect: manifest key -> required value (e.g. ``{"config_hash": h, "abstraction_hash": a}``).
            A mismatch raises at once: it is a different run, not a corrupt checkpoint.
        log: called with one message per skipped checkpoint; default: this module's logger.

    Returns:
        ``(manifest, shards)``: the manifest (caller's keys, ``iteration``, ``files``) and, in
        shard order, ``(arrays, meta)`` of every shard.

    Raises:
        CheckpointError: an ``expect`` mismatch (naming the key and both values), or no
            complete checkpoint (naming the run directory and every problem found).
    """
    report = log if log is not None else log_.warning
    problems = []
    for info in list_checkpoints(run_dir):
        if not info.complete:
            problem = f"skipping checkpoint {info.path}: {info.problem}"
            problems.append(problem)
            report(problem)
            continue
        try:
            manifest = read_manifest(info.path)
        except CheckpointError as exc:  # changed since it was listed
            problem = f"skipping checkpoint {info.path}: {exc}"
            problems.append(problem)
            report(problem)
            continue
        for key, value in (expect or {}).items():
            if key not in manifest:
                raise CheckpointError(
                    f"checkpoint {info.path} has no {key!r}; expected {key} = {value!r}"
                )
            if manifest[key] != _normalized(value):
                raise CheckpointError(
                    f"checkpoint {info.path} belongs to a different run: {key} is {manifest[key]!r}, "
                    f"expected {value!r}"
                )
        try:
            shards = []
            for entry in manifest["files"]:
                match = _SHARD_RE.match(entry["file"])
                if match is None:
                    bad = _verify_files(info.path, [entry]) if verify else None
                    if bad:
                        raise CheckpointError(bad)
                    continue
                path = info.path / entry["file"]
                arrays, meta, k = _read_shard(path, entry if verify else None)
                if k != int(match.group(1)):
                    raise CheckpointError(f"shard file {path} holds shard {k}")
                shards.append((k, arrays, meta))
        except CheckpointError as exc:
            problem = f"skipping checkpoint {info.path}: {exc}"
            problems.append(problem)
            report(problem)
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
        _fsync_dir(_checkpoints_root(run_dir))
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
) -> Path:
    """Write a whole checkpoint from one process: every shard, then the manifest, then prune.

    Args:
        run_dir: the run directory.
        iteration: the iteration the tables are at.
        shards: ``(arrays, meta)`` per shard, in shard order (one for the single-process trainer).
        manifest: see :func:`write_manifest`.
        keep: if given, keep only the newest ``keep`` complete checkpoints afterwards.
        replace: overwrite a complete checkpoint of the same iteration.

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


# ---------------------------------------------------------------------------------------------
# RNG state

_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")
_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1


def _encode_state(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _encode_state(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return {"__array__": value.dtype.str, "values": value.ravel().tolist()}
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _UINT64_MAX:
        if value < 0:
            raise ValueError(f"cannot encode negative big integer {value} in an RNG state")
        words = []
        while value:
            words.append(value & _UINT64_MAX)
            value >>= 64
        return {"__uint__": words}  # 64-bit words, least significant first
    return value


def _decode_state(value: Any) -> Any:
    if isinstance(value, dict):
        if "__array__" in value:
            return np.array(value["values"], dtype=np.dtype(value["__array__"]))
        if "__uint__" in value:
            return sum(int(w) << (64 * i) for i, w in enumerate(value["__uint__"]))
        return {k: _decode_state(v) for k, v in value.items()}
    return value


def encode_rng_state(rng: np.random.Generator | np.random.BitGenerator) -> dict[str, Any]:
    """A generator's exact state as msgpack-able maps, lists and 64-bit ints (for manifests)."""
    bit_generator = rng.bit_generator if isinstance(rng, np.random.Generator) else rng
    return _encode_state(bit_generator.state)


def decode_rng_state(state: Mapping[str, Any]) -> np.random.Generator:
    """A new Generator that continues exactly where the encoded one stopped."""
    decoded = _decode_state(dict(state))
    name = decoded.get("bit_generator")
    if name not in _BIT_GENERATORS:
        raise CheckpointError(f"unknown bit generator {name!r} in checkpoint RNG state")
    bit_generator = getattr(np.random, name)()
    bit_generator.state = decoded
    return np.random.Generator(bit_generator)
