"""Per-blueprint tables that do not depend on the state being solved, kept across the solves of a
process (:func:`tables_of`): what a turn solve's setup would otherwise recompute every time.

* ``buckets``: the card bucket of every hand (:func:`subgame.tree.all_hands`) on a board in a round
  (:class:`subgame.construct.BucketCache` and the depth-limited leaves' model both read it; within
  one turn solve they ask for the same 48 river boards).
* ``leaf_rows``: per depth-limit leaf's betting (the real actions up to the leaf), the blueprint's
  probabilities of each continuation edge per card bucket at every decision of the leaf's
  continuation template (:func:`subgame.continuation.build_leaf_model`): they depend on the
  betting alone, and the bettings of turn leaves recur from hand to hand.

Each is a least-recently-used store bounded in bytes (:class:`LRU`). Entries are never changed once
stored (callers must not write into them). The tables hang off the blueprint object (a weak
reference: a blueprint dropped drops them); a forked solver process has its own copy.
"""

from __future__ import annotations

import collections
import threading
import weakref
from typing import Any, Callable, Hashable

import numpy as np

from blueprint.best_response import hand_buckets
from subgame.tree import all_hands, blocked_by

#: bytes each table may hold at most
BUCKET_BYTES = 32 << 20
LEAF_ROW_BYTES = 96 << 20


def _nbytes(value: Any) -> int:
    """The bytes of the arrays in ``value`` (an array, an object with ``memory_bytes()``, or a tuple
    / list of them, nested)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value) + 8 * len(value)
    if callable(getattr(value, "memory_bytes", None)):  # a BettingTree
        return int(value.memory_bytes()) + 256
    return 64


class LRU:
    """A least-recently-used map bounded in bytes (its values' arrays, :func:`_nbytes`), safe across
    threads. :meth:`get` computes a missing value outside the lock (two threads may both compute
    it; the first stored wins). ``hits`` and ``misses`` count the lookups."""

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self.bytes = 0
        self.hits = self.misses = 0
        self._d: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._d)

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        with self._lock:
            got = self._d.get(key)
            if got is not None:
                self._d.move_to_end(key)
                self.hits += 1
                return got[0]
            self.misses += 1
        value = make()
        size = _nbytes(value)
        if size > self.max_bytes:
            return value  # too big to keep
        with self._lock:
            old = self._d.get(key)
            if old is not None:
                return old[0]
            self._d[key] = (value, size)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, s) = self._d.popitem(last=False)
                self.bytes -= s
        return value

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self.bytes = 0


class BlueprintTables:
    """One blueprint's tables (see the module docstring)."""

    def __init__(self) -> None:
        self.buckets = LRU(BUCKET_BYTES)
        self.leaf_rows = LRU(LEAF_ROW_BYTES)

    def clear(self) -> None:
        self.buckets.clear()
        self.leaf_rows.clear()


_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def tables_of(bp) -> BlueprintTables:
    """``bp``'s tables, made on first use."""
    with _LOCK:
        t = _TABLES.get(bp)
        if t is None:
            t = _TABLES[bp] = BlueprintTables()
        return t


def hand_buckets_for(bp, hands: np.ndarray, board: tuple[int, ...], r: int) -> np.ndarray:
    """The card buckets in round ``r`` of ``hands`` (rows of card ids) on ``board``."""
    g = bp.gamedef
    kind, iso, table, offsets = bp.cards.kernel_args()
    return hand_buckets(
        kind,
        hands.astype(np.int64),
        np.array(board, np.int64),
        r,
        g.num_hole_cards,
        np.array(g.num_board_cards, np.int64),
        g.deck_size,
        g.num_suits,
        g.num_ranks,
        iso,
        table,
        offsets,
    )


def board_buckets(bp, board, r: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices into :func:`~subgame.tree.all_hands` of the hands not blocked by ``board``, their card
    buckets in round ``r``), computed once per process and blueprint (the arrays are shared: read
    only; the buckets do not depend on the board's order)."""
    key = (tuple(sorted(int(c) for c in board)), int(r))

    def make() -> tuple[np.ndarray, np.ndarray]:
        hands = all_hands(bp.gamedef)
        idx = np.nonzero(~blocked_by(hands, key[0]))[0]
        bk = hand_buckets_for(bp, hands[idx], key[0], key[1])
        idx.flags.writeable = bk.flags.writeable = False
        return idx, bk

    return tables_of(bp).buckets.get(key, make)


__all__ = [
    "BUCKET_BYTES",
    "LEAF_ROW_BYTES",
    "LRU",
    "BlueprintTables",
    "board_buckets",
    "hand_buckets_for",
    "tables_of",
]
