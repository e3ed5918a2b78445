"""Poker hand strength for 1 to 7 cards over any 2-player ACPC deck, compiled with numba.

The ranking mirrors the ACPC reference evaluator (``rankCardset`` in project_acpc_server's
``evalHandTables``, which OpenSpiel's ``universal_poker`` calls at showdown), so that showdown
payoffs agree with OpenSpiel for every deck a game definition allows (1-4 suits, 1-13 ranks).

Representation
    A hand is a *cardset*: a 64-bit integer with bit ``16 * suit + rank`` set per card, i.e.
    four 13-bit rank masks ``m[s]``, one per suit (``card_bit`` maps a card id
    ``rank * num_suits + suit`` to its bit). Cardsets of disjoint card groups combine with ``|``,
    so a board's cardset can be built once and each hole pair OR-ed in.

Rank multiplicities without counting
    Folding the four suit masks in one at a time,

        s3 |= s2 & m;  s2 |= s1 & m;  s1 |= s0 & m;  s0 |= m

    leaves ``s_k`` = the ranks held at least ``k + 1`` times. Every category then follows from
    masks: quads ``s3``, trips ``s2``, pairs ``s1``, distinct ranks ``s0``, flush = a suit mask
    with 5+ bits, straight = 5 consecutive bits of ``s0`` (or of the flush mask for a straight
    flush). The flush test counts the cards of all four suits at once with a SWAR popcount of
    the 16-bit lanes of the cardset (no table, one well-predicted branch).

Value
    ``category << 24 | payload``, category 0 (high card) .. 8 (straight flush). The payload orders
    hands within a category: the rank of the quads/trips/top pair (4 bits each, placed above)
    and then the kickers kept as a *rank mask* of the top k remaining ranks. Two masks with the
    same number of bits compare as integers exactly as kicker lists compare high to low, and
    two hands with the same number of cards in one category always keep the same number of
    kickers, so integer order is poker order. Small tables over all 8192 rank masks (top bit,
    top 2/3/5 bits, best straight; 44 KiB in all) are built once at import.

ACPC conventions mirrored (checked against OpenSpiel showdown payoffs in the tests)
    * Straights and flushes need 5 cards; with fewer cards the categories are high card, pair,
      two pair, trips and quads, each with its remaining cards as kickers, compared high to low
      (Kuhn: the higher card wins; Leduc: a pair beats any high card, then the higher card).
      Values are only meant to be compared between hands with the same number of cards (the
      only comparison a showdown makes).
    * A straight never wraps; the wheel A-2-3-4-5 is the lowest straight, and it exists only
      when the deck has an ace, i.e. ``num_ranks == 13``: a short deck's ranks are the lowest
      ones (``2 3 4 ...``), so its top rank is not an ace and cannot play low. The tables need
      no per-deck variant because rank 12 (the ace) only occurs in a 13-rank deck.
    * Ties are exact: equal values iff the hands split the pot.
    * OpenSpiel numbers a chance outcome by its index in the game's deck sorted by (rank, suit),
      which is exactly our card id ``rank * num_suits + suit`` (ACPC itself stores
      ``rank * 4 + suit`` whatever ``numSuits`` is, and uses the lowest ranks and suits).

Speed: ``rank_hand`` is a few table lookups and bit operations with no branches on the deck and
no allocation: about 40 million random 7-card hands per second on one (shared) core in a numba
loop, about 57 million from a prebuilt cardset (see BENCHMARKS.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numba
import numpy as np

__all__ = [
    "CATEGORY_NAMES",
    "CATEGORY_SHIFT",
    "SHOWDOWN_EXACT_MAX",
    "card_bit",
    "hand_category",
    "rank_cardset",
    "rank_hand",
    "rank_hand_py",
    "rank_many",
    "showdown_odds",
]

CATEGORY_SHIFT = 24
CATEGORY_NAMES = (
    "high card",
    "pair",
    "two pair",
    "trips",
    "straight",
    "flush",
    "full house",
    "quads",
    "straight flush",
)
HIGH_CARD, PAIR, TWO_PAIR, TRIPS, STRAIGHT, FLUSH, FULL_HOUSE, QUADS, STRAIGHT_FLUSH = range(9)

_MAX_RANKS = 13
_MAX_SUITS = 4
_RANK_MASK = (1 << _MAX_RANKS) - 1


def _build_tables() -> tuple[np.ndarray, ...]:
    """Tables indexed by a 13-bit rank mask, 8192 entries each (44 KiB in all)."""
    n = 1 << _MAX_RANKS
    top_bit = np.zeros(n, np.uint8)  # index of the highest set bit (0 for the empty mask)
    keep = {k: np.zeros(n, np.uint16) for k in (2, 3, 5)}  # mask of the k highest set bits
    straight = np.zeros(n, np.uint8)  # 1 + top rank of the best straight in the mask, else 0
    runs = [(0b11111 << low, low + 4) for low in range(_MAX_RANKS - 4)]
    wheel = (1 << 12) | 0b1111  # A-2-3-4-5, top card the 5 (rank 3)
    for m in range(n):
        bits = [r for r in range(_MAX_RANKS - 1, -1, -1) if m >> r & 1]  # high to low
        top_bit[m] = bits[0] if bits else 0
        for k, table in keep.items():
            table[m] = sum(1 << r for r in bits[:k])
        best = -1
        for run, top in runs:
            if m & run == run:
                best = max(best, top)
        if best < 0 and m & wheel == wheel:
            best = 3
        straight[m] = best + 1
    return top_bit, keep[2], keep[3], keep[5], straight


_TOP_BIT, _KEEP2, _KEEP3, _KEEP5, _STRAIGHT = _build_tables()


def _build_card_bits() -> np.ndarray:
    """int64[5, 52]: row ``num_suits``, column card id -> cardset bit (row 0 and ids past the deck: 0)."""
    bits = np.zeros((_MAX_SUITS + 1, _MAX_SUITS * _MAX_RANKS), np.int64)
    for num_suits in range(1, _MAX_SUITS + 1):
        for card in range(num_suits * _MAX_RANKS):
            bits[num_suits, card] = 1 << (16 * (card % num_suits) + card // num_suits)
    return bits


_CARD_BITS = _build_card_bits()


@numba.njit(cache=True)
def card_bit(card, num_suits):
    """The cardset bit of card id ``rank * num_suits + suit``: ``1 << (16 * suit + rank)``."""
    return _CARD_BITS[num_suits, card]


@numba.njit(cache=True, inline="always")
def _top_card(mask):
    """The highest rank of ``mask`` as a one-bit mask (0 for the empty mask)."""
    return (np.int64(1) << np.int64(_TOP_BIT[mask])) if mask != 0 else np.int64(0)


@numba.njit(cache=True)
def rank_cardset(cs):
    """Strength of the best hand in cardset ``cs`` (bit ``16 * suit + rank`` per card, 1-7 cards)."""
    # Cards per suit, all four at once (SWAR popcount of each 16-bit lane): is there a flush?
    x = cs - ((cs >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    x = (x + (x >> 8)) & 0x00FF00FF00FF00FF
    five = (x + 0x000B000B000B000B) & 0x0010001000100010  # bit 4 of a lane: count + 11 >= 16

    m0 = cs & _RANK_MASK
    m1 = (cs >> 16) & _RANK_MASK
    m2 = (cs >> 32) & _RANK_MASK
    m3 = (cs >> 48) & _RANK_MASK

    flush = np.int64(0)  # at most one suit can hold 5 of at most 7 cards
    if five != 0:
        if five & 0x10:
            flush = m0
        elif five & 0x100000:
            flush = m1
        elif five & 0x1000000000:
            flush = m2
        else:
            flush = m3
        top = np.int64(_STRAIGHT[flush])
        if top != 0:
            return (STRAIGHT_FLUSH << CATEGORY_SHIFT) | top

    s0 = m0 | m1
    s1 = m0 & m1
    s2 = s1 & m2
    s1 |= s0 & m2
    s0 |= m2
    s3 = s2 & m3
    s2 |= s1 & m3
    s1 |= s0 & m3
    s0 |= m3

    if s3 != 0:
        r = np.int64(_TOP_BIT[s3])
        return (QUADS << CATEGORY_SHIFT) | (r << 13) | _top_card(s0 ^ (1 << r))
    r = np.int64(0)
    if s2 != 0:
        r = np.int64(_TOP_BIT[s2])
        pairs = s1 ^ (1 << r)  # includes a second trips' rank
        if pairs != 0:
            return (FULL_HOUSE << CATEGORY_SHIFT) | (r << 4) | np.int64(_TOP_BIT[pairs])
    if flush != 0:
        return (FLUSH << CATEGORY_SHIFT) | np.int64(_KEEP5[flush])
    top = np.int64(_STRAIGHT[s0])
    if top != 0:
        return (STRAIGHT << CATEGORY_SHIFT) | top
    if s2 != 0:
        return (TRIPS << CATEGORY_SHIFT) | (r << 13) | np.int64(_KEEP2[s0 ^ (1 << r)])
    if s1 != 0:
        r = np.int64(_TOP_BIT[s1])
        rest = s1 ^ (1 << r)
        if rest != 0:
            t = np.int64(_TOP_BIT[rest])
            kick = _top_card(s0 ^ (1 << r) ^ (1 << t))
            return (TWO_PAIR << CATEGORY_SHIFT) | (r << 17) | (t << 13) | kick
        return (PAIR << CATEGORY_SHIFT) | (r << 13) | np.int64(_KEEP3[s0 ^ (1 << r)])
    return np.int64(_KEEP5[s0])


@numba.njit(cache=True, inline="always")  # inlined: passing the array struct costs ~30%
def rank_hand(cards, n, num_suits, num_ranks):
    """Strength (int64, higher is stronger) of the best hand from ``cards[:n]``, 1 <= n <= 7.

    ``cards`` holds distinct card ids ``rank * num_suits + suit`` of a deck with ``num_suits``
    (1-4) suits and ``num_ranks`` (1-13) ranks; not validated here (see ``rank_hand_py``).
    ``num_ranks`` does not change the ranking: the wheel needs an ace, present only when 13.
    """
    cs = np.int64(0)
    for i in range(n):
        cs |= _CARD_BITS[num_suits, cards[i]]
    return rank_cardset(cs)


@numba.njit(cache=True)
def rank_many(cards2d, num_suits, num_ranks):
    """int64[rows]: ``rank_hand`` of each row of ``cards2d`` (int[rows, n], 1 <= n <= 7)."""
    rows, n = cards2d.shape
    out = np.empty(rows, np.int64)
    for i in range(rows):
        out[i] = rank_hand(cards2d[i], n, num_suits, num_ranks)
    return out


@numba.njit(cache=True)
def hand_category(rank):
    """Category of a strength value: 0 high card, 1 pair, ..., 8 straight flush."""
    return rank >> CATEGORY_SHIFT


def rank_hand_py(cards: Sequence[int], num_suits: int, num_ranks: int) -> int:
    """``rank_hand`` for a Python list of card ids, validated (1-7 distinct cards of the deck)."""
    if not 1 <= num_suits <= _MAX_SUITS or not 1 <= num_ranks <= _MAX_RANKS:
        raise ValueError(f"deck of {num_ranks} ranks x {num_suits} suits: need 1-13 ranks and 1-4 suits")
    if not 1 <= len(cards) <= 7:
        raise ValueError(f"{len(cards)} cards {list(cards)}: a hand has 1 to 7 cards")
    deck_size = num_suits * num_ranks
    for c in cards:
        if not 0 <= int(c) < deck_size:
            raise ValueError(f"card {c} is outside the deck 0..{deck_size - 1}")
    if len(set(int(c) for c in cards)) != len(cards):
        raise ValueError(f"cards {list(cards)} repeat a card")
    arr = np.asarray(cards, dtype=np.int64)
    return int(rank_hand(arr, len(arr), num_suits, num_ranks))


@numba.njit(cache=True)
def _showdown_wins(h0, h1, shown, rest, need, samples, seed, num_suits, num_ranks):
    """``(seat 0 wins, seat 1 wins, boards)`` over completions of the board ``shown`` by ``need``
    cards of ``rest``: every combination when ``samples`` is 0, else ``samples`` completions drawn
    uniformly (a partial Fisher-Yates shuffle per draw, numba's generator seeded by ``seed``)."""
    nh, ns, nr = len(h0), len(shown), len(rest)
    n = nh + ns + need
    c0 = np.empty(n, np.int64)
    c1 = np.empty(n, np.int64)
    for i in range(nh):
        c0[i] = h0[i]
        c1[i] = h1[i]
    for i in range(ns):
        c0[nh + i] = shown[i]
        c1[nh + i] = shown[i]
    w0 = 0
    w1 = 0
    boards = 0
    k = nh + ns
    if need == 0:
        a, b = rank_hand(c0, n, num_suits, num_ranks), rank_hand(c1, n, num_suits, num_ranks)
        return (1 if a > b else 0), (1 if b > a else 0), 1
    if samples == 0:
        idx = np.arange(need)
        while True:
            for j in range(need):
                c0[k + j] = rest[idx[j]]
                c1[k + j] = rest[idx[j]]
            a, b = rank_hand(c0, n, num_suits, num_ranks), rank_hand(c1, n, num_suits, num_ranks)
            if a > b:
                w0 += 1
            elif b > a:
                w1 += 1
            boards += 1
            j = need - 1  # the next combination in lexicographic order
            while j >= 0 and idx[j] == nr - need + j:
                j -= 1
            if j < 0:
                break
            idx[j] += 1
            for t in range(j + 1, need):
                idx[t] = idx[t - 1] + 1
        return w0, w1, boards
    np.random.seed(seed)
    deck = rest.copy()
    for _ in range(samples):
        for j in range(need):
            t = j + np.random.randint(nr - j)
            deck[j], deck[t] = deck[t], deck[j]
            c0[k + j] = deck[j]
            c1[k + j] = deck[j]
        a, b = rank_hand(c0, n, num_suits, num_ranks), rank_hand(c1, n, num_suits, num_ranks)
        if a > b:
            w0 += 1
        elif b > a:
            w1 += 1
    return w0, w1, samples


SHOWDOWN_EXACT_MAX = 5_000  # board completions enumerated exactly up to this many (a flop: 990)


def showdown_odds(
    holes: Sequence[Sequence[int]],
    shown: Sequence[int],
    deck_size: int,
    total_board_cards: int,
    num_suits: int,
    num_ranks: int,
    samples: int = 2_000,
    seed: int = 0,
    exact_max: int = SHOWDOWN_EXACT_MAX,
) -> tuple[float, float]:
    """``(P(seat 0 wins), P(seat 1 wins))`` at a showdown of the hole hands ``holes`` on the board
    ``shown`` completed to ``total_board_cards`` from the cards nobody holds: exact over every
    completion where there are at most ``exact_max``, else over ``samples`` completions drawn with
    ``seed`` (the same seed, the same figures). A tie is the rest."""
    h0, h1 = (np.asarray(h, np.int64) for h in holes)
    board = np.asarray(shown, np.int64)
    need = total_board_cards - len(board)
    if need < 0:
        raise ValueError(f"{len(board)} board cards shown, but the game has {total_board_cards}")
    seen = set(board.tolist()) | set(h0.tolist()) | set(h1.tolist())
    rest = np.array([c for c in range(deck_size) if c not in seen], np.int64)
    if need > len(rest):
        raise ValueError(f"{need} board cards to deal from {len(rest)} left in the deck")
    draws = 0 if math.comb(len(rest), need) <= exact_max else max(1, int(samples))
    w0, w1, n = _showdown_wins(h0, h1, board, rest, need, draws, seed % (2**32), num_suits, num_ranks)
    return w0 / n, w1 / n
