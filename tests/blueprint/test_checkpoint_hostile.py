"""Issue 18, a loader that trusts no file: hostile checkpoints of a real small run are refused
with a CheckpointError naming the file and the reason, quickly and without big allocations, and a
damaged newest checkpoint is skipped for an older complete one.

"The resume path" below is what ``mccfr resume`` does: ``load_latest`` (no layout) then
``Trainer.from_checkpoint``; ``Trainer.load`` (behind ``Blueprint.load`` for checkpoints without a
blueprint file) also checks the run's layout before reading the tables. Blueprint files:
tests/blueprint/test_blueprint_file.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import shutil
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

from blueprint.checkpoints import list_checkpoints, load_latest, new_checkpoint_dir, prune_checkpoints
from blueprint.io.blueprint_file import BLUEPRINT_NAME
from blueprint.io.container import CHUNK_BYTES, read_container
from blueprint.io.errors import CheckpointError
from blueprint.io.manifest import (
    MANIFEST_NAME,
    fuzz_read_manifest_bytes,
    read_manifest,
    read_manifest_bytes,
    write_manifest,
)
from blueprint.io.shard_file import (
    SHARD_FORMAT,
    fuzz_read_shard_bytes,
    read_shard,
    read_shard_bytes,
    shard_name,
    write_shard,
)
from blueprint.trainer import Trainer, make_trainer

OLD, NEW = 200, 400  # the run's two checkpoints
TIB = 1 << 40


# --- helpers ----------------------------------------------------------------------------------


class DeadlineExceeded(BaseException):
    """Not an OSError (as TimeoutError is): the code under test must not swallow it."""


@contextlib.contextmanager
def deadline(seconds: float):
    """Fail (instead of hanging the suite) if the block takes longer than ``seconds``; also
    assert it took less than that."""

    def expired(signum, frame):
        raise DeadlineExceeded(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds * 3, 1.0)  # and again every second
    t0 = time.perf_counter()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.perf_counter() - t0 < seconds


@contextlib.contextmanager
def small_memory(limit: int = 64 << 20):
    """Assert the block's peak traced allocation (numpy's array data included) stays below ``limit``."""
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < limit, f"peak allocation {peak:,} bytes"


def ckpt_dir(run: Path, iteration: int) -> Path:
    return run / "checkpoints" / f"{iteration:012d}"


def shard0(run: Path, iteration: int = NEW) -> Path:
    return ckpt_dir(run, iteration) / shard_name(0)


def reseal_manifest(ckpt: Path, change=None) -> None:
    """Apply ``change(fields)`` to the manifest, refresh every file entry from the files on
    disk (size and blake2b of whatever each name now is) and recompute the manifest digest,
    as a forger would."""
    path = ckpt / MANIFEST_NAME
    fields = msgpack.unpackb(path.read_bytes(), strict_map_key=False)
    fields.pop("manifest_blake2b")
    for entry in fields["files"]:
        f = ckpt / entry["file"]
        data = f.read_bytes() if f.is_file() else b""
        entry["bytes"], entry["blake2b"] = len(data), hashlib.blake2b(data).hexdigest()
    if change is not None:
        change(fields)
    fields["manifest_blake2b"] = hashlib.blake2b(msgpack.packb(fields, use_bin_type=True)).hexdigest()
    path.write_bytes(msgpack.packb(fields, use_bin_type=True))


def drop_blueprint_files(run: Path) -> None:
    """Make ``run`` look like a run from before blueprint files: no blueprint file, none listed
    (so ``Blueprint.load`` reads the trainer checkpoint, the path these tests attack)."""
    for d in sorted((run / "checkpoints").iterdir()):
        if (d / BLUEPRINT_NAME).exists():
            (d / BLUEPRINT_NAME).unlink()
            reseal_manifest(
                d, lambda f: f.update(files=[e for e in f["files"] if e["file"] != BLUEPRINT_NAME])
            )


def split_shard(data: bytes) -> tuple[dict, bytes, bytes]:
    """(header object, its packed bytes, the rest of the decompressed stream) of a shard file."""
    stream = lz4.frame.decompress(data[16:])
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=len(stream) + 1)
    unpacker.feed(stream)
    header = unpacker.unpack()
    n = unpacker.tell()
    return header, stream[:n], stream[n:]


def pack_shard(stream: bytes) -> bytes:
    """A shard file around a decompressed stream (lz4 checksums recomputed: 'resealed')."""
    return struct.pack("<8sII", b"MCCFRSHD", 1, 1) + lz4.frame.compress(
        stream, block_checksum=True, content_checksum=True
    )


def forge_shard(arrays: dict[str, np.ndarray], meta: dict, shard: int = 0) -> bytes:
    """A shard file in the real format, written without the writer's checks (NaN allowed)."""
    descs, body = [], b""
    for name, arr in arrays.items():
        raw = np.ascontiguousarray(arr).tobytes()
        descs.append(
            {
                "name": name,
                "dtype": arr.dtype.str,
                "shape": list(arr.shape),
                "nbytes": len(raw),
                "chunks": -(-len(raw) // CHUNK_BYTES),
            }
        )
        for i in range(0, len(raw), CHUNK_BYTES):
            body += msgpack.packb(raw[i : i + CHUNK_BYTES], use_bin_type=True)
    head = msgpack.packb({"shard": shard, "meta": meta, "arrays": descs}, use_bin_type=True)
    return pack_shard(head + body + msgpack.packb({"end": len(arrays)}))


def same_tables(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> bool:
    return list(got) == list(want) and all(
        got[k].dtype == want[k].dtype
        and got[k].shape == want[k].shape
        and got[k].tobytes() == want[k].tobytes()
        for k in want
    )


def resume_path(run: Path, log) -> Trainer:
    """What ``mccfr resume`` does to load a run."""
    manifest, shards = load_latest(run, log=log)
    return Trainer.from_checkpoint(run, manifest, shards)


def loaders():
    return [
        ("Trainer.load", lambda run, log: Trainer.load(run, log=log)),
        ("resume", resume_path),
    ]


# --- a real small run -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> tuple[Path, Trainer]:
    """A Leduc run with checkpoints at iterations 200 and 400 (pluribus, as ``mccfr train``)."""
    run = tmp_path_factory.mktemp("pristine") / "run"
    tr = make_trainer("leduc", algo="pluribus", seed=3, prune_start=100)
    tr.run(OLD)
    tr.save(run)
    tr.run(NEW - OLD)
    tr.save(run)
    return run, tr


@pytest.fixture
def run(pristine, tmp_path) -> Path:
    dest = tmp_path / "run"
    shutil.copytree(pristine[0], dest, symlinks=True)
    return dest


def assert_older_loaded(run: Path, loader, *reasons: str) -> list[str]:
    """The damaged newest checkpoint is skipped (naming the file and the reasons) for the older."""
    messages: list[str] = []
    with deadline(5), small_memory():
        tr = loader(run, messages.append)
    assert tr.iteration == OLD
    assert len(messages) == 1, messages
    assert f"{NEW:012d}" in messages[0]
    for reason in reasons:
        assert reason in messages[0], messages[0]
    return messages


def test_pristine_run_loads_both_ways(pristine) -> None:
    run, tr = pristine
    for _, load in loaders():
        got = load(run, lambda m: pytest.fail(m))
        assert got.iteration == NEW
        assert np.array_equal(got.regret, tr.regret) and np.array_equal(got.strat, tr.strat)
        assert np.array_equal(got.rng, tr.rng)


# --- attack 2: a header declaring a 1 TiB array -----------------------------------------------


def _declare_terabyte(run: Path) -> Path:
    path = shard0(run)
    header, _, rest = split_shard(path.read_bytes())
    for desc in header["arrays"]:
        if desc["name"] == "strat":
            desc["shape"], desc["nbytes"], desc["chunks"] = [TIB // 4], TIB, -(-TIB // CHUNK_BYTES)
    path.write_bytes(pack_shard(msgpack.packb(header, use_bin_type=True) + rest))
    reseal_manifest(ckpt_dir(run, NEW))
    return path


@pytest.mark.parametrize("name, loader", loaders())
def test_terabyte_array_is_refused_before_allocating(run: Path, name, loader) -> None:
    path = _declare_terabyte(run)
    assert list_checkpoints(run, verify=True)[0].complete  # resealed: sizes and digests agree
    messages = assert_older_loaded(run, loader, str(path), "'strat'", f"{TIB:,} bytes")
    assert "refusing" in messages[0]
    with (
        deadline(5),
        small_memory(),
        pytest.raises(CheckpointError, match=r"'strat' declares 1,099,511,627,776 bytes"),
    ):
        read_shard(path)


def test_terabyte_array_alone_is_a_clear_error(run: Path) -> None:
    from blueprint.blueprint import Blueprint

    drop_blueprint_files(run)  # (a blueprint file is read alone: tests/blueprint/test_blueprint_file.py)
    _declare_terabyte(run)
    shutil.rmtree(ckpt_dir(run, OLD))
    with (
        deadline(5),
        small_memory(),
        pytest.raises(CheckpointError, match=r"no complete checkpoint.*'strat' declares"),
    ):
        Blueprint.load(run, log=lambda m: None)


def test_array_larger_than_the_layout_is_refused_before_allocating(run: Path, pristine) -> None:
    """Within what the file could decompress to, but not this run's layout: the layout says no."""
    tr = pristine[1]
    big = np.zeros(tr.size * 2, np.float32)
    path = shard0(run)
    path.write_bytes(
        forge_shard(
            {"regret": tr.regret, "strat": big, "rng": tr.rng, "epoch": tr.state_arrays()["epoch"]},
            {"shard": 0},
        )
    )
    reseal_manifest(ckpt_dir(run, NEW))
    assert_older_loaded(
        run, lambda r, log: Trainer.load(r, log=log), str(path), "'strat'", f"layout needs <f4[{tr.size}]"
    )


def test_huge_msgpack_containers_are_not_preallocated() -> None:
    """An array header of 2**28 items costs five bytes; the unpacker must not make the list."""
    hostile = [
        pack_shard(b"\xdd\x0f\xff\xff\xff"),  # header object: array of 268M items
        pack_shard(b"\xdf\x0f\xff\xff\xff"),  # map of 268M items
        pack_shard(msgpack.packb({"shard": 0, "meta": {}, "arrays": []})[:-1] + b"\xdd\x0f\xff\xff\xff"),
    ]
    for data in hostile:
        with deadline(5), small_memory(), pytest.raises(CheckpointError, match="<bytes>"):
            read_shard_bytes(data)
    manifest = b"\x82\xa5magic\xa8MCCFRMAN\xa5files\xdd\x0f\xff\xff\xff"
    with deadline(5), small_memory(), pytest.raises(CheckpointError, match="corrupt"):
        read_manifest_bytes(manifest)


def test_lz4_content_size_beyond_the_file_is_refused() -> None:
    frame = bytearray(lz4.frame.compress(b"x" * 100, store_size=True, block_checksum=True))
    frame[6:14] = (TIB).to_bytes(8, "little")  # declared content size (header checksum aside)
    with pytest.raises(CheckpointError, match="declares 1,099,511,627,776 bytes of content"):
        read_shard_bytes(struct.pack("<8sII", b"MCCFRSHD", 1, 1) + bytes(frame))


# --- attack 3: a shard that is a symlink to /dev/zero (and other non-files) --------------------


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("reseal", [False, True])
@pytest.mark.parametrize("name, loader", loaders())
def test_dev_zero_shard_is_refused_fast(run: Path, reseal: bool, name, loader) -> None:
    path = shard0(run)
    path.unlink()
    path.symlink_to("/dev/zero")
    if reseal:  # the manifest now says 0 bytes with the digest of nothing
        reseal_manifest(ckpt_dir(run, NEW))
    assert_older_loaded(run, loader, str(path), "character device, not a regular file")
    with deadline(5):
        with pytest.raises(CheckpointError, match="character device, not a regular file"):
            read_shard(path)
        assert "character device" in list_checkpoints(run, verify=True)[0].problem
        prune_checkpoints(run, keep=1)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_directory_shards_are_refused_fast(run: Path) -> None:
    path = shard0(run)
    path.unlink()
    os.mkfifo(path)  # opening it for reading would block until a writer came
    reseal_manifest(ckpt_dir(run, NEW))
    assert_older_loaded(run, lambda r, log: Trainer.load(r, log=log), str(path), "FIFO")
    with deadline(5), pytest.raises(CheckpointError, match="is a FIFO, not a regular file"):
        read_shard(path)
    path.unlink()
    path.mkdir()
    with deadline(5), pytest.raises(CheckpointError, match="is a directory, not a regular file"):
        read_shard(path)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_hostile_manifest_files_are_refused_fast(run: Path) -> None:
    manifest = ckpt_dir(run, NEW) / MANIFEST_NAME
    manifest.unlink()
    manifest.symlink_to("/dev/zero")
    assert_older_loaded(run, lambda r, log: Trainer.load(r, log=log), str(manifest), "not a regular file")
    manifest.unlink()
    with open(manifest, "wb") as f:  # sparse: 65 MiB claimed, nothing written
        f.truncate(65 << 20)
    with deadline(5), small_memory():
        assert "more than any manifest" in list_checkpoints(run)[0].problem


def test_no_byte_past_the_recorded_size_is_read(run: Path) -> None:
    path = shard0(run)
    data = path.read_bytes()
    path.write_bytes(data + b"\0" * 4096)  # grown after the manifest was written
    with pytest.raises(CheckpointError, match="size mismatch"):
        read_container(path, {"file": path.name, "bytes": len(data), "blake2b": "x"}, fmt=SHARD_FORMAT)
    assert_older_loaded(run, resume_path, str(path), "size mismatch")


# --- attack 4: NaN / inf tables, impossible iterations -----------------------------------------


@pytest.mark.parametrize(
    "array, value, name_loader",
    [("strat", np.nan, 0), ("regret", np.inf, 1), ("strat", -np.inf, 1), ("regret", np.nan, 0)],
)
def test_non_finite_tables_are_refused(
    run: Path, pristine, array: str, value: float, name_loader: int
) -> None:
    tr = pristine[1]
    tables = {
        "regret": tr.regret.copy(),
        "strat": tr.strat.copy(),
        "rng": tr.rng.copy(),
        "epoch": tr.state_arrays()["epoch"].copy(),
    }
    tables[array][[5, 17]] = value
    path = shard0(run)
    path.write_bytes(forge_shard(tables, {"shard": 0, "of": 1, "layout_size": tr.size}))
    reseal_manifest(ckpt_dir(run, NEW))
    loader = loaders()[name_loader][1]
    assert_older_loaded(run, loader, str(path), f"array {array!r} holds 2 non-finite values", "index 5")


def test_non_finite_only_checkpoint_never_answers(run: Path, pristine) -> None:
    from blueprint.blueprint import Blueprint

    tr = pristine[1]
    tables = {
        "regret": np.full(tr.size, np.inf, np.float32),
        "strat": np.full(tr.size, np.nan, np.float32),
        "rng": tr.rng.copy(),
        "epoch": tr.state_arrays()["epoch"].copy(),
    }
    shutil.rmtree(ckpt_dir(run, OLD))
    drop_blueprint_files(run)  # (a blueprint file is read alone: tests/blueprint/test_blueprint_file.py)
    shard0(run).write_bytes(forge_shard(tables, {"shard": 0}))
    reseal_manifest(ckpt_dir(run, NEW))
    with pytest.raises(
        CheckpointError, match=r"no complete checkpoint.*shard-0.msgpack.lz4.*'regret'.*non-finite"
    ):
        Blueprint.load(run, log=lambda m: None)


def test_negative_strategy_sums_are_refused_by_the_layout(run: Path, pristine) -> None:
    tr = pristine[1]
    strat = tr.strat.copy()
    strat[3] = -1.0
    shard0(run).write_bytes(
        forge_shard(
            {"regret": tr.regret, "strat": strat, "rng": tr.rng, "epoch": tr.state_arrays()["epoch"]},
            {"shard": 0},
        )
    )
    reseal_manifest(ckpt_dir(run, NEW))
    assert_older_loaded(run, lambda r, log: Trainer.load(r, log=log), "'strat' holds values below 0.0")


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda e: e[:-1], "array 'epoch' is <i4["),
        (lambda e: e.reshape(-1), "array 'epoch' is <i4["),
        (lambda e: e.astype(np.int64), "array 'epoch' is <i8["),
        (
            lambda e: np.where(np.arange(e.size) == 7, -1, e.reshape(-1)).reshape(e.shape).astype(np.int32),
            "below 0",
        ),
        (
            lambda e: (
                np.where(np.arange(e.size) == 7, 10**6, e.reshape(-1)).reshape(e.shape).astype(np.int32)
            ),
            "above 0",
        ),
    ],
)
def test_rows_epochs_of_the_wrong_length_type_or_range_are_refused(
    run: Path, pristine, change, reason
) -> None:
    """The rows' epochs (tables_format 2): one per information set, int32, between the window's
    first epoch and the iteration's; anything else is refused, by the layout (the older
    checkpoint is loaded) and on the resume path (a clear error)."""
    tr = pristine[1]
    tables = {
        "regret": tr.regret,
        "strat": tr.strat,
        "rng": tr.rng,
        "epoch": change(tr.state_arrays()["epoch"].copy()),
    }
    shard0(run).write_bytes(forge_shard(tables, {"shard": 0}))
    reseal_manifest(ckpt_dir(run, NEW))
    assert_older_loaded(run, lambda r, log: Trainer.load(r, log=log), reason)
    with pytest.raises(CheckpointError, match="'epoch'"):
        resume_path(run, lambda m: None)


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda f: f.update(tables_format=4), "tables_format 4 is not one this build reads"),
        # 3 is 16-bit tables: a 32-bit run's checkpoint that claims it is refused, naming both widths
        (lambda f: f.update(tables_format=3), "holds 16-bit tables, but its config asks for 32-bit tables"),
        (lambda f: f.update(tables_format="2"), "tables_format '2' is not one this build reads"),
        (lambda f: f.pop("tables_format"), "has no rows' epochs, but the shard holds some"),
    ],
)
def test_a_tables_format_that_does_not_match_the_shard_is_refused(run: Path, change, reason) -> None:
    reseal_manifest(ckpt_dir(run, NEW), change)
    with pytest.raises(CheckpointError, match=re.escape(reason)):
        resume_path(run, lambda m: None)
    if "not one this build reads" in reason or "16-bit" in reason:
        assert_older_loaded(run, lambda r, log: Trainer.load(r, log=log), reason)


def test_a_format_2_shard_without_epochs_is_refused(run: Path, pristine) -> None:
    tr = pristine[1]
    shard0(run).write_bytes(
        forge_shard({"regret": tr.regret, "strat": tr.strat, "rng": tr.rng}, {"shard": 0})
    )
    reseal_manifest(ckpt_dir(run, NEW))
    assert_older_loaded(run, lambda r, log: Trainer.load(r, log=log), "lacks the array(s) ['epoch']")
    with pytest.raises(CheckpointError, match="needs the rows' epochs, which the shard lacks"):
        resume_path(run, lambda m: None)


def test_writer_refuses_non_finite_tables(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"'strat'.*NaN or inf.*nothing was written"):
        write_shard(tmp_path, 0, {"strat": np.array([1.0, np.nan], np.float32)}, {})
    with pytest.raises(CheckpointError, match="'c'"):
        write_shard(tmp_path, 0, {"c": np.array([1 + 1j, complex(0, np.inf)])}, {})
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name, loader", loaders())
def test_iteration_10_to_the_15_is_not_resumed_from(run: Path, name, loader) -> None:
    forged = ckpt_dir(run, 10**15)
    shutil.copytree(ckpt_dir(run, NEW), forged)
    reseal_manifest(forged, lambda f: f.update(iteration=10**15))
    messages: list[str] = []
    with deadline(5):
        tr = loader(run, messages.append)
    assert tr.iteration == NEW
    assert len(messages) == 1 and str(forged / MANIFEST_NAME) in messages[0]
    assert "iteration 1,000,000,000,000,000 is implausible" in messages[0]


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"iteration": -1}, "iteration -1 is not an iteration count"),
        ({"iteration": 2**53 + 1}, "more than 2**53"),
        ({"iteration": True}, "is not an iteration count"),
        ({"iteration": 10**15, "seconds": 10.0}, "implausible after 10 s"),
        ({"seconds": float("nan")}, "seconds nan is not a finite number"),
        ({"seconds": -1.0}, "seconds -1.0 is not a finite number"),
        ({"t_base": 500}, "t_base 500 (the last discount boundary) is after iteration 400"),
        ({"w_base": 450.0, "t_base": 400}, "w_base 450.0"),
        ({"node_visits": -3}, "node_visits -3 is not a count"),
    ],
)
def test_impossible_progress_is_refused(pristine, change: dict, reason: str) -> None:
    data = (ckpt_dir(pristine[0], NEW) / MANIFEST_NAME).read_bytes()
    fields = msgpack.unpackb(data, strict_map_key=False)
    fields.pop("manifest_blake2b")
    fields.update(change)
    fields["manifest_blake2b"] = hashlib.blake2b(msgpack.packb(fields, use_bin_type=True)).hexdigest()
    with pytest.raises(CheckpointError, match=r"manifest <bytes>: .*" + re.escape(reason)):
        read_manifest_bytes(msgpack.packb(fields, use_bin_type=True))


def test_writer_refuses_impossible_progress(tmp_path: Path) -> None:
    d = new_checkpoint_dir(tmp_path, 10**15)
    with pytest.raises(ValueError, match="implausible"):
        write_manifest(d, {"seconds": 1.0}, [])
    with pytest.raises(ValueError, match="t_base"):
        write_manifest(d, {"t_base": 10**15 + 1}, [])
    assert not (d / MANIFEST_NAME).exists()


def test_damaged_newest_falls_back_through_several(run: Path, pristine) -> None:
    """Damaged checkpoints newer than the good one: every one is named and skipped."""
    tr = pristine[1]
    for it, damage in ((NEW + 100, "nan"), (NEW + 200, "zero"), (10**12, "iteration")):
        d = ckpt_dir(run, it)
        shutil.copytree(ckpt_dir(run, NEW), d)
        if damage == "nan":
            (d / shard_name(0)).write_bytes(
                forge_shard(
                    {
                        "regret": tr.regret,
                        "strat": tr.strat * np.nan,
                        "rng": tr.rng,
                        "epoch": tr.state_arrays()["epoch"],
                    },
                    {"shard": 0},
                )
            )
        elif damage == "zero":
            (d / shard_name(0)).unlink()
            (d / shard_name(0)).symlink_to("/dev/zero")
        reseal_manifest(d, lambda f, it=it: f.update(iteration=it, seconds=1.0))
    shard0(run).write_bytes(b"MCCFRSHD" + b"\xff" * 40)  # and the 400 one is plain garbage
    messages: list[str] = []
    with deadline(10):
        loaded = Trainer.load(run, log=messages.append)
    assert loaded.iteration == OLD
    assert len(messages) == 4
    assert "implausible" in messages[0] and "character device" in messages[1]
    assert "non-finite" in messages[2] and "size mismatch" in messages[3]


def _ray_style_checkpoint(run: Path, tr: Trainer, bounds: list[list[int]]) -> Path:
    """A checkpoint as the Ray job writes it: regret/strat slices per shard, RNG and bounds in the
    manifest (written with the checkpoint module only)."""
    d = new_checkpoint_dir(run, tr.iteration, replace=True)
    files = [
        write_shard(
            d,
            k,
            {"regret": tr.regret[lo:hi], "strat": tr.strat[lo:hi]},
            {"shard": k, "row_lo": lo, "row_hi": hi, "iteration": tr.iteration, "last_seq": {}},
        )
        for k, (lo, hi) in enumerate(bounds)
    ]
    manifest = tr.manifest()
    manifest["job"] = {
        "workers": 1,
        "shards": len(bounds),
        "batch": 10,
        "bounds": bounds,
        "layout_size": tr.size,
    }
    write_manifest(d, manifest, files)
    return d


def test_ray_style_checkpoints_are_checked_against_their_bounds(pristine, tmp_path: Path) -> None:
    _, tr = pristine
    run = tmp_path / "ray"
    cut = tr.size // 3
    d = _ray_style_checkpoint(run, tr, [[0, cut], [cut, tr.size]])
    got = Trainer.load(run, log=lambda m: pytest.fail(m))
    assert np.array_equal(got.regret, tr.regret) and np.array_equal(got.strat, tr.strat)
    assert np.array_equal(got.rng, tr.rng)
    # bounds that do not cover the table, or shards that do not match their bounds, are refused
    reseal_manifest(d, lambda f: f["job"].update(bounds=[[0, cut], [cut, tr.size + 1]]))
    with pytest.raises(CheckpointError, match=r"job row bounds .* do not cover this run's"):
        Trainer.load(run, log=lambda m: None)
    reseal_manifest(d, lambda f: f["job"].update(bounds=[[0, cut + 1], [cut + 1, tr.size]]))
    with pytest.raises(
        CheckpointError, match=rf"shard-0.msgpack.lz4: array 'regret' is <f4\[{cut}\].*needs <f4\[{cut + 1}\]"
    ):
        Trainer.load(run, log=lambda m: None)
    reseal_manifest(d, lambda f: f["job"].update(bounds=[[0, tr.size]]))
    with pytest.raises(CheckpointError, match="lists 2 shard.*layout has 1"):
        Trainer.load(run, log=lambda m: None)


# --- the in-memory entry points ----------------------------------------------------------------


def test_in_memory_parsers_match_the_file_readers(pristine) -> None:
    ckpt = ckpt_dir(pristine[0], NEW)
    data = (ckpt / shard_name(0)).read_bytes()
    arrays, meta = read_shard_bytes(data)
    want, want_meta = read_shard(ckpt / shard_name(0))
    assert same_tables(arrays, want) and meta == want_meta
    assert fuzz_read_shard_bytes(data) is not None
    assert fuzz_read_shard_bytes(data[:-1]) is None
    manifest = (ckpt / MANIFEST_NAME).read_bytes()
    assert read_manifest_bytes(manifest) == read_manifest(ckpt)
    assert fuzz_read_manifest_bytes(manifest[:-1]) is None


# --- property: mutated headers and manifests end in CheckpointError or equal tables ------------


@pytest.fixture(scope="module")
def pristine16(tmp_path_factory) -> tuple[Path, Trainer]:
    """:func:`pristine` with 16-bit tables (bfloat16 regrets and sums, ``tables_format`` 3)."""
    run = tmp_path_factory.mktemp("pristine16") / "run"
    tr = make_trainer("leduc", algo="pluribus", seed=3, prune_start=100, table_bits=16)
    tr.run(OLD)
    tr.save(run)
    tr.run(NEW - OLD)
    tr.save(run)
    return run, tr


@pytest.fixture(scope="module", params=[32, 16], ids=["bits32", "bits16"])
def material(request, tmp_path_factory):
    """The fuzz tests' material: a checkpoint of 32-bit tables, and one of 16-bit tables."""
    run, tr = request.getfixturevalue("pristine" if request.param == 32 else "pristine16")
    ckpt = ckpt_dir(run, NEW)
    shard_bytes = (ckpt / shard_name(0)).read_bytes()
    _, head_bytes, rest = split_shard(shard_bytes)
    manifest_bytes = (ckpt / MANIFEST_NAME).read_bytes()
    tables, _ = read_shard(ckpt / shard_name(0))
    spec = tr.checkpoint_layout(read_manifest(ckpt))[0]
    scratch = tmp_path_factory.mktemp("fuzz") / "run"
    shutil.copytree(ckpt, scratch / "checkpoints" / ckpt.name)
    return {
        "shard": shard_bytes,
        "head": head_bytes,
        "rest": rest,
        "manifest": manifest_bytes,
        "tables": tables,
        "spec": spec,
        "layout": tr.checkpoint_layout,
        "scratch": scratch,
        "ckpt": scratch / "checkpoints" / ckpt.name,
    }


@st.composite
def mutations(draw, size: int, hot: int):
    """A few byte edits (biased to the first ``hot`` bytes), maybe a cut or an insertion."""
    pos = st.one_of(st.integers(0, max(hot - 1, 0)), st.integers(0, size - 1))
    edits = draw(st.lists(st.tuples(pos, st.integers(0, 255)), min_size=1, max_size=6))
    cut = draw(st.one_of(st.none(), st.integers(0, size)))
    insert = draw(st.one_of(st.none(), st.tuples(pos, st.binary(min_size=1, max_size=9))))
    return edits, cut, insert


def apply(data: bytes, mutation) -> bytes:
    edits, cut, insert = mutation
    out = bytearray(data)
    for at, byte in edits:
        if at < len(out):
            out[at] = byte
    if insert is not None:
        at, blob = insert
        out[at:at] = blob
    if cut is not None:
        del out[cut:]
    return bytes(out)


def load_or_refuse(m, manifest_bytes: bytes | None = None, shard_bytes: bytes | None = None):
    ckpt = m["ckpt"]
    (ckpt / MANIFEST_NAME).write_bytes(manifest_bytes if manifest_bytes is not None else m["manifest"])
    (ckpt / shard_name(0)).write_bytes(shard_bytes if shard_bytes is not None else m["shard"])
    try:
        manifest, shards = load_latest(m["scratch"], log=lambda _: None, layout=m["layout"])
    except CheckpointError:
        return None
    assert len(shards) == 1 and same_tables(shards[0][0], m["tables"])
    return manifest


FUZZ = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(data=st.data())
def test_property_mutated_shard_file(material, data) -> None:
    """Raw bytes of the shard file, not resealed: lz4's checksums and the header checks refuse."""
    m = material
    mutated = apply(m["shard"], data.draw(mutations(len(m["shard"]), 64)))
    for spec in (None, m["spec"]):
        try:
            arrays, _ = read_shard_bytes(mutated, spec=spec)
        except CheckpointError:
            continue
        if spec is not None:
            assert same_tables(arrays, m["tables"])


@FUZZ
@given(data=st.data(), reseal_manifest_too=st.booleans())
def test_property_mutated_shard_header_resealed(material, data, reseal_manifest_too: bool) -> None:
    """Mutations of the decompressed header object, lz4 checksums recomputed, so the header parser
    itself sees them; then through load_latest with the manifest resealed (or not)."""
    m = material
    head = apply(m["head"], data.draw(mutations(len(m["head"]), len(m["head"]))))
    shard = pack_shard(head + m["rest"])
    try:
        arrays, _ = read_shard_bytes(shard, spec=m["spec"])
    except CheckpointError:
        pass
    else:
        assert same_tables(arrays, m["tables"])
    try:
        read_shard_bytes(shard)  # without a layout: refused or read, nothing else
    except CheckpointError:
        pass
    manifest = m["manifest"]
    if reseal_manifest_too:
        fields = msgpack.unpackb(manifest, strict_map_key=False)
        fields.pop("manifest_blake2b")
        fields["files"][0].update(bytes=len(shard), blake2b=hashlib.blake2b(shard).hexdigest())
        fields["manifest_blake2b"] = hashlib.blake2b(msgpack.packb(fields, use_bin_type=True)).hexdigest()
        manifest = msgpack.packb(fields, use_bin_type=True)
    load_or_refuse(m, manifest, shard)


@FUZZ
@given(data=st.data(), reseal=st.booleans())
def test_property_mutated_manifest(material, data, reseal: bool) -> None:
    """Manifest bytes mutated, with or without a recomputed digest: the manifest parser refuses
    or the checkpoint loads the same tables."""
    m = material
    mutated = apply(m["manifest"], data.draw(mutations(len(m["manifest"]), len(m["manifest"]))))
    if reseal:
        try:
            fields = msgpack.unpackb(mutated, strict_map_key=False)
            fields.pop("manifest_blake2b", None)
            fields["manifest_blake2b"] = hashlib.blake2b(msgpack.packb(fields, use_bin_type=True)).hexdigest()
            mutated = msgpack.packb(fields, use_bin_type=True)
        except (ValueError, TypeError, AttributeError, msgpack.UnpackException):
            pass  # not a map any more: the reader must refuse it as it is
    try:
        read_manifest_bytes(mutated)
    except CheckpointError:
        pass
    load_or_refuse(m, manifest_bytes=mutated)


def test_property_material_is_sound(material) -> None:
    assert load_or_refuse(material) is not None
    assert math.prod(material["spec"]["strat"].shape) > 0
