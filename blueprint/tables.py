"""Regret and average-strategy tables: layout over the betting tree and the average strategy
(:func:`normalize_blocks` node by node in float64, :func:`average_strategy32` vectorized in float32).

``row_offset`` (int64 ``[N]``, -1 for terminals) gives each decision node's block in the flat
tables (see :mod:`blueprint.kernels`); ``size`` is the total number of (information set, action)
entries. Storage is 4 bytes of regret (float32 or int32) plus 4 bytes of float32 strategy sum per
entry; the per-node ``row_offset`` (8 bytes per node) is the only metadata of the layout. The
trainer adds 4 bytes per information set (row), the discount boundaries it has been through
(:func:`row_layout`, :mod:`blueprint.kernels`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from abstraction.tree import KIND_DECISION, BettingTree


class Tables(NamedTuple):
    """The tables a numba kernel updates and their layout, as one argument: the arrays
    themselves, not copies (the kernels write ``regret`` and ``strat`` in place)."""

    row_offset: np.ndarray  # int64 [N]: each decision node's first entry (see :func:`layout`)
    regret: np.ndarray  # [size]: float32 or int32 (sampled MCCFR), float64 (full traversal, vector CFR)
    strat: np.ndarray  # [size]: average-strategy sums, float32 (MCCFR) or float64 (vector CFR)


class RowLayout(NamedTuple):
    """The information sets' rows node by node, for the kernels' sweeps (settling discounts,
    merging a thread's copy): the ``d``-th decision node (in layout order) owns rows
    ``row[d] .. row[d] + rows[d] - 1``, row ``row[d] + b`` the ``width[d]`` entries from
    ``entry[d] + b * width[d]``."""

    entry: np.ndarray  # int64 [D]: the node's first entry (its row_offset)
    row: np.ndarray  # int64 [D]: the node's first row
    rows: np.ndarray  # int64 [D]: the card buckets of its round
    width: np.ndarray  # int64 [D]: its actions


def row_layout(
    tree: BettingTree, num_buckets: np.ndarray, row_offset: np.ndarray
) -> tuple[RowLayout, np.ndarray, int]:
    """``(layout, node_row, rows)``: the :class:`RowLayout` of the tables :func:`layout` lays out,
    each node's first row id (int64 ``[N]``, -1 for terminals; the row of (node ``n``, bucket
    ``b``) is ``node_row[n] + b``), and the number of rows (information sets)."""
    dec = layout_nodes(tree, row_offset)
    rows = np.asarray(num_buckets, np.int64)[tree.round[dec].astype(np.int64)]
    first = np.cumsum(rows) - rows
    node_row = np.full(tree.num_nodes, -1, np.int64)
    node_row[dec] = first
    lay = RowLayout(
        np.asarray(row_offset, np.int64)[dec].copy(),
        first.astype(np.int64),
        rows,
        tree.num_actions[dec].astype(np.int64),
    )
    return lay, node_row, int(rows.sum())


def layout_nodes(tree: BettingTree, row_offset: np.ndarray) -> np.ndarray:
    """The decision nodes in :class:`RowLayout` order (int64 ``[D]``): ``d`` is node ``[d]``."""
    dec = np.flatnonzero(tree.kind == KIND_DECISION)
    return dec[np.argsort(row_offset[dec], kind="stable")].astype(np.int64)


def layout(tree: BettingTree, num_buckets: np.ndarray) -> tuple[np.ndarray, int]:
    """``(row_offset, size)`` for ``tree`` with ``num_buckets[round]`` card buckets."""
    dec = tree.kind == KIND_DECISION
    block = np.where(dec, num_buckets[tree.round.astype(np.int64)] * tree.num_actions.astype(np.int64), 0)
    ends = np.cumsum(block)
    row_offset = np.where(dec, ends - block, -1).astype(np.int64)
    return row_offset, int(ends[-1]) if len(ends) else 0


def tree_depth(tree: BettingTree) -> int:
    """Number of decision nodes on the longest root-to-leaf path."""
    depth = np.zeros(tree.num_nodes, np.int64)
    for n in range(1, tree.num_nodes):  # preorder: parents come first
        p = tree.parent[n]
        depth[n] = depth[p] + 1
    return int(depth.max()) + 1


def normalize_blocks(
    tree: BettingTree, row_offset: np.ndarray, num_buckets: np.ndarray, sums: np.ndarray
) -> np.ndarray:
    """Turn per-entry sums into probabilities per (node, bucket); all-zero rows become uniform.

    Returns float64 of the same layout as ``sums``.
    """
    out = np.empty(sums.shape[0], np.float64)
    for n in tree.decision_nodes():
        na = int(tree.num_actions[n])
        nb = int(num_buckets[tree.round[n]])
        s = int(row_offset[n])
        block = sums[s : s + nb * na].astype(np.float64).reshape(nb, na)
        block = np.maximum(block, 0.0)
        tot = block.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            prob = np.where(tot > 0, block / np.where(tot > 0, tot, 1.0), 1.0 / na)
        out[s : s + nb * na] = prob.ravel()
    return out


_NORMALIZE_BLOCK = 1 << 20  # table entries per pass of average_strategy32


def average_strategy32(tree, row_offset: np.ndarray, num_buckets: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """:func:`normalize_blocks` as float32, vectorized over the rows of many
    nodes at a time (that one loops over nodes in Python: about a second per 10,000 decision
    nodes, a pause at every checkpoint) with float64 arithmetic in passes of about 1M entries:
    the same probabilities (float64 row sums, all-zero rows uniform), rounded to float32."""
    dec = np.nonzero(tree.kind == KIND_DECISION)[0]
    k = tree.num_actions[dec].astype(np.int64)
    rows = np.asarray(num_buckets, np.int64)[tree.round[dec].astype(np.int64)]
    block = rows * k
    starts_all = np.asarray(row_offset, np.int64)[dec]
    ends = starts_all + block
    out = np.empty(sums.shape[0], np.float32)
    first = 0
    while first < len(dec):
        last = max(int(np.searchsorted(ends, starts_all[first] + _NORMALIZE_BLOCK, side="right")), first + 1)
        lo, hi = int(starts_all[first]), int(ends[last - 1])
        part = np.maximum(sums[lo:hi].astype(np.float64), 0.0)
        row_len = np.repeat(k[first:last], rows[first:last])
        tot = np.repeat(np.add.reduceat(part, np.cumsum(row_len) - row_len), row_len)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[lo:hi] = np.where(
                tot > 0, part / np.where(tot > 0, tot, 1.0), 1.0 / np.repeat(row_len, row_len)
            )
        first = last
    return out
