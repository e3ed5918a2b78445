"""abstraction.isomorphism: exact hold'em sizes, inverse index/unindex, and agreement with a
brute-force canonicalisation (the minimum over all suit permutations) on small decks."""

import itertools

import numba
import numpy as np
import pytest

from abstraction.isomorphism import (
    HandIndexer,
    IsomorphismError,
    iso_index,
    iso_index_masks,
    iso_index_rounds,
)
from holdem.gamedef import PRESETS, GameDef

HOLDEM_SIZES = (169, 1_286_792, 13_960_050, 123_156_254)
HOLDEM_PERFECT_RECALL_SIZES = (169, 1_286_792, 55_190_538, 2_428_287_420)


# -- brute force -----------------------------------------------------------------------------


def canonical_keys(hands: np.ndarray, groups: tuple[int, ...], num_suits: int) -> np.ndarray:
    """int64 [n]: the smallest encoding of each hand over all suit permutations.

    A hand is encoded with each group sorted, positions read as digits in base deck size.
    """
    deck = 64
    ranks, suits = hands // num_suits, hands % num_suits
    best = None
    for perm in itertools.permutations(range(num_suits)):
        mapped = ranks * num_suits + np.asarray(perm)[suits]
        pos = 0
        for n in groups:
            mapped[:, pos : pos + n] = np.sort(mapped[:, pos : pos + n], axis=1)
            pos += n
        key = np.zeros(len(hands), np.int64)
        for j in range(hands.shape[1]):
            key = key * deck + mapped[:, j]
        best = key if best is None else np.minimum(best, key)
    return best


def all_hands(deck: int, groups: tuple[int, ...]) -> np.ndarray:
    """int64 [n, sum(groups)]: every hand, each group a sorted set of cards disjoint from the rest."""
    rows = []

    def rec(prefix, k, used):
        if k == len(groups):
            rows.append(prefix)
            return
        free = [c for c in range(deck) if c not in used]
        for combo in itertools.combinations(free, groups[k]):
            rec(prefix + combo, k + 1, used | set(combo))

    rec((), 0, frozenset())
    return np.array(rows, np.int64).reshape(len(rows), sum(groups))


SMALL = [
    # (num_suits, num_ranks, cards_per_round)
    (1, 3, (1,)),  # Kuhn
    (2, 3, (1, 1)),  # Leduc
    (3, 4, (2, 2, 1)),
    (2, 8, (2, 3, 1)),
    (4, 3, (2, 1, 1)),
    (4, 4, (2, 3)),
    (4, 3, (4, 4)),  # runs of four suits with equal count vectors
    (3, 3, (3, 3)),
    (3, 3, (1, 0, 2)),  # a round that deals nothing
]


def check_exhaustive(indexer: HandIndexer) -> None:
    S, N = indexer.num_suits, indexer.num_ranks
    for r in range(indexer.num_rounds):
        groups = indexer.round_groups[r]
        hands = all_hands(S * N, groups)
        idx = indexer.index_many(hands, r)
        size = indexer.size(r)
        assert idx.min() >= 0 and idx.max() < size
        keys = canonical_keys(hands, groups, S)
        n_classes = len(np.unique(keys))
        # a bijection between brute-force classes and indices
        assert n_classes == size, (r, n_classes, size)
        assert len(np.unique(idx)) == size
        assert len(np.unique(np.stack([keys, idx]), axis=1)[0]) == size
        # unindex is the inverse and returns a member of the class
        reps = indexer.unindex_many(np.arange(size), r)
        assert np.array_equal(indexer.index_many(reps, r), np.arange(size))
        class_of_index = np.empty(size, np.int64)
        class_of_index[idx] = keys
        assert np.array_equal(canonical_keys(reps, groups, S), class_of_index)


@pytest.mark.parametrize("perfect_recall", [False, True])
@pytest.mark.parametrize("num_suits,num_ranks,cards_per_round", SMALL)
def test_small_decks_match_brute_force(num_suits, num_ranks, cards_per_round, perfect_recall):
    check_exhaustive(HandIndexer(num_suits, num_ranks, cards_per_round, perfect_recall=perfect_recall))


def test_game_presets():
    assert [HandIndexer.for_game(PRESETS["kuhn"]).size(0)] == [3]
    leduc = HandIndexer.for_game(PRESETS["leduc"])
    assert [leduc.size(r) for r in range(2)] == [3, 15]
    hulhe = HandIndexer.for_game(PRESETS["hulhe"])
    assert tuple(hulhe.size(r) for r in range(4)) == HOLDEM_SIZES
    assert hulhe.round_groups == ((2,), (2, 3), (2, 4), (2, 5))


@pytest.mark.parametrize("perfect_recall", [False, True])
def test_board_dealt_in_round_zero_is_its_own_group(perfect_recall):
    base = PRESETS["leduc"]
    game = GameDef(
        base.betting, 2, base.stack, base.blind, base.raise_size, base.first_player, base.max_raises,
        3, 3, 1, (1, 1), "leduc-board-first",
    )  # fmt: skip
    indexer = HandIndexer.for_game(game, perfect_recall=perfect_recall)
    assert indexer.round_groups[0] == (1, 1)
    check_exhaustive(indexer)


# -- hold'em ---------------------------------------------------------------------------------


@numba.njit(cache=True)
def kernel_sum(tables, hands, round_):
    """A user kernel: iso_index called from numba on each row."""
    total = 0
    for i in range(hands.shape[0]):
        total += iso_index(tables, hands[i], round_)
    return total


@numba.njit(cache=True)
def kernel_by_masks(tables, hands, groups, round_):
    """iso_index_masks on the cardsets (bit 16 * suit + rank) of each row's groups."""
    out = np.empty(hands.shape[0], np.int64)
    for i in range(hands.shape[0]):
        m = np.zeros(5, np.int64)
        pos = 0
        for k in range(groups.shape[0]):
            for _ in range(groups[k]):
                c = hands[i, pos]
                m[k] |= np.int64(1) << (16 * (c % 4) + c // 4)
                pos += 1
        out[i] = iso_index_masks(tables, round_, m[0], m[1], m[2], m[3], m[4])
    return out


@pytest.fixture(scope="module")
def holdem():
    return HandIndexer(4, 13, (2, 3, 1, 1))


@pytest.fixture(scope="module")
def holdem_pr():
    return HandIndexer(4, 13, (2, 3, 1, 1), perfect_recall=True)


def test_holdem_sizes(holdem, holdem_pr):
    assert tuple(holdem.size(r) for r in range(4)) == HOLDEM_SIZES
    assert tuple(holdem_pr.size(r) for r in range(4)) == HOLDEM_PERFECT_RECALL_SIZES


def random_hands(rng, count, length, deck=52):
    return np.argsort(rng.random((count, deck)), axis=1)[:, :length].astype(np.int64)


def isomorphic_copies(rng, hands, groups, num_suits=4):
    """Apply a random suit permutation to each hand and shuffle the cards inside each group."""
    perms = np.argsort(rng.random((len(hands), num_suits)), axis=1)
    out = (hands // num_suits) * num_suits + np.take_along_axis(perms, hands % num_suits, axis=1)
    pos = 0
    for n in groups:
        order = np.argsort(rng.random((len(hands), n)), axis=1)
        out[:, pos : pos + n] = np.take_along_axis(out[:, pos : pos + n], order, axis=1)
        pos += n
    return out


@pytest.mark.parametrize("which", ["holdem", "holdem_pr"])
def test_holdem_isomorphic_hands_share_an_index(which, request):
    indexer = request.getfixturevalue(which)
    rng = np.random.default_rng(7)
    for r in range(4):
        groups = indexer.round_groups[r]
        hands = random_hands(rng, 100_000, sum(groups))
        idx = indexer.index_many(hands, r)
        assert idx.min() >= 0 and idx.max() < indexer.size(r)
        for _ in range(3):
            assert np.array_equal(indexer.index_many(isomorphic_copies(rng, hands, groups), r), idx)


@pytest.mark.parametrize("which", ["holdem", "holdem_pr"])
def test_holdem_classes_match_brute_force_on_a_sample(which, request):
    indexer = request.getfixturevalue(which)
    rng = np.random.default_rng(11)
    for r in range(4):
        groups = indexer.round_groups[r]
        # few distinct boards, so that many sampled hands share a class
        hands = random_hands(rng, 60_000, sum(groups), deck=20 if r else 52)
        idx = indexer.index_many(hands, r)
        keys = canonical_keys(hands, groups, 4)
        n = len(np.unique(keys))
        assert n < len(hands)  # the sample does contain repeated classes
        assert len(np.unique(idx)) == n
        assert len(np.unique(np.stack([keys, idx]), axis=1)[0]) == n


@pytest.mark.parametrize("which", ["holdem", "holdem_pr"])
def test_holdem_unindex_inverts_index(which, request):
    indexer = request.getfixturevalue(which)
    rng = np.random.default_rng(3)
    for r in range(4):
        size = indexer.size(r)
        want = np.concatenate([rng.integers(0, size, 50_000), [0, size - 1]])
        reps = indexer.unindex_many(want, r)
        assert reps.min() >= 0 and reps.max() < 52
        srt = np.sort(reps, axis=1)
        assert not (srt[:, 1:] == srt[:, :-1]).any()
        assert np.array_equal(indexer.index_many(reps, r), want)
        assert indexer.index(indexer.unindex(int(want[0]), r), r) == want[0]


def test_scalar_api_and_numba_kernel(holdem):
    hand = [51, 47, 0, 4, 8, 12, 16]  # AsKs, then 2c 3c 4c 5c 6c
    idx = holdem.index(hand, 3)
    assert idx == holdem.index(np.array(hand, np.uint8), 3)
    assert idx == holdem.index([50, 46, 1, 5, 9, 13, 17], 3)  # the same hand in other suits

    hands = random_hands(np.random.default_rng(5), 1000, 7)
    # uint8 cards, as deals are stored (index_many has compiled the int64 case)
    assert kernel_sum(holdem.tables, hands.astype(np.uint8), 3) == holdem.index_many(hands, 3).sum()
    assert kernel_sum(holdem.tables, hands.astype(np.uint8), 2) == holdem.index_many(hands[:, :6], 2).sum()

    out = np.empty(4, np.int64)
    iso_index_rounds(holdem.tables, hands[0], 3, out)
    assert list(out) == [holdem.index(hands[0, :n], r) for r, n in enumerate((2, 5, 6, 7))]


@pytest.mark.parametrize("perfect_recall", [False, True])
def test_index_from_cardset_masks(perfect_recall):
    """iso_index_masks on the evaluator's cardset layout (bit 16 * suit + rank) agrees."""
    indexer = HandIndexer(4, 13, (2, 3, 1, 1), perfect_recall=perfect_recall)

    hands = random_hands(np.random.default_rng(9), 2000, 7)
    for r in range(4):
        groups = np.array(indexer.round_groups[r], np.int64)
        sub = hands[:, : groups.sum()]
        assert np.array_equal(kernel_by_masks(indexer.tables, sub, groups, r), indexer.index_many(sub, r))


def test_errors_name_the_bad_value(holdem):
    with pytest.raises(IsomorphismError, match="52"):
        holdem.index([0, 52], 0)
    with pytest.raises(IsomorphismError, match="twice"):
        holdem.index([3, 3], 0)
    with pytest.raises(IsomorphismError, match="need 5 cards"):
        holdem.index([0, 1, 2, 3], 1)
    with pytest.raises(IsomorphismError, match="round"):
        holdem.index([0, 1], 4)
    with pytest.raises(IsomorphismError, match="169"):
        holdem.unindex(169, 0)
    with pytest.raises(IsomorphismError, match="-1"):
        holdem.unindex_many([0, -1], 0)
    with pytest.raises(IsomorphismError, match="num_suits"):
        HandIndexer(5, 13, (2,))
    with pytest.raises(IsomorphismError, match="deck"):
        HandIndexer(1, 3, (2, 2))
    with pytest.raises(IsomorphismError, match="rounds"):
        HandIndexer(4, 13, (2, 1, 1, 1, 1))
