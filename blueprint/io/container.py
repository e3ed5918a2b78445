"""File formats of checkpoints and blueprint files (the reference), and the container they share.

This module writes and reads the container; :mod:`blueprint.io.shard_file`,
:mod:`blueprint.io.blueprint_file` and :mod:`blueprint.io.manifest` are its three files, and
:mod:`blueprint.checkpoints` writes, lists, loads and prunes whole checkpoint directories.

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
container above with magic ``b"MCCFRBPF"``, version 1, codec 1, the header map ``{"meta": {...},
"arrays": [...]}`` (no shard index) and array data in chunks of at most 1 MiB. ``meta`` holds
``format`` ("mccfr-blueprint"), ``format_version`` (1), ``iteration``, ``config_hash``,
``abstraction_hash``, ``game`` ``{"name", "acpc"}`` (the preset or path as given, and the ACPC
text), ``bets`` ``{"name", "toml", "hash"}`` (TOML and content hash of the bet abstraction; None and
"limit" for limit games: enough to rebuild the tree), ``cards`` ``{"name", "kind", "num_buckets",
"hash", "source_hash", "method"}`` (the card abstraction: lossless, rank, a recipe or a built path,
and its content hash), ``tree`` ``{"hash", "num_nodes", "decision_nodes"}``, ``table_entries`` and
``config`` (the run's resolved config). The arrays, exactly, in this order
(:data:`~blueprint.io.blueprint_file.BLUEPRINT_ARRAYS`): ``probs`` ``<f4[table_entries]`` (the
average strategy per (node, bucket, action) in the table layout: decision node ``n``'s block starts
at ``row_offset[n]``, bucket ``b``'s row at ``row_offset[n] + b * num_actions[n]``), ``row_offset``
``<i8[num_nodes]`` (-1 for non-decisions), ``num_buckets`` ``<i8[rounds]``, ``node_round``
``|i1[num_nodes]``, ``num_actions`` ``<i2[num_nodes]``. Besides the rules below, a reader requires
the header fields' types and ranges (at most 50M nodes, 64 rounds, 2**31 buckets a round) and
derives every array's exact shape from them before allocating; the layout arrays must describe the
contiguous table layout of ``table_entries`` entries; every entry of ``probs`` lies in [0, 1] and
every row sums to 1 within :data:`~blueprint.io.blueprint_file.BLUEPRINT_ROW_TOLERANCE` (plus 1e-6
per action). :func:`~blueprint.io.blueprint_file.write_blueprint` refuses what a reader would
refuse. ``Blueprint.load`` also rebuilds the tree from ``game`` and ``bets`` and checks its hash,
loads the card abstraction (never building it) and checks its hash, before the arrays are read.

Manifest format: one msgpack map, the caller's keys plus ``magic`` ("MCCFRMAN"),
``format_version``, ``iteration``, ``files`` ([{"file", "bytes", "blake2b"}]) and
``manifest_blake2b``, the digest of the map packed without that key (msgpack packing of the
decoded map is deterministic, so the reader re-packs and compares).

Values in ``meta`` and in manifests must be msgpack types (None, bool, int within 64 bits, float,
str, bytes, lists, maps); numpy scalars are converted, arrays are refused (put them in ``arrays``).
Tuples come back as lists. Generator state (128-bit integers, arrays) goes through
:func:`~blueprint.io.rng_state.encode_rng_state` / :func:`~blueprint.io.rng_state.decode_rng_state`.

Reading trusts no file. Every reader enforces these rules and refuses a file that breaks one with a
:class:`CheckpointError` naming the file (and the array) and the reason;
:func:`~blueprint.checkpoints.load_latest` then skips that checkpoint for the next older complete
one:

* Only regular files are read (symlinks are followed to one): a device (``/dev/zero``), FIFO, socket
  or directory is refused by ``stat`` before it is opened and by ``fstat`` after (opened
  non-blocking). No byte past the size the manifest records is read (past the file's ``fstat`` size
  without a manifest); a manifest larger than 64 MiB is refused unread.
* Every size a header declares is checked before anything is allocated: shapes and dtypes
  (``[<>|][biufc]N``, bool / integer / float / complex only) must agree with ``nbytes`` and the
  chunk count, and the arrays' total must fit in what the file can decompress to: lz4 never expands
  data more than 255 times (each match byte codes at most 255 output bytes), so at most ``255 *
  (file size - 16)`` bytes, or the frame's declared content size when it has one. Given the run's
  layout (``layout=`` of :func:`~blueprint.checkpoints.load_latest`, one :class:`ArraySpec` per
  array) every array must have exactly the layout's name, dtype and shape, and the file may be at
  most about 1% larger than the layout's raw bytes.
* msgpack unpacking runs with limits bounded by those sizes: strings and bins at most the
  decompressed bound (and 256 MiB), arrays and maps at most that many items and 2**20, no extension
  types, so a hostile header cannot make the unpacker preallocate a huge list or map.
* Float and complex arrays must be finite (NaN or inf in regrets or strategy sums means a corrupt
  file: training never produces them, and :func:`~blueprint.io.shard_file.write_shard` refuses to
  write them); a layout may set a minimum (strategy sums are >= 0).
* Run progress must be possible. ``iteration`` is an int with ``0 <= iteration <= 2**53`` that
  equals the directory name. When the manifest records them (the trainers do): ``t_base``,
  ``node_visits``, ``pruned`` are ints >= 0, ``seconds`` and ``w_base`` finite numbers >= 0,
  ``t_base <= iteration`` (the last discount boundary cannot lie ahead), ``w_base <= t_base``
  (discounting never adds iterations), and ``iteration <= 1e9 * seconds + 2**20``: ``seconds`` is
  the training time the run has recorded, across resumes, and no trainer here comes within two
  orders of magnitude of 1e9 iterations a second (Kuhn, the smallest game, runs about 1.4M a second
  on one core; a Ray job's ``seconds`` is wall time, so a cluster would need hundreds of such cores
  to reach it). :func:`~blueprint.io.manifest.write_manifest` applies the same rules, so a
  checkpoint it writes can always be read back. A digest is not a signature: a forger who rewrites
  every field consistently (and reseals the digests) is not detected by these rules.

:func:`~blueprint.io.shard_file.read_shard_bytes`,
:func:`~blueprint.io.manifest.read_manifest_bytes` and
:func:`~blueprint.io.blueprint_file.read_blueprint_bytes` parse a file's bytes from memory with the
same checks; :func:`~blueprint.io.shard_file.fuzz_read_shard_bytes` /
:func:`~blueprint.io.manifest.fuzz_read_manifest_bytes` /
:func:`~blueprint.io.blueprint_file.fuzz_read_blueprint_bytes` are fuzzing entry points (None for a
refused input; any exception escaping them is a bug; ``scripts/tools/fuzz_parsers.py`` targets
``checkpoint`` and ``blueprint``)."""

from __future__ import annotations

import dataclasses
import math
import re
import struct
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import lz4.frame
import msgpack
import numpy as np

from blueprint.io.codec import (
    DECODE_ERRORS,
    UNPACK_MAX_BUFFER,
    is_int,
    packb,
    unpack_limits,
    unpackb_limited,
)
from blueprint.io.errors import CheckpointError
from blueprint.io.streams import (
    IO_BUFFER,
    HashingReader,
    HashingWriter,
    atomic_write,
    digest_problem,
    open_regular,
    write_failed,
)
from mccfr_util.files import BoundedReader, Lz4FrameReader, lz4_content_size

__all__ = [
    "CHUNK_BYTES",
    "MAX_ITERATION",
    "ArraySpec",
    "FileFormat",
    "check_values",
    "decode_container",
    "read_container",
    "write_container",
]

CODEC_LZ4_FRAME = 1
HEADER = struct.Struct("<8sII")  # magic, format version, codec
CHUNK_BYTES = 16 << 20  # bytes of array data per msgpack bin object
_ARRAY_KINDS = "biufc"  # bool, signed, unsigned, float, complex: raw bytes are the whole value
_DTYPE_RE = re.compile(r"[<>|][biufc][0-9]{1,2}")  # numpy dtype.str of those kinds
_MAX_NDIM = 32  # numpy 1.x's limit (2.x allows 64); the writer refuses more

# Reading hostile files (module docstring).
_LZ4_MAX_RATIO = 255  # no lz4 frame decompresses to more than 255x its size
_LZ4_FRAME_HEADER_MAX = 19  # magic, FLG, BD, content size (8), dictionary id (4), checksum
_HEADER_ALLOWANCE = 1 << 20  # header object, chunk headers and trailer of a shard (beyond its arrays)
_DRAIN_MAX = 64 << 20  # hash at most this much of a file that failed to decode, to name a digest mismatch
_VALUE_BLOCK = 1 << 22  # elements per finiteness / range pass (bounds the temporaries)

MAX_ITERATION = 2**53


@dataclasses.dataclass(frozen=True)
class FileFormat:
    """One file format of the shard container (magic, version, what messages call it, the header key
    holding the file's index, if any)."""

    magic: bytes
    version: int
    label: str
    kind: str
    index_key: str | None
    chunk_bytes: int | None = None  # bytes of array data per msgpack bin object (None: CHUNK_BYTES)

    @property
    def chunk(self) -> int:
        return self.chunk_bytes or CHUNK_BYTES


@dataclasses.dataclass(frozen=True)
class ArraySpec:
    """What the run's layout says one array of a shard must be (see ``layout`` of :func:`blueprint.checkpoints.load_latest`).

    Attributes:
        dtype: the exact dtype (byte order included).
        shape: the exact shape.
        min: if set, the smallest value allowed (e.g. 0 for strategy sums).
        max: if set, the largest value allowed (e.g. the discount boundaries a row's epoch may
            have reached).
    """

    dtype: np.dtype
    shape: tuple[int, ...]
    min: float | None = None
    max: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def write_container(
    ckpt_dir: Path,
    name: str,
    fmt: FileFormat,
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
            check_values(arr, "(being written)", key, None, fmt)
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
    header = packb({**head, "meta": dict(meta), "arrays": descriptors})
    if len(header) > UNPACK_MAX_BUFFER:
        raise ValueError(f"{what}: its metadata packs to {len(header):,} bytes, more than a reader accepts")
    try:
        unpackb_limited(header)  # lists or maps too long for a reader fail here, with nothing on disk
    except ValueError as exc:
        raise ValueError(f"{what}: its metadata could not be read back: {exc}") from None
    trailer = packb({"end": len(descriptors)})

    def body(sink: HashingWriter) -> None:
        sink.write(HEADER.pack(fmt.magic, fmt.version, CODEC_LZ4_FRAME))
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
        return atomic_write(ckpt_dir, name, body)
    except OSError as exc:
        raise write_failed(ckpt_dir / name, exc) from exc


# ---------------------------------------------------------------------------------------------
# reading: every file is hostile until checked


@dataclasses.dataclass(frozen=True)
class _ArrayDesc:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    nbytes: int
    chunks: int
    spec: ArraySpec | None


def _check_header(
    header: Any,
    path: str,
    size: int,
    bound: int,
    spec: Mapping[str, ArraySpec] | Callable | None,
    fmt: FileFormat,
) -> tuple[int, dict[str, Any], list[_ArrayDesc]]:
    """Validate a shard's header object completely, before any array is allocated.

    ``spec`` may be a callable: given the header's ``meta`` (a dict), it returns the layout (or
    None); it runs once the header object is known to be well formed, before any array is
    checked or allocated (a :class:`CheckpointError` it raises marks the file as refused; any
    other exception is re-raised as it is, see :class:`_SpecFailed`)."""
    if not isinstance(header, dict):
        raise CheckpointError(f"{fmt.label} {path}: malformed header object")
    shard, meta, arrays = (
        header.get(fmt.index_key) if fmt.index_key else 0,
        header.get("meta"),
        header.get("arrays"),
    )
    if not is_int(shard) or shard < 0 or not isinstance(meta, dict) or not isinstance(arrays, list):
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
        if spec is not None and size > _max_file_bytes(spec):
            raise CheckpointError(
                f"{fmt.label} {path} is {size:,} bytes, more than a file of this layout can be "
                f"({_max_file_bytes(spec):,})"
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
            or not all(is_int(n) and n >= 0 for n in shape)
        ):
            raise CheckpointError(f"{where} has a bad shape {shape!r}")
        nbytes, chunks = desc.get("nbytes"), desc.get("chunks")
        if not is_int(nbytes) or math.prod(shape) * dtype.itemsize != nbytes:
            raise CheckpointError(
                f"{where}: shape {shape} dtype {dtype} does not match its declared {nbytes!r} bytes"
            )
        if not is_int(chunks) or chunks != -(-nbytes // fmt.chunk):
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


def check_values(arr: np.ndarray, path: str, name: str, spec: ArraySpec | None, fmt: FileFormat) -> None:
    """Refuse NaN / inf (a checkpoint's tables are always finite) and values below ``spec.min``
    or above ``spec.max``."""
    kind = arr.dtype.kind
    lowest = spec.min if spec is not None else None
    highest = spec.max if spec is not None else None
    if kind not in "fc" and ((lowest is None and highest is None) or kind == "b"):
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
        if highest is not None and kind != "c":
            high = block > highest
            if high.any():
                first = start + int(np.argmax(high))
                raise CheckpointError(
                    f"{fmt.label} {path}: array {name!r} holds values above {highest} (the first at "
                    f"index {first}: {flat[first]}), impossible for this table"
                )


class _SpecFailed(Exception):
    """Carries an exception a ``spec`` callable raised out of the decoder unchanged."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def decode_container(
    src: Any,
    path: str,
    size: int,
    spec: Mapping[str, ArraySpec] | Callable | None,
    fmt: FileFormat,
) -> tuple[dict[str, np.ndarray], dict[str, Any], int]:
    """Decode a shard file (or another file of the container format ``fmt``) of ``size`` bytes
    from ``src`` (which yields at most ``size`` bytes)."""
    head = src.read(HEADER.size)
    if len(head) < HEADER.size:
        raise CheckpointError(f"{fmt.label} {path} is truncated: {len(head)} bytes, shorter than its header")
    magic, version, codec = HEADER.unpack(head)
    if magic != fmt.magic:
        raise CheckpointError(
            f"{path} is not an mccfr {fmt.kind} file: bad magic {magic!r}, expected {fmt.magic!r}"
        )
    if version != fmt.version:
        raise CheckpointError(
            f"{fmt.label} {path} has format version {version}; this build reads version {fmt.version}"
        )
    if codec != CODEC_LZ4_FRAME:
        raise CheckpointError(f"{fmt.label} {path} has unknown codec {codec}")
    # No lz4 frame decompresses to more than 255 times its size: that bounds every length below.
    bound = _LZ4_MAX_RATIO * max(size - HEADER.size, 0)
    lead = src.read(_LZ4_FRAME_HEADER_MAX)
    content_size = lz4_content_size(lead)
    if content_size is not None:
        if content_size > bound:
            raise CheckpointError(
                f"{fmt.label} {path}: its lz4 frame declares {content_size:,} bytes of content, more than "
                f"a {size:,}-byte file can hold ({bound:,})"
            )
        bound = content_size
    frame = Lz4FrameReader(src, f"{fmt.label} {path}", CheckpointError, bound, content_size, lead=lead)
    unpacker = msgpack.Unpacker(
        frame,
        read_size=IO_BUFFER,
        max_buffer_size=UNPACK_MAX_BUFFER,
        raw=False,
        strict_map_key=False,
        **unpack_limits(bound),
    )
    try:
        header = unpacker.unpack()
        shard, meta, descs = _check_header(header, path, size, bound, spec, fmt)
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
            check_values(arr, path, desc.name, desc.spec, fmt)
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
    except DECODE_ERRORS as exc:
        raise CheckpointError(f"{fmt.label} {path} is corrupt: {type(exc).__name__}: {exc}") from exc
    return arrays, meta, shard


def _max_file_bytes(spec: Mapping[str, ArraySpec]) -> int:
    """The largest shard file that can hold exactly ``spec``: lz4 stores a block it cannot shrink
    as it is (8 bytes of block size and checksum per 64 KiB block, 1% allowed), plus room for
    the header object, chunk headers and trailer."""
    data = sum(s.nbytes for s in spec.values())
    return HEADER.size + data + data // 100 + _HEADER_ALLOWANCE


def read_container(
    path: Path,
    expected: Mapping[str, Any] | None = None,
    *,
    fmt: FileFormat,
    verify: bool = True,
    spec: Mapping[str, ArraySpec] | Callable | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, Any], int]:
    """Read a shard, optionally checking it against its manifest entry in the same pass.

    With ``expected`` (the manifest entry) the file must have exactly the recorded size and no byte
    past it is read; with ``verify`` its blake2b digest must match too. A digest or size mismatch
    is reported in preference to the decoding error it causes (when the rest of the file is
    small enough to hash). With ``spec`` (the run's layout for this shard) every array must match
    it before anything is allocated.
    """
    raw, size = open_regular(path, fmt.label)
    with raw:
        try:
            if expected is not None and size != expected["bytes"]:
                raise CheckpointError(
                    f"size mismatch for {path}: the manifest says {expected['bytes']} bytes, the file has {size}"
                )
            if spec is not None and not callable(spec) and size > _max_file_bytes(spec):
                raise CheckpointError(
                    f"{fmt.label} {path} is {size:,} bytes, more than a shard of this run's layout can be "
                    f"({_max_file_bytes(spec):,})"
                )
            src = HashingReader(BoundedReader(raw, size))
            try:
                result = decode_container(src, str(path), size, spec, fmt)
            except CheckpointError as exc:
                if expected is None or not verify or size - src.size > _DRAIN_MAX:
                    raise
                src.drain()
                mismatch = digest_problem(path, expected, src.size, src.hash.hexdigest())
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
            mismatch = digest_problem(path, expected, src.size, src.hash.hexdigest())
            if mismatch:
                raise CheckpointError(mismatch)
    return result
