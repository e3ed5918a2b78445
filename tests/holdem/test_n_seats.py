"""Rules for 3 to 10 seats (OpenSpiel's agreement is tests/holdem/test_vs_openspiel.py), and the
two-player-only parts of the project refusing them clearly."""

import pytest
from click.testing import CliRunner

from holdem import Game, GameDef, GameDefError, StateError
from holdem.gamedef import (
    INT32_MAX,
    MULTIWAY_PRESETS,
    NO_RAISE_CAP,
    PRESETS,
    parse_gamedef,
    require_two_players,
)

NL3 = Game.load("holdem.nolimit.3p")
KUHN3 = Game.load("kuhn.limit.3p")


def test_three_player_presets_are_the_acpc_files():
    text = NL3.gamedef.to_acpc()
    assert "numPlayers = 3" in text and "blind = 50 100 0" in text and "stack = 20000 20000 20000" in text
    assert "firstPlayer = 3 1 1 1" in text
    for name in ("kuhn.limit.3p", "holdem.limit.3p", "holdem.nolimit.3p"):
        gd = MULTIWAY_PRESETS[name]
        assert gd.num_players == 3 and parse_gamedef(gd.to_acpc(), name=name) == gd
    assert KUHN3.gamedef.deck_size == 4 and KUHN3.gamedef.cards_per_deal == 3


def test_ten_seats_parse_and_eleven_do_not():
    ten = MULTIWAY_PRESETS["holdem.nolimit.3p"].to_acpc()
    ten = ten.replace("numPlayers = 3", "numPlayers = 10").replace(
        "stack = 20000 20000 20000", "stack = " + "500 " * 10
    )
    ten = ten.replace("blind = 50 100 0", "blind = 50 100" + " 0" * 8)
    gd = parse_gamedef(ten)
    assert gd.num_players == 10 and gd.stack == (500,) * 10 and parse_gamedef(gd.to_acpc()) == gd
    with pytest.raises(GameDefError, match="'numPlayers': must be 2..10"):
        parse_gamedef(ten.replace("numPlayers = 10", "numPlayers = 11"))
    with pytest.raises(GameDefError, match="'blind': needs 10 values"):
        parse_gamedef(ten.replace("blind = 50 100" + " 0" * 8, "blind = 50 100"))
    with pytest.raises(GameDefError, match="'firstPlayer': must be 1..3 for 3 players"):
        parse_gamedef(
            MULTIWAY_PRESETS["holdem.nolimit.3p"].to_acpc().replace("firstPlayer = 3", "firstPlayer = 4")
        )
    with pytest.raises(GameDefError, match="'stack': needs 3 values"):
        GameDef("limit", 1, (INT32_MAX,) * 2, (1, 1, 1), (1,), (0,), (1,), 1, 4, 1, (0,))
    with pytest.raises(GameDefError, match="'blind': needs one value per player, 2..10"):
        GameDef("limit", 1, (9,) * 11, (1,) * 11, (1,), (0,), (NO_RAISE_CAP,), 4, 13, 1, (0,))


def test_order_of_play_skips_folded_and_all_in_seats():
    s = NL3.initial_state().deal("AhKdQsJc7h7d")
    assert s.current_player() == 2  # firstPlayer = 3: after both blinds
    assert s.legal_actions() == ["f", "c", "r200", "r20000"]
    s = s.apply("f").apply("c").apply("c")  # seat 2 folds, seat 0 completes, seat 1 checks
    assert s.is_chance() and s.round == 1
    s = s.deal("2c3c4c")
    assert s.current_player() == 0  # firstPlayer 1 after the flop
    s = s.apply("r20000").apply("c")  # both all-in: the board runs out
    assert s.betting.finished and s.is_chance()
    s = s.deal("5c").deal("9d")
    assert s.is_terminal() and str(s) == "STATE:0:fcc/r20000c//:AhKd|QsJc|7h7d/2c3c4c/5c/9d"
    assert s.payoffs() == (-20000.0, 20000.0, 0.0)  # seat 1's club flush; seat 2 folded its 0


def test_side_pots_ties_and_strings():
    game = Game(
        GameDef("nolimit", 1, (100, 300, 500), (10, 20, 0), (0,), (2,), (NO_RAISE_CAP,), 4, 13, 1, (2,))
    )
    # seat 2 shoves, seat 0 (100) and seat 1 (300) call all-in: three pots
    s = game.state("STATE:7:r500cc:Ah|Kh|Ad2c7d")
    assert s.is_terminal()
    # main pot 300 split by seats 0 and 2 (aces), side pot 400 (seats 1, 2) to seat 2, 200 back
    assert s.payoffs() == (50.0, -300.0, 250.0)
    assert s.matchstate(1) == "MATCHSTATE:1:7:r500cc:Ah|Kh|Ad2c7d"  # a showdown shows every hand
    with_fold = game.state("STATE:8:r500fc:Ah|Kh|Ad2c7d")
    # seat 0's 10 chips go into the first pot, which seat 2 wins; seat 1 loses its 300
    assert with_fold.payoffs() == (-10.0, -300.0, 310.0)
    assert with_fold.matchstate(1) == "MATCHSTATE:1:8:r500fc:|Kh|Ad2c7d"  # not the folded seat's
    assert game.state(with_fold.matchstate(1)) == game.state(with_fold.matchstate(1))
    with pytest.raises(StateError, match="seat 0's hole cards are shown"):
        game.state("MATCHSTATE:1:8:r500fc:Ah|Kh|Ad2c7d")
    with pytest.raises(StateError, match="bad position '3': the viewer's seat must be 0..2"):
        game.state("MATCHSTATE:3:8:r500fc:|Kh|Ad2c7d")
    with pytest.raises(StateError, match="'\\|' number 3: a 3-player game has 3 hands"):
        game.state("STATE:8:r500fc:Ah|Kh|Ad|2c7d")
    log = game.state(str(s) + ":50|-300|250:a|b|c")
    assert str(log) == "STATE:7:r500cc:Ah|Kh|Ad2c7d:50|-300|250:a|b|c"


def test_kuhn3_folds_leave_one_seat():
    s = KUHN3.initial_state().deal("2c3c4c")
    assert s.current_player() == 0
    s = s.apply("r").apply("f").apply("f")
    assert s.is_terminal() and s.payoffs() == (2.0, -1.0, -1.0)
    assert s.matchstate(0) == "MATCHSTATE:0:0:rff:2c||"


# -- the two-player-only parts refuse N seats, naming numPlayers -----------------------------------
def test_require_two_players():
    require_two_players(PRESETS["hunl"], "x")
    with pytest.raises(
        GameDefError, match=r"the thing supports only 2-player games: game 'kuhn.limit.3p' has numPlayers = 3"
    ):
        require_two_players(MULTIWAY_PRESETS["kuhn.limit.3p"], "the thing")


def test_entry_points_refuse_n_seats():
    from abstraction.tree import build_tree
    from holdem.betting import Betting
    from mccfr.evaluation.lbr import LocalBestResponse

    gd = MULTIWAY_PRESETS["holdem.nolimit.3p"]
    with pytest.raises(
        GameDefError, match="a subgame's public tree supports only 2-player games.*numPlayers = 3"
    ):
        build_tree(gd, root=Betting.initial(gd), deal_boards=True)
    with pytest.raises(GameDefError, match="LBR .* supports only 2-player games.*numPlayers = 3"):
        LocalBestResponse(NL3, None)


@pytest.mark.parametrize(
    "args",
    [
        ["train", "--game", "kuhn.limit.3p", "--algo", "cfr+", "--iterations", "10"],
        ["eval", "--game", "kuhn.limit.3p", "--player", "always-call", "--lbr", "--hands", "10"],
    ],
)
def test_cli_refuses_n_seats(tmp_path, args):
    from mccfr.cli import cli

    if args[0] == "train":
        args = args + ["--out", str(tmp_path / "run")]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2, r.output
    assert "error:" in r.output and "numPlayers = 3" in r.output and "Traceback" not in r.output
    if args[0] == "train":  # refused when the config is made: nothing written
        assert "two-player only" in r.output and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "game, matchstate, other",
    [
        ("hunl", "MATCHSTATE:2:0:r300:||AhKd", "holdem.nolimit.3p"),
        ("kuhn", "MATCHSTATE:1:0::|2c|", "kuhn.limit.3p"),
    ],
)
def test_two_player_server_refuses_n_seat_matchstates(game, matchstate, other):
    from mccfr.serving.query import GameChecker, QueryError

    with pytest.raises(QueryError, match=f"it parses as a {other} state, and this server plays {game}"):
        GameChecker(Game.load(game)).parse(matchstate)
