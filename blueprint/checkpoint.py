"""Checkpoints: the one module that writes and reads them.

A checkpoint is a directory per iteration, written by one process (the single-process trainer,
one shard) or by many (the Ray job: S shard writers plus the driver's manifest)::

    RUN_DIR/checkpoints/<iteration:012d>/shard-<k>.msgpack.lz4    k = 0 .. S-1
    RUN_DIR/checkpoints/<iteration:012d>/blueprint.msgpack.lz4     the average strategy (queries)
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

Blueprint file format (version 1), what queries read (``Blueprint.load``), never the shards: the
container above with magic ``b"MCCFRBPF"``, version 1, codec 1, the header map
``{"meta": {...}, "arrays": [...]}`` (no shard index) and array data in chunks of at most 1 MiB.
``meta`` holds ``format`` ("mccfr-blueprint"), ``format_version`` (1), ``iteration``,
``config_hash``, ``abstraction_hash``, ``game`` ``{"name", "acpc"}`` (the preset or path as given,
and the ACPC text), ``bets`` ``{"name", "toml", "hash"}`` (TOML and content hash of the bet
abstraction; None and "limit" for limit games: enough to rebuild the tree), ``cards`` ``{"name",
"kind", "num_buckets", "hash", "source_hash", "method"}`` (the card abstraction: lossless, rank, a
recipe or a built path, and its content hash), ``tree`` ``{"hash", "num_nodes",
"decision_nodes"}``, ``table_entries`` and ``config`` (the run's resolved config). The arrays,
exactly, in this order (:data:`BLUEPRINT_ARRAYS`): ``probs`` ``<f4[table_entries]`` (the average
strategy per (node, bucket, action) in the table layout: decision node ``n``'s block starts at
``row_offset[n]``, bucket ``b``'s row at ``row_offset[n] + b * num_actions[n]``), ``row_offset``
``<i8[num_nodes]`` (-1 for non-decisions), ``num_buckets`` ``<i8[rounds]``, ``node_round``
``|i1[num_nodes]``, ``num_actions`` ``<i2[num_nodes]``. Besides the rules below, a reader
requires the header fields' types and ranges (at most 50M nodes, 64 rounds, 2**31 buckets a round)
and derives every array's exact shape from them before allocating; the layout arrays must
describe the contiguous table layout of ``table_entries`` entries; every entry of ``probs`` lies
in [0, 1] and every row sums to 1 within :data:`BLUEPRINT_ROW_TOLERANCE` (plus 1e-6 per action).
:func:`write_blueprint` refuses what a reader would refuse. ``Blueprint.load`` also rebuilds the
tree from ``game`` and ``bets`` and checks its hash, loads the card abstraction (never building
it) and checks its hash, before the arrays are read.

Manifest format: one msgpack map, the caller's keys plus ``magic`` ("MCCFRMAN"),
``format_version``, ``iteration``, ``files`` ([{"file", "bytes", "blake2b"}]) and
``manifest_blake2b``, the digest of the map packed without that key (msgpack packing of the
decoded map is deterministic, so the reader re-packs and compares).

Values in ``meta`` and in manifests must be msgpack types (None, bool, int within 64 bits, float,
str, bytes, lists, maps); numpy scalars are converted, arrays are refused (put them in ``arrays``).
Tuples come back as lists. Generator state (128-bit integers, arrays) goes through
:func:`encode_rng_state` / :func:`decode_rng_state`.

Reading trusts no file. Every reader enforces these rules and refuses a file that breaks one with
a :class:`CheckpointError` naming the file (and the array) and the reason; :func:`load_latest`
then skips that checkpoint for the next older complete one:

* Only regular files are read (symlinks are followed to one): a device (``/dev/zero``), FIFO,
  socket or directory is refused by ``stat`` before it is opened and by ``fstat`` after (opened
  non-blocking). No byte past the size the manifest records is read (past the file's ``fstat``
  size without a manifest); a manifest larger than 64 MiB is refused unread.
* Every size a header declares is checked before anything is allocated: shapes and dtypes
  (``[<>|][biufc]N``, bool / integer / float / complex only) must agree with ``nbytes`` and the
  chunk count, and the arrays' total must fit in what the file can decompress to: lz4 never
  expands data more than 255 times (each match byte codes at most 255 output bytes), so at most
  ``255 * (file size - 16)`` bytes, or the frame's declared content size when it has one. Given
  the run's layout (``layout=`` of :func:`load_latest`, one :class:`ArraySpec` per array) every
  array must have exactly the layout's name, dtype and shape, and the file may be at most about
  1% larger than the layout's raw bytes.
* msgpack unpacking runs with limits bounded by those sizes: strings and bins at most the
  decompressed bound (and 256 MiB), arrays and maps at most that many items and 2**20, no
  extension types, so a hostile header cannot make the unpacker preallocate a huge list or map.
* Float and complex arrays must be finite (NaN or inf in regrets or strategy sums means a corrupt
  file: training never produces them, and :func:`write_shard` refuses to write them); a layout
  may set a minimum (strategy sums are >= 0).
* Run progress must be possible. ``iteration`` is an int with ``0 <= iteration <= 2**53`` that
  equals the directory name. When the manifest records them (the trainers do): ``t_base``,
  ``node_visits``, ``pruned`` are ints >= 0, ``seconds`` and ``w_base`` finite numbers >= 0,
  ``t_base <= iteration`` (the last discount boundary cannot lie ahead), ``w_base <= t_base``
  (discounting never adds iterations), and ``iteration <= 1e9 * seconds + 2**20``: ``seconds``
  is the training time the run has recorded, across resumes, and no trainer here comes within
  two orders of magnitude of 1e9 iterations a second (Kuhn, the smallest game, runs about 1.4M
  a second on one core; a Ray job's ``seconds`` is wall time, so a cluster would need hundreds
  of such cores to reach it). :func:`write_manifest` applies the same rules, so a checkpoint it
  writes can always be read back. A digest is not a signature: a forger who rewrites every
  field consistently (and reseals the digests) is not detected by these rules.

:func:`read_shard_bytes`, :func:`read_manifest_bytes` and :func:`read_blueprint_bytes` parse a
file's bytes from memory with the same checks; :func:`fuzz_read_shard_bytes` /
:func:`fuzz_read_manifest_bytes` / :func:`fuzz_read_blueprint_bytes` are fuzzing entry points
(None for a refused input; any exception escaping them is a bug; ``scripts/fuzz_parsers.py``
targets ``checkpoint`` and ``blueprint``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import logging
import math
import os
import re
import shutil
import stat
import struct
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import lz4.frame
import msgpack
import numpy as np

from holdem.files import atomic_writer, fsync_dir

__all__ = [
    "CheckpointError",
    "CheckpointInfo",
    "ArraySpec",
    "SHARD_MAGIC",
    "SHARD_FORMAT_VERSION",
    "MANIFEST_MAGIC",
    "MANIFEST_FORMAT_VERSION",
    "MANIFEST_NAME",
    "shard_name",
    "write_shard",
    "read_shard",
    "read_shard_bytes",
    "fuzz_read_shard_bytes",
    "write_manifest",
    "read_manifest",
    "read_manifest_bytes",
    "fuzz_read_manifest_bytes",
    "BLUEPRINT_NAME",
    "BLUEPRINT_MAGIC",
    "BLUEPRINT_FORMAT_NAME",
    "BLUEPRINT_FORMAT_VERSION",
    "BLUEPRINT_ARRAYS",
    "write_blueprint",
    "read_blueprint",
    "read_blueprint_bytes",
    "fuzz_read_blueprint_bytes",
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

BLUEPRINT_MAGIC = b"MCCFRBPF"
BLUEPRINT_FORMAT_VERSION = 1
BLUEPRINT_FORMAT_NAME = "mccfr-blueprint"
BLUEPRINT_NAME = "blueprint.msgpack.lz4"

MANIFEST_MAGIC = "MCCFRMAN"
MANIFEST_FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.msgpack"
_MANIFEST_RESERVED = ("magic", "format_version", "files", "manifest_blake2b")

CHECKPOINTS_DIRNAME = "checkpoints"
_ITERATION_DIGITS = 12
_SHARD_RE = re.compile(r"^shard-(0|[1-9][0-9]{0,17})\.msgpack\.lz4$")

_CHUNK_BYTES = 16 << 20  # bytes of array data per msgpack bin object
_IO_BUFFER = 1 << 20
_UNPACK_MAX_BUFFER = 256 << 20  # caps the header object (meta) and any single chunk on read
_ARRAY_KINDS = "biufc"  # bool, signed, unsigned, float, complex: raw bytes are the whole value
_DTYPE_RE = re.compile(r"[<>|][biufc][0-9]{1,2}")  # numpy dtype.str of those kinds
_MAX_NDIM = 32  # numpy 1.x's limit (2.x allows 64); the writer refuses more

# Reading hostile files (module docstring).
_LZ4_MAX_RATIO = 255  # no lz4 frame decompresses to more than 255x its size
_LZ4_FRAME_MAGIC = 0x184D2204
_LZ4_FRAME_HEADER_MAX = 19  # magic, FLG, BD, content size (8), dictionary id (4), checksum
_MAX_CONTAINER_LEN = 1 << 20  # items in one msgpack array or map of a header or manifest
_MANIFEST_MAX_BYTES = 64 << 20
_HEADER_ALLOWANCE = 1 << 20  # header object, chunk headers and trailer of a shard (beyond its arrays)
_DRAIN_MAX = 64 << 20  # hash at most this much of a file that failed to decode, to name a digest mismatch
_VALUE_BLOCK = 1 << 22  # elements per finiteness / range pass (bounds the temporaries)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

MAX_ITERATION = 2**53
MAX_ITERATIONS_PER_SECOND = 10**9
ITERATION_SLACK = 2**20


@dataclasses.dataclass(frozen=True)
class _FileFormat:
    """One file format of the shard container (magic, version, what messages call it, the header key
    holding the file's index, if any)."""

    magic: bytes
    version: int
    label: str
    kind: str
    index_key: str | None
    chunk_bytes: int | None = None  # bytes of array data per msgpack bin object (None: _CHUNK_BYTES)

    @property
    def chunk(self) -> int:
        return self.chunk_bytes or _CHUNK_BYTES


_SHARD_FORMAT = _FileFormat(SHARD_MAGIC, SHARD_FORMAT_VERSION, "shard file", "shard", "shard")
# 1 MiB chunks: a query server reads the file once, and the reader's buffers beyond the strategy
# itself stay about 2 MiB
_BLUEPRINT_FORMAT = _FileFormat(
    BLUEPRINT_MAGIC, BLUEPRINT_FORMAT_VERSION, "blueprint file", "blueprint", None, 1 << 20
)


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


@dataclasses.dataclass(frozen=True)
class ArraySpec:
    """What the run's layout says one array of a shard must be (see ``layout`` of :func:`load_latest`).

    Attributes:
        dtype: the exact dtype (byte order included).
        shape: the exact shape.
        min: if set, the smallest value allowed (e.g. 0 for strategy sums).
    """

    dtype: np.dtype
    shape: tuple[int, ...]
    min: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


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
    """Write ``directory/name`` atomically (:func:`holdem.files.atomic_writer`: a temporary name,
    fsync, rename, fsync of the directory); ``body`` writes the content. Returns the file entry.

    OSError propagates after the temporary file is removed; the final name is untouched.
    """
    with atomic_writer(directory / name, buffering=_IO_BUFFER) as raw:
        sink = _HashingWriter(raw)
        body(sink)
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
        CheckpointError: an array holds NaN or inf (nothing is written: a reader would refuse
            the file), or the write failed (e.g. disk full; the temporary file is removed).
    """
    if not isinstance(shard, (int, np.integer)) or isinstance(shard, bool) or shard < 0:
        raise ValueError(f"shard index must be an int >= 0, got {shard!r}")
    shard = int(shard)
    return _write_container(
        Path(ckpt_dir), shard_name(shard), _SHARD_FORMAT, {"shard": shard}, arrays, meta, f"shard {shard}"
    )


def _write_container(
    ckpt_dir: Path,
    name: str,
    fmt: _FileFormat,
    head: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
    meta: Mapping[str, Any],
    what: str,
) -> dict[str, Any]:
    """Write ``ckpt_dir/name`` in the container format (module docstring) atomically: magic and
    version of ``fmt``, then one lz4 frame holding the header map (``head``'s keys, ``meta``,
    the array descriptors), the arrays' bytes in chunks and the trailer."""
    descriptors = []
    contiguous = []
    for key, arr in arrays.items():
        if not isinstance(key, str):
            raise TypeError(f"array names must be str, got {key!r}")
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"array {key!r} is a {type(arr).__name__}, not a numpy array")
        if arr.dtype.kind not in _ARRAY_KINDS or arr.dtype.fields is not None:
            raise ValueError(
                f"array {key!r} has dtype {arr.dtype}; only bool, integer, float and complex "
                "arrays can be checkpointed"
            )
        if arr.ndim > _MAX_NDIM or not _DTYPE_RE.fullmatch(arr.dtype.str):
            raise ValueError(
                f"array {key!r} has dtype {arr.dtype} / {arr.ndim} dimensions; it cannot be read back"
            )
        if not arr.flags.c_contiguous:
            arr = arr.copy(order="C")  # (np.ascontiguousarray would turn 0-d arrays into 1-d)
        try:
            _check_values(arr, "(being written)", key, None, fmt)
        except CheckpointError as exc:  # a reader would refuse it: keep the previous checkpoint
            raise CheckpointError(
                f"cannot checkpoint array {key!r} of {what}: it holds NaN or inf values, which "
                f"no reader accepts; nothing was written in {ckpt_dir} ({exc})"
            ) from None
        nbytes = int(arr.nbytes)
        descriptors.append(
            {
                "name": key,
                "dtype": arr.dtype.str,
                "shape": [int(n) for n in arr.shape],
                "nbytes": nbytes,
                "chunks": -(-nbytes // fmt.chunk),
            }
        )
        contiguous.append(arr)
    # Packed before any file is opened: a bad metadata value fails here with nothing on disk.
    header = _packb({**head, "meta": dict(meta), "arrays": descriptors})
    if len(header) > _UNPACK_MAX_BUFFER:
        raise ValueError(f"{what}: its metadata packs to {len(header):,} bytes, more than a reader accepts")
    try:
        _unpackb_limited(header)  # lists or maps too long for a reader fail here, with nothing on disk
    except ValueError as exc:
        raise ValueError(f"{what}: its metadata could not be read back: {exc}") from None
    trailer = _packb({"end": len(descriptors)})

    def body(sink: _HashingWriter) -> None:
        sink.write(_SHARD_HEADER.pack(fmt.magic, fmt.version, _CODEC_LZ4_FRAME))
        with lz4.frame.LZ4FrameFile(sink, mode="wb", block_checksum=True, content_checksum=True) as out:
            out.write(header)
            for arr in contiguous:
                data = memoryview(arr.reshape(-1)).cast("B") if arr.nbytes else memoryview(b"")
                for start in range(0, len(data), fmt.chunk):
                    chunk = data[start : start + fmt.chunk]
                    out.write(b"\xc6" + struct.pack(">I", len(chunk)))  # msgpack bin 32 header
                    out.write(chunk)
            out.write(trailer)

    try:
        return _atomic_write(ckpt_dir, name, body)
    except OSError as exc:
        raise _write_failed(ckpt_dir / name, exc) from exc


# ---------------------------------------------------------------------------------------------
# reading: every file is hostile until checked


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _file_kind(mode: int) -> str:
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


def _open_regular(path: Path, what: str, missing: str | None = None) -> tuple[BinaryIO, int]:
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
                f"{what} {path} is {_file_kind(st.st_mode)}, not a regular file; refusing to read it"
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
                f"{what} {path} is {_file_kind(st.st_mode)}, not a regular file; refusing to read it"
            )
        return open(fd, "rb", buffering=_IO_BUFFER, closefd=True), st.st_size
    except BaseException:
        os.close(fd)
        raise


class _BoundedReader:
    """``read`` that never returns more than ``limit`` bytes in all (the size the manifest or the
    file's own ``fstat`` recorded), whatever the file does meanwhile."""

    def __init__(self, raw: Any, limit: int) -> None:
        self._raw = raw
        self.remaining = limit

    def read(self, n: int = -1) -> bytes:
        if self.remaining <= 0:
            return b""
        if n is None or n < 0:
            n = _IO_BUFFER
        data = self._raw.read(min(n, self.remaining))
        self.remaining -= len(data)
        return data


def _lz4_content_size(lead: bytes) -> int | None:
    """The content size an lz4 frame header declares (optional field), else None."""
    if len(lead) < 14 or int.from_bytes(lead[:4], "little") != _LZ4_FRAME_MAGIC:
        return None  # not a frame lz4 can read: it says so itself
    if not lead[4] & 0x08:  # FLG bit 3: content size present
        return None
    return int.from_bytes(lead[6:14], "little")


class _Lz4FrameReader:
    """Minimal file-like ``read`` over exactly one lz4 frame, refusing truncation, trailing data and
    more output than ``limit`` bytes (or than the frame's declared content size)."""

    def __init__(
        self,
        raw: Any,
        path: str,
        lead: bytes = b"",
        limit: int | None = None,
        content_size: int | None = None,
        what: str = "shard file",
    ) -> None:
        self._raw = raw
        self._path = path
        self._what = what
        self._dec = lz4.frame.LZ4FrameDecompressor()
        self._pending = lead
        self._limit = limit
        self._content_size = content_size
        self.produced = 0
        self._stalls = 0
        self.finished = False

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = _IO_BUFFER
        while not self.finished:
            data = b""
            if self._dec.needs_input:
                if self._pending:
                    data, self._pending = self._pending, b""
                else:
                    data = self._raw.read(_IO_BUFFER)
                if not data:
                    raise CheckpointError(
                        f"{self._what} {self._path} is truncated: the compressed stream ends before "
                        "the end of its lz4 frame"
                    )
            out = self._dec.decompress(data, max_length=n)
            if not data and not out and not self._dec.eof:
                self._stalls += 1
                if self._stalls > 2:  # no input taken, no output given: never loop forever
                    raise CheckpointError(f"{self._what} {self._path}: its lz4 frame makes no progress")
            else:
                self._stalls = 0
            self.produced += len(out)
            if self._limit is not None and self.produced > self._limit:
                raise CheckpointError(
                    f"{self._what} {self._path} decompresses to more than {self._limit:,} bytes, more "
                    "than its size (or its frame's declared content size) allows"
                )
            if self._dec.eof:
                self.finished = True
                if self._content_size is not None and self.produced != self._content_size:
                    raise CheckpointError(
                        f"{self._what} {self._path}: its lz4 frame declares {self._content_size:,} bytes of "
                        f"content but holds {self.produced:,}"
                    )
                if self._dec.unused_data or self._pending or self._raw.read(1):
                    raise CheckpointError(
                        f"{self._what} {self._path} has data after the end of its lz4 frame"
                    )
            if out:
                return out
        return b""


class _HashingReader:
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
    MemoryError,  # belt and braces: every size is checked before it is allocated
    RecursionError,
)


def _unpack_limits(budget: int) -> dict[str, int]:
    """msgpack length limits for a stream that can hold at most ``budget`` bytes.

    The unpacker allocates a list or dict for an array or map header before reading its items, so
    a five-byte header could otherwise ask for 2**32 slots; every item takes at least one byte,
    so ``budget`` bounds every honest length, and the container cap bounds what one header costs
    before its items arrive. Extension types are never written, so none are read.
    """
    budget = max(int(budget), 0)
    return {
        "max_str_len": min(budget, _UNPACK_MAX_BUFFER),
        "max_bin_len": min(budget, _UNPACK_MAX_BUFFER),
        "max_array_len": min(budget, _MAX_CONTAINER_LEN),
        "max_map_len": min(budget // 2, _MAX_CONTAINER_LEN),
        "max_ext_len": 0,
    }


def _unpackb_limited(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False, **_unpack_limits(len(data)))


@dataclasses.dataclass(frozen=True)
class _ArrayDesc:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    nbytes: int
    chunks: int
    spec: ArraySpec | None


def _check_shard_header(
    header: Any,
    path: str,
    size: int,
    bound: int,
    spec: Mapping[str, ArraySpec] | Callable | None,
    fmt: _FileFormat | None = None,
) -> tuple[int, dict[str, Any], list[_ArrayDesc]]:
    """Validate a shard's header object completely, before any array is allocated.

    ``spec`` may be a callable: given the header's ``meta`` (a dict), it returns the layout (or
    None); it runs once the header object is known to be well formed, before any array is
    checked or allocated (a :class:`CheckpointError` it raises marks the file as refused; any
    other exception is re-raised as it is, see :class:`_SpecFailed`)."""
    fmt = fmt or _SHARD_FORMAT
    if not isinstance(header, dict):
        raise CheckpointError(f"{fmt.label} {path}: malformed header object")
    shard, meta, arrays = (
        header.get(fmt.index_key) if fmt.index_key else 0,
        header.get("meta"),
        header.get("arrays"),
    )
    if not _is_int(shard) or shard < 0 or not isinstance(meta, dict) or not isinstance(arrays, list):
        raise CheckpointError(f"{fmt.label} {path}: malformed header object")
    if callable(spec):
        try:
            spec = spec(meta)
        except CheckpointError:
            raise
        except (
            Exception
        ) as exc:  # the caller's own error (e.g. a missing card abstraction): not a decoding error
            raise _SpecFailed(exc) from exc
        if spec is not None and size > _max_shard_file_bytes(spec):
            raise CheckpointError(
                f"{fmt.label} {path} is {size:,} bytes, more than a file of this layout can be "
                f"({_max_shard_file_bytes(spec):,})"
            )
    descs: list[_ArrayDesc] = []
    seen: set[str] = set()
    total = 0
    for i, desc in enumerate(arrays):
        if not isinstance(desc, dict) or not isinstance(desc.get("name"), str):
            raise CheckpointError(f"{fmt.label} {path}: array #{i} has a malformed descriptor")
        name = desc["name"]
        where = f"{fmt.label} {path}: array {name!r}"
        if name in seen:
            raise CheckpointError(f"{where} appears twice")
        seen.add(name)
        dtype_str = desc.get("dtype")
        dtype = None
        if isinstance(dtype_str, str) and _DTYPE_RE.fullmatch(dtype_str):
            try:
                dtype = np.dtype(dtype_str)
            except (TypeError, ValueError):
                dtype = None
        if dtype is None or dtype.str != dtype_str or dtype.kind not in _ARRAY_KINDS:
            raise CheckpointError(f"{where} has a bad dtype {dtype_str!r}")
        shape = desc.get("shape")
        if (
            not isinstance(shape, list)
            or len(shape) > _MAX_NDIM
            or not all(_is_int(n) and n >= 0 for n in shape)
        ):
            raise CheckpointError(f"{where} has a bad shape {shape!r}")
        nbytes, chunks = desc.get("nbytes"), desc.get("chunks")
        if not _is_int(nbytes) or math.prod(shape) * dtype.itemsize != nbytes:
            raise CheckpointError(
                f"{where}: shape {shape} dtype {dtype} does not match its declared {nbytes!r} bytes"
            )
        if not _is_int(chunks) or chunks != -(-nbytes // fmt.chunk):
            raise CheckpointError(f"{where} has a bad chunk count {chunks!r}")
        total += nbytes
        if total > bound:
            raise CheckpointError(
                f"{where} declares {nbytes:,} bytes (shape {shape}, dtype {dtype}), but the "
                f"{size:,}-byte file can hold at most {bound:,} bytes of data (lz4 expands at most "
                f"{_LZ4_MAX_RATIO - 1}x); refusing it before allocating anything"
            )
        want = None
        if spec is not None:
            want = spec.get(name)
            if want is None:
                raise CheckpointError(f"{where} is not part of this run's layout (which has {sorted(spec)})")
            if dtype != want.dtype or tuple(shape) != want.shape:
                raise CheckpointError(
                    f"{where} is {dtype.str}{shape} ({nbytes:,} bytes), but this run's layout needs "
                    f"{want.dtype.str}{list(want.shape)} ({want.nbytes:,} bytes); refusing it before "
                    "allocating anything"
                )
        descs.append(_ArrayDesc(name, dtype, tuple(shape), nbytes, chunks, want))
    if spec is not None and set(spec) - seen:
        raise CheckpointError(
            f"{fmt.label} {path} lacks the array(s) {sorted(set(spec) - seen)} of this run's layout"
        )
    return shard, meta, descs


def _check_values(
    arr: np.ndarray, path: str, name: str, spec: ArraySpec | None, fmt: _FileFormat | None = None
) -> None:
    """Refuse NaN / inf (a checkpoint's tables are always finite) and values below ``spec.min``."""
    fmt = fmt or _SHARD_FORMAT
    kind = arr.dtype.kind
    lowest = spec.min if spec is not None else None
    if kind not in "fc" and (lowest is None or kind == "b"):
        return
    flat = arr.reshape(-1)
    for start in range(0, flat.size, _VALUE_BLOCK):
        block = flat[start : start + _VALUE_BLOCK]
        if kind in "fc":
            bad = ~np.isfinite(block)
            if bad.any():
                first = start + int(np.argmax(bad))
                count = int(np.count_nonzero(~np.isfinite(flat)))
                raise CheckpointError(
                    f"{fmt.label} {path}: array {name!r} holds {count:,} non-finite values (NaN or "
                    f"inf; the first at index {first}: {flat[first]}); checkpoint tables are always "
                    "finite, so the file is corrupt"
                )
        if lowest is not None and kind != "c":
            low = block < lowest
            if low.any():
                first = start + int(np.argmax(low))
                raise CheckpointError(
                    f"{fmt.label} {path}: array {name!r} holds values below {lowest} (the first at "
                    f"index {first}: {flat[first]}), impossible for this table"
                )


class _SpecFailed(Exception):
    """Carries an exception a ``spec`` callable raised out of the decoder unchanged."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _decode_shard(
    src: Any,
    path: str,
    size: int,
    spec: Mapping[str, ArraySpec] | Callable | None = None,
    fmt: _FileFormat | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, Any], int]:
    """Decode a shard file (or another file of the container format ``fmt``) of ``size`` bytes
    from ``src`` (which yields at most ``size`` bytes)."""
    fmt = fmt or _SHARD_FORMAT
    head = src.read(_SHARD_HEADER.size)
    if len(head) < _SHARD_HEADER.size:
        raise CheckpointError(f"{fmt.label} {path} is truncated: {len(head)} bytes, shorter than its header")
    magic, version, codec = _SHARD_HEADER.unpack(head)
    if magic != fmt.magic:
        raise CheckpointError(
            f"{path} is not an mccfr {fmt.kind} file: bad magic {magic!r}, expected {fmt.magic!r}"
        )
    if version != fmt.version:
        raise CheckpointError(
            f"{fmt.label} {path} has format version {version}; this build reads version {fmt.version}"
        )
    if codec != _CODEC_LZ4_FRAME:
        raise CheckpointError(f"{fmt.label} {path} has unknown codec {codec}")
    # No lz4 frame decompresses to more than 255 times its size: that bounds every length below.
    bound = _LZ4_MAX_RATIO * max(size - _SHARD_HEADER.size, 0)
    lead = src.read(_LZ4_FRAME_HEADER_MAX)
    content_size = _lz4_content_size(lead)
    if content_size is not None:
        if content_size > bound:
            raise CheckpointError(
                f"{fmt.label} {path}: its lz4 frame declares {content_size:,} bytes of content, more than "
                f"a {size:,}-byte file can hold ({bound:,})"
            )
        bound = content_size
    frame = _Lz4FrameReader(src, path, lead, bound, content_size, what=fmt.label)
    unpacker = msgpack.Unpacker(
        frame,
        read_size=_IO_BUFFER,
        max_buffer_size=_UNPACK_MAX_BUFFER,
        raw=False,
        strict_map_key=False,
        **_unpack_limits(bound),
    )
    try:
        header = unpacker.unpack()
        shard, meta, descs = _check_shard_header(header, path, size, bound, spec, fmt)
        arrays: dict[str, np.ndarray] = {}
        for desc in descs:
            arr = np.empty(desc.shape, dtype=desc.dtype)
            nbytes = desc.nbytes
            flat = memoryview(arr.reshape(-1)).cast("B") if nbytes else memoryview(bytearray())
            filled = 0
            for _ in range(desc.chunks):
                chunk = unpacker.unpack()
                if not isinstance(chunk, bytes) or filled + len(chunk) > nbytes:
                    raise CheckpointError(
                        f"{fmt.label} {path}: array {desc.name!r} has a malformed data chunk"
                    )
                flat[filled : filled + len(chunk)] = chunk
                filled += len(chunk)
            if filled != nbytes:
                raise CheckpointError(
                    f"{fmt.label} {path}: array {desc.name!r} has {filled} bytes of data, expected {nbytes}"
                )
            _check_values(arr, path, desc.name, desc.spec, fmt)
            arrays[desc.name] = arr
        trailer = unpacker.unpack()
        if trailer != {"end": len(arrays)}:
            raise CheckpointError(f"{fmt.label} {path}: missing or wrong end marker")
        try:
            unpacker.unpack()
        except msgpack.OutOfData:
            pass
        else:
            raise CheckpointError(f"{fmt.label} {path}: unexpected data after the end marker")
        if not frame.finished:
            raise CheckpointError(f"{fmt.label} {path}: data after the end marker inside the lz4 frame")
    except msgpack.OutOfData as exc:
        raise CheckpointError(f"{fmt.label} {path} is truncated: its data ends early") from exc
    except _SpecFailed as exc:
        raise exc.error from None
    except _DECODE_ERRORS as exc:
        raise CheckpointError(f"{fmt.label} {path} is corrupt: {type(exc).__name__}: {exc}") from exc
    return arrays, meta, shard


def _max_shard_file_bytes(spec: Mapping[str, ArraySpec]) -> int:
    """The largest shard file that can hold exactly ``spec``: lz4 stores a block it cannot shrink
    as it is (8 bytes of block size and checksum per 64 KiB block, 1% allowed), plus room for
    the header object, chunk headers and trailer."""
    data = sum(s.nbytes for s in spec.values())
    return _SHARD_HEADER.size + data + data // 100 + _HEADER_ALLOWANCE


def _read_shard(
    path: Path,
    expected: Mapping[str, Any] | None = None,
    *,
    verify: bool = True,
    spec: Mapping[str, ArraySpec] | Callable | None = None,
    fmt: _FileFormat | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, Any], int]:
    """Read a shard, optionally checking it against its manifest entry in the same pass.

    With ``expected`` (the manifest entry) the file must have exactly the recorded size and no byte
    past it is read; with ``verify`` its blake2b digest must match too. A digest or size mismatch
    is reported in preference to the decoding error it causes (when the rest of the file is
    small enough to hash). With ``spec`` (the run's layout for this shard) every array must match
    it before anything is allocated.
    """
    fmt = fmt or _SHARD_FORMAT
    raw, size = _open_regular(path, fmt.label)
    with raw:
        try:
            if expected is not None and size != expected["bytes"]:
                raise CheckpointError(
                    f"size mismatch for {path}: the manifest says {expected['bytes']} bytes, the file has {size}"
                )
            if spec is not None and not callable(spec) and size > _max_shard_file_bytes(spec):
                raise CheckpointError(
                    f"{fmt.label} {path} is {size:,} bytes, more than a shard of this run's layout can be "
                    f"({_max_shard_file_bytes(spec):,})"
                )
            src = _HashingReader(_BoundedReader(raw, size))
            try:
                result = _decode_shard(src, str(path), size, spec, fmt)
            except CheckpointError as exc:
                if expected is None or not verify or size - src.size > _DRAIN_MAX:
                    raise
                src.drain()
                mismatch = _digest_problem(path, expected, src.size, src.hash.hexdigest())
                if mismatch:
                    raise CheckpointError(mismatch) from exc
                raise
            src.drain()
            if raw.read(1):
                raise CheckpointError(f"{fmt.label} {path} grew past its {size:,} bytes while it was read")
        except OSError as exc:
            raise CheckpointError(f"{fmt.label} {path} cannot be read: {exc}") from exc
    if expected is not None:
        if src.size != expected["bytes"]:
            raise CheckpointError(
                f"size mismatch for {path}: the manifest says {expected['bytes']} bytes, {src.size} could be read"
            )
        if verify:
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
    arrays, meta, _ = _read_shard(Path(path), spec=spec)
    return arrays, meta


def read_shard_bytes(
    data: bytes, name: str = "<bytes>", spec: Mapping[str, ArraySpec] | None = None
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Parse a whole shard file from memory, with every check :func:`read_shard` makes.

    ``name`` stands for the file in error messages. For fuzzing: any input ends in a result or
    :class:`CheckpointError`; any other exception is a bug (see :func:`fuzz_read_shard_bytes`).
    """
    data = bytes(data)
    src = _BoundedReader(io.BytesIO(data), len(data))
    arrays, meta, _ = _decode_shard(src, name, len(data), spec)
    return arrays, meta


def fuzz_read_shard_bytes(data: bytes) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """Fuzz entry point: parse ``data`` as a shard file; None when it is refused.

    Only :class:`CheckpointError` counts as a refusal: any other exception escaping is a bug.
    """
    try:
        return read_shard_bytes(data, "<fuzz>")
    except CheckpointError:
        return None


# ---------------------------------------------------------------------------------------------
# blueprint files: the average strategy for queries, one per checkpoint

# The arrays of a blueprint file, in order: name -> dtype (little-endian, whatever the machine).
BLUEPRINT_ARRAYS = {
    "probs": np.dtype("<f4"),  # [table entries]: P(action) per (node, bucket, action), table layout
    "row_offset": np.dtype("<i8"),  # [nodes]: a decision node's first entry, -1 for other nodes
    "num_buckets": np.dtype("<i8"),  # [rounds]: card buckets per round
    "node_round": np.dtype("|i1"),  # [nodes]: each node's round
    "num_actions": np.dtype("<i2"),  # [nodes]: each node's actions (0 for terminals)
}
BLUEPRINT_ROW_TOLERANCE = 1e-5  # |sum of a row - 1| allowed, plus 1e-6 per action of the row
_BLUEPRINT_MAX_NODES = 50_000_000  # abstraction.tree.MAX_NODES: no betting tree is larger
_BLUEPRINT_MAX_ROUNDS = 64
_BLUEPRINT_MAX_BUCKETS = 1 << 31
_BLUEPRINT_ROW_BLOCK = 1 << 18  # entries per pass of the row-sum check (bounds its temporaries)


def _blueprint_spec(meta: Mapping[str, Any], where: str) -> dict[str, ArraySpec]:
    """The exact arrays a blueprint file with header ``meta`` holds (checked before any array is
    allocated); CheckpointError naming the field when the header is malformed."""

    def bad(what: str) -> CheckpointError:
        return CheckpointError(f"blueprint file {where}: {what}")

    if meta.get("format") != BLUEPRINT_FORMAT_NAME:
        raise bad(f"format {meta.get('format')!r} is not {BLUEPRINT_FORMAT_NAME!r}")
    if meta.get("format_version") != BLUEPRINT_FORMAT_VERSION:
        raise bad(
            f"format version {meta.get('format_version')!r}; this build reads version {BLUEPRINT_FORMAT_VERSION}"
        )
    it = meta.get("iteration")
    if not _is_int(it) or not 0 <= it <= MAX_ITERATION:
        raise bad(f"iteration {it!r} is not an iteration count (an int in [0, 2**53])")
    for key in ("config_hash", "abstraction_hash"):
        if not isinstance(meta.get(key), str):
            raise bad(f"{key} {meta.get(key)!r} is not a string")
    game, bets, cards, tree = (meta.get(k) for k in ("game", "bets", "cards", "tree"))
    if not (
        isinstance(game, dict) and isinstance(game.get("acpc"), str) and isinstance(game.get("name"), str)
    ):
        raise bad("malformed game (needs its name and ACPC text)")
    if not (
        isinstance(bets, dict)
        and all(isinstance(bets.get(k), (str, type(None))) for k in ("name", "toml"))
        and isinstance(bets.get("hash"), str)
    ):
        raise bad("malformed bet abstraction (needs its name, TOML and hash)")
    if not (
        isinstance(cards, dict)
        and isinstance(cards.get("name"), str)
        and isinstance(cards.get("hash"), str)
        and isinstance(cards.get("num_buckets"), list)
    ):
        raise bad("malformed card abstraction (needs its name, hash and bucket counts)")
    nb = cards["num_buckets"]
    if not 1 <= len(nb) <= _BLUEPRINT_MAX_ROUNDS or not all(
        _is_int(b) and 1 <= b <= _BLUEPRINT_MAX_BUCKETS for b in nb
    ):
        raise bad(f"card bucket counts {nb!r} are not 1 to {_BLUEPRINT_MAX_ROUNDS} counts in [1, 2**31]")
    if not (isinstance(tree, dict) and isinstance(tree.get("hash"), str)):
        raise bad("malformed tree (needs its hash and node count)")
    nodes, size = tree.get("num_nodes"), meta.get("table_entries")
    if not _is_int(nodes) or not 1 <= nodes <= _BLUEPRINT_MAX_NODES:
        raise bad(f"tree node count {nodes!r} is not in [1, {_BLUEPRINT_MAX_NODES:,}]")
    if not _is_int(size) or not 0 <= size <= MAX_ITERATION:
        raise bad(f"table entries {size!r} is not a count")
    shapes = {
        "probs": (size,),
        "row_offset": (nodes,),
        "num_buckets": (len(nb),),
        "node_round": (nodes,),
        "num_actions": (nodes,),
    }
    return {
        k: ArraySpec(dt, shapes[k], min=0.0 if k == "probs" else None) for k, dt in BLUEPRINT_ARRAYS.items()
    }


def _check_blueprint_arrays(meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray], where: str) -> None:
    """The layout the arrays describe is consistent and every row of ``probs`` is a probability
    distribution (entries in [0, 1], sum 1 within :data:`BLUEPRINT_ROW_TOLERANCE`)."""

    def bad(what: str) -> CheckpointError:
        return CheckpointError(f"blueprint file {where}: {what}")

    nb, rnd, na, off, probs = (
        arrays[k] for k in ("num_buckets", "node_round", "num_actions", "row_offset", "probs")
    )
    if nb.tolist() != list(meta["cards"]["num_buckets"]):
        raise bad(f"bucket counts {nb.tolist()} differ from the header's {meta['cards']['num_buckets']}")
    if rnd.size and (int(rnd.min()) < 0 or int(rnd.max()) >= nb.size):
        raise bad(f"node rounds outside [0, {nb.size})")
    dec = off >= 0
    if off.size and int(off.min()) < -1:
        raise bad("a row offset below -1")
    if na.size and (int(na.min()) < 0 or (dec.any() and int(na[dec].min()) < 1)):
        raise bad("a negative action count, or a decision node without actions")
    rows = nb[rnd[dec].astype(np.int64)]  # rows of each decision node (one per bucket)
    k = na[dec].astype(np.int64)
    if float(np.dot(rows.astype(np.float64), k.astype(np.float64))) != float(probs.size):
        raise bad(
            f"the layout covers {float(np.dot(rows.astype(np.float64), k.astype(np.float64))):.0f} entries, "
            f"the strategy has {probs.size:,}"
        )
    block = rows * k  # no overflow: the total equals probs.size (checked in float64 above)
    ends = np.cumsum(block)
    if not np.array_equal(off[dec], ends - block):
        raise bad("row offsets do not follow the table layout (blocks of buckets x actions in node order)")
    # every row (one per decision node and bucket) is a distribution: in blocks of nodes, so the
    # temporaries stay small next to the strategy itself
    first, starts_all = 0, ends - block
    while first < block.size:
        last = int(np.searchsorted(ends, starts_all[first] + _BLUEPRINT_ROW_BLOCK, side="right"))
        last = max(last, first + 1)
        lo, hi = int(starts_all[first]), int(ends[last - 1])
        part = probs[lo:hi]
        if part.size:
            if float(part.max()) > 1.0 + BLUEPRINT_ROW_TOLERANCE:
                i = lo + int(np.argmax(part > 1.0 + BLUEPRINT_ROW_TOLERANCE))
                raise bad(f"probability {probs[i]} > 1 at entry {i}")
            row_len = np.repeat(k[first:last], rows[first:last])  # the rows of these nodes, in table order
            starts = np.cumsum(row_len) - row_len
            sums = np.add.reduceat(part, starts, dtype=np.float64)
            err = np.abs(sums - 1.0) > BLUEPRINT_ROW_TOLERANCE + 1e-6 * row_len
            if err.any():
                i = int(np.argmax(err))
                raise bad(
                    f"a row of the strategy does not sum to 1 (entries {lo + int(starts[i])} to "
                    f"{lo + int(starts[i] + row_len[i]) - 1}: {sums[i]!r}); a blueprint row is a probability distribution"
                )
        first = last


def _blueprint_reader_spec(path: str, layout: Callable[[dict[str, Any]], Any] | None) -> Callable:
    def spec(meta: dict[str, Any]) -> dict[str, ArraySpec]:
        out = _blueprint_spec(meta, path)
        if layout is not None:
            layout(meta)
        return out

    return spec


def write_blueprint(
    ckpt_dir: str | os.PathLike[str], meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> dict[str, Any]:
    """Write ``ckpt_dir/blueprint.msgpack.lz4`` atomically (before the manifest, which lists it).

    Args:
        ckpt_dir: the checkpoint directory.
        meta: the header (see :mod:`blueprint.blueprint`, ``blueprint_file_payload``); ``format``
            and ``format_version`` are filled in.
        arrays: :data:`BLUEPRINT_ARRAYS` (converted to those dtypes).

    Returns:
        The manifest entry of the file.

    Raises:
        ValueError: a header or arrays that a reader would refuse (nothing is written).
        CheckpointError: the write failed (the temporary file is removed).
    """
    ckpt_dir = Path(ckpt_dir)
    meta = {**dict(meta), "format": BLUEPRINT_FORMAT_NAME, "format_version": BLUEPRINT_FORMAT_VERSION}
    if set(arrays) != set(BLUEPRINT_ARRAYS):
        raise ValueError(
            f"a blueprint file holds exactly the arrays {list(BLUEPRINT_ARRAYS)}, got {sorted(arrays)}"
        )
    out = {k: np.ascontiguousarray(arrays[k], dtype=dt) for k, dt in BLUEPRINT_ARRAYS.items()}
    where = f"{ckpt_dir / BLUEPRINT_NAME} (being written)"
    try:
        norm = _normalized(meta)
        spec = _blueprint_spec(norm, where)
        for k, s in spec.items():
            if out[k].shape != s.shape:
                raise CheckpointError(
                    f"blueprint file {where}: array {k!r} has shape {out[k].shape}, not {s.shape}"
                )
            _check_values(out[k], where, k, s, _BLUEPRINT_FORMAT)
        _check_blueprint_arrays(norm, out, where)
    except CheckpointError as exc:
        raise ValueError(f"refusing to write a blueprint file no reader would accept: {exc}") from None
    return _write_container(ckpt_dir, BLUEPRINT_NAME, _BLUEPRINT_FORMAT, {}, out, meta, "the blueprint file")


def read_blueprint(
    path: str | os.PathLike[str],
    expected: Mapping[str, Any] | None = None,
    *,
    verify: bool = True,
    layout: Callable[[dict[str, Any]], Any] | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a blueprint file with every rule of the module docstring, plus its own.

    Args:
        path: the file (``CKPT_DIR/blueprint.msgpack.lz4``).
        expected: its manifest entry: the size must match, no byte past it is read, and with
            ``verify`` the blake2b digest too.
        layout: called with the header once it is well formed, before any array is allocated
            (the caller checks it against what it rebuilt: tree, card abstraction); a
            :class:`CheckpointError` it raises refuses the file, any other exception propagates.

    Returns:
        ``(header, arrays)``: the header map and :data:`BLUEPRINT_ARRAYS`, checked: the layout
        the arrays describe is consistent and every strategy row is a probability distribution.
    """
    path = Path(path)
    arrays, meta, _ = _read_shard(
        path, expected, verify=verify, spec=_blueprint_reader_spec(str(path), layout), fmt=_BLUEPRINT_FORMAT
    )
    _check_blueprint_arrays(meta, arrays, str(path))
    return meta, arrays


def read_blueprint_bytes(data: bytes, name: str = "<bytes>") -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Parse a whole blueprint file from memory with every check :func:`read_blueprint` makes."""
    data = bytes(data)
    src = _BoundedReader(io.BytesIO(data), len(data))
    arrays, meta, _ = _decode_shard(
        src, name, len(data), _blueprint_reader_spec(name, None), _BLUEPRINT_FORMAT
    )
    _check_blueprint_arrays(meta, arrays, name)
    return meta, arrays


def fuzz_read_blueprint_bytes(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """Fuzz entry point: parse ``data`` as a blueprint file; None when it is refused (only
    :class:`CheckpointError` counts as a refusal: any other exception escaping is a bug)."""
    try:
        return read_blueprint_bytes(data, "<fuzz>")
    except CheckpointError:
        return None


# ---------------------------------------------------------------------------------------------
# manifests


def _manifest_digest(fields: Mapping[str, Any]) -> str:
    return hashlib.blake2b(_packb(dict(fields))).hexdigest()


def _ckpt_iteration(ckpt_dir: Path) -> int | None:
    name = ckpt_dir.name
    return int(name) if name.isascii() and name.isdigit() else None


def _progress_problem(fields: Mapping[str, Any]) -> str | None:
    """Why the run-progress keys of a manifest are impossible, or None (see the module docstring)."""
    it = fields.get("iteration")
    if "iteration" in fields:
        if not _is_int(it) or it < 0:
            return f"iteration {it!r} is not an iteration count (an int >= 0)"
        if it > MAX_ITERATION:
            return f"iteration {it:,} is impossible: more than 2**53"
    for key in ("t_base", "node_visits", "pruned"):
        if key in fields and (not _is_int(fields[key]) or fields[key] < 0):
            return f"{key} {fields[key]!r} is not a count (an int >= 0)"
    for key in ("seconds", "w_base"):
        if key in fields and (not _is_real(fields[key]) or not math.isfinite(fields[key]) or fields[key] < 0):
            return f"{key} {fields[key]!r} is not a finite number >= 0"
    if not _is_int(it):
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
    data = _packb(dict(fields))
    if len(data) > _MANIFEST_MAX_BYTES:
        raise ValueError(
            f"manifest is {len(data):,} bytes, more than a reader accepts ({_MANIFEST_MAX_BYTES:,})"
        )
    _unpackb_limited(data)  # containers too long for a reader fail here, before anything is written


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
            run-progress keys must pass the reader's rules (module docstring).
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
    fields["manifest_blake2b"] = _manifest_digest(fields)
    _check_manifest_fields(_normalized(fields))
    data = _packb(fields)
    path = ckpt_dir / MANIFEST_NAME
    try:
        _atomic_write(ckpt_dir, MANIFEST_NAME, lambda sink: sink.write(data))
    except OSError as exc:
        raise _write_failed(path, exc) from exc
    return path


def _parse_manifest(data: bytes, path: Any) -> dict[str, Any]:
    if len(data) > _MANIFEST_MAX_BYTES:
        raise CheckpointError(
            f"manifest {path} is {len(data):,} bytes, more than any manifest ({_MANIFEST_MAX_BYTES:,}); "
            "refusing to read it"
        )
    try:
        fields = _unpackb_limited(data)
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
    except _DECODE_ERRORS as exc:
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
        and _is_int(f.get("bytes"))
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
    raw, size = _open_regular(
        path, "manifest", missing=f"{path} is missing (incomplete or interrupted checkpoint)"
    )
    with raw:
        if size > _MANIFEST_MAX_BYTES:
            raise CheckpointError(
                f"manifest {path} is {size:,} bytes, more than any manifest ({_MANIFEST_MAX_BYTES:,}); "
                "refusing to read it"
            )
        try:
            data = _BoundedReader(raw, size + 1).read(size + 1)
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


def _shard_index(name: str) -> int | None:
    """k for a canonical shard file name ``shard-<k>.msgpack.lz4``, else None."""
    match = _SHARD_RE.match(name)
    return int(match.group(1)) if match else None


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
            return f"{path} is {_file_kind(st.st_mode)}, not a regular file"
        if st.st_size != entry["bytes"]:
            return f"size mismatch for {path}: the manifest says {entry['bytes']} bytes, the file has {st.st_size}"
        k = _shard_index(entry["file"])
        if k is not None:
            shards.append(k)
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
            raw, actual = _open_regular(path, "checkpoint file")
            with raw:
                if actual != entry["bytes"]:
                    return _digest_problem(path, entry, actual, "")
                src = _BoundedReader(raw, actual)  # never past the recorded size
                while block := src.read(_IO_BUFFER):
                    h.update(block)
                    size += len(block)
        except CheckpointError as exc:
            return str(exc)
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
            if manifest[key] != _normalized(value):
                raise CheckpointError(
                    f"checkpoint {info.path} belongs to a different run: {key} is {manifest[key]!r}, "
                    f"expected {value!r}"
                )
        try:
            specs = layout(manifest) if layout is not None else None
            shard_entries = [(k, e) for e in manifest["files"] if (k := _shard_index(e["file"])) is not None]
            if specs is not None and len(specs) != len(shard_entries):
                raise CheckpointError(
                    f"manifest {info.path / MANIFEST_NAME} lists {len(shard_entries)} shard(s); this run's "
                    f"layout has {len(specs)}"
                )
            shards = []
            for entry in manifest["files"]:
                k = _shard_index(entry["file"])
                if k is None:
                    bad = _verify_files(info.path, [entry]) if verify else None
                    if bad:
                        raise CheckpointError(bad)
                    continue
                path = info.path / entry["file"]
                spec = specs[k] if specs is not None else None
                arrays, meta, held = _read_shard(path, entry, verify=verify, spec=spec)
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
