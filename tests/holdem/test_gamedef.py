"""ACPC game definitions: the shipped .game files, presets, and errors that name the field or line."""

from pathlib import Path

import pytest

from holdem import Game, GameDef, GameDefError
from holdem.gamedef import INT32_MAX, NO_RAISE_CAP, PRESETS, load_gamedef, parse_gamedef

# A copy of ../shared/games (CI runs in a fresh clone); test_copy_matches_shared checks it.
GAMES_DIR = Path(__file__).resolve().parents[1] / "data" / "games"
SHARED_GAMES_DIR = Path(__file__).resolve().parents[3] / "shared" / "games"
GAME_FILES = sorted(GAMES_DIR.glob("*.game"))

# the preset each shipped file describes (same rules, i.e. the same content hash)
FILE_PRESET = {
    "kuhn": "kuhn",
    "leduc": "leduc",
    "holdem.limit.2p.reverse_blinds": "hulhe",
    "holdem.nolimit.2p.reverse_blinds": "hunl",
}


def test_game_files_present():
    assert {p.stem for p in GAME_FILES} == set(FILE_PRESET)


@pytest.mark.skipif(not SHARED_GAMES_DIR.is_dir(), reason="no ../shared/games beside the checkout")
def test_copy_matches_shared():
    for p in SHARED_GAMES_DIR.glob("*.game"):
        assert (GAMES_DIR / p.name).read_text() == p.read_text(), p.name


@pytest.mark.parametrize("path", GAME_FILES, ids=lambda p: p.stem)
def test_every_game_file_loads_and_plays(path):
    game = Game.load(path)
    assert game.gamedef.name == path.stem
    assert game.gamedef.content_hash() == PRESETS[FILE_PRESET[path.stem]].content_hash()
    assert Game.load(str(path)).gamedef == game.gamedef
    s = game.initial_state()
    assert s.is_chance()
    s = s.deal(list(range(2 * game.gamedef.num_hole_cards)))
    assert s.current_player() == game.gamedef.first_player[0]
    assert "c" in s.legal_actions()


def test_file_fields():
    nl = load_gamedef(GAMES_DIR / "holdem.nolimit.2p.reverse_blinds.game")
    assert (nl.betting, nl.num_rounds, nl.stack, nl.blind) == ("nolimit", 4, (20000, 20000), (100, 50))
    assert nl.first_player == (1, 0, 0, 0)  # 1-based in the file
    assert nl.num_board_cards == (0, 3, 1, 1) and nl.max_raises == (NO_RAISE_CAP,) * 4
    kuhn = load_gamedef(GAMES_DIR / "kuhn.game")
    assert (kuhn.num_suits, kuhn.num_ranks, kuhn.deck_size, kuhn.stack) == (1, 3, 3, (INT32_MAX, INT32_MAX))
    leduc = load_gamedef(GAMES_DIR / "leduc.game")
    assert leduc.raise_size == (2, 4) and leduc.max_raises == (2, 2) and leduc.num_board_cards == (0, 1)


def test_presets():
    assert set(PRESETS) >= {"kuhn", "leduc", "hulhe", "hunl", "hunl100", "hunl50", "hunl20"}
    for name, gd in PRESETS.items():
        game = Game.load(name)
        assert game.gamedef is gd and game.name == name
    hunl = PRESETS["hunl"]
    assert hunl.stack == (20000, 20000) and hunl.blind == (100, 50) and hunl.big_blind == 100
    for name, bbs in (("hunl100", 100), ("hunl50", 50), ("hunl20", 20)):
        assert PRESETS[name].stack == (100 * bbs,) * 2
        assert PRESETS[name].blind == hunl.blind
    assert PRESETS["hulhe"].raise_size == (10, 10, 20, 20) and PRESETS["hulhe"].max_raises == (3, 4, 4, 4)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_to_acpc_round_trips(name):
    gd = PRESETS[name]
    again = parse_gamedef(gd.to_acpc(), name=name)
    assert again == gd


def test_content_hash_ignores_name():
    gd = PRESETS["leduc"]
    assert parse_gamedef(gd.to_acpc(), name="other").content_hash() == gd.content_hash()
    assert gd.content_hash() != PRESETS["kuhn"].content_hash()


def test_comments_and_case():
    text = (
        "# a comment\ngamedef\nLIMIT\nNUMROUNDS = 1\n\nblind = 1 1\nraisesize = 1\nfirstplayer = 1\n"
        "numsuits = 1\nnumranks = 3\nnumholecards = 1\nnumboardcards = 0\nmaxraises = 1\nend gamedef\n"
    )
    assert parse_gamedef(text).content_hash() == PRESETS["kuhn"].content_hash()


BASE = (GAMES_DIR / "holdem.nolimit.2p.reverse_blinds.game").read_text()


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("END GAMEDEF\n", "", "missing 'END GAMEDEF'"),
        ("GAMEDEF\n", "", "line 1: expected 'GAMEDEF'"),
        ("numSuits = 4", "numSuit = 4", "line 8: unknown field 'numSuit'"),
        ("blind = 100 50", "blind = 100 fifty", "line 6: field 'blind' needs integers"),
        ("numSuits = 4", "numSuits 4", "line 8: expected 'key = values'"),
        ("numSuits = 4", "numSuits = 4 4", "line 8: field 'numSuits' takes one integer"),
        ("numSuits = 4", "numSuits =", "line 8: field 'numSuits' has no value"),
        ("firstPlayer = 2 1 1 1", "firstPlayer = 2 1 1", "'firstPlayer': needs 4 values"),
        ("firstPlayer = 2 1 1 1", "firstPlayer = 3 1 1 1", "'firstPlayer': must be 1 or 2"),
        ("numPlayers = 2", "numPlayers = 3", "'blind': needs 3 values (one per player, numPlayers = 3)"),
        ("numPlayers = 2", "numPlayers = 11", "'numPlayers': must be 2..10"),
        ("numRanks = 13\n", "", "required field 'numRanks' missing"),
        ("stack = 20000 20000", "stack = 20000 40", "'blind': blind 50 exceeds stack 40"),
        ("nolimit\n", "", "betting type missing"),
        ("nolimit", "limit", "'raiseSize' is required in limit games"),
        ("numRanks = 13", "numRanks = 2", "'numBoardCards': a deal needs 9 cards but the deck has 8"),
        ("numSuits = 4", "numSuits = 5", "'numSuits': must be 1..4"),
    ],
)
def test_malformed_game_files(tmp_path, old, new, message):
    assert old in BASE
    path = tmp_path / "bad.game"
    path.write_text(BASE.replace(old, new, 1))
    with pytest.raises(GameDefError) as info:
        Game.load(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)  # the file is named too


def test_unknown_game():
    with pytest.raises(GameDefError, match="unknown game 'nope': not a preset"):
        Game.load("nope")


def test_gamedef_validates_on_construction():
    with pytest.raises(GameDefError, match="'numRounds': must be 1..4"):
        GameDef("limit", 5, (10, 10), (1, 1), (1,) * 5, (0,) * 5, (1,) * 5, 1, 3, 1, (0,) * 5)


def test_openspiel_params_load():
    pyspiel = pytest.importorskip("pyspiel")
    for name in ("kuhn", "leduc", "hulhe", "hunl", "hunl20"):
        gd = PRESETS[name]
        os_game = pyspiel.load_game(
            "universal_poker", gd.openspiel_params("fcpa" if gd.is_limit else "fullgame")
        )
        assert os_game.num_players() == 2
        assert os_game.max_chance_outcomes() == gd.deck_size
