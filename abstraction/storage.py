"""The built card abstraction's file, ``DIR/abstraction.bin``: its format, the writer and the reader
that treats it as hostile (users share these directories, and name them with ``--abstraction DIR``
or through a blueprint).

Format (version 1): magic ``MCCFRABS``, uint32 LE version, then one lz4 frame holding the msgpack
map ``{"header": {...}, "tables": [bin, ...]}``: the header's ``version``, ``cards`` (the card
structure, :func:`abstraction.bucket_common.card_structure`), ``method``, ``buckets`` (per round),
``sizes`` (per round: the deal's number of hand classes), ``hash`` (:func:`content_hash`, 16 hex
digits) and optional extras (``sampling``); per round the uint16 LE bucket of every class. Written
atomically (:mod:`mccfr_util.files`). How it is read: :func:`read_abstraction`.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import struct
from pathlib import Path
from typing import Optional

import lz4.frame
import msgpack
import numpy as np

from abstraction.bucket_common import AbstractionError, card_structure
from abstraction.isomorphism import HandIndexer, IsomorphismError
from holdem.gamedef import GameDef
from mccfr_util.files import LZ4_MAX_RATIO, Lz4FrameReader, atomic_write_bytes, lz4_content_size, open_regular

__all__ = [
    "MAGIC",
    "METHODS",
    "VERSION",
    "content_hash",
    "fuzz_read_abstraction_bytes",
    "read_abstraction",
    "read_abstraction_flat",
    "write_abstraction",
]

MAGIC = b"MCCFRABS"
VERSION = 1
METHODS = ("ehs", "ehs2", "distribution", "potential")  # the last two: abstraction.clustering


def content_hash(cards_text: str, method: str, buckets, tables) -> str:
    h = hashlib.blake2b(digest_size=8)
    h.update(cards_text.encode())
    h.update(method.encode())
    h.update(repr(tuple(buckets)).encode())
    for t in tables:
        h.update(np.ascontiguousarray(t).tobytes())
    return h.hexdigest()


def write_abstraction(
    out_dir, game: GameDef, method: str, buckets, sizes, tables, extra: Optional[dict] = None
) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    text = card_structure(game)
    chash = content_hash(text, method, buckets, tables)
    header = {
        "version": VERSION,
        "cards": text,
        "method": method,
        "buckets": list(buckets),
        "sizes": [int(s) for s in sizes],
        "hash": chash,
        **(extra or {}),
    }
    body = msgpack.packb({"header": header, "tables": [t.astype("<u2").tobytes() for t in tables]})
    data = MAGIC + struct.pack("<I", VERSION) + lz4.frame.compress(body)
    path = out_dir / "abstraction.bin"
    atomic_write_bytes(path, data)
    return path


_HEAD_MAX = 64 << 10  # bytes of the stream before the first table: the map, the header, the keys
_TABLE_CHUNK = 1 << 20  # bytes of table data decompressed, hashed and checked at a time
_HEAD_LIMITS = {  # msgpack limits for the head: no header field comes near them
    "max_buffer_size": _HEAD_MAX,
    "max_str_len": _HEAD_MAX,
    "max_bin_len": _HEAD_MAX,
    "max_array_len": _HEAD_MAX,
    "max_map_len": _HEAD_MAX // 2,
    "max_ext_len": 0,
}
_CARDS_RE = re.compile(r"suits=(\d{1,2}) ranks=(\d{1,2}) hole=(\d{1,2}) board=(\d{1,2}(?:,\d{1,2}){0,7})")
_HASH_RE = re.compile(r"[0-9a-f]{16}")
_DECODE_ERRORS = (
    msgpack.UnpackException,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    OverflowError,
    RecursionError,
)


class _Exact:
    """Exact-length reads over a stream's ``read(n)`` (with bytes pushed back in front)."""

    def __init__(self, src) -> None:
        self._src = src
        self._buf = b""

    def unread(self, data: bytes) -> None:
        self._buf = data + self._buf

    def read_upto(self, n: int) -> bytes:
        """``n`` bytes, fewer only at the end of the stream."""
        parts, have = [], 0
        if self._buf:
            parts.append(self._buf[:n])
            self._buf = self._buf[n:]
            have = len(parts[0])
        while have < n:
            data = self._src.read(n - have)
            if not data:
                break
            parts.append(data)
            have += len(data)
        return b"".join(parts)


def _bin_header_size(nbytes: int) -> int:
    """Bytes of the msgpack bin header of an ``nbytes`` byte string (bin 8, 16 or 32)."""
    return 2 if nbytes < 1 << 8 else 3 if nbytes < 1 << 16 else 5


def _check_header(header, name: str, game: Optional[GameDef]) -> tuple[HandIndexer, list[int]]:
    """The indexer of the header's deal and the bucket counts; AbstractionError unless the header
    is what :func:`write_abstraction` writes for a deal (``game``'s when given) and its sizes are
    that deal's numbers of hand classes."""

    def bad(what: str) -> AbstractionError:
        return AbstractionError(f"{name} is corrupt: {what}")

    if not isinstance(header, dict):
        raise bad(f"the header is a {type(header).__name__}, not a map")
    for key, kind in (("version", int), ("cards", str), ("method", str), ("buckets", list)):
        if not isinstance(header.get(key), kind):
            raise bad(f"the header's {key!r} is missing or not a {kind.__name__}")
    for key in ("sizes", "hash"):
        if key not in header:
            raise bad(f"the header's {key!r} is missing")
    if header["version"] != VERSION:
        raise AbstractionError(
            f"{name}: format version {header['version']} in the header, this mccfr reads {VERSION}"
        )
    cards = header["cards"]
    if game is not None and cards != card_structure(game):
        raise AbstractionError(
            f"{name}: built for another deal ({cards[:120]}), not {game.name or 'this game'}'s "
            f"({card_structure(game)})"
        )
    m = _CARDS_RE.fullmatch(cards)
    if m is None:
        raise bad(f"the header's deal {cards[:120]!r} is not 'suits=S ranks=N hole=H board=B1,B2,...'")
    try:
        indexer = HandIndexer.for_deal(
            int(m[1]), int(m[2]), int(m[3]), tuple(int(b) for b in m[4].split(","))
        )
    except IsomorphismError as exc:
        raise bad(f"the header's deal {cards!r}: {exc}") from None
    R = indexer.num_rounds
    if header["method"] not in METHODS:
        raise bad(
            f"unknown bucketing method {header['method'][:40]!r} (this version has {', '.join(METHODS)})"
        )
    classes = [indexer.size(r) for r in range(R)]
    if header["sizes"] != classes:
        raise bad(
            f"the header's table sizes {str(header['sizes'])[:200]} are not the deal's hand classes {classes}"
        )
    buckets = header["buckets"]
    if len(buckets) != R or not all(
        type(b) is int and 1 <= b <= min(c, 65535) for b, c in zip(buckets, classes)
    ):
        raise bad(
            f"the header's bucket counts {str(buckets)[:200]} are not {R} integers in 1..the round's "
            f"hand classes {classes} (and 65,535)"
        )
    if not isinstance(header["hash"], str) or not _HASH_RE.fullmatch(header["hash"]):
        raise bad(f"the header's content hash {str(header['hash'])[:40]!r} is not 16 hex digits")
    return indexer, classes


def _read_pass(
    open_raw, name: str, game: Optional[GameDef], out: Optional[np.ndarray]
) -> tuple[dict, list[int]]:
    """One pass over an abstraction file (module docstring of :func:`read_abstraction`):
    ``(header, table sizes)``, each table checked (length, bucket range) and the content hash
    verified, using a bounded amount of memory; with ``out`` (uint16, at least the tables' total
    length) the tables are also copied into it, one after another."""
    raw, size = open_raw()
    with contextlib.closing(raw) if hasattr(raw, "close") else contextlib.nullcontext():
        lead = _Exact(raw).read_upto(12)
        if lead[:8] != MAGIC:
            raise AbstractionError(f"{name}: not an mccfr abstraction file (bad magic)")
        if len(lead) < 12:
            raise AbstractionError(f"{name} is truncated after its magic ({size} bytes)")
        (version,) = struct.unpack("<I", lead[8:12])
        if version != VERSION:
            raise AbstractionError(f"{name}: format version {version}, this mccfr reads {VERSION}")
        frame_lead = _Exact(raw).read_upto(14)
        declared = lz4_content_size(frame_lead)
        # the head is read within these bounds; after it, exactly the size the header implies
        limit = LZ4_MAX_RATIO * max(size - 12, 0)  # no lz4 frame expands more
        if declared is not None:
            if declared > limit:
                raise AbstractionError(
                    f"{name}: its lz4 frame declares {declared:,} bytes of content, more than its "
                    f"{size:,} bytes can decompress to; refusing to decompress it"
                )
            limit = declared
        frame = Lz4FrameReader(raw, name, AbstractionError, limit, declared, lead=frame_lead)
        stream = _Exact(frame)
        head = stream.read_upto(_HEAD_MAX)
        unp = msgpack.Unpacker(raw=False, **_HEAD_LIMITS)
        unp.feed(head)
        try:
            if unp.read_map_header() != 2 or unp.unpack() != "header":
                raise AbstractionError(f"{name} is corrupt: not a map of 'header' then 'tables'")
            header = unp.unpack()
            if unp.unpack() != "tables":
                raise AbstractionError(f"{name} is corrupt: no 'tables' after the header")
            num_tables = unp.read_array_header()
        except msgpack.OutOfData:
            raise AbstractionError(
                f"{name} is corrupt: its header is truncated or longer than {_HEAD_MAX:,} bytes"
            ) from None
        except _DECODE_ERRORS as exc:
            raise AbstractionError(f"{name} is corrupt ({type(exc).__name__}: {exc})") from None
        pos = unp.tell()
        stream.unread(head[pos:])
        del head, unp
        _, classes = _check_header(header, name, game)
        R = len(classes)
        if num_tables != R:
            raise AbstractionError(f"{name} is corrupt: {num_tables} tables, the deal has {R} rounds")
        content = pos + sum(_bin_header_size(2 * c) + 2 * c for c in classes)
        if declared is not None and declared != content:
            raise AbstractionError(
                f"{name} is corrupt: its lz4 frame declares {declared:,} bytes of content, its header and "
                f"the tables of {classes} hand classes take {content:,}"
            )
        if content > limit:
            raise AbstractionError(
                f"{name} is truncated or corrupt: its header and the tables of {classes} hand classes take "
                f"{content:,} bytes, more than the file can decompress to ({limit:,}: lz4 expands at most "
                f"{LZ4_MAX_RATIO}x)"
            )
        frame.limit = content + 1  # one byte more: "data after the last table" says what is wrong
        if out is not None and len(out) < sum(classes):
            raise ValueError(f"out holds {len(out)} entries, the tables {sum(classes)}")
        digest = hashlib.blake2b(digest_size=8)
        digest.update(header["cards"].encode())
        digest.update(header["method"].encode())
        digest.update(repr(tuple(header["buckets"])).encode())
        at = 0
        for r, (c, b) in enumerate(zip(classes, header["buckets"])):
            nbytes = 2 * c
            tag = stream.read_upto(1)
            lens = {b"\xc4": 1, b"\xc5": 2, b"\xc6": 4}.get(tag)
            if lens is None:
                raise AbstractionError(f"{name} is corrupt: round {r + 1}'s table is not a byte string")
            got = stream.read_upto(lens)
            if len(got) < lens or int.from_bytes(got, "big") != nbytes:
                raise AbstractionError(
                    f"{name} is corrupt: round {r + 1}'s table has "
                    f"{int.from_bytes(got, 'big') if len(got) == lens else 'a truncated'} bytes, its "
                    f"{c:,} hand classes need {nbytes:,}"
                )
            top = 0
            done = 0
            while done < nbytes:
                chunk = stream.read_upto(min(_TABLE_CHUNK, nbytes - done))
                if len(chunk) < min(_TABLE_CHUNK, nbytes - done):
                    raise AbstractionError(f"{name} is truncated: round {r + 1}'s table ends early")
                digest.update(chunk)
                part = np.frombuffer(chunk, "<u2")
                top = max(top, int(part.max()))
                if out is not None:
                    out[at : at + len(part)] = part
                at += len(part)
                done += len(chunk)
            if c and top >= b:
                raise AbstractionError(f"{name} is corrupt: round {r + 1} has bucket {top} >= its count {b}")
        if stream.read_upto(1):
            raise AbstractionError(f"{name} is corrupt: data after the last table")
        if not frame.finished:
            frame.read(1)  # the frame's end: its content size, nothing after it
        if digest.hexdigest() != header["hash"]:
            raise AbstractionError(f"{name}: content hash mismatch (the file is corrupt)")
        return header, classes


def read_abstraction_flat(
    path, game: Optional[GameDef], extra: int = 0
) -> tuple[dict, np.ndarray, list[int]]:
    """``(header, flat, sizes)``: every round's table one after another in ``flat`` (uint16, then
    ``extra`` zero entries for the caller); see :func:`read_abstraction`."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        data = bytes(path)
        name = "abstraction file <bytes>"

        def open_raw():
            return io.BytesIO(data), len(data)

    else:
        path = Path(path)
        if path.is_dir():
            path = path / "abstraction.bin"
        if not os.path.lexists(path):
            raise AbstractionError(f"{path}: no abstraction file (a build that did not finish leaves none)")
        name = f"abstraction file {path}"

        def open_raw():
            return open_regular(path, AbstractionError, "abstraction file")

    # pass 1 allocates nothing that the file's words decide; pass 2 fills tables of the exact
    # sizes pass 1 verified (and verifies again: the file may have changed in between)
    header, sizes = _read_pass(open_raw, name, game, None)
    flat = np.zeros(sum(sizes) + extra, np.uint16)
    header2, sizes2 = _read_pass(open_raw, name, game, flat)
    if header2 != header or sizes2 != sizes:
        raise AbstractionError(f"{name} changed while it was read")
    return header, flat, sizes


def read_abstraction(path, game: Optional[GameDef] = None) -> tuple[dict, list[np.ndarray]]:
    """``(header, tables)`` of ``DIR/abstraction.bin`` (or the file, or its bytes); raises
    :class:`AbstractionError` naming the file and the problem on anything partial, corrupt or
    foreign (``game``: built for another deal).

    The file is read as hostile (a directory users share): only a regular file (symlinks
    followed to one; a device, FIFO, socket or directory is refused unopened), the magic and
    version, the lz4 frame's declared content size (at most what the file can expand to, 255x,
    and what ``game``'s tables take), a msgpack head of at most 64 KiB read with bounded limits, a
    header whose deal (``game``'s when given), method, table sizes (the deal's numbers of hand
    classes) and bucket counts (1..the classes, 65,535) are checked before any table is read, each
    table's declared length against its size, every bucket below its count, nothing after the
    tables or the frame, and the content hash. A first pass checks all of it with about a
    megabyte of memory; only then are the tables allocated and read again.
    """
    header, flat, sizes = read_abstraction_flat(path, game)
    offsets = np.cumsum([0] + sizes)
    return header, [flat[offsets[r] : offsets[r + 1]] for r in range(len(sizes))]


def fuzz_read_abstraction_bytes(
    data: bytes, game: Optional[GameDef] = None
) -> Optional[tuple[dict, list[np.ndarray]]]:
    """Fuzzing entry point: :func:`read_abstraction` of ``data``, None when refused; any exception
    escaping it is a bug (``scripts/tools/fuzz_parsers.py`` target ``abstraction``)."""
    try:
        return read_abstraction(bytes(data), game)
    except AbstractionError:
        return None
