"""Hostile input (issue 18): the game-definition and match-state parsers end in a right answer or a
clean error (GameDefError / StateError, ValueError subclasses naming the field or the position),
never another exception, a hang or memory taken on the input's word.

Property-based tests (Hypothesis, bounded to a few seconds each) mutate valid game files and
valid states from random legal play; regression tests pin the cases of the issue. The long-run
fuzzer over the same parsers is ``scripts/tools/fuzz_parsers.py``.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holdem import Game, GameDef, GameDefError, StateError
from holdem.gamedef import (
    INT32_MAX,
    MAX_BOARD_CARDS,
    MAX_GAME_FILE_BYTES,
    MAX_GAME_FILE_LINES,
    MAX_HOLE_CARDS,
    MAX_ROUNDS,
    MULTIWAY_PRESETS,
    PRESETS,
    load_gamedef,
    parse_gamedef,
    parse_gamedef_bytes,
)
from holdem.state import MAX_STATE_CHARS
from scripts.tools.fuzz_games import ODD_LIMIT, ODD_NOLIMIT, fuzz_games, random_play, state_strings

# bounded: every property below runs in a few seconds; no example database in the working tree
FUZZ = settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- seeds: the shipped game files and the presets' text (as tests/holdem/test_gamedef.py finds them)
GAMES_DIR = Path(__file__).resolve().parents[1] / "data" / "games"
SHARED_GAMES_DIR = Path(__file__).resolve().parents[3] / "shared" / "games"
NL_LEDUC = Path(__file__).resolve().parents[1] / "data" / "leduc_nolimit.game"
_FILES = sorted({p.resolve() for d in (GAMES_DIR, SHARED_GAMES_DIR) if d.is_dir() for p in d.glob("*.game")})
GAME_TEXTS = sorted(
    {p.read_text() for p in _FILES + [NL_LEDUC] if p.is_file()}
    | {gd.to_acpc() for gd in [*PRESETS.values(), *MULTIWAY_PRESETS.values()]}
    | {ODD_LIMIT, ODD_NOLIMIT}
)
BASE = (GAMES_DIR / "holdem.nolimit.2p.reverse_blinds.game").read_text()

# fmt: off
KEYS = [
    "numPlayers", "numRounds", "stack", "blind", "raiseSize", "firstPlayer", "maxRaises", "numSuits",
    "numRanks", "numHoleCards", "numBoardCards",
]
HUGE = [
    0, 1, -1, 2, 3, 4, 5, 7, 8, 13, 14, 255, 256, INT32_MAX, INT32_MAX + 1, -(2**31) - 1, 2**32,
    499999999, 42147483648, 10**20, 10**40,
]
# fmt: on


def _check_gamedef(parse, arg) -> None:
    """The property: a GameDef that round-trips through its ACPC text, or a GameDefError."""
    try:
        gd = parse(arg)
    except GameDefError as exc:
        assert str(exc)  # a message, naming the field or line
        return
    assert isinstance(gd, GameDef)
    assert parse_gamedef(gd.to_acpc(), name=gd.name) == gd


# -- game definitions: properties --------------------------------------------------------------------
numbers = st.one_of(st.sampled_from(HUGE), st.integers(-(10**30), 10**30)).map(str)
junk = st.text(
    alphabet=st.one_of(st.sampled_from("0123456789 =#-+\n\r\t:|/abcxyzGAMEDEF"), st.characters()), max_size=12
)
edit = st.tuples(
    st.integers(0, 10), st.floats(0, 1), st.integers(1, 40), st.one_of(numbers, junk, st.sampled_from(KEYS))
)


def _apply_edits(text, edits, others):
    """Insert / delete / replace / truncate / splice / repeat, at fractional positions."""
    for op, where, span, payload in edits:
        n = len(text)
        i = int(where * n)
        j = min(n, i + span)
        if op <= 2:
            text = text[:i] + payload + text[i:]
        elif op == 3:
            text = text[:i] + text[j:]
        elif op <= 5:
            text = text[:i] + payload + text[j:]
        elif op == 6:
            text = text[:i]
        elif op == 7:
            other = others[span % len(others)]
            text = text[:i] + other[int(where * len(other)) :]
        elif op == 8:
            text = text[:i] + text[i:j] * (span % 7 + 2) + text[j:]
        else:  # a number in place of a number-ish span
            text = text[:i] + str(HUGE[span % len(HUGE)]) + text[j:]
    return text


@FUZZ
@given(st.sampled_from(GAME_TEXTS), st.lists(edit, max_size=5))
def test_mutated_game_files(text, edits):
    _check_gamedef(parse_gamedef, _apply_edits(text, edits, GAME_TEXTS))


@FUZZ
@given(
    st.sampled_from(GAME_TEXTS),
    st.lists(
        st.tuples(st.sampled_from(KEYS + ["numSuit", "x", "", "END GAMEDEF"]), st.lists(numbers, max_size=6)),
        max_size=4,
    ),
    st.floats(0, 1),
)
def test_game_file_with_random_key_value_lines(text, lines, where):
    """Lines ``key = values`` (known keys, a few unknown, any numbers) added inside a valid file."""
    body = text.splitlines(keepends=True)
    k = 1 + int(where * (len(body) - 2))
    extra = [f"{key} = {' '.join(vals)}\n" for key, vals in lines]
    _check_gamedef(parse_gamedef, "".join(body[:k] + extra + body[k:]))


@FUZZ
@given(st.sampled_from(KEYS), st.lists(numbers, min_size=1, max_size=12))
def test_any_numbers_in_any_field(key, vals):
    lines = [ln for ln in BASE.splitlines() if not ln.lower().startswith(key.lower())]
    lines.insert(2, f"{key} = {' '.join(vals)}")
    start = time.perf_counter()
    _check_gamedef(parse_gamedef, "\n".join(lines) + "\n")
    assert time.perf_counter() - start < 0.5


@FUZZ
@given(
    st.sampled_from(["limit", "nolimit"]),
    st.integers(0, 12),
    st.lists(st.integers(0, 300), max_size=12),
    st.one_of(st.none(), st.lists(st.integers(0, 300), max_size=12)),
    st.lists(st.integers(0, 12), min_size=1, max_size=4),
)
def test_n_seat_game_files(betting, n, blind, stack, first):
    """numPlayers 0..12 with blind/stack lists of any length and any firstPlayer: a GameDef
    that round-trips, with one blind and one stack per seat and firstPlayer in 1..numPlayers,
    or a GameDefError naming the field."""
    rounds = len(first)
    lines = ["GAMEDEF", betting, f"numPlayers = {n}", f"numRounds = {rounds}"]
    lines.append("blind = " + " ".join(map(str, blind)))
    if stack is not None:
        lines.append("stack = " + " ".join(map(str, stack)))
    lines += [
        "raiseSize = " + " ".join(["2"] * rounds),
        "firstPlayer = " + " ".join(map(str, first)),
        "numSuits = 4",
        "numRanks = 13",
        "numHoleCards = 1",
        "numBoardCards = " + " ".join(["0"] * rounds),
        "END GAMEDEF",
    ]
    try:
        gd = parse_gamedef("\n".join(lines) + "\n")
    except GameDefError as exc:
        msg = str(exc)
        assert any(f"'{f}'" in msg for f in ("numPlayers", "blind", "stack", "firstPlayer", "numRounds")), msg
        assert len(msg) < 400
        return
    assert 2 <= n <= 10 and gd.num_players == n
    assert len(gd.blind) == len(gd.stack) == n and all(0 <= p < n for p in gd.first_player)
    assert parse_gamedef(gd.to_acpc()) == gd


@FUZZ
@given(
    st.one_of(st.binary(max_size=400), st.sampled_from(GAME_TEXTS).map(str.encode)),
    st.lists(st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=4)), max_size=4),
)
def test_game_file_bytes(data, patches):
    """Raw bytes (invalid UTF-8 included) through the file reader's decoding step."""
    for at, b in patches:
        k = at % (len(data) + 1)
        data = data[:k] + b + data[k:]
    _check_gamedef(lambda d: parse_gamedef_bytes(d, name="fuzz"), data)


@FUZZ
@given(st.text(max_size=300))
def test_random_text_as_game_file(text):
    _check_gamedef(parse_gamedef, text)


# -- game definitions: regressions (the cases of issue 18) ------------------------------------------
@pytest.mark.parametrize(
    "value, message",
    [
        ("499999999", "'numRounds': must be 1..4 (the ACPC limit MAX_ROUNDS), got 499999999"),
        ("42147483648", "'numRounds': value 42147483648 does not fit a 32-bit integer"),
        ("9" * 100_000, "does not fit a 32-bit integer"),
        ("0" * 100_000 + "4", None),  # leading zeros: a valid 4, not int()'s digit limit
    ],
)
def test_huge_num_rounds_fail_fast(tmp_path, value, message):
    text = BASE.replace("numRounds = 4", f"numRounds = {value}")
    path = tmp_path / "huge.game"
    path.write_text(text)
    start = time.perf_counter()
    if message is None:
        assert parse_gamedef(text).num_rounds == 4
        return
    with pytest.raises(GameDefError) as info:
        parse_gamedef(text)
    with pytest.raises(GameDefError) as from_file:
        load_gamedef(path)
    assert time.perf_counter() - start < 0.5  # was 12 s / MemoryError
    assert message in str(info.value) and message in str(from_file.value)
    assert len(str(info.value)) < 300  # the number is not echoed whole


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "numHoleCards = 2",
            "numHoleCards = 4",
            "'numHoleCards': must be at most 3 (the ACPC limit MAX_HOLE_CARDS)",
        ),
        (
            "numBoardCards = 0 3 1 1",
            "numBoardCards = 0 3 3 2",
            "8 board cards in all, at most 7 (the ACPC limit MAX_BOARD_CARDS)",
        ),
        (
            "numPlayers = 2",
            "numPlayers = 11",
            "'numPlayers': must be 2..10 (the ACPC limit MAX_PLAYERS), got 11",
        ),
        (
            "numPlayers = 2",
            "numPlayers = 1",
            "'numPlayers': must be 2..10 (the ACPC limit MAX_PLAYERS), got 1",
        ),
        (
            "numPlayers = 2",
            "numPlayers = 3",
            "'blind': needs 3 values (one per player, numPlayers = 3), got 2",
        ),
        (
            "blind = 100 50",
            "blind = 100 50 0",
            "'blind': needs 2 values (one per player, numPlayers = 2), got 3",
        ),
        (
            "blind = 100 50",
            "blind = 100 50 0\nnumPlayers = 3",
            "'stack': needs 3 values (one per player, numPlayers = 3), got 2",
        ),
        ("numRanks = 13", "numRanks = 14", "'numRanks': must be 1..13"),
        ("numRounds = 4", "numRounds = 5", "'numRounds': must be 1..4"),
        ("numRounds = 4", "numRounds = 0", "'numRounds': must be 1..4"),
        ("stack = 20000 20000", "stack = 2147483648 20000", "'stack': must fit a 32-bit signed integer"),
        ("blind = 100 50", "blind = 100 -2147483649", "'blind': must fit a 32-bit signed integer"),
        (
            "firstPlayer = 2 1 1 1",
            "firstPlayer = 2 1 1 1 1",
            "'firstPlayer' has 5 values, at most 4 (the ACPC limit MAX_ROUNDS",
        ),
        ("firstPlayer = 2 1 1 1", "firstPlayer = " + "1 " * 100_000, "has 100000 values, at most 4"),
        (
            "stack = 20000 20000",
            "stack = " + "1 " * 11,
            "'stack' has 11 values, at most 10 (the ACPC limit MAX_PLAYERS",
        ),
        ("numRanks = 13", "numRanks = 13\nmaxRaises = 256 1 1 1", "'maxRaises': must be at most 255"),
        ("numRanks = 13", "numRanks = ١٣", "field 'numRanks' needs integers"),  # Arabic-Indic digits
        ("numRanks = 13", "numRanks = 1_3", "field 'numRanks' needs integers"),
        ("numRanks = 13", "numRanks = 2", "a deal needs 9 cards but the deck has 8"),
    ],
)
def test_reference_limits(old, new, message):
    assert old in BASE
    with pytest.raises(GameDefError) as info:
        parse_gamedef(BASE.replace(old, new, 1))
    assert message in str(info.value), str(info.value)
    assert len(str(info.value)) < 400


def test_limits_are_the_reference_ones():
    assert (MAX_ROUNDS, MAX_HOLE_CARDS, MAX_BOARD_CARDS) == (4, 3, 7)
    big = BASE.replace("numHoleCards = 2", "numHoleCards = 3").replace(
        "numBoardCards = 0 3 1 1", "numBoardCards = 1 3 2 1"
    )
    gd = parse_gamedef(big)  # at the limits: fine
    assert gd.num_hole_cards == 3 and gd.total_board_cards == 7
    with pytest.raises(GameDefError, match="'numRounds': must be 1..4"):
        GameDef("limit", 10**12, (10, 10), (1, 1), (1,), (0,), (1,), 1, 3, 1, (0,))
    with pytest.raises(GameDefError, match="'numHoleCards': must be an integer"):
        GameDef("limit", 1, (10, 10), (1, 1), (1,), (0,), (1,), 1, 3, "1", (0,))


def test_nolimit_raise_size_is_dropped():
    """A no-limit file with a raiseSize line parses to the game without it (it round-trips)."""
    text = BASE.replace("numRanks = 13", "numRanks = 13\nraiseSize = 10 10 20 20")
    gd = parse_gamedef(text)
    assert gd.raise_size == (0,) * 4 and gd == parse_gamedef(BASE)
    with pytest.raises(GameDefError, match="'raiseSize': needs 4 values"):
        parse_gamedef(BASE.replace("numRanks = 13", "numRanks = 13\nraiseSize = 10"))


def test_dev_zero_is_refused_without_reading():
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    start = time.perf_counter()
    with pytest.raises(GameDefError, match=r"cannot read game file '/dev/zero': not a regular file"):
        Game.load("/dev/zero")
    assert time.perf_counter() - start < 0.5


def test_directory_is_refused(tmp_path):
    with pytest.raises(GameDefError, match="it is a directory"):
        Game.load(tmp_path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.game"
    os.mkfifo(fifo)
    start = time.perf_counter()
    with pytest.raises(GameDefError, match="not a regular file"):
        Game.load(fifo)
    assert time.perf_counter() - start < 0.5


def test_oversized_and_non_utf8_files(tmp_path):
    big = tmp_path / "big.game"
    big.write_bytes(BASE.encode() + b"#" * MAX_GAME_FILE_BYTES)
    with pytest.raises(GameDefError, match=f"more than the {MAX_GAME_FILE_BYTES} allowed"):
        Game.load(big)
    latin = tmp_path / "latin.game"
    latin.write_bytes(BASE.replace("# ", "# caf\xe9 ").encode("latin-1") + b"# caf\xe9\n")
    with pytest.raises(GameDefError, match=r"not UTF-8 text: byte 0xe9 at offset \d+"):
        Game.load(latin)
    with pytest.raises(GameDefError, match="more than the"):
        parse_gamedef("#" * (MAX_GAME_FILE_BYTES + 1))
    with pytest.raises(GameDefError, match="unknown game .*no such file"):
        Game.load(tmp_path / "nope.game")
    with pytest.raises(GameDefError, match="embedded null byte"):
        Game.load("bad\x00name.game")
    with pytest.raises(GameDefError, match="File name too long"):
        Game.load("x" * 5000)


@pytest.mark.parametrize(
    "body",
    [
        "\n" * (MAX_GAME_FILE_BYTES - 100),
        "#\n" * (MAX_GAME_FILE_BYTES // 2 - 100),
        "numRounds = 4\n" * (MAX_GAME_FILE_BYTES // 14 - 100),
        "\r" * (MAX_GAME_FILE_BYTES - 100),
    ],
    ids=["blank", "comments", "keys", "cr"],
)
def test_a_megabyte_of_lines_fails_fast(tmp_path, body):
    path = tmp_path / "lines.game"
    path.write_bytes(("GAMEDEF\n" + body + "END GAMEDEF\n").encode())
    start = time.perf_counter()
    with pytest.raises(GameDefError, match=f"lines, more than the {MAX_GAME_FILE_LINES} allowed"):
        Game.load(path)
    assert time.perf_counter() - start < 0.5


def test_valid_files_still_load_the_same():
    for path in _FILES:
        gd = load_gamedef(path)
        assert gd == parse_gamedef(path.read_text(), name=path.stem)


# -- match states --------------------------------------------------------------------------------------
GAMES = fuzz_games([NL_LEDUC])


def _random_state_strings(game: Game, seed: int) -> list[str]:
    """STATE, both MATCHSTATEs (and the dealer log line at the end) along one random legal hand."""
    return [t for s in random_play(game, random.Random(seed)) for t in state_strings(s)]


def _check_state(game: Game, text) -> None:
    """The property: a state whose string is the input, or a StateError naming the position."""
    start = time.perf_counter()
    try:
        s = game.state(text)
    except StateError as exc:
        assert str(exc).startswith("position ") or not isinstance(text, str), str(exc)
        assert len(str(exc)) < 600
    else:
        assert str(s) == text
        s.legal_actions()
    assert time.perf_counter() - start < 1.0


state_chars = st.one_of(
    st.sampled_from("0123456789rcf/|:AKQJT98765432cdhsMATCHSTE-ab"),
    st.sampled_from("\x00\n\r \u00b2\u0663\uff11"),
    st.characters(),
)
state_edit = st.tuples(
    st.integers(0, 10),
    st.floats(0, 1),
    st.integers(1, 40),
    st.one_of(
        st.text(state_chars, min_size=1, max_size=6),
        st.sampled_from(
            ["r99999999999999999999", "4294967296", "/", "|", ":", "MATCHSTATE:", "STATE:", "r", "c", "f"]
        ),
        numbers,
    ),
)
game_names = st.sampled_from(sorted(GAMES))


@FUZZ
@given(game_names, st.integers(0, 2**32), st.data())
def test_valid_states_round_trip(name, seed, data):
    game = GAMES[name]
    texts = _random_state_strings(game, seed)
    text = data.draw(st.sampled_from(texts))
    assert str(game.state(text)) == text


@FUZZ
@given(game_names, st.integers(0, 2**32), st.data(), st.lists(state_edit, min_size=1, max_size=4))
def test_mutated_states(name, seed, data, edits):
    game = GAMES[name]
    texts = _random_state_strings(game, seed)
    text = data.draw(st.sampled_from(texts))
    _check_state(game, _apply_edits(text, edits, texts))


@FUZZ
@given(
    game_names,
    st.sampled_from(["", "STATE:", "MATCHSTATE:", "MATCHSTATE:0:", "STATE:0:", "MATCHSTATE:1:0:"]),
    st.text(state_chars, max_size=200),
)
def test_random_state_strings(name, prefix, tail):
    _check_state(GAMES[name], prefix + tail)


@settings(max_examples=50, deadline=None, database=None)
@given(game_names, st.one_of(st.integers(), st.binary(), st.none(), st.lists(st.integers())))
def test_non_string_states(name, value):
    with pytest.raises(StateError, match="a state string is a str"):
        GAMES[name].state(value)


@pytest.mark.parametrize(
    "text, pos, problem",
    [
        ("STATE:0:" + "r" * 10**6 + ":|", MAX_STATE_CHARS, "longer than any legal one"),
        ("STATE:0:" + "c" * 10**6 + ":|", MAX_STATE_CHARS, "longer than any legal one"),
        ("MATCHSTATE:0:0:" + "/" * 10**6 + ":|", MAX_STATE_CHARS, "longer than any legal one"),
        ("STATE:0:r99999999999999999999:AhKd|QsJc", 8, "raise size 99999999999999999999 has 20 digits"),
        ("STATE:0:r" + "9" * 10_000 + ":AhKd|QsJc", 8, "has 10000 digits"),
        ("STATE:0:r2147483648:AhKd|QsJc", 8, "outside the legal range"),
        ("STATE:0:r²:AhKd|QsJc", 8, "a no-limit raise needs a size"),
        ("STATE:0:r٣00:AhKd|QsJc", 8, "a no-limit raise needs a size"),
        ("STATE:4294967296::|", 6, "bad hand number '4294967296'"),
        ("STATE:" + "9" * 10_000 + "::|", 6, "bad hand number '9999999999999999999999999999999999999999..."),
        ("STATE:" + "1" * 5000 + "::|", 6, "(5000 characters)"),
        ("MATCHSTATE:0:" + "1" * 5000 + "::|", 13, "bad hand number"),
        ("STATE:0:f:AhKd|QsJc:" + "1" * 5000 + "|-1:a|b", 20, "bad net"),
        ("STATE:0:f:AhKd|QsJc:50|-50:" + "a" * 5000, 27, "bad names"),
        ("MATCHSTATE:" + "0" * 5000 + ":0::|", 11, "bad position"),
        ("X" * 5000 + ":0::|", 0, "unknown header"),
        ("STATE:0::" + "Ah" * 5000 + "|", 11, "duplicate card 'Ah' (also at position 9)"),
        ("STATE:0:r300c/cc/cc/cc" + "/" * 5000 + ":|", 22, "'/' but betting round"),
        ("STATE:0:" + "r300c/cc/cc/cc" * 300 + ":|", 22, "illegal action 'r300': the hand is over"),
    ],
)
def test_hostile_state_strings(text, pos, problem):
    hunl = GAMES["hunl"]
    start = time.perf_counter()
    with pytest.raises(StateError) as info:
        hunl.state(text)
    assert time.perf_counter() - start < 0.5
    msg = str(info.value)
    assert msg.startswith(f"position {pos}: ") and problem in msg, msg[:300]
    assert len(msg) < 400  # the input is not echoed whole


def test_longest_legal_betting_fits():
    """64 actions in each of 4 rounds of min-raises on a deep stack: far below MAX_STATE_CHARS."""
    deep = Game(
        parse_gamedef(BASE.replace("stack = 20000 20000", "stack = 2147483647 2147483647"), name="deep")
    )
    s = deep.initial_state().deal("AhKdQsJc")
    while not s.is_terminal():
        if s.is_chance():
            s = s.deal(["2c3c4c", "5d", "6h"][s.round - 1])
            continue
        rr = s.raise_range()
        s = s.apply(f"r{rr[0]}" if rr is not None and s.round < 3 else "c")
    text = str(s)
    assert len(text) < MAX_STATE_CHARS
    assert deep.state(text) == s


def test_deal_bounds():
    s = GAMES["hunl"].initial_state()
    with pytest.raises(StateError, match="more cards than the deck holds"):
        s.deal("Ah" * 10**6)
    with pytest.raises(StateError, match="more cards given than the deck holds"):
        s.deal(iter(lambda: 0, 1))  # an endless iterable
    with pytest.raises(StateError, match="cards must be a string or a sequence"):
        s.deal(5)


def test_hostile_actions_are_clipped():
    s = GAMES["hunl"].initial_state().deal("AhKdQsJc")
    for action in ("r" + "9" * 10**6, "x" * 10**6, "r²", "r٣00"):
        start = time.perf_counter()
        with pytest.raises(ValueError) as info:  # IllegalActionError
            s.apply(action)
        assert time.perf_counter() - start < 0.5
        assert "malformed action" in str(info.value) and len(str(info.value)) < 300
