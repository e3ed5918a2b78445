"""Checkpoint format: round trips, atomicity, corruption handling, pruning, wrong-run refusal."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import msgpack
import numpy as np
import pytest

from blueprint.checkpoints import (
    list_checkpoints,
    load_latest,
    new_checkpoint_dir,
    prune_checkpoints,
    save_checkpoint,
)
from blueprint.io import container
from blueprint.io.errors import CheckpointError
from blueprint.io.manifest import write_manifest
from blueprint.io.rng_state import decode_rng_state, encode_rng_state
from blueprint.io.shard_file import read_shard, shard_name, write_shard
from blueprint.io.streams import HashingWriter

RUN_MANIFEST = {
    "config_hash": "c0ffee",
    "abstraction_hash": "abc123",
    "config": {"game": "leduc", "buckets": (169, 30)},
}


def sample_arrays(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "regrets": rng.standard_normal((7, 3)).astype(np.float32),
        "counts": rng.integers(-(2**31), 2**31 - 1, size=11, dtype=np.int32),
        "visits": rng.integers(0, 2**64 - 1, size=(2, 2, 2), dtype=np.uint64, endpoint=True),
        "actions": rng.integers(-128, 127, size=5, dtype=np.int8),
        "empty_f32": np.zeros((0,), dtype=np.float32),
        "empty_2d": np.zeros((3, 0), dtype=np.int64),
        "scalar": np.array(2.5, dtype=np.float64),
        "flags": np.array([True, False, True]),
        "big_endian": np.arange(4, dtype=">i4"),
        "complex": np.array([1 + 2j, -3j], dtype=np.complex64),
        "transposed": np.arange(12, dtype=np.int16).reshape(3, 4).T,  # not C-contiguous
    }


def assert_same_arrays(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert list(got) == list(want)
    for name, arr in want.items():
        assert got[name].dtype == arr.dtype, name
        assert got[name].shape == arr.shape, name
        assert got[name].tobytes() == np.ascontiguousarray(arr).tobytes(), name
        assert got[name].flags.writeable and got[name].flags.c_contiguous, name


def save(run: Path, iteration: int, seed: int = 0, keep: int | None = None, shards: int = 1) -> Path:
    return save_checkpoint(
        run,
        iteration,
        [(sample_arrays(seed + k), {"shard": k, "rows": [0, 7]}) for k in range(shards)],
        RUN_MANIFEST,
        keep,
    )


def shard_path(ckpt: Path, k: int = 0) -> Path:
    return ckpt / shard_name(k)


# --- round trips ------------------------------------------------------------------------------


def test_shard_round_trip_is_byte_exact(tmp_path: Path) -> None:
    arrays = sample_arrays()
    meta = {"rows": [0, 7], "name": "x", "np_int": np.int64(5), "nested": {1: b"raw"}}
    entry = write_shard(tmp_path, 3, arrays, meta)
    path = tmp_path / "shard-3.msgpack.lz4"
    data = path.read_bytes()
    assert data[:8] == b"MCCFRSHD"
    assert entry["file"] == path.name and entry["bytes"] == len(data)
    assert entry["blake2b"] == hashlib.blake2b(data).hexdigest()
    got, got_meta = read_shard(path)
    assert_same_arrays(got, arrays)
    assert got_meta == {"rows": [0, 7], "name": "x", "np_int": 5, "nested": {1: b"raw"}}
    assert sorted(os.listdir(tmp_path)) == [path.name]  # no temporary left


def test_arrays_split_into_many_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(container, "CHUNK_BYTES", 1000)
    arrays = {"big": np.arange(10_001, dtype=np.float64), "tiny": np.arange(3, dtype=np.uint8)}
    write_shard(tmp_path, 0, arrays, {})
    got, _ = read_shard(tmp_path / "shard-0.msgpack.lz4")
    assert_same_arrays(got, arrays)


def test_bad_arrays_and_meta_are_refused_before_writing(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'names'.*dtype"):
        write_shard(tmp_path, 0, {"names": np.array(["a", "b"])}, {})
    with pytest.raises(TypeError, match="numpy array"):
        write_shard(tmp_path, 0, {}, {"bad": np.zeros(3)})
    assert os.listdir(tmp_path) == []


def test_save_and_load_latest(tmp_path: Path) -> None:
    rng = np.random.default_rng(np.random.SeedSequence(7).spawn(1)[0])
    rng.random(3)
    manifest = dict(RUN_MANIFEST, rng=[encode_rng_state(rng)], iteration=42)
    save_checkpoint(tmp_path, 42, [(sample_arrays(0), {"k": 0}), (sample_arrays(1), {"k": 1})], manifest)
    ckpt = tmp_path / "checkpoints" / "000000000042"
    assert sorted(os.listdir(ckpt)) == ["manifest.msgpack", "shard-0.msgpack.lz4", "shard-1.msgpack.lz4"]
    loaded, shards = load_latest(tmp_path, expect={"config_hash": "c0ffee", "abstraction_hash": "abc123"})
    assert loaded["iteration"] == 42 and loaded["config"] == {"game": "leduc", "buckets": [169, 30]}
    assert [f["file"] for f in loaded["files"]] == ["shard-0.msgpack.lz4", "shard-1.msgpack.lz4"]
    assert [meta for _, meta in shards] == [{"k": 0}, {"k": 1}]
    assert_same_arrays(shards[1][0], sample_arrays(1))
    resumed = decode_rng_state(loaded["rng"][0])
    assert np.array_equal(resumed.random(5), rng.random(5))


@pytest.mark.parametrize("bit_generator", ["PCG64", "Philox", "MT19937", "SFC64"])
def test_rng_state_survives_msgpack(bit_generator: str) -> None:
    rng = np.random.Generator(getattr(np.random, bit_generator)(123))
    rng.integers(0, 10, size=7)
    state = msgpack.unpackb(msgpack.packb(encode_rng_state(rng)), strict_map_key=False)
    assert np.array_equal(decode_rng_state(state).integers(0, 2**62, 9), rng.integers(0, 2**62, 9))


def test_iteration_dirs_are_zero_padded_and_sorted_as_ints(tmp_path: Path) -> None:
    for it in (9, 10, 100, 2):
        save(tmp_path, it)
    infos = list_checkpoints(tmp_path)
    assert [i.iteration for i in infos] == [100, 10, 9, 2]
    assert infos[0].path.name == "000000000100"
    assert all(i.complete and i.problem is None and i.bytes > 0 for i in infos)
    assert load_latest(tmp_path)[0]["iteration"] == 100


# --- atomicity --------------------------------------------------------------------------------


def test_manifest_is_renamed_into_place_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    finals = []
    real_replace = os.replace

    def recording_replace(src: str, dst: str) -> None:
        assert Path(src).parent == Path(dst).parent  # temporary in the same directory
        finals.append(Path(dst).name)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", recording_replace)
    save(tmp_path, 5, shards=3)
    assert finals == ["shard-0.msgpack.lz4", "shard-1.msgpack.lz4", "shard-2.msgpack.lz4", "manifest.msgpack"]


def test_directory_without_manifest_is_incomplete_and_skipped(tmp_path: Path) -> None:
    save(tmp_path, 10, seed=1)
    interrupted = new_checkpoint_dir(tmp_path, 20)
    write_shard(interrupted, 0, sample_arrays(2), {})  # the process died before the manifest
    infos = list_checkpoints(tmp_path)
    assert [(i.iteration, i.complete) for i in infos] == [(20, False), (10, True)]
    assert "missing" in infos[0].problem
    messages: list[str] = []
    manifest, shards = load_latest(tmp_path, log=messages.append)
    assert manifest["iteration"] == 10
    assert_same_arrays(shards[0][0], sample_arrays(1))
    assert len(messages) == 1 and "000000000020" in messages[0]
    # Resuming rewrites the interrupted iteration: the leftover directory is cleared first.
    again = new_checkpoint_dir(tmp_path, 20)
    assert os.listdir(again) == []


def test_existing_complete_checkpoint_is_not_overwritten_silently(tmp_path: Path) -> None:
    save(tmp_path, 3)
    with pytest.raises(CheckpointError, match="already exists"):
        new_checkpoint_dir(tmp_path, 3)
    save_checkpoint(tmp_path, 3, [(sample_arrays(9), {})], RUN_MANIFEST, replace=True)
    assert_same_arrays(load_latest(tmp_path)[1][0][0], sample_arrays(9))


def test_disk_full_keeps_previous_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save(tmp_path, 100, seed=1)
    real_write = HashingWriter.write
    calls = {"n": 0}

    def full_disk_write(self: HashingWriter, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] > 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(self, data)

    monkeypatch.setattr(HashingWriter, "write", full_disk_write)
    with pytest.raises(CheckpointError) as err:
        save(tmp_path, 200, seed=2)
    message = str(err.value)
    assert "failed" in message and "No space left on device" in message
    assert "previous checkpoint" in message and "000000000100" in message
    monkeypatch.undo()
    assert [i.iteration for i in list_checkpoints(tmp_path)] == [100]  # partial directory removed
    manifest, shards = load_latest(tmp_path)
    assert manifest["iteration"] == 100
    assert_same_arrays(shards[0][0], sample_arrays(1))


def test_failed_shard_write_removes_temporary_and_keeps_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_shard(tmp_path, 0, sample_arrays(1), {"v": 1})
    before = (tmp_path / "shard-0.msgpack.lz4").read_bytes()

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(CheckpointError, match="shard-0.msgpack.lz4.*failed.*No space left"):
        write_shard(tmp_path, 0, sample_arrays(2), {"v": 2})
    with pytest.raises(CheckpointError, match="manifest.msgpack.*failed"):
        write_manifest(tmp_path, {}, [])
    assert os.listdir(tmp_path) == ["shard-0.msgpack.lz4"]
    assert (tmp_path / "shard-0.msgpack.lz4").read_bytes() == before


# --- corruption -------------------------------------------------------------------------------


def test_truncated_shard_is_skipped_and_named(tmp_path: Path) -> None:
    save(tmp_path, 1, seed=1)
    newest = save(tmp_path, 2, seed=2)
    path = shard_path(newest)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(CheckpointError, match="truncated"):
        read_shard(path)
    messages: list[str] = []
    manifest, shards = load_latest(tmp_path, log=messages.append)
    assert manifest["iteration"] == 1
    assert_same_arrays(shards[0][0], sample_arrays(1))
    assert len(messages) == 1 and str(path) in messages[0] and "size mismatch" in messages[0]
    assert not list_checkpoints(tmp_path)[0].complete


@pytest.mark.parametrize("verify", [True, False])
def test_flipped_byte_is_detected(tmp_path: Path, verify: bool) -> None:
    save(tmp_path, 1, seed=1)
    newest = save(tmp_path, 2, seed=2)
    path = shard_path(newest)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    assert list_checkpoints(tmp_path)[0].complete  # same size: only digests can tell
    assert "checksum mismatch" in list_checkpoints(tmp_path, verify=True)[0].problem
    messages: list[str] = []
    manifest, _ = load_latest(tmp_path, verify=verify, log=messages.append)
    assert manifest["iteration"] == 1
    assert len(messages) == 1 and str(path) in messages[0]
    # With digests the mismatch is named; without, lz4's own checksums still refuse the data.
    assert ("checksum mismatch" if verify else "corrupt") in messages[0]


def test_bad_magic_and_version(tmp_path: Path) -> None:
    write_shard(tmp_path, 0, sample_arrays(), {})
    path = tmp_path / "shard-0.msgpack.lz4"
    data = path.read_bytes()
    path.write_bytes(b"NOTASHRD" + data[8:])
    with pytest.raises(CheckpointError, match=r"shard-0.msgpack.lz4 is not an mccfr shard file: bad magic"):
        read_shard(path)
    path.write_bytes(data[:8] + (99).to_bytes(4, "little") + data[12:])
    with pytest.raises(CheckpointError, match="format version 99"):
        read_shard(path)
    path.write_bytes(data[:5])
    with pytest.raises(CheckpointError, match="truncated"):
        read_shard(path)
    path.write_bytes(data + b"junk")
    with pytest.raises(CheckpointError, match="after the end"):
        read_shard(path)
    with pytest.raises(CheckpointError, match="missing"):
        read_shard(tmp_path / "shard-7.msgpack.lz4")


def test_corrupt_manifest_is_skipped(tmp_path: Path) -> None:
    save(tmp_path, 1)
    newest = save(tmp_path, 2)
    manifest_path = newest / "manifest.msgpack"
    fields = msgpack.unpackb(manifest_path.read_bytes())
    fields["config_hash"] = "tampered"
    manifest_path.write_bytes(msgpack.packb(fields))
    messages: list[str] = []
    assert load_latest(tmp_path, log=messages.append)[0]["iteration"] == 1
    assert "checksum mismatch for manifest" in messages[0] and str(manifest_path) in messages[0]
    manifest_path.write_bytes(b"\xc1garbage")
    assert "corrupt" in list_checkpoints(tmp_path)[0].problem


# --- wrong run, no checkpoint -----------------------------------------------------------------


def test_expect_mismatch_raises_without_falling_back(tmp_path: Path) -> None:
    save(tmp_path, 1)
    save(tmp_path, 2)
    with pytest.raises(CheckpointError, match=r"config_hash is 'c0ffee', expected 'deadbeef'"):
        load_latest(tmp_path, expect={"config_hash": "deadbeef"})
    with pytest.raises(CheckpointError, match="has no 'seed'"):
        load_latest(tmp_path, expect={"seed": 1})
    # msgpack turns tuples into lists; an expected tuple still matches.
    manifest, _ = load_latest(tmp_path, expect={"config": RUN_MANIFEST["config"], "iteration": np.int64(2)})
    assert manifest["iteration"] == 2


def test_no_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=rf"no complete checkpoint in {tmp_path}.*no checkpoints found"):
        load_latest(tmp_path)
    new_checkpoint_dir(tmp_path, 4)
    with pytest.raises(CheckpointError, match=r"no complete checkpoint.*000000000004.*missing"):
        load_latest(tmp_path, log=lambda _: None)


# --- pruning ----------------------------------------------------------------------------------


def test_prune_keeps_newest_complete(tmp_path: Path) -> None:
    for it in (1, 2, 3):
        save(tmp_path, it)
    new_checkpoint_dir(tmp_path, 0)  # stale incomplete, older than the newest complete: removed
    for it in (4, 5):
        save(tmp_path, it, keep=2)
    new_checkpoint_dir(tmp_path, 6)  # newer incomplete (maybe being written): kept
    removed = prune_checkpoints(tmp_path, keep=2)
    assert removed == []
    assert [(i.iteration, i.complete) for i in list_checkpoints(tmp_path)] == [
        (6, False),
        (5, True),
        (4, True),
    ]
    assert prune_checkpoints(tmp_path, keep=1) == [tmp_path / "checkpoints" / "000000000004"]
    with pytest.raises(ValueError, match="keep"):
        prune_checkpoints(tmp_path, keep=0)


def test_pruning_never_counts_a_corrupt_checkpoint_as_kept(tmp_path: Path) -> None:
    for it in (100, 200, 300):
        save(tmp_path, it, seed=it)
    newest = shard_path(tmp_path / "checkpoints" / f"{300:012d}")
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size: only a full verification notices
    newest.write_bytes(bytes(data))
    prune_checkpoints(tmp_path, keep=1)
    left = sorted(i.iteration for i in list_checkpoints(tmp_path))
    assert left == [200, 300]  # the good 200 is kept; the corrupt 300 is not counted, not deleted
    manifest, _ = load_latest(tmp_path, log=lambda m: None)
    assert manifest["iteration"] == 200
