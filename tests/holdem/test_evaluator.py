"""The hand evaluator: hand-built cases, agreement with eval7/phevaluator on the 52-card deck, a golden
digest over all 5-card hands, and short decks checked through OpenSpiel's showdown payoffs."""

import hashlib

import numba
import numpy as np
import pytest

from holdem.cards import card_name, parse_cards
from holdem.evaluator import (
    CATEGORY_NAMES,
    card_bit,
    hand_category,
    rank_cardset,
    rank_hand,
    rank_hand_py,
    rank_many,
)

# Dense class index (0 = weakest) of every 5-card hand of the 52-card deck, in the lexicographic order
# of card-id combinations, as little-endian int32; blake2b with a 16-byte digest. The same array comes
# out of eval7 (checked when the digest was pinned).
DIGEST_5CARD_CLASSES = "a706d40e80ac77216544a2e4d547a090"
CATEGORY_COUNTS_5CARD = [1302540, 1098240, 123552, 54912, 10200, 5108, 3744, 624, 40]


def rank(text, num_suits=4, num_ranks=13):
    return rank_hand_py(parse_cards(text, num_suits, num_ranks), num_suits, num_ranks)


def category(text, num_suits=4, num_ranks=13):
    return CATEGORY_NAMES[hand_category(rank(text, num_suits, num_ranks))]


def random_hands(rng, count, n, deck_size=52):
    """int64[count, n]: distinct cards per row."""
    return np.argsort(rng.random((count, deck_size)), axis=1)[:, :n].astype(np.int64)


def assert_same_order(ours, theirs):
    """The two value arrays (higher = stronger) induce the same weak order on the hands."""
    ours = np.asarray(ours, np.int64)
    theirs = np.asarray(theirs, np.int64)
    pairs = np.unique(np.stack([ours, theirs], axis=1), axis=0)  # sorted by ours, then theirs
    n_ours, n_theirs = len(np.unique(ours)), len(np.unique(theirs))
    assert len(pairs) == n_ours == n_theirs, "a tie in one evaluator is not a tie in the other"
    assert np.all(np.diff(pairs[:, 1]) > 0), "sorting by our rank does not sort theirs"


# --- hand-built cases ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hand, name",
    [
        ("AsKsQsJsTs9s8s", "straight flush"),
        ("5d4d3d2dAd", "straight flush"),
        ("AcAdAhAsKc", "quads"),
        ("AcAdAhKsKcKd2c", "full house"),
        ("2c3c4c5c7c", "flush"),
        ("As2d3h4s5c", "straight"),
        ("As2d3h4s5c6c", "straight"),
        ("QsKdAh2s3c", "high card"),
        ("7c7d7h2s3c", "trips"),
        ("7c7d8h8s9c9d2c", "two pair"),
        ("7c7d8h2s3c", "pair"),
        ("7c", "high card"),
        ("7c7d", "pair"),
        ("7c7d7h7s", "quads"),
        ("7c7d8h8s", "two pair"),
        ("2c3c4c5c", "high card"),
    ],
)
def test_categories(hand, name):
    assert category(hand) == name


def test_order_within_and_across_categories():
    ladder = [
        "Ac9d7h4s3c",  # high card
        "AcTd7h4s3c",
        "2c2d7h4s3c",  # pairs
        "2c2d8h4s3c",
        "AcAd4h3s2c",
        "3c3d2h2sAc",  # two pair
        "4c4d2h2s3c",
        "2c2d2h3s4c",  # trips
        "Ac2d3h4s5c",  # wheel, the lowest straight
        "2c3d4h5s6c",
        "Tc3c4c5c7c",  # flush
        "2c2d2h3s3c",  # full house
        "3c3d3h2s2c",
        "2c2d2h2sAc",  # quads
        "5c4c3c2cAc",  # straight flush
        "AsKsQsJsTs",
    ]
    values = [rank(h) for h in ladder]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert rank("AcKd7h4s3c") == rank("AdKh7s4c3d")
    assert rank("AcKd7h4s3c2c") == rank("AdKh7s4c3d2d")  # 6th card never plays past 5


def test_best_five_of_seven():
    assert rank("7c7d7h8s8c8dAc") == rank("8s8c8d7c7dKh2c")  # two trips: the lower pairs
    assert rank("2c2d3h3s4c4dAc") > rank("2c2d3h3s4c4dKc")  # three pairs: best kicker
    assert rank("AcAdAhAsKcKdKh") == rank("AcAdAhAsKs2c3d")
    assert category("9c8c7c6c5cTd") == "straight flush"  # the SF, not the higher straight
    assert rank("9c8c7c6c5cTd") == rank("9c8c7c6c5c2d")
    assert rank("Kc8c7c6c5c4cAd") > rank("Kc8c7c6c5c3cAd")  # flush with 6+ suited cards: best 5


def test_fewer_than_five_cards():
    # Kuhn / one card: higher card wins; Leduc: pairs beat high cards.
    assert rank("4c", 1, 3) > rank("3c", 1, 3) > rank("2c", 1, 3)
    assert rank("2c2d", 2, 3) > rank("4c3d", 2, 3) > rank("4c2d", 2, 3) > rank("3c2d", 2, 3)
    # No straights or flushes below 5 cards; kickers compare high to low.
    assert rank("2c2d2h3s") > rank("AcAdKhKs") > rank("AcAdKhQs") > rank("AcKcQcJc")
    assert rank("7c7d7h7s") > rank("6c6d6h6s")
    assert rank("AcKdQh") > rank("AcKdJh")


def test_wheel_needs_an_ace():
    # A short deck's ranks are the lowest ones: with 8 ranks (2..9) the 9 never plays low.
    short = (4, 8)
    assert category("9c2d3h4s5c", *short) == "high card"
    assert category("6c2d3h4s5c", *short) == "straight"
    assert category("As2d3h4s5c") == "straight"


def test_one_suit_deck_every_five_cards_flush():
    assert category("2c4c6c8cTc", 1, 13) == "flush"
    assert category("2c3c4c5c6c", 1, 5) == "straight flush"


def test_cardset_api():
    cards = parse_cards("AhKh7c2d9s", 4, 13)
    cs = 0
    for c in cards:
        cs |= int(card_bit(c, 4))
    assert rank_cardset(cs) == rank_hand_py(cards, 4, 13)
    assert card_bit(parse_cards("3d", 2, 6)[0], 2) == 1 << (16 + 1)


def test_rank_many_matches_rank_hand():
    hands = random_hands(np.random.default_rng(3), 500, 7)
    got = rank_many(hands, 4, 13)
    assert got.dtype == np.int64 and got.shape == (500,)
    assert all(got[i] == rank_hand(hands[i], 7, 4, 13) for i in range(len(hands)))


@pytest.mark.parametrize(
    "cards, num_suits, num_ranks",
    [([], 4, 13), (list(range(8)), 4, 13), ([0, 0], 4, 13), ([52], 4, 13), ([12], 2, 6), ([0], 5, 13)],
)
def test_py_wrapper_validates(cards, num_suits, num_ranks):
    with pytest.raises(ValueError):
        rank_hand_py(cards, num_suits, num_ranks)


# --- independent evaluators on the 52-card deck ----------------------------------------------------


def test_agrees_with_eval7_on_random_7_card_hands():
    eval7 = pytest.importorskip("eval7")
    deck = [eval7.Card(card_name(c, 4)) for c in range(52)]
    hands = random_hands(np.random.default_rng(20240607), 200_000, 7)
    theirs = [eval7.evaluate([deck[c] for c in row]) for row in hands.tolist()]
    assert_same_order(rank_many(hands, 4, 13), theirs)


@pytest.mark.parametrize("n", [5, 6])
def test_agrees_with_eval7_on_random_5_and_6_card_hands(n):
    eval7 = pytest.importorskip("eval7")
    deck = [eval7.Card(card_name(c, 4)) for c in range(52)]
    hands = random_hands(np.random.default_rng(n), 100_000, n)
    theirs = [eval7.evaluate([deck[c] for c in row]) for row in hands.tolist()]
    assert_same_order(rank_many(hands, 4, 13), theirs)


@pytest.mark.parametrize("n", [5, 6, 7])
def test_agrees_with_phevaluator(n):
    # phevaluator's card id is also rank * 4 + suit with suits cdhs; its values are lower = better.
    phevaluator = pytest.importorskip("phevaluator")
    hands = random_hands(np.random.default_rng(100 + n), 50_000, n)
    theirs = [-phevaluator.evaluate_cards(*row) for row in hands.tolist()]
    assert_same_order(rank_many(hands, 4, 13), theirs)


@numba.njit
def _all_5_card_hands():
    out = np.empty((2598960, 5), np.int64)
    k = 0
    for a in range(52):
        for b in range(a + 1, 52):
            for c in range(b + 1, 52):
                for d in range(c + 1, 52):
                    for e in range(d + 1, 52):
                        out[k, 0], out[k, 1], out[k, 2], out[k, 3], out[k, 4] = a, b, c, d, e
                        k += 1
    return out


def test_golden_digest_all_5_card_hands():
    values = rank_many(_all_5_card_hands(), 4, 13)
    classes, dense = np.unique(values, return_inverse=True)
    assert len(classes) == 7462
    digest = hashlib.blake2b(dense.astype("<i4").tobytes(), digest_size=16).hexdigest()
    assert digest == DIGEST_5CARD_CLASSES
    assert np.bincount(hand_category(values), minlength=9).tolist() == CATEGORY_COUNTS_5CARD
    # Distinct classes per category: the textbook 1277/2860/858/858/10/1277/156/156/10.
    assert np.bincount(hand_category(classes), minlength=9).tolist() == [
        1277,
        2860,
        858,
        858,
        10,
        1277,
        156,
        156,
        10,
    ]


# --- short decks through OpenSpiel's showdown ------------------------------------------------------


def _openspiel_game(num_suits, num_ranks, hole, board):
    pyspiel = pytest.importorskip("pyspiel")
    return pyspiel.load_game(
        "universal_poker",
        {
            "betting": "limit",
            "numPlayers": 2,
            "numRounds": 2,
            "blind": "1 1",
            "raiseSize": "1 1",
            "firstPlayer": "1 1",
            "maxRaises": "1 1",
            "numSuits": num_suits,
            "numRanks": num_ranks,
            "numHoleCards": hole,
            "numBoardCards": f"0 {board}",
            "bettingAbstraction": "fullgame",
        },
    )


def _showdown(game, deal, num_suits, num_ranks, hole):
    """Deal `deal` (chance action ids: p0's hole cards, p1's, then the board), check/call to the
    showdown; returns (p0's payoff, p0's cards, p1's cards) with cards read from the ACPC state."""
    state = game.new_initial_state()
    deal = list(deal)
    while not state.is_terminal():
        if state.is_chance_node():
            card = deal.pop(0)
            # A chance outcome is the index into the deck sorted by (rank, suit): our card id.
            assert state.action_to_string(card).endswith("Deal " + card_name(card, num_suits))
            state.apply_action(card)
        else:
            state.apply_action(1)  # check / call
    assert not deal
    acpc = state.to_dict()["acpc_state"].splitlines()[0]  # STATE:0:cc/cc:<p0>|<p1>/<board>
    cards = acpc.split(":")[3]
    holes, _, board = cards.partition("/")
    board_cards = parse_cards(board.replace("/", ""), num_suits, num_ranks)
    p0, p1 = (parse_cards(h, num_suits, num_ranks) + board_cards for h in holes.split("|"))
    return state.returns()[0], p0, p1


@pytest.mark.parametrize(
    "num_suits, num_ranks, hole, board, deals",
    [
        (4, 13, 2, 5, 3000),  # hold'em: the wheel exists
        (4, 8, 2, 5, 2000),
        (2, 6, 2, 3, 2000),
        (3, 5, 1, 4, 2000),  # 5-card hands, straights 2-6 only
        (4, 6, 2, 2, 1000),  # 4-card hands
        (3, 5, 1, 2, 1000),  # 3-card hands
        (4, 13, 2, 0, 500),  # 2-card hands
        (2, 3, 1, 1, 500),  # Leduc
        (1, 3, 1, 0, 100),  # Kuhn
        (1, 13, 2, 5, 500),  # one suit: every showdown is a flush or a straight flush
    ],
)
def test_showdowns_match_openspiel(num_suits, num_ranks, hole, board, deals):
    game = _openspiel_game(num_suits, num_ranks, hole, board)
    rng = np.random.default_rng(num_suits * 100 + num_ranks * 10 + board)
    n = hole + board
    results = set()
    for _ in range(deals):
        deal = rng.permutation(num_suits * num_ranks)[: 2 * hole + board].tolist()
        payoff, p0, p1 = _showdown(game, deal, num_suits, num_ranks, hole)
        assert p0 == deal[:hole] + deal[2 * hole :] and p1 == deal[hole : 2 * hole] + deal[2 * hole :]
        r0 = rank_hand(np.array(p0), n, num_suits, num_ranks)
        r1 = rank_hand(np.array(p1), n, num_suits, num_ranks)
        assert np.sign(payoff) == np.sign(r0 - r1), (p0, p1, payoff)
        results.add(int(np.sign(payoff)))
    assert results >= {1, -1}


@pytest.mark.parametrize(
    "num_ranks, p0, p1, board, expect",
    [
        (13, "Ac2d", "6c6d", "3h4s5c8d8h", 1),  # the wheel beats two pair
        (8, "9c2d", "6c6d", "3h4s5c8d8h", -1),  # 2..9: the top rank never plays low
    ],
)
def test_wheel_only_with_an_ace_in_openspiel(num_ranks, p0, p1, board, expect):
    game = _openspiel_game(4, num_ranks, 2, 5)
    deal = parse_cards(p0 + p1 + board, 4, num_ranks)
    payoff, c0, c1 = _showdown(game, deal, 4, num_ranks, 2)
    assert np.sign(payoff) == expect
    assert np.sign(rank_hand_py(c0, 4, num_ranks) - rank_hand_py(c1, 4, num_ranks)) == expect
