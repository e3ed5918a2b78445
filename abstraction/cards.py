"""Card abstractions as the MCCFR kernels see them: a bucket per (seat, round) for a dealt hand.

A *deal* is an int array of card ids laid out as ``[seat 0 hole | seat 1 hole | board of round 0 |
board of round 1 | ...]`` (``2 * numHoleCards + sum(numBoardCards)`` cards). :func:`deal_buckets`
fills ``out[seat, round]`` with the seat's bucket in each round, computed once per sampled deal
inside the numba kernel, and returns the showdown winner (0, 1, or -1 for a split). Games of more
seats lay out every seat's hole cards before the board and take :func:`card_buckets_n`, which
fills the same table for each seat and each seat's hand strength at the showdown.

Kinds (``CardAbstraction.kind``):

* ``LOSSLESS`` (0): the exact private information, for small games (Kuhn, Leduc, short decks).
  The bucket of a seat in round ``r`` is ``hole * B_r + board_r`` where ``hole`` is the colex
  rank of the sorted hole cards among ``C(D, h)`` and ``board_r`` a mixed-radix index of each
  round's sorted board cards (radix ``C(D, n_k)`` per round ``k <= r``, ``B_r`` their product).
  Imperfect recall is impossible here: the bucket determines the whole card history.
* ``TABLE`` (2): built tables (:mod:`abstraction.buckets`): the seat's hand in round ``r`` (hole
  cards and the board so far as a set) is indexed by suit isomorphism
  (:mod:`abstraction.isomorphism`) and its bucket read from the round's table. Recipes ``small``,
  ``medium`` and ``large`` are built on first use and cached; a built directory can be named directly.
* ``RANK`` (1): a deliberately simple bucketing for throughput work on full hold'em: preflop the
  169 suit-isomorphic starting hands (``13 * hi + lo`` suited, ``13 * lo + hi`` offsuit and pairs),
  later rounds the made-hand category of hole + board (9) times the higher hole-card rank (13).
  It is *not* a strong abstraction (see ``abstraction/potential.py`` for EHS and potential-aware
  buckets); it exists so that the kernels can be measured on the real no-limit tree.
"""

from __future__ import annotations

import dataclasses
import hashlib
from math import comb
from pathlib import Path
from typing import NamedTuple

import numba
import numpy as np

from abstraction.bucket_common import AbstractionError
from abstraction.buckets import RECIPES, ensure_recipe
from abstraction.isomorphism import HandIndexer, iso_index_masks, prefetch
from abstraction.storage import read_abstraction_flat
from holdem.evaluator import card_bit, hand_category, rank_hand
from holdem.gamedef import GameDef

LOSSLESS, RANK, TABLE = 0, 1, 2

_BINOM = np.array([[comb(n, k) for k in range(8)] for n in range(53)], dtype=np.int64)


@dataclasses.dataclass(frozen=True, eq=False)
class CardAbstraction:
    """Buckets per round for one game. ``num_buckets`` is int64 ``[numRounds]``.

    ``TABLE`` abstractions also carry ``iso`` (the isomorphism tables, int64), ``table`` (every
    round's bucket per hand class, uint16, concatenated, then a ``[D * D]`` preflop lookup by the
    two hole cards for two-card games) and ``offsets`` (int64 ``[numRounds + 1]``: where each
    round's part starts, then where the preflop lookup starts, -1 if there is none);
    ``source_hash`` is the content hash of the built file, ``method`` its bucketing method.
    """

    name: str
    kind: int
    num_buckets: tuple[int, ...]
    iso: np.ndarray | None = None
    table: np.ndarray | None = None
    offsets: np.ndarray | None = None
    source_hash: str = ""
    method: str = ""  # TABLE: the bucketing method of the built file (ehs, ehs2, distribution, potential)

    def content_hash(self) -> str:
        key = (
            (self.kind, self.num_buckets, self.source_hash)
            if self.kind == TABLE
            else (self.name, self.kind, self.num_buckets)
        )
        return hashlib.blake2b(repr(key).encode(), digest_size=8).hexdigest()

    def buckets_array(self) -> np.ndarray:
        return np.array(self.num_buckets, dtype=np.int64)

    def kernel_args(self) -> tuple:
        """``(kind, iso, table, offsets)`` for :func:`deal_buckets` (placeholders when unused), as
        read-only C-contiguous int64, uint16 and int64 arrays whatever their source (numba types a
        read-only array apart from a writable one: a table from Ray's object store, read-only, and
        one built here would otherwise compile every kernel twice)."""
        if self.kind == TABLE:
            iso, table, offsets = self.iso, self.table, self.offsets
        else:
            n = len(self.num_buckets)
            iso, table, offsets = np.zeros(1, np.int64), np.zeros(1, np.uint16), np.full(n + 1, -1, np.int64)
        return (
            self.kind,
            _read_only(iso, np.int64),
            _read_only(table, np.uint16),
            _read_only(offsets, np.int64),
        )

    def kernel_arrays(self, game: GameDef) -> "CardArrays":
        """This abstraction for ``game`` as the numba kernels read it (:class:`CardArrays`)."""
        kind, iso, table, offsets = self.kernel_args()
        return CardArrays(
            int(kind),
            int(game.num_hole_cards),
            _read_only(np.array(game.num_board_cards, np.int64)),
            int(game.deck_size),
            int(game.num_suits),
            int(game.num_ranks),
            iso,
            table,
            offsets,
        )


def _read_only(a: np.ndarray, dtype=None) -> np.ndarray:
    """A read-only C-contiguous view of ``a`` (:meth:`CardAbstraction.kernel_args`)."""
    v = np.ascontiguousarray(a, dtype).view()
    v.setflags(write=False)
    return v


class CardArrays(NamedTuple):
    """A card abstraction and the deal's shape, as one argument of the numba kernels
    (:meth:`CardAbstraction.kernel_arrays`; :func:`card_buckets` reads it). The fields' types are
    fixed (ints, read-only C-contiguous arrays of one dtype each), so the kernels compile once for it."""

    kind: int  # LOSSLESS, RANK or TABLE
    num_hole: int
    board_per_round: np.ndarray  # int64 [R]
    deck_size: int
    num_suits: int
    num_ranks: int
    iso: np.ndarray  # int64: CardAbstraction.iso (a placeholder unless TABLE)
    table: np.ndarray  # uint16: CardAbstraction.table (a placeholder unless TABLE)
    offsets: np.ndarray  # int64 [R + 1]: CardAbstraction.offsets (all -1 unless TABLE)


def from_file(game: GameDef, path, name: str | None = None) -> CardAbstraction:
    """A built abstraction (``abstraction.bin`` or its directory) for ``game``; the file is read as
    hostile (:func:`abstraction.storage.read_abstraction`: :class:`AbstractionError` naming it)."""
    two_card_preflop = game.num_hole_cards == 2 and game.num_board_cards[0] == 0
    d = game.deck_size
    header, table, sizes = read_abstraction_flat(path, game, extra=d * d if two_card_preflop else 0)
    indexer = HandIndexer.for_game(game)
    offsets = [int(x) for x in np.cumsum([0] + sizes)]  # R + 1 entries: the last is the total
    if two_card_preflop:
        # preflop by the two hole cards directly: one read instead of an index computation
        a, b = np.triu_indices(d, 1)
        hands = np.stack([a, b], axis=1).astype(np.int64)
        cls = indexer.index_many(hands, 0)
        pre = table[offsets[-1] :]
        pre[a * d + b] = table[cls]
        pre[b * d + a] = table[cls]
    else:
        offsets[-1] = -1
    return CardAbstraction(
        name=name or str(path),
        kind=TABLE,
        num_buckets=tuple(int(b) for b in header["buckets"]),
        iso=indexer.tables,
        table=table,
        offsets=np.array(offsets, np.int64),
        source_hash=header["hash"],
        method=str(header["method"]),
    )


def lossless(game: GameDef) -> CardAbstraction:
    d = game.deck_size
    hole = comb(d, game.num_hole_cards)
    nb, radix = [], 1
    for r in range(game.num_rounds):
        radix *= comb(d, game.num_board_cards[r])
        nb.append(hole * radix)
    return CardAbstraction("lossless", LOSSLESS, tuple(nb))


def rank_buckets(game: GameDef) -> CardAbstraction:
    if game.num_hole_cards != 2 or game.num_suits != 4 or game.num_ranks != 13:
        raise ValueError("the 'rank' card abstraction is for 52-card hold'em with two hole cards")
    return CardAbstraction("rank", RANK, tuple([169] + [9 * 13] * (game.num_rounds - 1)))


def default_card_name(game: GameDef, name: str | None = None) -> str:
    """The card abstraction ``name`` stands for in ``game``: ``name`` itself, or for ``None``
    ``lossless`` when it fits (at most 2M buckets a round), else for 52-card hold'em ``fine`` (the
    abstraction ladder in BENCHMARKS.md: at 3 and 20 minutes of the main job's training, LBR
    finds it 268 and 228 mbb/game harder to exploit than ``small``), or ``small`` with more than
    two seats (their trees are 10-300x the two-seat one's: ``fine`` would take gigabytes)."""
    if name is None:
        if max(lossless(game).num_buckets) <= 2_000_000:
            name = "lossless"
        elif game.deck_size == 52 and game.num_hole_cards == 2:
            name = "fine" if game.num_players == 2 else "small"
        else:
            raise AbstractionError(
                f"no default card abstraction for {game.name or 'this game'}: lossless needs "
                f"{max(lossless(game).num_buckets):,} buckets a round; build one with "
                "'mccfr abstraction build' and name it with --abstraction"
            )
    return name


def default_card_abstraction(
    game: GameDef, name: str | None = None, progress: bool = True, log=print, build: bool = True
) -> CardAbstraction:
    """The card abstraction ``name`` for ``game``.

    ``None``: see :func:`default_card_name`. Names: ``lossless``, ``rank``, a recipe (``small``,
    ``medium``, ``large``: built on first use and cached), or the path of a built abstraction.
    ``build=False`` only loads: a recipe that is not in the cache raises
    :class:`abstraction.buckets.MissingAbstractionError` (what queries do: they never start a build).
    """
    name = default_card_name(game, name)
    if name == "lossless":
        ab = lossless(game)
        if max(ab.num_buckets) > 50_000_000:
            raise AbstractionError(
                f"lossless buckets for {game.name or 'this game'} need {max(ab.num_buckets):,} rows per node"
            )
        return ab
    if name == "rank":
        return rank_buckets(game)
    if name in RECIPES:
        return from_file(game, ensure_recipe(game, name, progress=progress, log=log, build=build), name=name)
    if Path(name).exists():
        return from_file(game, name)
    raise AbstractionError(
        f"unknown card abstraction {name!r}: lossless, rank, a recipe ({', '.join(RECIPES)}) or a built directory"
    )


@numba.njit(cache=True, inline="always", error_model="numpy")
def _colex(cards, start, n, tmp):
    """Colex rank of the ``n`` cards ``cards[start:start+n]`` (insertion-sorted into ``tmp``)."""
    for i in range(n):
        c = cards[start + i]
        j = i
        while j > 0 and tmp[j - 1] > c:
            tmp[j] = tmp[j - 1]
            j -= 1
        tmp[j] = c
    idx = 0
    for i in range(n):
        idx += _BINOM[tmp[i], i + 1]
    return idx


def scratch_size(num_hole: int, total_board: int) -> int:
    """Length of the int64 ``work`` buffer :func:`deal_buckets` needs."""
    return 2 * (num_hole + total_board) + 2


@numba.njit(cache=True, inline="always", error_model="numpy")
def _table_positions(deal, num_hole, board_per_round, deck_size, num_suits, out, iso, table, offsets):
    """``out[seat, round]``: the position in ``table`` of the seat's entry for the round (``TABLE``;
    round 0 of two-card games is read at once, from the hole-card lookup). Per round, the seat's
    hand (hole cards and the board so far as a set, as packed rank masks) is indexed by suit
    isomorphism.

    Memory-level parallelism: the entries are likely cache misses (the river table alone is 123M
    entries), so every position is computed first, the last round's first, and its entry
    prefetched at once; :func:`_table_reads` reads them after the showdown evaluation. The buckets
    are those of reading each entry right after its index; the misses overlap each other and the
    arithmetic in between.
    """
    num_rounds = board_per_round.shape[0]
    pre = offsets[num_rounds]  # the preflop lookup by the two hole cards, -1 if none
    h0 = np.int64(0)
    h1 = np.int64(0)
    for i in range(num_hole):
        h0 |= card_bit(deal[i], num_suits)
        h1 |= card_bit(deal[num_hole + i], num_suits)
    seen = 0
    for r in range(num_rounds):
        seen += board_per_round[r]
    for r in range(num_rounds - 1, -1, -1):
        if r == 0 and pre >= 0:
            i0 = pre + deal[0] * deck_size + deal[1]
            i1 = pre + deal[num_hole] * deck_size + deal[num_hole + 1]
            out[0, 0] = table[i0]
            out[1, 0] = table[i1]
            break
        board_m = np.int64(0)
        for i in range(seen):
            board_m |= card_bit(deal[2 * num_hole + i], num_suits)
        i0 = offsets[r] + iso_index_masks(iso, r, h0, board_m, 0, 0, 0)
        i1 = offsets[r] + iso_index_masks(iso, r, h1, board_m, 0, 0, 0)
        prefetch(table, i0)
        prefetch(table, i1)
        out[0, r] = i0
        out[1, r] = i1
        seen -= board_per_round[r]


@numba.njit(cache=True, inline="always", error_model="numpy")
def _table_reads(num_rounds, out, table, offsets):
    """Replace the table positions :func:`_table_positions` left in ``out`` by the entries."""
    for r in range(1 if offsets[num_rounds] >= 0 else 0, num_rounds):
        out[0, r] = table[out[0, r]]
        out[1, r] = table[out[1, r]]


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def deal_buckets(
    kind, deal, num_hole, board_per_round, deck_size, num_suits, num_ranks, out, work, iso, table, offsets
):
    """Fill ``out[seat, round]`` (int64 ``[2, numRounds]``) and return the showdown winner.

    ``work`` is an int64 scratch buffer of :func:`scratch_size` entries (no allocation here);
    ``iso``, ``table``, ``offsets`` are :meth:`CardAbstraction.kernel_args` (read for ``TABLE``).
    """
    num_rounds = board_per_round.shape[0]
    total_board = 0
    for r in range(num_rounds):
        total_board += board_per_round[r]
    ncards = num_hole + total_board
    tmp = work[ncards:]
    if kind == TABLE:
        _table_positions(deal, num_hole, board_per_round, deck_size, num_suits, out, iso, table, offsets)
    s0 = 0
    s1 = 0
    for p in range(2):
        for i in range(num_hole):
            work[i] = deal[p * num_hole + i]
        for i in range(total_board):
            work[num_hole + i] = deal[2 * num_hole + i]
        strength = rank_hand(work, ncards, num_suits, num_ranks)
        if p == 0:
            s0 = strength
        else:
            s1 = strength
        if kind == LOSSLESS:
            hole = _colex(deal, p * num_hole, num_hole, tmp)
            idx = 0
            radix = 1
            pos = 2 * num_hole
            for r in range(num_rounds):
                n = board_per_round[r]
                idx = idx * _BINOM[deck_size, n] + _colex(deal, pos, n, tmp)
                radix *= _BINOM[deck_size, n]
                pos += n
                out[p, r] = hole * radix + idx
        elif kind == RANK:
            c0 = deal[p * num_hole]
            c1 = deal[p * num_hole + 1]
            r0 = c0 // num_suits
            r1 = c1 // num_suits
            hi = max(r0, r1)
            lo = min(r0, r1)
            if c0 % num_suits == c1 % num_suits:
                out[p, 0] = 13 * hi + lo
            else:
                out[p, 0] = 13 * lo + hi
            seen = 0
            for r in range(num_rounds):
                seen += board_per_round[r]
                if r > 0:
                    cat = hand_category(rank_hand(work, num_hole + seen, num_suits, num_ranks))
                    out[p, r] = cat * 13 + hi
    if kind == TABLE:
        _table_reads(num_rounds, out, table, offsets)
    if s0 > s1:
        return 0
    if s1 > s0:
        return 1
    return -1


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def card_buckets_n(cards, deal, out, work, strength):
    """:func:`card_buckets` for ``P = out.shape[0]`` seats (any number; the kernels take it for more
    than two): ``deal`` holds ``P`` seats' hole cards, then the board; ``out[p, r]`` gets seat
    ``p``'s bucket in round ``r`` and ``strength[p]`` its hand's rank on the whole board (higher
    wins). One seat at a time, without :func:`deal_buckets`' overlapping of two seats' table reads."""
    seats = out.shape[0]
    num_hole, bpr, suits, ranks = cards.num_hole, cards.board_per_round, cards.num_suits, cards.num_ranks
    num_rounds = bpr.shape[0]
    total_board = 0
    for r in range(num_rounds):
        total_board += bpr[r]
    ncards = num_hole + total_board
    tmp = work[ncards:]
    board0 = seats * num_hole
    pre = cards.offsets[num_rounds]
    for p in range(seats):
        h = p * num_hole
        for i in range(num_hole):
            work[i] = deal[h + i]
        for i in range(total_board):
            work[num_hole + i] = deal[board0 + i]
        strength[p] = rank_hand(work, ncards, suits, ranks)
        if cards.kind == LOSSLESS:
            hole = _colex(deal, h, num_hole, tmp)
            idx = 0
            radix = 1
            pos = board0
            for r in range(num_rounds):
                n = bpr[r]
                idx = idx * _BINOM[cards.deck_size, n] + _colex(deal, pos, n, tmp)
                radix *= _BINOM[cards.deck_size, n]
                pos += n
                out[p, r] = hole * radix + idx
        elif cards.kind == RANK:
            c0 = deal[h]
            c1 = deal[h + 1]
            hi = max(c0 // suits, c1 // suits)
            lo = min(c0 // suits, c1 // suits)
            out[p, 0] = 13 * hi + lo if c0 % suits == c1 % suits else 13 * lo + hi
            seen = 0
            for r in range(num_rounds):
                seen += bpr[r]
                if r > 0:
                    out[p, r] = hand_category(rank_hand(work, num_hole + seen, suits, ranks)) * 13 + hi
        else:
            hm = np.int64(0)
            for i in range(num_hole):
                hm |= card_bit(deal[h + i], suits)
            seen = 0
            for r in range(num_rounds):
                seen += bpr[r]
                if r == 0 and pre >= 0:
                    out[p, 0] = cards.table[pre + deal[h] * cards.deck_size + deal[h + 1]]
                    continue
                board_m = np.int64(0)
                for i in range(seen):
                    board_m |= card_bit(deal[board0 + i], suits)
                out[p, r] = cards.table[
                    cards.offsets[r] + iso_index_masks(cards.iso, r, hm, board_m, 0, 0, 0)
                ]


@numba.njit(cache=True, inline="always", error_model="numpy")
def card_buckets(cards, deal, out, work):
    """:func:`deal_buckets` with the abstraction given as one :class:`CardArrays` ``cards``."""
    return deal_buckets(
        cards.kind,
        deal,
        cards.num_hole,
        cards.board_per_round,
        cards.deck_size,
        cards.num_suits,
        cards.num_ranks,
        out,
        work,
        cards.iso,
        cards.table,
        cards.offsets,
    )
