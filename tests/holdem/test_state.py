"""States and ACPC strings: hand-written examples, round trips, and errors that name the position."""

import dataclasses

import numpy as np
import pytest

import holdem
from holdem import Game, IllegalActionError, State, StateError
from holdem.gamedef import parse_gamedef
from holdem.state import CHANCE, TERMINAL
from scripts.tools.fuzz_games import ODD_LIMIT, ODD_NOLIMIT

LOG = "STATE:0:r300c/cc/cc/cc:Kh2s|Ac5d/8h6c4c/Qs/6h:-300|300:alice|bob"


@pytest.fixture(scope="module")
def hunl():
    return Game.load("hunl")


def test_public_api_exports():
    for name in ("Game", "State", "GameDef", "StateError", "IllegalActionError", "GameDefError"):
        assert hasattr(holdem, name)
    assert issubclass(StateError, ValueError) and issubclass(IllegalActionError, ValueError)


# -- hand-written ACPC examples ------------------------------------------------------------------
def test_dealer_log_line(hunl):
    s = hunl.state(LOG)
    assert s.viewer is None and s.hand_id == 0
    assert s.net == (-300, 300) and s.names == ("alice", "bob")
    assert s.is_terminal() and not s.is_chance() and s.current_player() == TERMINAL
    assert s.payoffs() == (-300, 300)  # pair of sixes, ace kicker beats king kicker
    assert s.spent == (300, 300) and s.pot() == 600 and s.round == 3
    assert s.hole_cards == (tuple(_ids(hunl, "Kh2s")), tuple(_ids(hunl, "Ac5d")))
    assert s.board_cards == tuple(_ids(hunl, "8h6c4cQs6h"))
    assert s.betting.betting_string() == "r300c/cc/cc/cc"
    assert str(s) == LOG
    plain = LOG.rsplit(":", 2)[0]
    assert s.dealer_string() == plain
    assert str(hunl.state(plain)) == plain and hunl.state(plain).net is None


def test_matchstate_player_view(hunl):
    text = "MATCHSTATE:1:30:r300c/cr900:|Ah9s/8c6h2d"
    s = hunl.state(text)
    assert s.viewer == 1 and s.hand_id == 30 and s.round == 1
    assert s.hole_cards == ((), tuple(_ids(hunl, "Ah9s")))
    assert s.current_player() == 0
    assert s.spent == (300, 900) and s.pot() == 1200
    assert s.legal_actions() == ["f", "c", "r1500", "r20000"]  # min raise: 900 + (900 - 300)
    assert s.raise_range() == (1500, 20000)
    assert str(s) == text
    with pytest.raises(StateError, match="seat 0's hole cards are hidden"):
        s.dealer_string()


def test_matchstate_wrong_round_card(hunl):
    # the turn card (5s) is shown while the betting is still on the flop
    text = "MATCHSTATE:1:30:r300c/cr900:|Ah9s/8c6h2d/5s"
    with pytest.raises(
        StateError, match=r"^position 40: cards shown for round 3, but the betting is in round 2"
    ):
        hunl.state(text)
    assert text[40] == "/"


def test_matchstate_showdown_shows_both(hunl):
    full = hunl.state(LOG)
    assert full.matchstate(0) == "MATCHSTATE:0:0:r300c/cc/cc/cc:Kh2s|Ac5d/8h6c4c/Qs/6h"
    s = hunl.state(full.matchstate(0))
    assert s.payoffs() == (-300, 300)
    # a viewer's state at the showdown before the opponent's cards are known
    hidden = hunl.state("MATCHSTATE:0:0:r300c/cc/cc/cc:Kh2s|/8h6c4c/Qs/6h")
    assert hidden.is_terminal()
    with pytest.raises(StateError, match="showdown needs both hands, but seat 1's hole cards are not known"):
        hidden.payoffs()


def test_matchstate_hides_opponent_before_showdown(hunl):
    s = hunl.state("STATE:3:r300c/r600:AhKd|QsJc/2c3c4c")
    assert s.matchstate(0) == "MATCHSTATE:0:3:r300c/r600:AhKd|/2c3c4c"
    assert s.matchstate(1) == "MATCHSTATE:1:3:r300c/r600:|QsJc/2c3c4c"
    folded = s.apply("f")
    assert folded.is_terminal() and folded.payoffs() == (300, -300)  # seat 1 folds to the flop bet
    assert folded.matchstate(1) == "MATCHSTATE:1:3:r300c/r600f:|QsJc/2c3c4c"


@pytest.mark.parametrize(
    "name, text, player, legal, spent, payoffs",
    [
        ("kuhn", "STATE:0:rc:4c|2c", TERMINAL, [], (2, 2), (2, -2)),
        ("kuhn", "STATE:0:crf:4c|2c", TERMINAL, [], (1, 2), (-1, 1)),
        ("kuhn", "STATE:0:cc:2c|3c", TERMINAL, [], (1, 1), (-1, 1)),
        ("kuhn", "STATE:0:c:2c|3c", 1, ["c", "r"], (1, 1), None),
        ("leduc", "STATE:7:rc/rc:3c|2d/3d", TERMINAL, [], (7, 7), (7, -7)),  # a pair beats a high card
        ("leduc", "STATE:7:rrc/c:3c|2d/4d", 1, ["c", "r"], (5, 5), None),
        ("hulhe", "STATE:5:rrrc/rrrr:AhKd|QsJc/2c3c4c", 0, ["f", "c"], (70, 80), None),  # raise caps 3, 4
        ("hulhe", "STATE:5:rrrc/rrrrc/cc/crf:AhKd|QsJc/2c3c4c/5c/6d", TERMINAL, [], (80, 100), (-80, 80)),
        ("hunl20", "STATE:0:r1100:AhKd|QsJc", 0, ["f", "c", "r2000"], (100, 1100), None),  # min == max
        (
            "hunl20",
            "STATE:0:r1100r2000c///:AhKd|QsJc/2c3c4c/5c/6d",
            TERMINAL,
            [],
            (2000, 2000),
            (-2000, 2000),
        ),
        ("hunl", "STATE:0:cr300:AhKd|QsJc", 1, ["f", "c", "r500", "r20000"], (300, 100), None),
        (
            "hunl",
            "STATE:0:r20000c///:AhKd|QsJc/2c3c4c/5c/6c",
            TERMINAL,
            [],
            (20000, 20000),
            (0, 0),
        ),  # board plays
    ],
)
def test_examples(name, text, player, legal, spent, payoffs):
    game = Game.load(name)
    s = game.state(text)
    assert s.current_player() == player
    assert s.legal_actions() == legal
    assert s.spent == spent and s.pot() == sum(spent)
    if payoffs is None:
        assert not s.is_terminal()
    else:
        assert s.payoffs() == payoffs and sum(s.payoffs()) == 0
    assert str(s) == text and game.state(str(s)) == s


# -- play through the API -------------------------------------------------------------------------
def test_deal_order_and_flow(hunl):
    s = hunl.initial_state(hand_id=9)
    assert str(s) == "STATE:9::|" and s.is_chance() and s.current_player() == CHANCE
    assert s.legal_actions() == [] and s.raise_range() is None
    s = s.deal("Ah")
    assert str(s) == "STATE:9::Ah|"
    s = s.deal("KdQs")  # finishes seat 0, starts seat 1
    assert s.hole_cards == (tuple(_ids(hunl, "AhKd")), tuple(_ids(hunl, "Qs")))
    s = s.deal(_ids(hunl, "Jc"))
    assert not s.is_chance() and s.current_player() == 1  # the small blind acts first preflop
    assert s.legal_actions() == ["f", "c", "r200", "r20000"]
    s = s.apply("c")
    assert s.legal_actions() == ["c", "r200", "r20000"]  # no fold when not facing a bet
    s = s.apply("c")
    assert str(s) == "STATE:9:cc/:AhKd|QsJc/" and s.is_chance() and s.round == 1
    with pytest.raises(IllegalActionError, match=r"cards are due first \(3 for the board of round 2\)"):
        s.apply("c")
    s = s.deal("2c3c4c")
    assert s.current_player() == 0 and s.legal_actions() == ["c", "r200", "r20000"]
    s = s.apply("r20000").apply("c")
    assert str(s) == "STATE:9:cc/r20000c//:AhKd|QsJc/2c3c4c//" and s.is_chance()
    assert not s.is_terminal() and s.current_player() == CHANCE
    with pytest.raises(StateError, match="the hand is not over"):
        s.payoffs()
    s = s.deal("5d6h")  # both remaining boards at once
    assert s.is_terminal() and str(s) == "STATE:9:cc/r20000c//:AhKd|QsJc/2c3c4c/5d/6h"
    assert s.payoffs() == (0, 0)  # both play the board's straight


def test_states_are_immutable_values(hunl):
    s = hunl.initial_state().deal("AhKdQsJc")
    t = s.apply("r300")
    assert s.betting.betting_string() == "" and t.betting.betting_string() == "r300"
    assert s.apply("r300") == t and hash(t) == hash(s.apply("r300"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.hand_id = 3


def test_viewer_initial_state(hunl):
    s = hunl.initial_state(viewer=1).deal("QsJc")
    assert str(s) == "MATCHSTATE:1:0::|QsJc" and s.current_player() == 1
    s = s.apply("r300").apply("c").deal("2c3c4c")
    assert str(s) == "MATCHSTATE:1:0:r300c/:|QsJc/2c3c4c"


def test_apply_errors_name_the_legal_actions(hunl):
    s = hunl.state("STATE:0:r300c/:AhKd|QsJc/2c3c4c")
    for bad, why in [
        ("f", "illegal action 'f': fold is not legal when not facing a bet"),
        ("r399", "illegal action 'r399': raise to 399 is outside the legal range 400..20000"),
        ("r20001", "outside the legal range"),
        ("r", "malformed action 'r'"),
        ("k", "malformed action 'k'"),
        ("r0300", "malformed action 'r0300'"),
        ("c1", "malformed action 'c1'"),
        ("", "is not an ACPC action string"),
    ]:
        with pytest.raises(IllegalActionError) as info:
            s.apply(bad)
        assert why in str(info.value) and "legal: c, r400..r20000" in str(info.value), str(info.value)
    done = hunl.state("STATE:0:f:AhKd|QsJc")
    with pytest.raises(IllegalActionError, match="the hand is over"):
        done.apply("c")
    limit = Game.load("hulhe").state("STATE:0:rrr:AhKd|QsJc")
    with pytest.raises(IllegalActionError, match="illegal action 'r': raise is not legal here; legal: f, c$"):
        limit.apply("r")
    with pytest.raises(IllegalActionError, match="malformed action 'r40'"):
        limit.apply("r40")


def test_deal_errors(hunl):
    s = hunl.initial_state().deal("AhKd")
    with pytest.raises(StateError, match="card Ah is already dealt"):
        s.deal("QsAh")
    with pytest.raises(StateError, match="card 52 is not in this game's deck"):
        s.deal([52])
    with pytest.raises(StateError, match="3 cards given but only 2 are due now"):
        s.deal("QsJcTc")
    with pytest.raises(StateError, match="no cards are due now"):
        s.deal("QsJc").deal("Tc")
    with pytest.raises(StateError, match="unknown rank or suit"):
        s.deal("Qx")
    with pytest.raises(StateError, match="not in this game's deck"):
        Game.load("leduc").initial_state().deal("Ah")


# -- errors in strings name the position --------------------------------------------------------
@pytest.mark.parametrize(
    "text, pos, problem",
    [
        ("FOO:0::|", 0, "unknown header 'FOO'"),
        ("STATE:x::|", 6, "bad hand number 'x'"),
        ("STATE:01::|", 6, "bad hand number '01'"),
        ("STATE:-1::|", 6, "bad hand number '-1'"),
        ("MATCHSTATE:2:0::|", 11, "bad position '2'"),
        ("MATCHSTATE:0:0:|", 16, "a MATCHSTATE needs 5 ':'-separated fields"),
        ("STATE:0::|:", 11, "the dealer log's suffix needs both"),
        ("MATCHSTATE:0:0:::x", 16, "unexpected ':' after the cards"),
        ("STATE:0:r300x:|", 12, "unknown action character 'x'"),
        ("STATE:0:r300k:|", 12, "malformed action 'k': ACPC writes it 'c'"),
        ("STATE:0:r0300:|", 8, "malformed action 'r0300'"),
        ("STATE:0:rc:|", 8, "a no-limit raise needs a size"),
        ("STATE:0:r100:|", 8, "illegal action 'r100': raise to 100 is outside the legal range 200..20000"),
        ("STATE:0:cc/f:AhKd|QsJc/2c3c4c", 11, "illegal action 'f': fold is not legal"),
        ("STATE:0:c/c:AhKd|QsJc", 9, "'/' but betting round 1 is not over"),
        ("STATE:0:ccc:AhKd|QsJc", 10, "missing '/'"),
        ("STATE:0:cc:AhKd|QsJc", 10, "ends early; the rules give 'cc/'"),
        ("STATE:0::AhKd", 13, "missing '|'"),
        ("STATE:0::Ah|Kd|Qs", 14, "a second '|'"),
        ("STATE:0::Ah/Kd|Qs", 11, "round separator '/' among seat 0's hole cards"),
        ("STATE:0:r300:AhKd|QsXh", 20, "card not in the deck: card 'Xh'"),
        ("STATE:0:r300:AhKd|QsJ", 20, "incomplete card 'J'"),
        ("STATE:0:r300:AhKd|QsAh", 20, "duplicate card 'Ah' (also at position 13)"),
        ("STATE:0:r300:AhKdQs|Jc", 17, "wrong number of cards: seat 0 has 3 hole cards, the game deals 2"),
        ("STATE:0:r300:AhKd|QsJcTc", 22, "wrong number of cards"),
        ("STATE:0:r300:AhKd|Qs", 20, "wrong number of cards: seat 1's hole cards must have 2 cards"),
        ("STATE:0:r300:Ah|QsJc", 15, "wrong number of cards: seat 0's hole cards must have 2 cards"),
        ("STATE:0::Ah|Kd", 11, "wrong number of cards: seat 0's hole cards have 1 of 2 cards"),
        (
            "STATE:0:r300c/c:AhKd|QsJc/2c3c",
            30,
            "the board cards of round 2 must have 3 cards before the betting",
        ),
        ("STATE:0:r300c/:AhKd|QsJc/2c3c4c5c", 31, "wrong number of cards: the board cards of round 2 take 3"),
        ("STATE:0:r300c/:AhKd|QsJc/2c3c4c/5c", 31, "a card shown for the wrong round"),
        ("STATE:0:r300:AhKd|QsJc/", 22, "round separator '/' for round 2, but the betting is in round 1"),
        ("STATE:0:r300c/:AhKd|QsJc", 24, "the cards need 1 round separator(s) '/', got 0"),
        ("STATE:0:r20000c///:AhKd|QsJc/2c3c/4c/", 33, "have 2 of 3 cards, yet the board cards of round 3"),
        ("MATCHSTATE:0:0:r300:AhKd|QsJc", 25, "seat 1's hole cards are shown, but a MATCHSTATE shows"),
        ("MATCHSTATE:1:0:r300:AhKd|QsJc", 20, "seat 0's hole cards are shown, but a MATCHSTATE shows"),
        ("MATCHSTATE:0:0:r300c/cc/cc/cc:Kh2s|Ac/8h6c4c/Qs/6h", 37, "seat 1's shown hand has 1 cards"),
        (
            LOG.replace("-300|300", "-200|200"),
            46,
            "net '-200|200' contradicts the hand: the rules give -300|300",
        ),
        (LOG.replace("-300|300", "+300|-300"), 46, "bad net '+300|-300'"),
        (LOG.replace("alice|bob", "alice"), 55, "bad names 'alice'"),
        ("STATE:0:r300:AhKd|QsJc:100|-100:a|b", 23, "net result is given but the hand is not over"),
        ("STATE:0::|\r\n", 10, "unexpected character '\\r'"),
    ],
)
def test_string_errors_name_the_position(hunl, text, pos, problem):
    with pytest.raises(StateError) as info:
        hunl.state(text)
    msg = str(info.value)
    assert msg.startswith(f"position {pos}: "), msg
    assert problem in msg, msg


def test_limit_string_errors():
    leduc = Game.load("leduc")
    with pytest.raises(StateError, match=r"^position 8: a limit raise takes no size"):
        leduc.state("STATE:0:r2:3c|2d")
    with pytest.raises(StateError, match=r"^position 15: card not in the deck: card 'Ah'"):
        leduc.state("STATE:0:rc/:2c|Ah/3c")
    with pytest.raises(StateError, match=r"^position 10: illegal action 'r': raise is not legal here"):
        leduc.state("STATE:0:rrr:3c|2d")  # maxRaises = 2


# -- round trips over random play ------------------------------------------------------------------
def _ids(game, names):
    return [int(c) for c in holdem.cards.parse_cards(names, game.gamedef.num_suits, game.gamedef.num_ranks)]


def _random_states(game, rng, hands):
    """Every state along ``hands`` random hands (partial deals included)."""
    gd = game.gamedef
    for _ in range(hands):
        s = game.initial_state(hand_id=int(rng.integers(0, 2**32)))
        yield s
        while not s.is_terminal():
            if s.is_chance():
                used = set(s.hole_cards[0] + s.hole_cards[1] + s.board_cards)
                free = [c for c in range(gd.deck_size) if c not in used]
                s = s.deal([int(rng.choice(free))])
            else:
                legal = s.legal_actions()
                a = legal[int(rng.integers(len(legal)))]
                if a.startswith("r") and not gd.is_limit:
                    lo, hi = s.raise_range()
                    a = f"r{int(rng.integers(lo, hi + 1))}"
                s = s.apply(a)
            yield s


# odd but legal games (scripts/tools/fuzz_games.py): a board card in round 1, a round without board cards,
# unequal blinds and stacks, a 3-suit deck
def _game(name):
    if name.startswith("odd"):
        return Game(parse_gamedef(ODD_LIMIT if name == "odd-limit" else ODD_NOLIMIT, name=name))
    return Game.load(name)


def test_board_in_round_one():
    game = _game("odd-limit")
    s = game.initial_state().deal("4c")
    assert str(s) == "STATE:0::4c|"
    s = s.deal("3d2h")
    assert str(s) == "STATE:0::4c|3d2h" and s.current_player() == 1
    assert s.matchstate(0) == "MATCHSTATE:0:0::4c|2h" and s.matchstate(1) == "MATCHSTATE:1:0::|3d2h"
    for v in (0, 1):
        assert game.state(s.matchstate(v)).legal_actions() == ["f", "c", "r"]
    s = s.apply("c").apply("c")
    assert str(s) == "STATE:0:cc/:4c|3d2h/" and not s.is_chance()  # round 2 deals no card
    s = s.apply("r").apply("c")
    assert str(s) == "STATE:0:cc/rc/:4c|3d2h//" and s.is_chance()
    s = s.deal("2c5d")
    assert str(s) == "STATE:0:cc/rc/:4c|3d2h//2c5d"
    with pytest.raises(StateError, match=r"^position 21: wrong number of cards: seat 1.s hand is hidden"):
        game.state("MATCHSTATE:0:0::4c|3d2h")


@pytest.mark.parametrize("name", ["kuhn", "leduc", "hulhe", "hunl", "hunl20", "odd-limit", "odd-nolimit"])
def test_strings_round_trip(name):
    game = _game(name)
    rng = np.random.default_rng(1234)
    n = 0
    for s in _random_states(game, rng, 150):
        text = str(s)
        again = game.state(text)
        assert again == s and str(again) == text
        for v in (0, 1):
            ms = s.matchstate(v)
            seen = game.state(ms)
            assert str(seen) == ms and seen.viewer == v and seen.betting == s.betting
            assert seen.hole_cards[v] == s.hole_cards[v]
            if not s.is_chance():  # (a viewer cannot see that the opponent's cards are due)
                assert seen.legal_actions() == s.legal_actions()
            if s.is_terminal() and s.betting.showdown():
                assert seen.payoffs() == s.payoffs()
        if s.is_terminal():
            assert sum(s.payoffs()) == 0
        n += 1
    assert n > 600


def test_state_repr_and_game(hunl):
    s = hunl.state(LOG)
    assert repr(s) == f"State({LOG!r})"
    assert repr(hunl) == "Game('hunl')"
    assert isinstance(s, State) and s.game is hunl and s.gamedef is hunl.gamedef
