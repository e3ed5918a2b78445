"""Issue 15 item 4: the blueprint file. Every checkpoint holds ``blueprint.msgpack.lz4`` (average
strategy, game, bet abstraction, card abstraction and tree digests); ``Blueprint.load`` reads only
that file (no trainer, no regret tables, no card-abstraction build), refuses a tampered one for an
older checkpoint, and reads runs from before blueprint files the old way.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import lz4.frame
import msgpack
import numpy as np
import pytest

from abstraction.cards import TABLE, CardAbstraction
from blueprint import checkpoints
from blueprint.blueprint import Blueprint, BlueprintError
from blueprint.io import shard_file
from blueprint.io.blueprint_file import (
    BLUEPRINT_ARRAYS,
    BLUEPRINT_MAGIC,
    BLUEPRINT_NAME,
    blueprint_file_payload,
    fuzz_read_blueprint_bytes,
    read_blueprint,
    read_blueprint_bytes,
    write_blueprint,
)
from blueprint.io.errors import CheckpointError
from blueprint.io.manifest import MANIFEST_NAME, read_manifest
from blueprint.io.shard_file import shard_name
from blueprint.tables import layout
from blueprint.trainer import Trainer, make_trainer
from holdem.game import Game
from holdem.state import State

ROOT = Path(__file__).resolve().parents[2]
OLD, NEW = 300, 600
CHUNK = 1 << 20  # bytes of array data per msgpack bin of a blueprint file
RUNS = {
    "leduc": dict(game="leduc", algo="pluribus", seed=3),
    "leduc-nolimit": dict(game=str(ROOT / "tests" / "data" / "leduc_nolimit.game"), bets="fcpa", seed=5),
    "hunl20": dict(game="hunl20", bets="small", cards="rank", algo="pluribus", seed=1),
}


# --- helpers ----------------------------------------------------------------------------------


def ckpt_dir(run: Path, iteration: int) -> Path:
    return run / "checkpoints" / f"{iteration:012d}"


def bp_file(run: Path, iteration: int = NEW) -> Path:
    return ckpt_dir(run, iteration) / BLUEPRINT_NAME


def reseal_manifest(ckpt: Path, change=None) -> None:
    """Refresh the manifest's file entries from the files on disk and its digest, as a forger would."""
    path = ckpt / MANIFEST_NAME
    fields = msgpack.unpackb(path.read_bytes(), strict_map_key=False)
    fields.pop("manifest_blake2b")
    for entry in fields["files"]:
        data = (ckpt / entry["file"]).read_bytes() if (ckpt / entry["file"]).is_file() else b""
        entry["bytes"], entry["blake2b"] = len(data), hashlib.blake2b(data).hexdigest()
    if change is not None:
        change(fields)
    fields["manifest_blake2b"] = hashlib.blake2b(msgpack.packb(fields, use_bin_type=True)).hexdigest()
    path.write_bytes(msgpack.packb(fields, use_bin_type=True))


def split_file(data: bytes) -> tuple[dict, bytes]:
    """(header object, the rest of the decompressed stream) of a shard or blueprint file."""
    stream = lz4.frame.decompress(data[16:])
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=len(stream) + 1)
    unpacker.feed(stream)
    header = unpacker.unpack()
    return header, stream[unpacker.tell() :]


def forge_blueprint(meta: dict, arrays: dict[str, np.ndarray]) -> bytes:
    """A blueprint file in the real format, written without the writer's checks."""
    descs, body = [], b""
    for name, arr in arrays.items():
        raw = np.ascontiguousarray(arr).tobytes()
        descs.append(
            {
                "name": name,
                "dtype": arr.dtype.str,
                "shape": list(arr.shape),
                "nbytes": len(raw),
                "chunks": -(-len(raw) // CHUNK),
            }
        )
        for i in range(0, len(raw), CHUNK):
            body += msgpack.packb(raw[i : i + CHUNK], use_bin_type=True)
    head = msgpack.packb({"meta": meta, "arrays": descs}, use_bin_type=True)
    stream = head + body + msgpack.packb({"end": len(arrays)})
    return struct.pack("<8sII", BLUEPRINT_MAGIC, 1, 1) + lz4.frame.compress(
        stream, block_checksum=True, content_checksum=True
    )


def drop_blueprint_files(run: Path) -> None:
    """A run as written before blueprint files."""
    for d in sorted((run / "checkpoints").iterdir()):
        (d / BLUEPRINT_NAME).unlink()
        reseal_manifest(d, lambda f: f.update(files=[e for e in f["files"] if e["file"] != BLUEPRINT_NAME]))


def random_matchstates(game: Game, n: int, seed: int) -> list[str]:
    """``n`` MATCHSTATEs of the seat to act along random hands (random raise sizes: on and off the
    abstract tree)."""
    rng = random.Random(seed)
    gd = game.gamedef
    out: list[str] = []
    while len(out) < n:
        s = State.initial(game)
        while not s.is_terminal():
            if s.is_chance():
                used = set(s.hole_cards[0] + s.hole_cards[1] + s.board_cards)
                s = s.deal([rng.choice([c for c in range(gd.deck_size) if c not in used])])
                continue
            out.append(s.matchstate(s.current_player()))
            a = rng.choice(s.legal_actions())
            if a.startswith("r") and not gd.is_limit:
                lo, hi = s.raise_range()
                a = f"r{rng.choice((lo, hi, rng.randint(lo, hi)))}"
            s = s.apply(a)
    return out[:n]


def answer(bp: Blueprint, ms: str):
    try:
        return bp.strategy(ms)
    except BlueprintError as exc:
        return type(exc).__name__


# --- runs -------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=list(RUNS))
def trained(request, tmp_path_factory) -> tuple[Path, Trainer]:
    """A run with checkpoints at 300 and 600 iterations, and its trainer at 600."""
    run = tmp_path_factory.mktemp(request.param) / "run"
    tr = make_trainer(**RUNS[request.param])
    tr.run(OLD)
    tr.save(run)
    tr.run(NEW - OLD)
    tr.save(run)
    return run, tr


@pytest.fixture(scope="module")
def leduc_run(tmp_path_factory) -> tuple[Path, Trainer]:
    run = tmp_path_factory.mktemp("leduc") / "run"
    tr = make_trainer(**RUNS["leduc"])
    tr.run(OLD)
    tr.save(run)
    tr.run(NEW - OLD)
    tr.save(run)
    return run, tr


@pytest.fixture
def run(leduc_run, tmp_path) -> Path:
    dest = tmp_path / "run"
    shutil.copytree(leduc_run[0], dest)
    return dest


# --- round trip -------------------------------------------------------------------------------


def test_every_checkpoint_lists_its_blueprint_file(trained) -> None:
    run, tr = trained
    for it in (OLD, NEW):
        files = {e["file"]: e for e in read_manifest(ckpt_dir(run, it))["files"]}
        assert set(files) == {shard_name(0), BLUEPRINT_NAME}
        assert files[BLUEPRINT_NAME]["bytes"] == bp_file(run, it).stat().st_size
    meta, arrays = read_blueprint(bp_file(run))
    assert meta["format"] == "mccfr-blueprint" and meta["format_version"] == 1
    assert meta["iteration"] == NEW and meta["config_hash"] == tr.config_hash
    assert meta["abstraction_hash"] == tr.abstraction_hash and meta["tree"]["hash"] == tr.tree.content_hash()
    assert meta["cards"]["hash"] == tr.cards.content_hash() and meta["game"]["acpc"] == tr.game.to_acpc()
    assert meta["bets"]["toml"] == tr.config_dict["bets_toml"]
    assert arrays["probs"].dtype == np.float32 and arrays["probs"].shape == (tr.size,)
    assert np.array_equal(arrays["row_offset"], tr.row_offset)
    assert np.array_equal(arrays["probs"], tr.average_strategy().astype(np.float32))


def test_answers_equal_the_in_process_blueprint(trained) -> None:
    run, tr = trained
    messages: list[str] = []
    got = Blueprint.load(run, log=messages.append)
    want = Blueprint(tr)
    assert messages == []
    assert got.source == str(bp_file(run)) and want.source == "trainer"
    for attr in ("iteration", "config_hash", "abstraction_hash", "bets_hash"):
        assert getattr(got, attr) == getattr(want, attr), attr
    assert got.gamedef == want.gamedef and got.game.gamedef.to_acpc() == want.game.gamedef.to_acpc()
    assert got.tree.content_hash() == want.tree.content_hash() and got.tree.num_nodes == want.tree.num_nodes
    assert got.cards.content_hash() == want.cards.content_hash() and got.cards.name == want.cards.name
    assert np.array_equal(got.row_offset, want.row_offset) and np.array_equal(
        got.num_buckets, want.num_buckets
    )
    assert np.abs(got.probs.astype(np.float64) - want.probs).max() < 1e-7
    states = random_matchstates(got.game, 600, seed=7)
    answered = 0
    for ms in states:
        a, b = answer(got, ms), answer(want, ms)
        if isinstance(b, str):
            assert a == b, ms
            continue
        answered += 1
        assert a.keys() == b.keys(), ms
        assert a == pytest.approx(b, abs=1e-6), ms
    assert answered > 300


def test_load_constructs_no_trainer(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args, **kwargs):
        raise AssertionError("Blueprint.load built a trainer or read the tables")

    for name in ("load", "load_checkpoint", "from_checkpoint", "from_manifest_config", "__init__"):
        monkeypatch.setattr(Trainer, name, boom)
    monkeypatch.setattr(checkpoints, "load_latest", boom)
    monkeypatch.setattr(shard_file, "read_shard", boom)
    for module in (checkpoints, shard_file):  # every reader of shard files (the tables)
        monkeypatch.setattr(module, "read_container", boom)
    bp = Blueprint.load(run)
    assert bp.iteration == NEW and bp.probs.dtype == np.float32
    # in a fresh interpreter the trainer module is never even imported
    code = (
        f"import sys; from blueprint.blueprint import Blueprint; bp = Blueprint.load({str(run)!r}); "
        "print(bp.iteration, 'blueprint.trainer' in sys.modules, 'blueprint.kernels' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == [str(NEW), "False", "False"]


def test_load_allocates_far_less_than_the_trainer(tmp_path: Path) -> None:
    """hunl100 with the standard bets: 2.8M table entries. The trainer's path holds regret and
    strategy sums, the tables it read and a float64 average strategy; the blueprint file path
    holds one float32 per entry."""
    run = tmp_path / "run"
    tr = make_trainer("hunl100", bets="standard", cards="rank", seed=0)
    tr.run(50)
    tr.save(run)
    size = tr.size
    del tr

    def peak(load) -> int:
        tracemalloc.start()
        try:
            bp = load()
            _, top = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert bp.iteration == 50
        return top

    new = peak(lambda: Blueprint.load(run))
    old = peak(lambda: Blueprint(Trainer.load(run)))
    assert size > 2_500_000
    assert new < 4 * size + (24 << 20), f"{new:,} bytes for {size:,} entries"
    print(f"peak allocation: Blueprint.load {new:,} bytes, trainer path {old:,} bytes ({size:,} entries)")
    assert new * 3 < old, (new, old)


# --- card abstractions are loaded, never built -------------------------------------------------


def _recipe_run(run: Path) -> Trainer:
    """A hunl20 run whose card abstraction is the recipe ``small`` (never built here: the
    abstraction object is stood in for, only its name, bucket counts and hash are written)."""
    tr = make_trainer("hunl20", bets="small", cards="rank", seed=0)
    tr.cards = CardAbstraction(
        "small", TABLE, (169, 50, 50, 50), source_hash="0123456789abcdef", method="ehs2"
    )
    tr.num_buckets = tr.cards.buckets_array()
    tr.row_offset, tr.size = layout(tr.tree, tr.num_buckets)
    tr.regret, tr.strat = np.zeros(tr.size, np.float32), np.zeros(tr.size, np.float32)
    tr.abstraction_hash = hashlib.blake2b(
        (tr.tree.content_hash() + tr.cards.content_hash()).encode(), digest_size=8
    ).hexdigest()
    tr.config_dict = {**tr.config_dict, "cards": "small"}
    tr.save(run)
    return tr


def test_missing_card_abstraction_is_a_clear_error_without_a_build(tmp_path: Path, monkeypatch) -> None:
    import abstraction.buckets as buckets

    cache = tmp_path / "empty-cache"
    cache.mkdir()
    monkeypatch.setenv("MCCFR_CACHE", str(cache))
    monkeypatch.setattr(buckets, "build_buckets", lambda *a, **k: pytest.fail("a query started a build"))
    _recipe_run(tmp_path / "run")
    command = f"MCCFR_CACHE={cache} mccfr abstraction build --game hunl20 --abstraction small"
    with pytest.raises(BlueprintError, match="card abstraction 'small'.*not on this machine") as err:
        Blueprint.load(tmp_path / "run", log=lambda m: pytest.fail(m))
    assert command in str(err.value)
    assert list(cache.iterdir()) == []  # nothing built, not even a directory
    # ensure_recipe(build=False) is the load-only entry point
    with pytest.raises(buckets.MissingAbstractionError, match="'small' card abstraction.*is not built"):
        buckets.ensure_recipe(Game.load("hunl20").gamedef, "small", build=False)
    assert list(cache.iterdir()) == []


def test_missing_card_abstraction_of_an_old_run_is_the_same_error(tmp_path: Path, monkeypatch) -> None:
    """A run without blueprint files is read through its trainer checkpoint: no build there either."""
    import abstraction.buckets as buckets

    cache = tmp_path / "empty-cache"
    cache.mkdir()
    monkeypatch.setenv("MCCFR_CACHE", str(cache))
    monkeypatch.setattr(buckets, "build_buckets", lambda *a, **k: pytest.fail("a query started a build"))
    run = tmp_path / "run"
    _recipe_run(run)
    drop_blueprint_files(run)
    notes: list[str] = []
    with pytest.raises(BlueprintError, match="mccfr abstraction build --game hunl20 --abstraction small"):
        Blueprint.load(run, log=notes.append)
    assert len(notes) == 1 and "no blueprint.msgpack.lz4" in notes[0]
    assert list(cache.iterdir()) == []


def test_missing_built_abstraction_directory_names_its_build_command(tmp_path: Path) -> None:
    """A run trained with a built directory (``--abstraction DIR``): moved away, the error gives
    the command that rebuilds it there; put back, the blueprint loads and answers as trained."""
    from abstraction.buckets import build_buckets

    built = tmp_path / "leduc-abs"
    build_buckets(Game.load("leduc").gamedef, (3, 4), "ehs2", built, progress=False, log=lambda m: None)
    run = tmp_path / "run"
    tr = make_trainer("leduc", cards=str(built), seed=2)
    tr.run(200)
    tr.save(run)
    built.rename(tmp_path / "elsewhere")
    with pytest.raises(BlueprintError, match="not on this machine") as err:
        Blueprint.load(run, log=lambda m: pytest.fail(m))
    assert f"mccfr abstraction build --game leduc --buckets 3,4 --method ehs2 --out {built}" in str(err.value)
    (tmp_path / "elsewhere").rename(built)
    bp = Blueprint.load(run, log=lambda m: pytest.fail(m))
    want = Blueprint(tr)
    for ms in random_matchstates(bp.game, 100, seed=1):
        a, b = answer(bp, ms), answer(want, ms)
        assert a == b if isinstance(b, str) else a == pytest.approx(b, abs=1e-6)


# --- runs from before blueprint files ------------------------------------------------------------


def test_a_run_without_blueprint_files_is_read_the_old_way(run: Path, leduc_run) -> None:
    drop_blueprint_files(run)
    notes: list[str] = []
    bp = Blueprint.load(run, log=notes.append)
    assert len(notes) == 1 and "no blueprint.msgpack.lz4" in notes[0] and "trainer checkpoint" in notes[0]
    assert bp.source == "trainer" and bp.iteration == NEW
    assert np.array_equal(bp.probs, Blueprint(leduc_run[1]).probs)


# --- tampered blueprint files -------------------------------------------------------------------


def _older_used(run: Path, *reasons: str) -> list[str]:
    messages: list[str] = []
    bp = Blueprint.load(run, log=messages.append)
    assert bp.iteration == OLD and bp.source == str(bp_file(run, OLD))
    assert len(messages) == 1 and f"{NEW:012d}" in messages[0], messages
    for reason in reasons:
        assert reason in messages[0], messages[0]
    return messages


def _rewrite(run: Path, change_meta=None, change_arrays=None) -> None:
    meta, arrays = read_blueprint(bp_file(run))
    if change_meta:
        change_meta(meta)
    if change_arrays:
        change_arrays(arrays)
    bp_file(run).write_bytes(forge_blueprint(meta, arrays))
    reseal_manifest(ckpt_dir(run, NEW))


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_strategy_is_refused(run: Path, value: float) -> None:
    _rewrite(run, change_arrays=lambda a: a["probs"].__setitem__(7, value))
    _older_used(run, str(bp_file(run)), "'probs' holds 1 non-finite values", "index 7")


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda a: a["probs"].__imul__(np.float32(0.5)), "does not sum to 1"),
        (lambda a: a["probs"].__setitem__(0, -0.25), "'probs' holds values below 0.0"),
        (lambda a: a["probs"].__setitem__(0, 1.5), "probability 1.5 > 1 at entry 0"),
        (lambda a: a["row_offset"].__setitem__(1, a["row_offset"][1] + 1), "row offsets do not follow"),
    ],
)
def test_rows_that_are_not_distributions_are_refused(run: Path, change, reason: str) -> None:
    _rewrite(run, change_arrays=change)
    _older_used(run, reason)


def test_wrong_tree_hash_is_refused(run: Path) -> None:
    _rewrite(run, change_meta=lambda m: m["tree"].update(hash="0" * 16))
    _older_used(run, "tree hash 0000000000000000", "does not match the tree rebuilt")


def test_other_bets_are_refused(run: Path) -> None:
    """A header whose game says no-limit Leduc: its tree (and hash) is not the file's."""
    nl = (ROOT / "tests" / "data" / "leduc_nolimit.game").read_text()
    _rewrite(run, change_meta=lambda m: m["game"].update(acpc=nl))
    _older_used(run, "cannot be rebuilt")


def test_wrong_card_hash_is_refused(run: Path) -> None:
    _rewrite(run, change_meta=lambda m: m["cards"].update(hash="f" * 16))
    _older_used(run, "has hash", "another build")


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"iteration": OLD}, f"iteration {OLD} differs from its manifest's {NEW}"),
        ({"config_hash": "1" * 16}, "config_hash 1111111111111111 differs"),
    ],
)
def test_iteration_or_hashes_other_than_the_manifest_are_refused(
    run: Path, change: dict, reason: str
) -> None:
    _rewrite(run, change_meta=lambda m: m.update(change))
    _older_used(run, reason)


@pytest.mark.parametrize("reseal", [False, True])
def test_truncated_file_is_refused(run: Path, reseal: bool) -> None:
    data = bp_file(run).read_bytes()
    bp_file(run).write_bytes(data[: len(data) // 2])
    if reseal:
        reseal_manifest(ckpt_dir(run, NEW))
        _older_used(run, "truncated")
    else:
        _older_used(run, "size mismatch")


def test_huge_declared_strategy_is_refused_before_allocating(run: Path) -> None:
    path = bp_file(run)
    header, rest = split_file(path.read_bytes())
    tib = 1 << 40
    header["meta"]["table_entries"] = tib // 4
    for d in header["arrays"]:
        if d["name"] == "probs":
            d["shape"], d["nbytes"], d["chunks"] = [tib // 4], tib, -(-tib // CHUNK)
    stream = msgpack.packb(header, use_bin_type=True) + rest
    path.write_bytes(
        struct.pack("<8sII", BLUEPRINT_MAGIC, 1, 1)
        + lz4.frame.compress(stream, block_checksum=True, content_checksum=True)
    )
    reseal_manifest(ckpt_dir(run, NEW))
    tracemalloc.start()
    try:
        _older_used(run, "table entries")
        _, top = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert top < 64 << 20
    with pytest.raises(CheckpointError, match="declares 1,099,511,627,776 bytes"):
        read_blueprint_bytes(path.read_bytes())


def test_every_checkpoint_damaged_is_a_clear_error(run: Path) -> None:
    for it in (OLD, NEW):
        bp_file(run, it).write_bytes(b"MCCFRBPF" + b"\xff" * 40)
        reseal_manifest(ckpt_dir(run, it))
    messages: list[str] = []
    with pytest.raises(
        CheckpointError, match=r"no complete checkpoint.*blueprint.msgpack.lz4.*blueprint.msgpack.lz4"
    ):
        Blueprint.load(run, log=messages.append)
    assert len(messages) == 2


def test_a_shard_file_is_not_a_blueprint_file(run: Path) -> None:
    data = (ckpt_dir(run, NEW) / shard_name(0)).read_bytes()
    with pytest.raises(CheckpointError, match="not an mccfr blueprint file: bad magic"):
        read_blueprint_bytes(data)
    assert fuzz_read_blueprint_bytes(data) is None


# --- the writer and the in-memory reader ----------------------------------------------------------


def test_writer_refuses_what_a_reader_would(tmp_path: Path, leduc_run) -> None:
    meta, arrays = blueprint_file_payload(leduc_run[1])
    bad = {**arrays, "probs": arrays["probs"] * 0.5}
    with pytest.raises(ValueError, match="does not sum to 1"):
        write_blueprint(tmp_path, meta, bad)
    with pytest.raises(ValueError, match="exactly the arrays"):
        write_blueprint(tmp_path, meta, {k: v for k, v in arrays.items() if k != "row_offset"})
    with pytest.raises(ValueError, match="node count"):
        write_blueprint(tmp_path, {**meta, "tree": {**meta["tree"], "num_nodes": 0}}, arrays)
    assert os.listdir(tmp_path) == []
    entry = write_blueprint(tmp_path, meta, arrays)
    assert entry["file"] == BLUEPRINT_NAME and os.listdir(tmp_path) == [BLUEPRINT_NAME]


def test_in_memory_reader_matches_the_file_reader(leduc_run) -> None:
    path = bp_file(leduc_run[0])
    data = path.read_bytes()
    meta, arrays = read_blueprint(path)
    meta2, arrays2 = read_blueprint_bytes(data)
    assert meta == meta2 and all(np.array_equal(arrays[k], arrays2[k]) for k in BLUEPRINT_ARRAYS)
    assert fuzz_read_blueprint_bytes(data) is not None
    assert fuzz_read_blueprint_bytes(data[:-1]) is None
    assert fuzz_read_blueprint_bytes(b"") is None


def test_fuzz_targets_run_clean(tmp_path: Path) -> None:
    """The ``checkpoint`` and ``blueprint`` targets of scripts/tools/fuzz_parsers.py (a few hundred inputs
    here; the long runs are in the script's docstring): the corpus is accepted, nothing escapes."""
    import argparse
    import signal

    from scripts.tools import fuzz_parsers

    args = argparse.Namespace(
        seed=1, count=300, time_limit=0, hang_s=5.0, hard_s=30.0, save=3, out=str(tmp_path)
    )
    old = signal.signal(signal.SIGALRM, fuzz_parsers._on_alarm)
    try:
        for name in ("checkpoint", "blueprint"):
            r = fuzz_parsers.fuzz_target(name, args)
            assert r["escapes"] == 0, r
            assert r["corpus_right"] == r["corpus"] > 0 and r["inputs"] == 300
    finally:
        signal.signal(signal.SIGALRM, old)
