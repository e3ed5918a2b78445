"""numba kernels of the range-vectorized subgame solver (see :mod:`subgame.tree` for the arrays).

One call of :func:`traverse` walks the whole public tree twice: top-down in preorder, multiplying
each seat's reach vector (over all ``H`` hands) by its strategy, then bottom-up, computing the
traverser's counterfactual values per hand. Terminal values cost O(H) per node (after an
O(H log H) sort per board done once when the tree is built), with exact card removal:

* fold: ``sum_{h' ~ h} r[h'] = T - C[c1] - C[c2] + r[h]`` (``T`` the total opponent reach, ``C[c]``
  the reach of hands holding card ``c``, ``h ~ h'`` for hands sharing no card);
* showdown: one ascending and one descending sweep over hands sorted by strength, keeping the same
  totals for the weaker (stronger) hands seen so far; ties are settled group by group.

Modes: 0 = a CFR iteration for the traverser (regrets and average strategy updated), 1 = best
response of the traverser to ``sigma`` (max over its actions), 2 = the traverser's values when
both play ``sigma``.
"""

from __future__ import annotations

import numba
import numpy as np

MODE_CFR, MODE_BR, MODE_EV = 0, 1, 2


@numba.njit(cache=True)
def strategy_from(acc, sigma, kind, num_children, row):
    """``sigma`` = regret matching of ``acc`` (positive parts normalised; uniform where none)."""
    H = acc.shape[1]
    for n in range(kind.shape[0]):
        if kind[n] != 0:
            continue
        r0 = row[n]
        A = num_children[n]
        for h in range(H):
            tot = 0.0
            for a in range(A):
                x = acc[r0 + a, h]
                if x > 0:
                    tot += x
            if tot > 0:
                for a in range(A):
                    x = acc[r0 + a, h]
                    sigma[r0 + a, h] = x / tot if x > 0 else 0.0
            else:
                for a in range(A):
                    sigma[r0 + a, h] = 1.0 / A


@numba.njit(cache=True)
def _fold_mass(r, hands, order, nv, deck, out, percard):
    """``out[h] = sum of r over hands compatible with h`` for the ``nv`` hands in ``order``."""
    hole = hands.shape[1]
    percard[:deck] = 0.0
    tot = 0.0
    for k in range(nv):
        h = order[k]
        w = r[h]
        tot += w
        for j in range(hole):
            percard[hands[h, j]] += w
    for k in range(nv):
        h = order[k]
        m = tot
        for j in range(hole):
            m -= percard[hands[h, j]]
        if hole == 2:
            m += r[h]
        out[h] = m


@numba.njit(cache=True)
def _showdown(r, hands, order, nv, strength, deck, out, percard):
    """``out[h] = reach of compatible weaker hands - reach of compatible stronger hands``."""
    hole = hands.shape[1]
    percard[:deck] = 0.0
    tot = 0.0
    i = 0
    while i < nv:
        s = strength[order[i]]
        j = i
        while j < nv and strength[order[j]] == s:
            j += 1
        for k in range(i, j):
            h = order[k]
            m = tot
            for q in range(hole):
                m -= percard[hands[h, q]]
            out[h] = m
        for k in range(i, j):
            h = order[k]
            w = r[h]
            tot += w
            for q in range(hole):
                percard[hands[h, q]] += w
        i = j
    percard[:deck] = 0.0
    tot = 0.0
    i = nv - 1
    while i >= 0:
        s = strength[order[i]]
        j = i
        while j >= 0 and strength[order[j]] == s:
            j -= 1
        for k in range(i, j, -1):
            h = order[k]
            m = tot
            for q in range(hole):
                m -= percard[hands[h, q]]
            out[h] -= m
        for k in range(i, j, -1):
            h = order[k]
            w = r[h]
            tot += w
            for q in range(hole):
                percard[hands[h, q]] += w
        i = j


@numba.njit(cache=True)
def traverse(kind, player, spent, child_start, num_children, board, row, deal_count, edge_child, hands, valid,
             order, num_valid, strength, deck, sigma, root_reach, p, mode, reach, val, regret, strat_sum,
             w_pos, w_neg, floor_zero, s_old, s_new):
    """One walk for traverser ``p``; returns nothing, ``val[0]`` holds the root values per hand.

    Mode 0 updates ``regret`` (``R <- R * (w_pos if R > 0 else w_neg) + r``, floored at 0 when
    ``floor_zero``) and ``strat_sum`` (``S <- S * s_old + s_new * own reach * sigma``) at ``p``'s nodes.
    """
    N = kind.shape[0]
    H = hands.shape[0]
    o = 1 - p
    percard = np.zeros(deck, np.float64)
    b0 = board[0]
    for h in range(H):
        v = valid[b0, h]
        reach[0, 0, h] = root_reach[0, h] if v else 0.0
        reach[1, 0, h] = root_reach[1, h] if v else 0.0
    # top-down
    for n in range(N):
        k = kind[n]
        if k == 0:
            q = player[n]
            cs = child_start[n]
            for a in range(num_children[n]):
                c = edge_child[cs + a]
                r = row[n] + a
                for h in range(H):
                    reach[q, c, h] = reach[q, n, h] * sigma[r, h]
                    reach[1 - q, c, h] = reach[1 - q, n, h]
        elif k == 3:
            cs = child_start[n]
            for a in range(num_children[n]):
                c = edge_child[cs + a]
                bc = board[c]
                for h in range(H):
                    if valid[bc, h]:
                        reach[0, c, h] = reach[0, n, h]
                        reach[1, c, h] = reach[1, n, h]
                    else:
                        reach[0, c, h] = 0.0
                        reach[1, c, h] = 0.0
    # bottom-up
    for n in range(N - 1, -1, -1):
        k = kind[n]
        b = board[n]
        if k == 1:
            f = player[n]
            u = -float(spent[n, p]) if f == p else float(spent[n, f])
            for h in range(H):
                val[n, h] = 0.0
            _fold_mass(reach[o, n], hands, order[b], num_valid[b], deck, val[n], percard)
            for h in range(H):
                val[n, h] *= u
        elif k == 2:
            m = float(min(spent[n, 0], spent[n, 1]))
            for h in range(H):
                val[n, h] = 0.0
            _showdown(reach[o, n], hands, order[b], num_valid[b], strength[b], deck, val[n], percard)
            for h in range(H):
                val[n, h] *= m
        elif k == 3:
            cs = child_start[n]
            inv = 1.0 / deal_count[n]
            for h in range(H):
                val[n, h] = 0.0
            for a in range(num_children[n]):
                c = edge_child[cs + a]
                for h in range(H):
                    val[n, h] += val[c, h]
            for h in range(H):
                val[n, h] *= inv
        else:
            q = player[n]
            cs = child_start[n]
            A = num_children[n]
            r0 = row[n]
            if q != p:
                for h in range(H):
                    val[n, h] = 0.0
                for a in range(A):
                    c = edge_child[cs + a]
                    for h in range(H):
                        val[n, h] += val[c, h]
            elif mode == 1:
                c = edge_child[cs]
                for h in range(H):
                    val[n, h] = val[c, h]
                for a in range(1, A):
                    c = edge_child[cs + a]
                    for h in range(H):
                        if val[c, h] > val[n, h]:
                            val[n, h] = val[c, h]
            else:
                for h in range(H):
                    val[n, h] = 0.0
                for a in range(A):
                    c = edge_child[cs + a]
                    for h in range(H):
                        val[n, h] += sigma[r0 + a, h] * val[c, h]
                if mode == 0:
                    for a in range(A):
                        c = edge_child[cs + a]
                        for h in range(H):
                            if not valid[b, h]:
                                continue
                            x = regret[r0 + a, h]
                            x = x * (w_pos if x > 0 else w_neg) + (val[c, h] - val[n, h])
                            if floor_zero and x < 0:
                                x = 0.0
                            regret[r0 + a, h] = x
                            strat_sum[r0 + a, h] = strat_sum[r0 + a, h] * s_old + s_new * reach[p, n, h] * sigma[r0 + a, h]
