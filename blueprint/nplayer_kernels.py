"""numba kernels of :mod:`blueprint.nplayer`: external-sampling MCCFR and exact NashConv over a
flattened N-seat game (:class:`blueprint.nplayer.FlatTree`: a betting tree times a list of
equally likely deals; no Python object reaches a kernel).

Tree layout (node ids in creation order: every child's id is above its parent's):
    ``kind[n]``      :data:`DECISION` or :data:`TERMINAL`
    ``player[n]``    the seat to act (decision nodes)
    ``nact[n]``      number of actions; child ``a`` of ``n`` is ``first[n] + a``
    ``grp[n]``       the (seat, round) group whose card key names ``n``'s information sets
    ``base[n]``      id of ``n``'s first information set: deal ``d`` is in set
                     ``base[n] + kid[grp[n], d]``
    ``prow[n]``      terminal nodes: the row of ``payoff[row, pat[d], seat]``
    ``ioff[i]``      information set ``i``'s actions are ``ioff[i] .. ioff[i] + nact - 1`` of a
                     flat policy, regret or strategy-sum array
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from blueprint.numerics import rng_below, rng_uniform

__all__ = [
    "DECISION",
    "TERMINAL",
    "FlatTree",
    "es_iterations",
    "policy_values_kernel",
    "best_response_value_kernel",
]

DECISION = 0
TERMINAL = 1


class FlatTree(NamedTuple):
    kind: np.ndarray  # int8[nodes]
    player: np.ndarray  # int8[nodes]
    nact: np.ndarray  # int32[nodes]
    first: np.ndarray  # int32[nodes]
    grp: np.ndarray  # int32[nodes] (-1 at terminals)
    base: np.ndarray  # int64[nodes]
    prow: np.ndarray  # int32[nodes] (-1 at decisions)
    kid: np.ndarray  # int32[groups, deals]
    pat: np.ndarray  # int32[deals]
    payoff: np.ndarray  # float64[rows, patterns, seats]
    ioff: np.ndarray  # int64[infosets + 1]


@numba.njit(cache=True, error_model="numpy")
def _regret_matching(regret, off, na, sig, s):
    pos = 0.0
    for a in range(na):
        r = regret[off + a]
        if r > 0.0:
            pos += r
    for a in range(na):
        r = regret[off + a]
        sig[s + a] = (r / pos if r > 0.0 else 0.0) if pos > 0.0 else 1.0 / na


@numba.njit(cache=True, error_model="numpy")
def es_iterations(tr, regret, strat, rng, t0, iters, linear, seats, max_depth, maxa):
    """Iterations ``t0 + 1 .. t0 + iters`` of external sampling: each seat ``p`` in turn
    traverses once per iteration, on its own uniformly drawn deal. ``p`` explores every action and
    its regrets gain the counterfactual advantage; the other seats sample one action from regret
    matching and add their strategy to their strategy sums. ``linear``: iteration ``t``'s regrets
    and strategy sums are weighted by ``t``.

    Iterative depth-first search: a frame per node of ``p`` on the current path (its node, row
    offset, next action, strategy in ``sig[k * maxa:]``, child values in ``val[k * maxa:]``); the
    others' nodes need none (one sampled child)."""
    kind, player, nact, first = tr.kind, tr.player, tr.nact, tr.first
    grp, base, prow, kid, pat, payoff, ioff = tr.grp, tr.base, tr.prow, tr.kid, tr.pat, tr.payoff, tr.ioff
    frames = max_depth + 1
    sig = np.zeros(frames * maxa)
    val = np.zeros(frames * maxa)
    osig = np.zeros(maxa)
    f_node = np.zeros(frames, np.int64)
    f_off = np.zeros(frames, np.int64)
    f_next = np.zeros(frames, np.int64)
    deals = pat.shape[0]
    for t in range(t0 + 1, t0 + iters + 1):
        w = float(t) if linear else 1.0
        for p in range(seats):
            d = rng_below(rng, deals)
            pd = pat[d]
            sp = 0
            cur = 0
            ret = 0.0
            while True:
                # descend through the others' nodes to a terminal or a node of p
                while True:
                    if kind[cur] == TERMINAL:
                        ret = payoff[prow[cur], pd, p]
                        break
                    na = nact[cur]
                    off = ioff[base[cur] + kid[grp[cur], d]]
                    if player[cur] == p:
                        s = sp * maxa
                        _regret_matching(regret, off, na, sig, s)
                        f_node[sp] = cur
                        f_off[sp] = off
                        f_next[sp] = 0
                        sp += 1
                        cur = first[cur]
                        continue
                    _regret_matching(regret, off, na, osig, 0)
                    u = rng_uniform(rng)
                    pick = na - 1
                    acc = 0.0
                    for a in range(na):
                        strat[off + a] += w * osig[a]
                    for a in range(na):
                        acc += osig[a]
                        if u < acc:
                            pick = a
                            break
                    cur = first[cur] + pick
                # climb: hand ret to the frame above, move to its next action or close it
                while sp > 0:
                    k = sp - 1
                    s = k * maxa
                    a = f_next[k]
                    val[s + a] = ret
                    a += 1
                    n = f_node[k]
                    na = nact[n]
                    if a < na:
                        f_next[k] = a
                        cur = first[n] + a
                        break
                    off = f_off[k]
                    v = 0.0
                    for b in range(na):
                        v += sig[s + b] * val[s + b]
                    for b in range(na):
                        regret[off + b] += w * (val[s + b] - v)
                    ret = v
                    sp -= 1
                if sp == 0:
                    break


@numba.njit(cache=True, error_model="numpy")
def policy_values_kernel(tr, pol, seats):
    """float64[seats]: every seat's expected payoff when all play ``pol`` (a flat policy)."""
    nodes = tr.kind.shape[0]
    deals = tr.pat.shape[0]
    v = np.zeros((nodes, seats))
    out = np.zeros(seats)
    for d in range(deals):
        for n in range(nodes - 1, -1, -1):
            if tr.kind[n] == TERMINAL:
                for i in range(seats):
                    v[n, i] = tr.payoff[tr.prow[n], tr.pat[d], i]
                continue
            off = tr.ioff[tr.base[n] + tr.kid[tr.grp[n], d]]
            c0 = tr.first[n]
            for i in range(seats):
                v[n, i] = 0.0
            for a in range(tr.nact[n]):
                pa = pol[off + a]
                if pa != 0.0:
                    for i in range(seats):
                        v[n, i] += pa * v[c0 + a, i]
        for i in range(seats):
            out[i] += v[0, i]
    return out / deals


@numba.njit(cache=True, error_model="numpy")
def best_response_value_kernel(tr, pol, seat, best):
    """``seat``'s value when it best-responds to the others playing ``pol``; ``best`` (int32 per
    information set, filled for ``seat``'s sets) gets the best response's action.

    The others' and chance's reach of every (node, deal) goes top-down; values go bottom-up
    (children have higher ids). At a node of ``seat``, all histories of one information set sit at
    that node (the betting is part of what the seat sees), so each set's action values
    ``sum_d reach(n, d) v(child, d)`` are complete when the node is reached, and the best action
    is chosen before any ancestor needs the values."""
    nodes = tr.kind.shape[0]
    deals = tr.pat.shape[0]
    reach = np.zeros((nodes, deals))
    reach[0, :] = 1.0
    for n in range(nodes):
        if tr.kind[n] == TERMINAL:
            continue
        c0 = tr.first[n]
        na = tr.nact[n]
        if tr.player[n] == seat:
            for a in range(na):
                reach[c0 + a, :] = reach[n, :]
            continue
        g = tr.grp[n]
        b = tr.base[n]
        for d in range(deals):
            r = reach[n, d]
            off = tr.ioff[b + tr.kid[g, d]]
            for a in range(na):
                reach[c0 + a, d] = r * pol[off + a]
    v = np.zeros((nodes, deals))
    q = np.zeros(tr.ioff[tr.ioff.shape[0] - 1])
    for n in range(nodes - 1, -1, -1):
        if tr.kind[n] == TERMINAL:
            r = tr.prow[n]
            for d in range(deals):
                v[n, d] = tr.payoff[r, tr.pat[d], seat]
            continue
        c0 = tr.first[n]
        na = tr.nact[n]
        g = tr.grp[n]
        b = tr.base[n]
        if tr.player[n] != seat:
            for d in range(deals):
                off = tr.ioff[b + tr.kid[g, d]]
                x = 0.0
                for a in range(na):
                    pa = pol[off + a]
                    if pa != 0.0:
                        x += pa * v[c0 + a, d]
                v[n, d] = x
            continue
        for d in range(deals):
            r = reach[n, d]
            if r != 0.0:
                off = tr.ioff[b + tr.kid[g, d]]
                for a in range(na):
                    q[off + a] += r * v[c0 + a, d]
        for d in range(deals):
            i = b + tr.kid[g, d]
            off = tr.ioff[i]
            if best[i] < 0:
                k = 0
                for a in range(1, na):
                    if q[off + a] > q[off + k]:
                        k = a
                best[i] = k
            v[n, d] = v[c0 + best[i], d]
    x = 0.0
    for d in range(deals):
        x += v[0, d]
    return x / deals
