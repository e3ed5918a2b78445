"""numba kernels of depth-limited solving (:mod:`subgame.depth`).

:func:`cont_walk` values the rest of the hand after one depth-limit leaf, vectorized over hands, for
fixed continuation strategies: the refined seat ``me`` plays the blueprint, the opponent one of
``k`` continuation strategies (biased blueprints). Both are tables per *card bucket*
(``s_me[row, bucket]``, ``s_op[i, row, bucket]``), read through each continuation board's bucket of
every hand, so a continuation tree's many boards share one set of rows. Vectors are full width
(``H`` hands, 0 for hands a board blocks). Two directions:

* traverser ``me``: the opponent's reach comes in as ``k`` vectors (its reach at the leaf times
  its probability of picking each continuation), each follows its own strategy down the tree, and
  the terminals see their sum: ``out[0]`` = the refined seat's values;
* traverser the opponent: ``me``'s reach comes in as one vector; ``out[i]`` = the opponent's values
  when it plays continuation ``i``.

The terminals are :mod:`blueprint.range_kernels`' full-width ones (those of
:mod:`blueprint.vector_cfr`).

:func:`subgame.kernels.walk` walks depth-limited trees: given :class:`Leaves`, showdown nodes
with ``leaf_of[n] >= 0`` are depth-limit leaves, valued by :func:`leaf_values`: there the opponent
picks a continuation per hand (regret matching in a CFR walk, its average in the others, its best
one when it best-responds) and the values come from :func:`cont_walk`.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from abstraction.tree import KIND_CHANCE, KIND_DECISION, KIND_FOLD, KIND_SHOWDOWN
from blueprint.range_kernels import fold_values_all, showdown_values_all


class ContModel(NamedTuple):
    """The continuation trees of every leaf and their tables, as one argument
    (:meth:`subgame.leaf_model.LeafModel.kernel_arrays`; fixed dtypes, :data:`CONT_DTYPES`)."""

    leaf_root: np.ndarray  # int64 [leaves] continuation root of each leaf
    kind: np.ndarray  # int8 [N]
    player: np.ndarray  # int8 [N]
    spent: np.ndarray  # int32 [N, 2]
    child_start: np.ndarray  # int64 [N]
    num_actions: np.ndarray  # int64 [N]
    edge_child: np.ndarray  # int64 [E]
    board: np.ndarray  # int32 [N]
    deal_count: np.ndarray  # float64 [N] deals per hand pair, times the share of deals the node has
    srow: np.ndarray  # int64 [N] first strategy row of each decision
    s_me: np.ndarray  # float32 [rows, buckets]
    s_op: np.ndarray  # float32 [k, rows, buckets]
    bucket: np.ndarray  # int32 [boards, H]
    valid: np.ndarray  # bool [boards, H]
    order: np.ndarray  # int32 [boards, H]
    sstrength: np.ndarray  # int64 [boards, H]
    nvalid: np.ndarray  # int32 [boards]
    hands: np.ndarray  # int32 [H, hole cards]
    dealt: np.ndarray  # int64 [N]


CONT_DTYPES = {
    "leaf_root": (np.int64, 1),
    "kind": (np.int8, 1),
    "player": (np.int8, 1),
    "spent": (np.int32, 2),
    "child_start": (np.int64, 1),
    "num_actions": (np.int64, 1),
    "edge_child": (np.int64, 1),
    "board": (np.int32, 1),
    "deal_count": (np.float64, 1),
    "srow": (np.int64, 1),
    "s_me": (np.float32, 2),
    "s_op": (np.float32, 3),
    "bucket": (np.int32, 2),
    "valid": (np.bool_, 2),
    "order": (np.int32, 2),
    "sstrength": (np.int64, 2),
    "nvalid": (np.int32, 1),
    "hands": (np.int32, 2),
    "dealt": (np.int64, 1),
}


class ContWork(NamedTuple):
    """Work arrays of :func:`cont_walk` and :func:`leaf_values` (:class:`subgame.leaf_model.LeafWork`)."""

    pick: np.ndarray  # int64 [H] the continuation of each opponent hand (pick[0] < 0: none)
    rin: np.ndarray  # float32 [k, H] reach in
    rbuf: np.ndarray  # float32 [D, k, H]
    vbuf: np.ndarray  # float32 [D, k, H]
    rid: np.ndarray  # int64 [D]
    fn: np.ndarray  # int64 [D]
    fa: np.ndarray  # int64 [D]
    nin: np.ndarray  # int64 [D]
    tv: np.ndarray  # float32 [H]
    rho: np.ndarray  # float32 [H]
    card: np.ndarray  # float64 [cards]
    cout: np.ndarray  # float32 [k, H] values out
    sbuf: np.ndarray  # float64 [k]


class Leaves(NamedTuple):
    """The depth-limit hook of :func:`subgame.kernels.walk` as data: which nodes are leaves and the
    opponent's choice among the ``k`` continuations at each (see :func:`leaf_values`)."""

    me: int  # the refined seat
    k: int  # continuations
    leaf_of: np.ndarray  # int64 [N] leaf of each node of the walked tree, -1 for none
    leaf_reg: np.ndarray  # float64 [leaves, k, H]
    leaf_sum: np.ndarray  # float64 [leaves, k, H]
    leaf_avg: np.ndarray  # float64 [leaves, k, H]
    leaf_pick: np.ndarray  # int64 [leaves, H]
    mask: np.ndarray  # bool [cards] the next cards the continuations walk


@numba.njit(cache=True, nogil=True, fastmath=True)
def cont_walk(root, me, trav, k, m, mask, w):
    """Values of traverser ``trav`` from continuation root ``root`` (see the module docstring).

    ``m`` :class:`ContModel`, ``w`` :class:`ContWork`. ``rin[:kr]``: the other seat's reach at the
    root (``kr = k`` when ``trav == me``, else 1);
    ``out[:kv]`` gets the traverser's values (``kv = 1`` when ``trav == me``, else ``k``). Work
    arrays: ``rbuf[d, i]`` reach vectors, ``vbuf[d, i]`` a node's value sums, ``rid[d]`` the frame
    whose ``rbuf`` holds the reach at depth ``d``, ``fn``/``fa`` the node and next edge per depth,
    ``nin[d]`` the deals walked at a chance node.

    Chance sampling: a chance node walks only the deals whose card (``dealt[c]``, -1 for a deal of
    several cards: always walked) is in ``mask``, and scales their sum by deals / deals walked (an
    unbiased estimate when ``mask`` is a uniform sample of the cards; exact when it has them all).
    ``deal_count`` is the deals per hand pair times the share of the deals the node has children
    for (below 1 in a model expanded over a fixed sample of the cards, ``LeafModel.sample``).

    ``pick[0] >= 0`` (traverser ``me``): each opponent hand plays the one continuation ``pick[h]``,
    and its reach comes in as the single vector ``rin[0]``."""
    kind = m.kind
    player = m.player
    spent = m.spent
    child_start = m.child_start
    num_actions = m.num_actions
    edge_child = m.edge_child
    board = m.board
    deal_count = m.deal_count
    srow = m.srow
    s_me = m.s_me
    s_op = m.s_op
    bucket = m.bucket
    valid = m.valid
    order = m.order
    sstrength = m.sstrength
    nvalid = m.nvalid
    hands = m.hands
    dealt = m.dealt
    pick = w.pick
    rin = w.rin
    rbuf = w.rbuf
    vbuf = w.vbuf
    rid = w.rid
    fn = w.fn
    fa = w.fa
    nin = w.nin
    tv = w.tv
    rho = w.rho
    card = w.card
    out = w.cout
    H = rin.shape[1]
    use_pick = pick[0] >= 0 and trav == me
    kr = 1 if (trav != me or use_pick) else k
    kv = 1 if trav == me else k
    for i in range(kr):
        for h in range(H):
            rbuf[0, i, h] = rin[i, h]
    rid[0] = 0
    d = 0
    fn[0] = root
    fa[0] = 0
    enter = True
    while True:
        n = fn[d]
        kn = kind[n]
        if enter:
            enter = False
            if kn == KIND_FOLD or kn == KIND_SHOWDOWN:  # a terminal root (only at depth 0)
                src = rbuf[rid[d]]
                for h in range(H):
                    rho[h] = src[0, h]
                for i in range(1, kr):
                    for h in range(H):
                        rho[h] += src[i, h]
                b = board[n]
                if kn == KIND_FOLD:
                    f = player[n]
                    u = -float(spent[n, f]) if f == trav else float(spent[n, f])
                    fold_values_all(rho, valid[b], hands, u, card, tv)
                else:
                    m = float(min(spent[n, 0], spent[n, 1]))
                    showdown_values_all(rho, order[b], sstrength[b], nvalid[b], hands, m, card, tv)
                for i in range(kv):
                    for h in range(H):
                        out[i, h] = tv[h]
                return
            for i in range(kv):
                for h in range(H):
                    vbuf[d, i, h] = 0.0
            nin[d] = 0
        a = fa[d]
        if a < num_actions[n]:
            fa[d] = a + 1
            c = edge_child[child_start[n] + a]
            if kn == KIND_CHANCE:
                if dealt[c] >= 0 and not mask[dealt[c]]:
                    continue
                nin[d] += 1
            kc = kind[c]
            bn = board[n]
            src = rbuf[rid[d]]
            if kn == KIND_DECISION:
                q = player[n]
                if q == trav:
                    rid[d + 1] = rid[d]
                else:
                    row = srow[n] + a
                    bk = bucket[bn]
                    if use_pick:
                        dst = rbuf[d + 1, 0]
                        si = src[0]
                        for h in range(H):
                            x = si[h]
                            dst[h] = x * s_op[pick[h], row, bk[h]] if x != 0.0 else 0.0
                    else:
                        for i in range(kr):
                            tab = s_me[row] if q == me else s_op[i, row]
                            dst = rbuf[d + 1, i]
                            si = src[i]
                            for h in range(H):
                                x = si[h]
                                dst[h] = x * tab[bk[h]] if x != 0.0 else 0.0
                    rid[d + 1] = d + 1
            else:  # chance: hands the new cards block drop out
                vc = valid[board[c]]
                for i in range(kr):
                    dst = rbuf[d + 1, i]
                    si = src[i]
                    for h in range(H):
                        dst[h] = si[h] if vc[h] else 0.0
                rid[d + 1] = d + 1
            if kc == KIND_FOLD or kc == KIND_SHOWDOWN:
                s2 = rbuf[rid[d + 1]]
                for h in range(H):
                    rho[h] = s2[0, h]
                for i in range(1, kr):
                    si = s2[i]
                    for h in range(H):
                        rho[h] += si[h]
                b = board[c]
                if kc == KIND_FOLD:
                    f = player[c]
                    u = -float(spent[c, f]) if f == trav else float(spent[c, f])
                    fold_values_all(rho, valid[b], hands, u, card, tv)
                else:
                    m = float(min(spent[c, 0], spent[c, 1]))
                    showdown_values_all(rho, order[b], sstrength[b], nvalid[b], hands, m, card, tv)
                # combine the terminal's values (the same for every continuation) into node n's sums
                if kn == KIND_DECISION and player[n] == trav:
                    row = srow[n] + a
                    bk = bucket[bn]
                    for i in range(kv):
                        tab = s_me[row] if trav == me else s_op[i, row]
                        acc = vbuf[d, i]
                        for h in range(H):
                            acc[h] += tab[bk[h]] * tv[h]
                else:
                    for i in range(kv):
                        acc = vbuf[d, i]
                        for h in range(H):
                            acc[h] += tv[h]
            else:
                d += 1
                fn[d] = c
                fa[d] = 0
                enter = True
            continue
        # node n done: its sums in vbuf[d]
        if kn == KIND_CHANCE:
            inv = num_actions[n] / (max(nin[d], 1) * float(deal_count[n]))
            for i in range(kv):
                v = vbuf[d, i]
                for h in range(H):
                    v[h] *= inv
        if d == 0:
            for i in range(kv):
                for h in range(H):
                    out[i, h] = vbuf[0, i, h]
            return
        d -= 1
        par = fn[d]
        a = fa[d] - 1
        if kind[par] == KIND_DECISION and player[par] == trav:
            row = srow[par] + a
            bk = bucket[board[par]]
            for i in range(kv):
                tab = s_me[row] if trav == me else s_op[i, row]
                acc = vbuf[d, i]
                v = vbuf[d + 1, i]
                for h in range(H):
                    acc[h] += tab[bk[h]] * v[h]
        else:
            for i in range(kv):
                acc = vbuf[d, i]
                v = vbuf[d + 1, i]
                for h in range(H):
                    acc[h] += v[h]


@numba.njit(cache=True, nogil=True, fastmath=True)
def leaf_values(lf, b, r_other, r_own, nlive, idx, opt, lv, m, w, out):
    """Traverser ``p``'s values at leaf ``lf`` (on board ``b`` of the depth-limited tree; compact
    lists in, ``out[:nlive[b, p]]`` out), the opponent picking among the ``k`` continuations:
    ``lv.leaf_reg``/``lv.leaf_sum`` ``[leaves, k, H]`` its regrets and average-strategy sums (updated in
    a CFR walk of the opponent), ``leaf_avg`` its average strategy (modes 1 and 2).

    ``leaf_pick[lf, 0] >= 0`` selects the *best-response* choice rule in CFR walks: the opponent's
    walk picks, per hand, the continuation of highest value (``leaf_pick[lf, h]``, and its sums
    count that pick), and the refined seat's walk plays those picks; otherwise regret matching of
    ``leaf_reg``. ``opt``: the walk's :class:`subgame.kernels.WalkOptions`, ``lv`` :class:`Leaves`,
    ``m`` :class:`ContModel`, ``w`` :class:`ContWork`."""
    p = opt.p
    mode = opt.mode
    w_pos = opt.w_pos
    w_neg = opt.w_neg
    floor_zero = opt.floor_zero
    s_old = opt.s_old
    s_new = opt.s_new
    me = lv.me
    k = lv.k
    leaf_reg = lv.leaf_reg
    leaf_sum = lv.leaf_sum
    leaf_avg = lv.leaf_avg
    leaf_pick = lv.leaf_pick
    mask = lv.mask
    pick = w.pick
    rin = w.rin
    cout = w.cout
    sbuf = w.sbuf
    o = 1 - me
    H = m.hands.shape[0]
    root = m.leaf_root[lf]
    pick[0] = -1
    if p == me and mode == 0 and leaf_pick[lf, 0] >= 0:
        for h in range(H):
            rin[0, h] = 0.0
            pick[h] = leaf_pick[lf, h]
        for j in range(nlive[b, o]):
            rin[0, idx[b, o, j]] = r_other[j]
        cont_walk(root, me, me, k, m, mask, w)
        for j in range(nlive[b, me]):
            out[j] = cout[0, idx[b, me, j]]
        return
    if p == me:
        # the opponent's reach per continuation: its reach times its choice
        for i in range(k):
            for h in range(H):
                rin[i, h] = 0.0
        for j in range(nlive[b, o]):
            h = idx[b, o, j]
            x = r_other[j]
            if mode == 0:
                tot = 0.0
                for i in range(k):
                    g = leaf_reg[lf, i, h]
                    if g > 0:
                        tot += g
                for i in range(k):
                    g = leaf_reg[lf, i, h]
                    s = (g / tot if g > 0 else 0.0) if tot > 0 else 1.0 / k
                    rin[i, h] = x * s
            else:
                for i in range(k):
                    rin[i, h] = x * leaf_avg[lf, i, h]
        cont_walk(root, me, me, k, m, mask, w)
        for j in range(nlive[b, me]):
            out[j] = cout[0, idx[b, me, j]]
        return
    for h in range(H):
        rin[0, h] = 0.0
    for j in range(nlive[b, me]):
        rin[0, idx[b, me, j]] = r_other[j]
    cont_walk(root, me, o, k, m, mask, w)
    best_rule = leaf_pick[lf, 0] >= 0
    for j in range(nlive[b, o]):
        h = idx[b, o, j]
        if mode == 1:
            v = cout[0, h]
            for i in range(1, k):
                v = max(v, cout[i, h])
        elif mode == 2:
            v = 0.0
            for i in range(k):
                v += leaf_avg[lf, i, h] * cout[i, h]
        elif best_rule:
            bi = 0
            v = cout[0, h]
            for i in range(1, k):
                if cout[i, h] > v:
                    v = cout[i, h]
                    bi = i
            leaf_pick[lf, h] = bi
            rp = r_own[j]
            for i in range(k):
                leaf_sum[lf, i, h] = leaf_sum[lf, i, h] * s_old + (s_new * rp if i == bi else 0.0)
        else:
            tot = 0.0
            for i in range(k):
                g = leaf_reg[lf, i, h]
                if g > 0:
                    tot += g
            v = 0.0
            for i in range(k):
                g = leaf_reg[lf, i, h]
                s = (g / tot if g > 0 else 0.0) if tot > 0 else 1.0 / k
                sbuf[i] = s
                v += s * cout[i, h]
            rp = r_own[j]
            for i in range(k):
                g = leaf_reg[lf, i, h]
                g = g * (w_pos if g > 0 else w_neg) + (cout[i, h] - v)
                if floor_zero and g < 0:
                    g = 0.0
                leaf_reg[lf, i, h] = g
                leaf_sum[lf, i, h] = leaf_sum[lf, i, h] * s_old + s_new * rp * sbuf[i]
        out[j] = v
