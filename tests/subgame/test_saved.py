"""Saved solves (subgame.saved): bit-for-bit round trips, a continued solve equal to an
uninterrupted one, and hostile files refused with a clear error."""

import struct

import lz4.frame
import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_locking import river
from test_solver import _blueprint_values

from blueprint.io.errors import CheckpointError
from subgame.saved import SAVED_MAGIC, fuzz_read_saved_bytes, read_saved, read_saved_bytes, save_solve
from subgame.solver import solve
from subgame.tree import SubgameError

LOCK = {"": {"c": 0.5, "r300": 0.5}}


def resumed(saved, iterations, **kw):
    return solve(
        saved.subgame,
        saved.method,
        iterations=iterations,
        algo=saved.algo,
        precision=saved.precision,
        locks=saved.locks,
        resume=saved.state,
        keep_state=True,
        **kw,
    )


def safe_river(seed=3):
    sub = river(seed=seed)
    _, alt, _ = _blueprint_values(sub, np.random.default_rng(seed))
    sub.alt = alt
    sub.gifts = np.abs(alt) * 0.01
    return sub


@pytest.mark.parametrize(
    "method,algo,locks",
    [
        ("unsafe", "dcfr", None),
        ("unsafe", "cfr+", LOCK),
        ("resolve", "dcfr", None),
        ("reach-maxmargin", "dcfr", LOCK),
    ],
)
def test_round_trip_and_continue_exactly(tmp_path, method, algo, locks):
    sub = safe_river() if method != "unsafe" else river(seed=4)
    n, m = 7, 5
    first = solve(sub, method, iterations=n, algo=algo, locks=locks, keep_state=True)
    path = tmp_path / "solve.msgpack.lz4"
    size = save_solve(path, first)
    assert size == path.stat().st_size
    saved = read_saved(path)
    assert (saved.method, saved.algo, saved.locks, saved.state.iterations) == (method, algo, locks, n)
    for k in ("regret", "strat_sum", "g_reg", "g_sum"):
        a, b = getattr(first.state, k), getattr(saved.state, k)
        assert a.dtype == b.dtype and np.array_equal(a, b), k
    np.testing.assert_array_equal(saved.subgame.ranges, sub.ranges)
    if method != "unsafe":
        np.testing.assert_array_equal(saved.subgame.alt, sub.alt)
        np.testing.assert_array_equal(saved.subgame.gifts, sub.gifts)
    # reopened without iterating: the same strategy and exploitability
    shown = resumed(saved, 0)
    assert shown.iterations == n
    np.testing.assert_array_equal(shown.strategy, first.strategy)
    assert shown.exploitability == first.exploitability
    # n, save, load, m equals n + m in one go
    cont = resumed(read_saved(path), m)
    whole = solve(sub, method, iterations=n + m, algo=algo, locks=locks, keep_state=True)
    assert cont.iterations == whole.iterations == n + m
    np.testing.assert_array_equal(cont.strategy, whole.strategy)
    np.testing.assert_array_equal(cont.state.regret, whole.state.regret)
    np.testing.assert_array_equal(cont.state.g_sum, whole.state.g_sum)
    assert cont.exploitability == whole.exploitability


def test_a_solution_without_state_is_not_saved(tmp_path):
    sol = solve(river(), "unsafe", iterations=2)
    with pytest.raises(SubgameError, match="keep_state=True"):
        save_solve(tmp_path / "x", sol)


@pytest.fixture(scope="module")
def saved_bytes(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "s.msgpack.lz4"
    save_solve(path, solve(river(seed=6), "unsafe", iterations=3, locks=LOCK, keep_state=True))
    return path.read_bytes()


def _reframe(data: bytes, edit) -> bytes:
    """The file with its decompressed stream edited and compressed again (checksums valid)."""
    stream = lz4.frame.decompress(data[16:])
    return data[:16] + lz4.frame.compress(edit(stream), block_checksum=True, content_checksum=True)


def test_hostile_files_are_refused(saved_bytes, tmp_path):
    assert read_saved_bytes(saved_bytes).state.iterations == 3
    with pytest.raises(CheckpointError, match="truncated|ends early"):
        read_saved_bytes(saved_bytes[: len(saved_bytes) // 2])
    with pytest.raises(CheckpointError, match="bad magic"):
        read_saved_bytes(b"MCCFRSHD" + saved_bytes[8:])
    with pytest.raises(CheckpointError, match="format version 2"):
        read_saved_bytes(saved_bytes[:8] + struct.pack("<I", 2) + saved_bytes[12:])
    flipped = bytearray(saved_bytes)
    flipped[len(flipped) // 2] ^= 0x40
    with pytest.raises(CheckpointError, match="corrupt|checksum"):
        read_saved_bytes(bytes(flipped))
    # a forged header declaring more table entries than the tree can have
    forged = _reframe(saved_bytes, lambda s: s.replace(b"table_entries", b"table_entriez", 1))
    with pytest.raises(CheckpointError, match="bad sizes"):
        read_saved_bytes(forged)

    # the rebuilt tree must be the saved one
    def other_tree(s: bytes) -> bytes:
        i = s.index(b"tree_hash\xb0") + 10
        return s[:i] + b"0" * 16 + s[i + 16 :]

    with pytest.raises(CheckpointError, match="rebuilt tree's hash differs"):
        read_saved_bytes(_reframe(saved_bytes, other_tree))

    # a header declaring tables far larger than the file can hold: refused before allocating them
    def huge(s: bytes) -> bytes:
        up = msgpack.Unpacker(raw=False, strict_map_key=False)
        up.feed(s)
        head = up.unpack()
        rest = s[up.tell() :]
        big = head["meta"]["subgame"]["num_hands"] * 60
        head["meta"]["subgame"]["table_entries"] = big
        for d in head["arrays"]:
            if d["name"] in ("regret", "strat_sum"):
                d["shape"], d["nbytes"], d["chunks"] = [big], 4 * big, -(-4 * big // (1 << 20))
        return msgpack.packb(head, use_bin_type=True) + rest

    with pytest.raises(CheckpointError, match="more than|can hold"):
        read_saved_bytes(_reframe(saved_bytes, huge))
    with pytest.raises(CheckpointError, match="not a regular file|directory"):
        read_saved(tmp_path)
    big = tmp_path / "big"
    big.write_bytes(SAVED_MAGIC + struct.pack("<II", 1, 1) + lz4.frame.compress(b"\x00" * (1 << 20))[:64])
    with pytest.raises(CheckpointError):
        read_saved(big)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_saved_files_are_refused_or_read(saved_bytes, data):
    """Any edit of a saved solve, raw or inside its (recompressed) stream, is read or refused with
    a CheckpointError: nothing else escapes."""
    inner = data.draw(st.booleans())
    stream = lz4.frame.decompress(saved_bytes[16:]) if inner else saved_bytes
    b = bytearray(stream)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(b) - 1))
        b[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        b = b[: data.draw(st.integers(0, len(b)))]
    out = (
        saved_bytes[:16] + lz4.frame.compress(bytes(b), block_checksum=True, content_checksum=True)
        if inner
        else bytes(b)
    )
    fuzz_read_saved_bytes(out)


def test_fuzz_target_runs_clean(tmp_path):
    """The ``saved`` target of scripts/tools/fuzz_parsers.py (a few hundred inputs here): its corpus is
    read back, nothing escapes."""
    import argparse
    import signal

    from scripts.tools import fuzz_parsers

    args = argparse.Namespace(
        seed=1, count=300, time_limit=0, hang_s=5.0, hard_s=30.0, save=3, out=str(tmp_path)
    )
    old = signal.signal(signal.SIGALRM, fuzz_parsers._on_alarm)
    try:
        r = fuzz_parsers.fuzz_target("saved", args)
        assert r["escapes"] == 0, r
        assert r["corpus_right"] == r["corpus"] > 0 and r["inputs"] == 300
    finally:
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def depth_limited_saved(tmp_path_factory):
    """A depth-limited pre-flop solve of no-limit Leduc (leaf tables, generator state) and its blueprint."""
    from pathlib import Path

    from blueprint.blueprint import Blueprint
    from blueprint.trainer import make_trainer
    from subgame.construct import from_matchstate
    from subgame.depth import DepthLimit

    game = Path(__file__).parents[1] / "data" / "leduc_nolimit.game"
    tr = make_trainer(str(game), bets="fcpa", algo="dcfr")
    tr.run(2000)
    bp = Blueprint(tr)
    sub, _ = from_matchstate(bp, "MATCHSTATE:1:0::|4c")
    sub.depth_limit = DepthLimit(bp, samples=2, leaf_choice="best")
    path = tmp_path_factory.mktemp("dl") / "dl.solve"
    save_solve(path, solve(sub, "resolve", iterations=3, keep_state=True))
    return path.read_bytes(), bp


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_depth_limited_files_are_refused_or_read(depth_limited_saved, data):
    """Edits of a depth-limited saved solve (its leaf tables, picks and generator state included),
    read with its blueprint: read or refused with a CheckpointError; picks read back are legal."""
    raw, bp = depth_limited_saved
    assert read_saved_bytes(raw, blueprint=bp).state.leaf.pick.max() >= 0
    b = bytearray(lz4.frame.decompress(raw[16:]))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(b) - 1))
        b[i] = data.draw(st.integers(0, 255))
    got = fuzz_read_saved_bytes(raw[:16] + lz4.frame.compress(bytes(b), content_checksum=True), bp)
    if got is not None:
        pick = got.state.leaf.pick
        assert ((pick >= 0) & (pick < got.subgame.depth_limit.k)).all()
