"""A built card-abstraction directory is read as hostile (users share them): whatever
``abstraction.bin`` is, reading it ends in a correct load or an AbstractionError naming the file and
the problem, fast and within a small memory bound: devices, FIFOs, lz4 bombs, truncation, counts
that do not fit the game, a forged content hash, and (Hypothesis) mutated bytes of real small-deck
files. The long-run fuzzer over the same reader is ``scripts/tools/fuzz_parsers.py --target abstraction``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import time
import tracemalloc
from pathlib import Path

import lz4.frame
import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abstraction.bucket_common import card_structure
from abstraction.buckets import AbstractionError, build_buckets
from abstraction.cards import default_card_abstraction, from_file
from abstraction.isomorphism import HandIndexer
from abstraction.storage import MAGIC, VERSION, content_hash, fuzz_read_abstraction_bytes, read_abstraction
from holdem.gamedef import PRESETS, GameDef

# a 24-card, three-round hold'em (as tests/abstraction/test_buckets.py) and leduc
SMALL = GameDef(
    "nolimit", 3, (2000, 2000), (100, 50), (0, 0, 0), (1, 0, 0), (255, 255, 255), 4, 6, 2, (0, 3, 1), "tiny"
)
LEDUC = PRESETS["leduc"]
GAMES = {"tiny": SMALL, "leduc": LEDUC}
MIB = 1 << 20

FUZZ = settings(  # as tests/holdem/test_fuzz_parsers.py
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


class DeadlineExceeded(BaseException):
    """Not an OSError: the code under test must not swallow it."""


@contextlib.contextmanager
def bounded(seconds: float = 5.0, memory: int = 256 * MIB):
    """Fail (instead of hanging) past ``seconds`` and assert the peak traced allocation (numpy's
    array data included) stays below ``memory``."""

    def expired(signum, frame):
        raise DeadlineExceeded(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.perf_counter() - t0 < seconds
    assert peak < memory, f"peak allocation {peak:,} bytes"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Real built abstraction directories of two small decks."""
    out = {}
    for key, game, counts in (("tiny", SMALL, (10, 8, 8)), ("leduc", LEDUC, (3, 4))):
        d = tmp_path_factory.mktemp(key)
        build_buckets(game, counts, "ehs2", d, progress=False, log=lambda m: None)
        out[key] = d
    return out


@pytest.fixture(scope="module")
def files(built) -> dict[str, bytes]:
    return {k: (d / "abstraction.bin").read_bytes() for k, d in built.items()}


def split(data: bytes) -> tuple[dict, list[bytes]]:
    obj = msgpack.unpackb(lz4.frame.decompress(data[12:]), raw=False)
    return obj["header"], obj["tables"]


def seal(stream: bytes, **lz4_args) -> bytes:
    """An abstraction file around a (maybe mutated) msgpack stream, compressed afresh."""
    return MAGIC + struct.pack("<I", VERSION) + lz4.frame.compress(stream, **lz4_args)


def forge(header: dict, tables: list[bytes], rehash: bool = True) -> bytes:
    """The file a forger writes: any header and tables, with the content hash recomputed."""
    header = dict(header)
    if rehash:
        with contextlib.suppress(AttributeError, TypeError, ValueError):  # fields a hash cannot take
            arrays = [np.frombuffer(t, "<u2") for t in tables]
            header["hash"] = content_hash(header["cards"], header["method"], header["buckets"], arrays)
    return seal(msgpack.packb({"header": header, "tables": tables}))


def place(tmp_path: Path, data: bytes) -> Path:
    d = tmp_path / "shared-abstraction"
    d.mkdir(exist_ok=True)
    (d / "abstraction.bin").write_bytes(data)
    return d


def check_loaded(got, game: GameDef | None) -> None:
    """What an accepted file must be: tables of the deal's class counts, buckets in range, the
    content hash of what was read."""
    header, tables = got
    ix = HandIndexer.for_game(game) if game is not None else None
    if ix is not None:
        assert header["cards"] == card_structure(game)
        assert [len(t) for t in tables] == [ix.size(r) for r in range(game.num_rounds)]
    assert [len(t) for t in tables] == header["sizes"]
    for t, b in zip(tables, header["buckets"]):
        assert t.dtype == np.uint16 and (len(t) == 0 or int(t.max()) < b)
    assert content_hash(header["cards"], header["method"], header["buckets"], tables) == header["hash"]


# -- the file is not a regular file ----------------------------------------------------------------------
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_symlink_to_dev_zero_is_refused_fast(tmp_path):
    d = tmp_path / "abs"
    d.mkdir()
    (d / "abstraction.bin").symlink_to("/dev/zero")
    for read in (
        lambda: read_abstraction(d),
        lambda: from_file(SMALL, d),
        lambda: default_card_abstraction(SMALL, str(d)),
    ):
        with (
            bounded(),
            pytest.raises(AbstractionError, match=r"abstraction\.bin is a character device, not a regular"),
        ):
            read()


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_mccfr_train_refuses_a_dev_zero_abstraction(tmp_path):
    """What a new user ran: ``mccfr train --abstraction DIR`` hung on main."""
    from click.testing import CliRunner

    from mccfr.cli import cli

    game = tmp_path / "tiny.game"
    game.write_text(SMALL.to_acpc())
    d = tmp_path / "abs"
    d.mkdir()
    (d / "abstraction.bin").symlink_to("/dev/zero")
    with bounded(20):  # the CLI's imports included
        r = CliRunner().invoke(
            cli,
            [
                "train",
                "--game",
                str(game),
                "--abstraction",
                str(d),
                "--iterations",
                "10",
                "--out",
                str(tmp_path / "run"),
            ],
        )
    assert r.exit_code != 0
    assert f"{d / 'abstraction.bin'} is a character device, not a regular file" in r.output, r.output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_or_a_directory_is_refused_without_blocking(tmp_path):
    d = tmp_path / "abs"
    d.mkdir()
    os.mkfifo(d / "abstraction.bin")  # opening it for reading would block until a writer came
    with bounded(), pytest.raises(AbstractionError, match="is a FIFO, not a regular file"):
        from_file(SMALL, d)
    (d / "abstraction.bin").unlink()
    (d / "abstraction.bin").mkdir()
    with bounded(), pytest.raises(AbstractionError, match="is a directory, not a regular file"):
        from_file(SMALL, d)
    (d / "abstraction.bin").rmdir()
    (d / "abstraction.bin").symlink_to(d / "nowhere")
    with bounded(), pytest.raises(AbstractionError, match="does not exist"):
        from_file(SMALL, d)


# -- lz4 bombs ---------------------------------------------------------------------------------------------
_BLOCK = dict(block_size=lz4.frame.BLOCKSIZE_MAX4MB, block_linked=False, content_checksum=False)


def _frame(data: bytes, declared: int | None) -> bytes:
    """An lz4 frame of ``data`` with 4 MiB blocks, declaring ``declared`` bytes of content (or
    nothing), without its 4-byte end mark: blocks can be appended."""
    c = lz4.frame.LZ4FrameCompressor(**_BLOCK)
    frame = c.begin(source_size=declared or 0) + c.compress(data) + c.flush()
    return frame[:-4]


def test_a_13_mb_bomb_is_refused_within_bounds(tmp_path, files):
    """About 13 MB decompressing to 3 GB: zeros only, and a real file's stream followed by zeros
    with the frame declaring the real size ("declared small, decompresses huge") or nothing."""
    zeros = _frame(bytes(4 * MIB), None)[7:] * 800  # 800 blocks of 4 MiB of zeros, ~16 KiB each
    plain = MAGIC + struct.pack("<I", VERSION) + _frame(b"", None) + zeros + bytes(4)
    assert 10 * MIB < len(plain) < 16 * MIB
    stream = lz4.frame.decompress(files["tiny"][12:])
    for declared in (len(stream), None):
        bomb = MAGIC + struct.pack("<I", VERSION) + _frame(stream, declared) + zeros + bytes(4)
        d = place(tmp_path, bomb)
        with (
            bounded(),
            pytest.raises(AbstractionError, match=r"abstraction\.bin is corrupt: data after the last table"),
        ):
            from_file(SMALL, d)
    d = place(tmp_path, plain)
    with bounded(), pytest.raises(AbstractionError, match=r"abstraction\.bin is corrupt"):
        from_file(SMALL, d)
    with bounded(), pytest.raises(AbstractionError, match=r"abstraction\.bin is corrupt"):
        read_abstraction(d)  # without the game


def test_a_declared_huge_content_size_is_refused_before_decompressing(tmp_path, files):
    data = bytearray(files["tiny"])
    data[12 + 6 : 12 + 14] = (1 << 40).to_bytes(8, "little")  # the frame's content size (checksum aside)
    d = place(tmp_path, bytes(data))
    message = r"declares 1,099,511,627,776 bytes of content, more than its [\d,]+ bytes can decompress to"
    with bounded(), pytest.raises(AbstractionError, match=message):
        from_file(SMALL, d)
    with bounded(), pytest.raises(AbstractionError, match=message):
        read_abstraction(d)
    stream = lz4.frame.decompress(files["tiny"][12:])
    frame_header = lz4.frame.LZ4FrameCompressor(**_BLOCK).begin(
        source_size=len(stream) * 100
    )  # a valid header
    frame = frame_header + _frame(stream, None)[7:] + bytes(4)  # within 255x the file, more than the game's
    d = place(tmp_path, MAGIC + struct.pack("<I", VERSION) + frame)
    message = r"declares [\d,]+ bytes of content, its header and the tables of \[36, 21150, 93750\] hand classes take"
    with bounded(), pytest.raises(AbstractionError, match=message):
        from_file(SMALL, d)


def test_a_table_longer_than_the_game_is_refused_before_it_is_allocated(tmp_path, files):
    """A header that is right for the game, then a table declaring 4 GiB (a msgpack bin 32)."""
    header, tables = split(files["tiny"])
    stream = msgpack.packb({"header": header, "tables": tables})
    cut = stream.index(tables[0]) - 2  # bin 8 header of the 36-class preflop table
    for bad in (b"\xc6\xff\xff\xff\xff", b"\xc6\x00\x00\x00\x4a", b"\xc4\x46"):
        d = place(tmp_path, seal(stream[:cut] + bad + stream[cut + 2 :], store_size=False))
        with (
            bounded(memory=16 * MIB),
            pytest.raises(
                AbstractionError, match=r"round 1's table has \d+ bytes, its 36 hand classes need 72"
            ),
        ):
            from_file(SMALL, d)
    huge = b"\xdd\x0f\xff\xff\xff"  # an array header of 268M items costs five bytes
    d = place(tmp_path, seal(stream[: stream.index(b"\xa6tables") + 7] + huge))
    with (
        bounded(memory=16 * MIB),
        pytest.raises(AbstractionError, match="268435455 tables, the deal has 3 rounds"),
    ):
        from_file(SMALL, d)
    d = place(tmp_path, seal(b"\x82\xa6header" + huge))
    with bounded(memory=16 * MIB), pytest.raises(AbstractionError, match="is corrupt"):
        from_file(SMALL, d)


# -- truncation, counts, hash -----------------------------------------------------------------------------
def test_every_truncation_is_refused(tmp_path, files):
    data = files["tiny"]
    for n in sorted({0, 4, 8, 11, 12, 13, 20, 26, 40, 100, len(data) // 2, len(data) - 5, len(data) - 1}):
        d = place(tmp_path, data[:n])
        with (
            bounded(),
            pytest.raises(
                AbstractionError,
                match=r"abstraction\.bin( is truncated| is corrupt|: not an mccfr|: its lz4 frame declares)",
            ),
        ):
            from_file(SMALL, d)
    header, tables = split(data)
    stream = msgpack.packb({"header": header, "tables": tables})
    for n in (10, len(stream) // 3, len(stream) - 1):  # a truncated stream in a whole frame
        d = place(tmp_path, seal(stream[:n]))
        with bounded(), pytest.raises(AbstractionError, match=r"truncated|is corrupt"):
            from_file(SMALL, d)
    d = place(tmp_path, seal(stream + b"\x00", store_size=False))
    with bounded(), pytest.raises(AbstractionError, match="data after the last table"):
        from_file(SMALL, d)
    d = place(tmp_path, data + b"\x00")
    with bounded(), pytest.raises(AbstractionError, match="data after the end of its lz4 frame"):
        from_file(SMALL, d)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(sizes=[36, 21150, 93751]), r"table sizes \[36, 21150, 93751\] are not the deal's hand classes"),
        (dict(sizes=[36, 21150]), "are not the deal's hand classes"),
        (dict(buckets=[10, 8, 70000]), r"bucket counts \[10, 8, 70000\] are not 3 integers"),
        (dict(buckets=[10, 8, 0]), "bucket counts"),
        (dict(buckets=[37, 8, 8]), "bucket counts"),
        (dict(buckets=[10, 8]), "bucket counts"),
        (dict(buckets=[10, 8, 8.0]), "bucket counts"),
        (dict(buckets=[10, 8, True]), "bucket counts"),
        (dict(method="emd"), "unknown bucketing method 'emd'"),
        (dict(version=2), "format version 2 in the header"),
        (
            dict(cards="suits=4 ranks=6 hole=2 board=0,3,2"),
            r"built for another deal \(suits=4 ranks=6 hole=2 board=0,3,2\)",
        ),
        (dict(cards=7), "'cards' is missing or not a str"),
        (dict(hash=12), "content hash '12' is not 16 hex digits"),
    ],
)
def test_counts_that_do_not_fit_the_game_are_refused(tmp_path, files, change, message):
    header, tables = split(files["tiny"])
    header.update(change)
    d = place(tmp_path, forge(header, tables, rehash="hash" not in change))
    with bounded(memory=16 * MIB), pytest.raises(AbstractionError, match=message):
        from_file(SMALL, d)


def test_tables_that_do_not_fit_their_header_are_refused(tmp_path, files):
    header, tables = split(files["tiny"])
    cases = [
        (tables[:2], "2 tables, the deal has 3 rounds"),
        (tables + [tables[0]], "4 tables, the deal has 3 rounds"),
        (
            tables[:2] + [tables[2][:-2]],
            r"round 3's table has 187498 bytes, its 93,750 hand classes need 187,500",
        ),
        (tables[:2] + [tables[2][:-2] + b"\x08\x00"], "round 3 has bucket 8 >= its count 8"),
        (tables[:2] + ["x" * 187500], "round 3's table is not a byte string"),
    ]
    for tabs, message in cases:
        stream = msgpack.packb({"header": header, "tables": tabs})
        d = place(tmp_path, seal(stream, store_size=False))  # no declared size to contradict first
        with bounded(memory=16 * MIB), pytest.raises(AbstractionError, match=message):
            from_file(SMALL, d)
    stream = msgpack.packb({"header": header, "tables": tables[:2] + [tables[2][:-2]]})
    d = place(tmp_path, seal(stream))  # the frame declares the short stream's size
    message = r"frame declares 230,010 bytes of content, its header and the tables of \[36, 21150, 93750\] hand classes take 230,012"
    with bounded(memory=16 * MIB), pytest.raises(AbstractionError, match=message):
        from_file(SMALL, d)
    reordered = msgpack.packb({"tables": tables, "header": header})
    with pytest.raises(AbstractionError, match="not a map of 'header' then 'tables'"):
        from_file(SMALL, place(tmp_path, seal(reordered)))


def test_a_forged_hash_is_refused(tmp_path, files):
    header, tables = split(files["tiny"])
    header["hash"] = "0123456789abcdef"
    d = place(tmp_path, forge(header, tables, rehash=False))
    with bounded(), pytest.raises(AbstractionError, match="content hash mismatch"):
        from_file(SMALL, d)
    # a changed bucket with the old hash
    header, tables = split(files["tiny"])
    t = bytearray(tables[2])
    t[0:2] = (int.from_bytes(t[0:2], "little") ^ 1).to_bytes(2, "little")
    d = place(tmp_path, forge(header, tables[:2] + [bytes(t)], rehash=False))
    with bounded(), pytest.raises(AbstractionError, match="content hash mismatch"):
        from_file(SMALL, d)


def test_the_real_files_still_load_the_same(built, files):
    for key, d in built.items():
        game = GAMES[key]
        got = read_abstraction(d, game)
        check_loaded(got, game)
        assert fuzz_read_abstraction_bytes(files[key], game) is not None
        header, tables = split(files[key])
        for a, b in zip(got[1], tables):
            assert a.tobytes() == b
        with pytest.raises(AbstractionError, match="built for another deal"):
            read_abstraction(d, LEDUC if key == "tiny" else SMALL)


# -- the property: mutated bytes of real files -------------------------------------------------------------
HUGE = [
    0,
    1,
    -1,
    2,
    3,
    8,
    36,
    255,
    256,
    65535,
    65536,
    2**31,
    2**32 + 1,
    2**63 - 1,
    -(2**63),
    2**64 - 1,
    1e300,
]
edit = st.tuples(st.integers(0, 9), st.floats(0, 1), st.integers(1, 40), st.binary(min_size=1, max_size=8))
TOKENS = [
    b"\xdd\x0f\xff\xff\xff", b"\xdf\x0f\xff\xff\xff", b"\xc6\xff\xff\xff\xff", b"\xc5\x00\x48", b"\xc4\x02",
    b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff", b"\xc0", b"\xc3", b"\x90", b"\x80", b"\xa5sizes", b"\xa7buckets",
    b"\xa6tables", b"\xa6header", b"\xa4hash", b"\xa5cards", b"\xa6method",
]  # fmt: skip


def mutate(data: bytes, edits) -> bytes:
    """Insert / delete / replace / truncate / repeat / flip / dictionary tokens, at fractional positions."""
    for op, where, span, payload in edits:
        n = len(data)
        i = int(where * n)
        j = min(n, i + span)
        if op <= 1:
            data = data[:i] + payload + data[i:]
        elif op == 2:
            data = data[:i] + data[j:]
        elif op <= 4:
            data = data[:i] + payload + data[j:]
        elif op == 5:
            data = data[:i]
        elif op == 6:
            data = data[:i] + data[i:j] * (span % 5 + 2) + data[j:]
        elif op == 7 and n:
            k = min(i, n - 1)
            data = data[:k] + bytes([data[k] ^ (1 << (span % 8))]) + data[k + 1 :]
        else:
            data = data[:i] + TOKENS[span % len(TOKENS)] + data[i:]
    return data


def _check(data: bytes, game: GameDef | None) -> None:
    """The property: a correct load or None (an AbstractionError), any other exception escapes."""
    t0 = time.perf_counter()
    got = fuzz_read_abstraction_bytes(data, game)
    assert time.perf_counter() - t0 < 5
    if got is not None:
        check_loaded(got, game)


@FUZZ
@given(st.sampled_from(sorted(GAMES)), st.booleans(), st.lists(edit, min_size=1, max_size=4))
def test_mutated_file_bytes(files, key, with_game, edits):
    _check(mutate(files[key], edits), GAMES[key] if with_game else None)


@FUZZ
@given(st.sampled_from(sorted(GAMES)), st.booleans(), st.lists(edit, min_size=1, max_size=4), st.floats(0, 1))
def test_mutated_streams_resealed(files, key, with_game, edits, focus):
    """The decompressed stream mutated (mostly in its head: header and table lengths) and
    compressed afresh, so the edits reach the checks behind the lz4 frame."""
    stream = lz4.frame.decompress(files[key][12:])
    head = min(len(stream), 400)
    edits = [
        (op, where * head / max(len(stream), 1) if focus < 0.8 else where, span, p)
        for op, where, span, p in edits
    ]
    _check(seal(mutate(stream, edits)), GAMES[key] if with_game else None)


@FUZZ
@given(
    st.sampled_from(sorted(GAMES)),
    st.sampled_from(["version", "cards", "method", "buckets", "sizes", "hash", "sampling"]),
    st.one_of(
        st.sampled_from(HUGE),
        st.lists(st.sampled_from(HUGE), max_size=5),
        st.text(max_size=20),
        st.sampled_from(
            ["suits=4 ranks=13 hole=2 board=0,3,1,1", "suits=4 ranks=6 hole=2 board=0,3,1", "ehs"]
        ),
        st.none(),
    ),
    st.booleans(),
)
def test_forged_headers(files, key, field, value, drop_table):
    """A forger's file: one header field replaced (the hash recomputed), maybe a table dropped."""
    header, tables = split(files[key])
    header[field] = value
    if drop_table:
        tables = tables[:-1]
    data = forge(header, tables, rehash=field != "hash")
    _check(data, GAMES[key])
    _check(data, None)


# -- a blueprint file names its card abstraction: the same reader, the blueprint's error ----------------
def test_a_blueprint_whose_abstraction_turned_hostile_is_refused(tmp_path, files):
    """A run trained with ``--abstraction DIR``; then DIR/abstraction.bin is swapped for a device,
    a FIFO, a bomb or a forged file: ``Blueprint.load`` (what queries run) refuses it, naming it."""
    from blueprint.blueprint import Blueprint, BlueprintError
    from blueprint.trainer import make_trainer

    built = tmp_path / "leduc-abs"
    built.mkdir()
    (built / "abstraction.bin").write_bytes(files["leduc"])
    tr = make_trainer("leduc", cards=str(built), seed=2)
    tr.run(50)
    tr.save(tmp_path / "run")
    f = built / "abstraction.bin"
    header, tables = split(files["leduc"])
    header["hash"] = "0123456789abcdef"
    stream = lz4.frame.decompress(files["leduc"][12:])
    bomb = (
        MAGIC
        + struct.pack("<I", VERSION)
        + _frame(stream, None)
        + _frame(bytes(4 * MIB), None)[7:] * 800
        + bytes(4)
    )
    cases = [
        (lambda: f.symlink_to("/dev/zero"), "not a regular file"),  # blueprint.py checks it first
        (lambda: os.mkfifo(f), "not a regular file"),
        (lambda: f.write_bytes(bomb), "data after the last table"),
        (lambda: f.write_bytes(forge(header, tables, rehash=False)), "content hash mismatch"),
    ]
    for make, message in cases:
        f.unlink()
        make()
        with bounded(), pytest.raises(BlueprintError, match=f"card abstraction .*{message}"):
            Blueprint.load(tmp_path / "run", log=lambda m: None)
    f.unlink()
    f.write_bytes(files["leduc"])
    assert Blueprint.load(tmp_path / "run", log=lambda m: None).iteration == 50
