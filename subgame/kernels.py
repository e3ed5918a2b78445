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

# the O(H) terminal values with card removal, shared with blueprint.vector_cfr (the layer below)
from blueprint.vector_cfr import _fold_values, _showdown_values

MODE_CFR, MODE_BR, MODE_EV = 0, 1, 2


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, fastmath=True, nogil=True)  # nogil: concurrent solves (the service) use every core
def traverse(kind, player, spent, child_start, num_children, board, row, deal_count, edge_child, hands, valid,
             order, num_valid, sorted_strength, deck, sigma, root_reach, p, mode, reach, val, regret, strat_sum,
             w_pos, w_neg, floor_zero, s_old, s_new):
    """One walk for traverser ``p``; returns nothing, ``val[0]`` holds the root values per hand.

    Mode 0 updates ``regret`` (``R <- R * (w_pos if R > 0 else w_neg) + r``, floored at 0 when
    ``floor_zero``) and ``strat_sum`` (``S <- S * s_old + s_new * own reach * sigma``) at ``p``'s nodes.
    """
    N = kind.shape[0]
    H = hands.shape[0]
    o = 1 - p
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
            rq = reach[q, n]
            ro = reach[1 - q, n]
            for a in range(num_children[n]):
                c = edge_child[cs + a]
                sg = sigma[row[n] + a]
                cq = reach[q, c]
                co = reach[1 - q, c]
                for h in range(H):
                    cq[h] = rq[h] * sg[h]
                    co[h] = ro[h]
        elif k == 3:
            cs = child_start[n]
            r0 = reach[0, n]
            r1 = reach[1, n]
            for a in range(num_children[n]):
                c = edge_child[cs + a]
                vb = valid[board[c]]
                c0 = reach[0, c]
                c1 = reach[1, c]
                for h in range(H):
                    c0[h] = r0[h] * vb[h]
                    c1[h] = r1[h] * vb[h]
    # bottom-up
    for n in range(N - 1, -1, -1):
        k = kind[n]
        b = board[n]
        vn = val[n]
        if k == 1:
            f = player[n]
            u = -float(spent[n, p]) if f == p else float(spent[n, f])
            _fold_values(reach[o, n], valid[b], hands, u, deck, vn)
        elif k == 2:
            m = float(min(spent[n, 0], spent[n, 1]))
            _showdown_values(reach[o, n], order[b], sorted_strength[b], num_valid[b], hands, m, deck, vn)
        elif k == 3:
            cs = child_start[n]
            inv = 1.0 / deal_count[n]
            vn[:] = 0.0
            for a in range(num_children[n]):
                vc = val[edge_child[cs + a]]
                for h in range(H):
                    vn[h] += vc[h]
            for h in range(H):
                vn[h] *= inv
        else:
            q = player[n]
            cs = child_start[n]
            A = num_children[n]
            r0 = row[n]
            if q != p:
                vn[:] = 0.0
                for a in range(A):
                    vc = val[edge_child[cs + a]]
                    for h in range(H):
                        vn[h] += vc[h]
            elif mode == 1:
                vn[:] = val[edge_child[cs]]
                for a in range(1, A):
                    vc = val[edge_child[cs + a]]
                    for h in range(H):
                        vn[h] = max(vn[h], vc[h])
            else:
                vn[:] = 0.0
                for a in range(A):
                    vc = val[edge_child[cs + a]]
                    sg = sigma[r0 + a]
                    for h in range(H):
                        vn[h] += sg[h] * vc[h]
                if mode == 0:
                    rp = reach[p, n]
                    for a in range(A):
                        vc = val[edge_child[cs + a]]
                        sg = sigma[r0 + a]
                        rg = regret[r0 + a]
                        ss = strat_sum[r0 + a]
                        for h in range(H):
                            x = rg[h]
                            x = x * (w_pos if x > 0 else w_neg) + (vc[h] - vn[h])
                            if floor_zero and x < 0:
                                x = 0.0
                            rg[h] = x
                            ss[h] = ss[h] * s_old + s_new * rp[h] * sg[h]
