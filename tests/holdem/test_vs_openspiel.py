"""The rules agree with OpenSpiel's universal_poker (the ACPC reference code), state by state.

The engine is ``scripts/tools/diff_openspiel.py`` (which runs more hands); here ~2,000 random hands over
Kuhn, Leduc, limit and no-limit hold'em (200 and 20 big blinds) and an odd no-limit game, plus
hand-written hands replayed on OpenSpiel.
"""

from collections import Counter

import numpy as np
import pytest

from holdem import Game

pyspiel = pytest.importorskip("pyspiel")

from scripts.tools import diff_openspiel as diff

# hands per game: ~2,000 in all; the no-limit games' raise wars make their hands slower
HANDS = {"kuhn": 400, "leduc": 400, "hulhe": 350, "hunl": 250, "hunl20": 300, "odd-nolimit": 300}


@pytest.fixture(scope="module")
def setups():
    out = {}
    for name in HANDS:
        game = diff.load_game(name)
        os_game = diff.load_openspiel(game)
        out[name] = (game, os_game, diff.card_map(os_game, game))
    return out


@pytest.mark.parametrize("name", list(HANDS))
def test_random_hands_agree(setups, name):
    game, os_game, cmap = setups[name]
    rng = np.random.default_rng(np.random.SeedSequence([2024, list(HANDS).index(name)]))
    stats: Counter = Counter()
    decisions = 0
    for i in range(HANDS[name]):
        # our STATE/MATCHSTATE strings re-parsed at a fifth of the steps and at the end of each hand
        dec, problems = diff.play_hand(game, os_game, cmap, rng, reparse=0.2, stats=stats)
        assert not problems, problems[0]
        decisions += dec
    assert decisions > HANDS[name]
    assert stats["showdowns"] > 0
    if not game.gamedef.is_limit:
        assert stats["all_ins"] > 0


def test_raise_war_reaches_the_action_cap(setups):
    # min-raise wars in 200bb no-limit run into the reference code's 64-actions-per-round cap
    game, os_game, cmap = setups["hunl"]
    rng = np.random.default_rng(7)
    stats: Counter = Counter()
    war = {"fold": 0.0, "raise": 1.0, "war": True}
    for _ in range(3):
        dec, problems = diff.play_hand(game, os_game, cmap, rng, reparse=0.0, stats=stats, style=war)
        assert not problems, problems[0]
        assert dec > 62
    assert stats["action_cap"] == 3


def test_card_numbering(setups):
    # OpenSpiel's chance action id is the index in the deck ordered by rank then suit
    # (rank * numSuits + suit), exactly our card id; Kuhn's deck is 2c 3c 4c.
    for name, (game, _, cmap) in setups.items():
        assert cmap == list(range(game.gamedef.deck_size)), name
    game, os_game, _ = setups["kuhn"]
    s = os_game.new_initial_state()
    assert [s.action_to_string(a).rsplit(" ", 1)[-1] for a in s.legal_actions()] == ["2c", "3c", "4c"]


def test_limit_fullgame_raise_collides_with_fold():
    # Why limit games are compared under "fcpa": in "fullgame" OpenSpiel lists a limit raise as
    # action 0 (the reference raiseIsValid reports sizes 0..0), the id of fold.
    gd = Game.load("kuhn").gamedef
    s = pyspiel.load_game("universal_poker", gd.openspiel_params("fullgame")).new_initial_state()
    s.apply_action(0)
    s.apply_action(1)
    assert sorted(s.legal_actions()) == [0, 1]


@pytest.mark.parametrize(
    "name, text",
    [
        ("hunl", "STATE:0:r300c/cc/cc/cc:Kh2s|Ac5d/8h6c4c/Qs/6h"),
        ("hunl", "STATE:1:r20000c///:AhKd|QsJc/2c3c4c/5c/6c"),
        ("hunl", "STATE:2:cr300r900r2700c/r5000r20000f:7c7d|AsKs/2s9sTd"),
        ("hunl", "STATE:3:r250c/cr350c/r500r800c/cc:AcAd|KhKs/2c7d9h/Jc/3s"),
        ("hunl20", "STATE:4:r1100r2000c///:AhKd|QsJc/2c3c4c/5c/6d"),
        ("hulhe", "STATE:5:rrrc/rrrrc/cc/crc:AhKd|QsJc/2c3c4c/5c/6d"),
        ("hulhe", "STATE:6:rrrc/rrrrc/cc/crf:AhKd|QsJc/2c3c4c/5c/6d"),
        ("leduc", "STATE:7:rrc/rrc:3c|2d/3d"),
        ("leduc", "STATE:8:cc/cc:2c|2d/4c"),
        ("kuhn", "STATE:9:crc:2c|4c"),
        ("kuhn", "STATE:10:rf:3c|4c"),
    ],
)
def test_hand_written_hands(name, text):
    game = Game.load(name)
    os_game = diff.load_openspiel(game)
    ours = game.state(text)
    theirs = diff.replay(ours, os_game, diff.card_map(os_game, game))
    assert theirs.is_terminal() and ours.is_terminal()
    line = diff._acpc_line(theirs)
    assert line.split(":", 2)[2] == text.split(":", 2)[2]  # OpenSpiel numbers every hand 0
    assert list(ours.payoffs()) == list(theirs.returns())


# -- N seats: the same lockstep play on diff_openspiel's N-seat games (``--players N``); OpenSpiel
# loads no limit game of more than 4 seats, so 6 seats compare the no-limit games only
N_SEAT_FAST = {3: 60, 6: 60}  # hands per game: 4 + 2 games, ~360 hands, a few seconds
N_SEAT_SLOW = {3: 1000, 4: 500, 6: 1000, 10: 300}


def _n_seat_cases(per_seats: dict) -> list:
    cases = []
    for n, hands in per_seats.items():
        for name, gd in diff.n_seat_games(n).items():
            if gd.is_limit and n > diff.OPENSPIEL_MAX_LIMIT_SEATS:
                continue
            cases.append(pytest.param(name, hands, id=f"{name}-{hands}"))
    return cases


def _play_n_seat(name: str, hands: int) -> Counter:
    game = diff.load_game(name)
    os_game = diff.load_openspiel(game)
    cmap = diff.card_map(os_game, game)
    rng = np.random.default_rng(np.random.SeedSequence([2026, sum(map(ord, name)), hands]))
    stats: Counter = Counter()
    decisions = 0
    for _ in range(hands):
        dec, problems = diff.play_hand(game, os_game, cmap, rng, reparse=0.2, stats=stats)
        assert not problems, problems[0]
        decisions += dec
    assert decisions > hands
    assert stats["showdowns"] > 0
    return stats


@pytest.mark.parametrize("name, hands", _n_seat_cases(N_SEAT_FAST))
def test_n_seat_random_hands_agree(name, hands):
    # legal actions, the seat to act, chance/terminal flags, spent, STATE strings and every
    # seat's payoff equal OpenSpiel's; our STATE and every seat's MATCHSTATE round-trip
    stats = _play_n_seat(name, hands)
    if not game_is_limit(name):
        assert stats["side_pots"] > 0  # several all-ins at a showdown


@pytest.mark.slow
@pytest.mark.parametrize("name, hands", _n_seat_cases(N_SEAT_SLOW))
def test_n_seat_random_hands_agree_long(name, hands):
    _play_n_seat(name, hands)


def game_is_limit(name: str) -> bool:
    return diff.load_game(name).gamedef.is_limit


@pytest.mark.parametrize(
    "name, text",
    [
        # three seats: a side pot (seat 1 all-in for 1000) won by seat 1, the rest by seat 2
        ("nl3p", "STATE:0:r1000cc/r5000c//:AhAd|KsKd|2c7h/3s8d9c/Jh/4s"),
        # seat 0 folds after putting chips in; seats 1 and 2 split (the board plays)
        ("odd3p", "STATE:1:r20cc/cr60cf/cc:2h|3d|3c7h/7c/7d"),
        # folds leave one seat
        ("kuhn3p", "STATE:2:rff:2c|3c|4c"),
        ("lhe3p", "STATE:3:rrfc/rc/rc/cc:AhKd|QsJc|7h7d/2c3c4c/5c/6d"),
    ],
)
def test_n_seat_hand_written_hands(name, text):
    game = diff.load_game(name)
    os_game = diff.load_openspiel(game)
    ours = game.state(text)
    theirs = diff.replay(ours, os_game, diff.card_map(os_game, game))
    assert theirs.is_terminal() and ours.is_terminal()
    assert diff._acpc_line(theirs).split(":", 2)[2] == text.split(":", 2)[2]
    assert list(ours.payoffs()) == list(theirs.returns())
