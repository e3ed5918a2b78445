"""``mccfr solve --lock / --save / --load / --node`` on the public Libratus river endgame."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli import mccfr, ok

RIVER = Path(__file__).resolve().parents[1] / "data" / "libratus" / "subgame4.txt"


def test_lock_save_load_continue(tmp_path):
    saved = tmp_path / "river.msgpack.lz4"
    spec = tmp_path / "locks.json"
    spec.write_text(json.dumps({"r3750": {"f": 0.25, "c": 0.75}}))
    out = ok(
        "solve",
        "--subgame",
        RIVER,
        "--iterations",
        6,
        "--lock",
        "=c:0.5,r3750:0.5",
        "--lock",
        spec,
        "--save",
        saved,
        "--node",
        "",
        "--json",
    )
    assert abs(out["strategy"]["c"] - 0.5) < 1e-9 and abs(out["strategy"]["r3750"] - 0.5) < 1e-9
    assert out["node_strategy"]["locked"] and out["saved_bytes"] == saved.stat().st_size
    shown = ok("solve", "--load", saved, "--node", "r3750", "--json")
    assert shown["iterations"] == 6 and shown["exploitability"] == out["exploitability"]
    assert abs(shown["node_strategy"]["strategy"]["f"] - 0.25) < 1e-9 and shown["node_strategy"]["locked"]
    more = ok("solve", "--load", saved, "--iterations", 4, "--save", saved, "--json")
    assert more["iterations"] == 10
    assert ok("solve", "--load", saved, "--json")["iterations"] == 10


def test_bad_locks_and_files_are_named(tmp_path):
    r = mccfr("solve", "--subgame", RIVER, "--iterations", 1, "--lock", "=c:0.5,r1875:0.5")
    assert r.exit_code == 2 and "no action 'r1875' there (its actions: c, r3750" in r.stderr
    r = mccfr("solve", "--subgame", RIVER, "--iterations", 1, "--lock", "=c:0.5,r3750:0.4")
    assert r.exit_code == 2 and "sum to 0.9, not 1" in r.stderr
    r = mccfr("solve", "--subgame", RIVER, "--iterations", 1, "--lock", "r3750c=c:1")
    assert r.exit_code == 2 and "node 'r3750c' is the end of the hand" in r.stderr
    bad = tmp_path / "bad.msgpack.lz4"
    bad.write_bytes(b"MCCFRSLV" + b"\x01\x00\x00\x00\x01\x00\x00\x00" + b"\x04\x22")
    r = mccfr("solve", "--load", bad)
    assert r.exit_code == 2 and "saved solve" in r.stderr and str(bad) in r.stderr
    r = mccfr("solve", "--load", bad, "--lock", "=c:1")
    assert r.exit_code == 2 and "keeps the locks" in r.stderr


def test_a_loaded_solve_answers_for_a_hand(tmp_path):
    """``--hand`` with ``--load``: the saved solve's strategy for that hand at the subgame's root,
    the one the solve printed when it was saved (no iteration run in between)."""
    saved = tmp_path / "river.msgpack.lz4"
    out = ok("solve", "--subgame", RIVER, "--iterations", 6, "--hand", "AsAh", "--save", saved, "--json")
    shown = ok("solve", "--load", saved, "--hand", "AsAh", "--json")
    assert shown["iterations"] == 6 and set(shown["hand_strategy"]) == set(out["hand_strategy"])
    for a, p in out["hand_strategy"].items():
        assert abs(shown["hand_strategy"][a] - p) < 1e-9
    assert abs(sum(shown["hand_strategy"].values()) - 1) < 1e-6
    other = ok("solve", "--load", saved, "--hand", "2c2d", "--json")["hand_strategy"]
    assert set(other) == set(out["hand_strategy"])
    r = mccfr("solve", "--load", saved, "--hand", "KsAh")  # the board holds Ks
    assert r.exit_code == 2 and "board holds" in r.stderr
    r = mccfr("solve", "--load", saved, "--hand", "As")
    assert r.exit_code == 2 and "2 different hole cards" in r.stderr
    r = mccfr("solve", "run", "--matchstate", "MATCHSTATE:0:0::AsAh|", "--hand", "AsAh")
    assert r.exit_code == 2 and "--hand with --matchstate" in r.stderr
