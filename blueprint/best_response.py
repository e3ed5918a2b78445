"""Exact best response and exploitability, vectorized over private hands.

For a strategy given per (node, bucket) on the abstract tree, the best responder plays the real
game with full knowledge of its own cards (so the result is the exploitability in the real game,
even when the strategy comes from a lossy card abstraction). The walk goes over *public* states,
(betting node, board cards), carrying the opponent's reach as a vector over all ``H`` private
hands; values come back as a vector over the responder's hands. Terminal values use the
compatibility of the two hands (no shared card) with card removal:

* fold:     ``v[h] = u * sum_{h' ~ h} reach[h']``
* showdown: ``v[h] = m * sum_{h' ~ h} sign(s(h) - s(h')) * reach[h']`` with ``m = min(spent)``.

A board step with ``k`` possible boards (given both hands, every compatible pair has the same
``k``) averages the ``k`` subtrees. The game value for the responder is ``sum_h v[h] / P`` where
``P`` is the number of ordered (hand, hand) deals. Exploitability follows OpenSpiel:
``(BR value of seat 0 + BR value of seat 1) / 2`` (the game is zero-sum), in chips.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from math import comb

import numba
import numpy as np

from abstraction.cards import CardAbstraction, deal_buckets
from abstraction.tree import KIND_DECISION, KIND_FOLD, BettingTree
from holdem.evaluator import rank_hand

MAX_HANDS = 5000
SD_CACHE_BYTES = 256 << 20  # showdown matrices kept (most recently used boards); strengths are all kept
MAX_WORK = 2e8  # hands x board sequences x decision nodes: beyond this an exact walk takes too long


@numba.njit(cache=True)
def hand_buckets(
    kind,
    hands,
    board,
    round_,
    num_hole,
    board_per_round,
    deck_size,
    num_suits,
    num_ranks,
    iso,
    table,
    offsets,
):
    """Bucket in ``round_`` of every hand (rows of ``hands``) given the visible ``board``."""
    num_rounds = board_per_round.shape[0]
    total = 0
    for r in range(num_rounds):
        total += board_per_round[r]
    deal = np.zeros(2 * num_hole + total, np.int64)
    out = np.zeros((2, num_rounds), np.int64)
    res = np.empty(hands.shape[0], np.int64)
    work = np.empty(2 * (num_hole + total) + 2, np.int64)
    for i in range(hands.shape[0]):
        for j in range(num_hole):
            deal[j] = hands[i, j]
            deal[num_hole + j] = hands[i, j]
        for j in range(board.shape[0]):
            deal[2 * num_hole + j] = board[j]
        deal_buckets(
            kind,
            deal,
            num_hole,
            board_per_round,
            deck_size,
            num_suits,
            num_ranks,
            out,
            work,
            iso,
            table,
            offsets,
        )
        res[i] = out[0, round_]
    return res


@numba.njit(cache=True)
def hand_strengths(hands, board, num_suits, num_ranks):
    n = hands.shape[1] + board.shape[0]
    work = np.empty(n, np.int64)
    res = np.empty(hands.shape[0], np.int64)
    for i in range(hands.shape[0]):
        for j in range(hands.shape[1]):
            work[j] = hands[i, j]
        for j in range(board.shape[0]):
            work[hands.shape[1] + j] = board[j]
        res[i] = rank_hand(work, n, num_suits, num_ranks)
    return res


class TreeEvaluator:
    def __init__(self, tree: BettingTree, cards: CardAbstraction, row_offset: np.ndarray, probs: np.ndarray):
        g = tree.game
        self.tree, self.cards, self.row_offset, self.probs = tree, cards, row_offset, probs
        self.g = g
        self.hands = np.array(list(itertools.combinations(range(g.deck_size), g.num_hole_cards)), np.int64)
        if len(self.hands) > MAX_HANDS:
            raise ValueError(
                f"exact best response needs <= {MAX_HANDS} private hands, this game has {len(self.hands)}"
            )
        H = len(self.hands)
        boards = 1
        for r in range(g.num_rounds):
            dealt = 2 * g.num_hole_cards + sum(g.num_board_cards[:r])
            boards *= comb(g.deck_size - dealt, g.num_board_cards[r])
        work = float(H) * boards * max(1, len(tree.decision_nodes()))
        if work > MAX_WORK:
            raise ValueError(
                f"exact best response is out of reach here ({H:,} hands x {boards:,} boards x "
                f"{len(tree.decision_nodes()):,} betting nodes); use local best response on big games"
            )
        masks = np.zeros(H, np.int64)
        for j in range(g.num_hole_cards):
            masks |= np.left_shift(np.int64(1), self.hands[:, j])
        self.hand_mask = masks
        self.compat = (masks[:, None] & masks[None, :]) == 0  # [H, H] no shared card
        self.bpr = np.array(g.num_board_cards, np.int64)
        self._bucket_cache: dict = {}
        self._sd_cache: OrderedDict = OrderedDict()  # board -> [H, H] float64, LRU
        self._sd_max = max(1, SD_CACHE_BYTES // (8 * H * H))
        self._strength_cache: dict = {}  # board -> int64 [H] (small: kept for every board)

    # -- helpers ------------------------------------------------------------------------------
    def _board_mask(self, board: tuple[int, ...]) -> int:
        m = 0
        for c in board:
            m |= 1 << c
        return m

    def _live(self, board):
        return (self.hand_mask & self._board_mask(board)) == 0

    def _buckets(self, board: tuple[int, ...], r: int) -> np.ndarray:
        key = (board, r)
        b = self._bucket_cache.get(key)
        if b is None:
            g = self.g
            kind, iso, table, offsets = self.cards.kernel_args()
            b = hand_buckets(
                kind,
                self.hands,
                np.array(board, np.int64),
                r,
                g.num_hole_cards,
                self.bpr,
                g.deck_size,
                g.num_suits,
                g.num_ranks,
                iso,
                table,
                offsets,
            )
            # a hand that shares a card with the board is not a deal: its "bucket" is whatever the
            # table holds at a meaningless index (can exceed the bucket count); it is masked out of
            # every value, so give it bucket 0
            b = np.where(self._live(board), b, 0)
            self._bucket_cache[key] = b
        return b

    def _showdown_matrix(self, board: tuple[int, ...]) -> np.ndarray:
        m = self._sd_cache.get(board)
        if m is not None:
            self._sd_cache.move_to_end(board)
            return m
        s = self._strength_cache.get(board)
        if s is None:
            s = hand_strengths(self.hands, np.array(board, np.int64), self.g.num_suits, self.g.num_ranks)
            self._strength_cache[board] = s
        m = np.sign(s[:, None] - s[None, :]).astype(np.float64) * self.compat
        live = self._live(board)
        m = m * live[:, None] * live[None, :]
        self._sd_cache[board] = m
        if len(self._sd_cache) > self._sd_max:
            self._sd_cache.popitem(last=False)
        return m

    def _sigma(self, n: int, board, r: int) -> np.ndarray:
        """[H, A] strategy of the node's actor for every hand."""
        na = int(self.tree.num_actions[n])
        nb = int(self.cards.num_buckets[r])
        s = int(self.row_offset[n])
        block = self.probs[s : s + nb * na].reshape(nb, na)
        return block[self._buckets(board, r)]

    def _deal_rounds(self, board, r_from: int, r_to: int):
        """All ways to deal the boards of rounds r_from+1..r_to: list of (board, weight)."""
        out = [(board, 1.0)]
        for r in range(r_from + 1, r_to + 1):
            k = self.g.num_board_cards[r]
            nxt = []
            for b, w in out:
                used = set(b)
                rest = [c for c in range(self.g.deck_size) if c not in used]
                remaining = self.g.deck_size - 2 * self.g.num_hole_cards - len(b)
                nposs = comb(remaining, k)
                for combo in itertools.combinations(rest, k):
                    nxt.append((b + combo, w / nposs))
            out = nxt
        return out

    # -- the walk -----------------------------------------------------------------------------
    def walk(self, n: int, board: tuple, reach: np.ndarray, i: int, br: bool) -> np.ndarray:
        t = self.tree
        kind = t.kind[n]
        if kind != KIND_DECISION:
            live = self._live(board)
            if kind == KIND_FOLD:
                folder = int(t.player[n])
                u = -float(t.spent[n, i]) if folder == i else float(t.spent[n, folder])
                return u * (self.compat @ (reach * live)) * live
            m = float(min(t.spent[n, 0], t.spent[n, 1]))
            return m * (self._showdown_matrix(board) @ reach)
        r = int(t.round[n])
        p = int(t.player[n])
        sigma = self._sigma(n, board, r)
        s = int(t.child_start[n])
        vals = None
        for a in range(int(t.num_actions[n])):
            c = int(t.edge_child[s + a])
            rc = int(t.round[c])
            if p == i:
                v = self._child(c, board, r, rc, reach, i, br)
                if br:
                    vals = v if vals is None else np.maximum(vals, v)
                else:
                    vals = sigma[:, a] * v if vals is None else vals + sigma[:, a] * v
            else:
                v = self._child(c, board, r, rc, reach * sigma[:, a], i, br)
                vals = v if vals is None else vals + v
        return vals

    def _child(self, c, board, r, rc, reach, i, br):
        if rc == r:
            return self.walk(c, board, reach, i, br)
        total = None
        for b, w in self._deal_rounds(board, r, rc):
            live = self._live(b)
            v = w * self.walk(c, b, reach * live, i, br) * live
            total = v if total is None else total + v
        return total

    def value(self, i: int, br: bool) -> float:
        g = self.g
        H = len(self.hands)
        pairs = H * comb(g.deck_size - g.num_hole_cards, g.num_hole_cards)
        root_round = 0
        total = 0.0
        for b, w in self._deal_rounds((), -1, root_round):
            live = self._live(b)
            total += w * float((self.walk(0, b, live.astype(np.float64), i, br) * live).sum())
        return total / pairs


class BestResponse:
    """Exact best response for one tree and card abstraction; reuse it for many strategies (the
    card buckets and showdown matrices of every board are computed once)."""

    def __init__(self, tree: BettingTree, cards: CardAbstraction, row_offset: np.ndarray):
        self._ev = TreeEvaluator(tree, cards, row_offset, None)

    def exploitability(self, probs: np.ndarray) -> tuple[float, list[float]]:
        self._ev.probs = probs
        brv = [self._ev.value(0, True), self._ev.value(1, True)]
        return (brv[0] + brv[1]) / 2.0, brv

    def expected_value(self, probs: np.ndarray) -> float:
        self._ev.probs = probs
        return self._ev.value(0, False)


def exploitability(
    tree: BettingTree, cards: CardAbstraction, row_offset: np.ndarray, probs: np.ndarray
) -> tuple[float, list[float]]:
    """``(exploitability, [BR value of seat 0, BR value of seat 1])`` in chips.

    ``probs`` is the strategy per table entry (see :func:`blueprint.tables.normalize_blocks`).
    """
    return BestResponse(tree, cards, row_offset).exploitability(probs)


def expected_value(
    tree: BettingTree, cards: CardAbstraction, row_offset: np.ndarray, probs: np.ndarray
) -> float:
    """Expected chips of seat 0 when both seats follow ``probs``."""
    return BestResponse(tree, cards, row_offset).expected_value(probs)
