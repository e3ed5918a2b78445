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

:func:`walk_dl` is :func:`subgame.kernels.walk` (same arguments and layout, same modes) on a
depth-limited tree, whose showdown nodes with ``leaf_of[n] >= 0`` are depth-limit leaves: there
the opponent picks a continuation per hand (regret matching in a CFR walk, its average in the
others, its best one when it best-responds) and the values come from :func:`cont_walk`.
"""

from __future__ import annotations

import numba

from abstraction.tree import KIND_CHANCE, KIND_DECISION, KIND_FOLD, KIND_SHOWDOWN
from blueprint.vector_cfr import fold_values, showdown_values


@numba.njit(cache=True, nogil=True, fastmath=True)
def _fold_full(rho, live, hands, u, card, out):
    """``out[h] = u * sum of rho over hands sharing no card with h`` (live ``h``; else 0)."""
    H = rho.shape[0]
    k = hands.shape[1]
    for c in range(card.shape[0]):
        card[c] = 0.0
    tot = 0.0
    for h in range(H):
        r = rho[h]
        if r != 0.0:
            tot += r
            for c in range(k):
                card[hands[h, c]] += r
    for h in range(H):
        if live[h]:
            s = tot
            for c in range(k):
                s -= card[hands[h, c]]
            if k == 2:
                s += rho[h]
            out[h] = u * s
        else:
            out[h] = 0.0


@numba.njit(cache=True, nogil=True, fastmath=True)
def _showdown_full(rho, order, strength, nlive, hands, m, card, out):
    """``out[h] = m * sum_{h' compatible} sign(s(h) - s(h')) rho[h']`` for the live hands
    (``order[:nlive]`` by increasing ``strength[:nlive]``); 0 elsewhere."""
    H = rho.shape[0]
    k = hands.shape[1]
    for h in range(H):
        out[h] = 0.0
    for c in range(card.shape[0]):
        card[c] = 0.0
    tot = 0.0
    i = 0
    while i < nlive:
        j = i
        while j < nlive and strength[j] == strength[i]:
            j += 1
        for q in range(i, j):
            h = order[q]
            s = tot
            for c in range(k):
                s -= card[hands[h, c]]
            out[h] = s
        for q in range(i, j):
            h = order[q]
            r = rho[h]
            tot += r
            for c in range(k):
                card[hands[h, c]] += r
        i = j
    for c in range(card.shape[0]):
        card[c] = 0.0
    tot = 0.0
    i = nlive - 1
    while i >= 0:
        j = i
        while j >= 0 and strength[j] == strength[i]:
            j -= 1
        for q in range(i, j, -1):
            h = order[q]
            s = tot
            for c in range(k):
                s -= card[hands[h, c]]
            out[h] = m * (out[h] - s)
        for q in range(i, j, -1):
            h = order[q]
            r = rho[h]
            tot += r
            for c in range(k):
                card[hands[h, c]] += r
        i = j


@numba.njit(cache=True, nogil=True, fastmath=True)
def cont_walk(root, me, trav, k, kind, player, spent, child_start, num_actions, edge_child, board, deal_count,
              srow, s_me, s_op, bucket, valid, order, sstrength, nvalid, hands, dealt, mask, pick, rin, rbuf, vbuf, rid,
              fn, fa, nin, tv, rho, card, out):
    """Values of traverser ``trav`` from continuation root ``root`` (see the module docstring).

    ``rin[:kr]``: the other seat's reach at the root (``kr = k`` when ``trav == me``, else 1);
    ``out[:kv]`` gets the traverser's values (``kv = 1`` when ``trav == me``, else ``k``). Work
    arrays: ``rbuf[d, i]`` reach vectors, ``vbuf[d, i]`` a node's value sums, ``rid[d]`` the frame
    whose ``rbuf`` holds the reach at depth ``d``, ``fn``/``fa`` the node and next edge per depth,
    ``nin[d]`` the deals walked at a chance node.

    Chance sampling: a chance node walks only the deals whose card (``dealt[c]``, -1 for a deal of
    several cards: always walked) is in ``mask``, and scales their sum by deals / deals walked (an
    unbiased estimate when ``mask`` is a uniform sample of the cards; exact when it has them all).

    ``pick[0] >= 0`` (traverser ``me``): each opponent hand plays the one continuation ``pick[h]``,
    and its reach comes in as the single vector ``rin[0]``."""
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
                    _fold_full(rho, valid[b], hands, u, card, tv)
                else:
                    m = float(min(spent[n, 0], spent[n, 1]))
                    _showdown_full(rho, order[b], sstrength[b], nvalid[b], hands, m, card, tv)
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
                    _fold_full(rho, valid[b], hands, u, card, tv)
                else:
                    m = float(min(spent[c, 0], spent[c, 1]))
                    _showdown_full(rho, order[b], sstrength[b], nvalid[b], hands, m, card, tv)
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
def leaf_values(lf, p, me, mode, k, b, nlive, idx, r_other, r_own, leaf_reg, leaf_sum, leaf_avg, leaf_pick,
                w_pos, w_neg, floor_zero, s_old, s_new,
                leaf_root, ckind, cplayer, cspent, cstart, cnum, cchild, cboard, cdeal, csrow, s_me, s_op,
                bucket, valid, order, sstrength, nvalid, hands, dealt, mask, pick,
                rin, rbuf, vbuf, rid, fn, fa, nin, tv, rho, card, cout, sbuf, out):
    """Traverser ``p``'s values at leaf ``lf`` (on board ``b`` of the depth-limited tree; compact
    lists in, ``out[:nlive[b, p]]`` out), the opponent picking among the ``k`` continuations:
    ``leaf_reg``/``leaf_sum`` ``[leaves, k, H]`` its regrets and average-strategy sums (updated in
    a CFR walk of the opponent), ``leaf_avg`` its average strategy (modes 1 and 2).

    ``leaf_pick[lf, 0] >= 0`` selects the *best-response* choice rule in CFR walks: the opponent's
    walk picks, per hand, the continuation of highest value (``leaf_pick[lf, h]``, and its sums
    count that pick), and the refined seat's walk plays those picks; otherwise regret matching of
    ``leaf_reg``."""
    o = 1 - me
    H = hands.shape[0]
    root = leaf_root[lf]
    pick[0] = -1
    if p == me and mode == 0 and leaf_pick[lf, 0] >= 0:
        for h in range(H):
            rin[0, h] = 0.0
            pick[h] = leaf_pick[lf, h]
        for j in range(nlive[b, o]):
            rin[0, idx[b, o, j]] = r_other[j]
        cont_walk(root, me, me, k, ckind, cplayer, cspent, cstart, cnum, cchild, cboard, cdeal, csrow, s_me, s_op,
                  bucket, valid, order, sstrength, nvalid, hands, dealt, mask, pick, rin, rbuf, vbuf, rid, fn, fa, nin,
                  tv, rho, card, cout)
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
        cont_walk(root, me, me, k, ckind, cplayer, cspent, cstart, cnum, cchild, cboard, cdeal, csrow, s_me, s_op,
                  bucket, valid, order, sstrength, nvalid, hands, dealt, mask, pick, rin, rbuf, vbuf, rid, fn, fa, nin, tv,
                  rho, card, cout)
        for j in range(nlive[b, me]):
            out[j] = cout[0, idx[b, me, j]]
        return
    for h in range(H):
        rin[0, h] = 0.0
    for j in range(nlive[b, me]):
        rin[0, idx[b, me, j]] = r_other[j]
    cont_walk(root, me, o, k, ckind, cplayer, cspent, cstart, cnum, cchild, cboard, cdeal, csrow, s_me, s_op,
              bucket, valid, order, sstrength, nvalid, hands, dealt, mask, pick, rin, rbuf, vbuf, rid, fn, fa, nin, tv,
              rho, card, cout)
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


@numba.njit(cache=True, nogil=True, fastmath=True)
def _terminal(c, p, kind, player, spent, board, nlive, cards, same, up, up_cards, down, down_cards, ro, cacc, out):
    o = 1 - p
    b = board[c]
    if kind[c] == KIND_FOLD:
        f = player[c]
        u = -float(spent[c, p]) if f == p else float(spent[c, f])
        fold_values(ro, nlive[b, o], cards[b, o], cards[b, p], same[b, p], nlive[b, p], u, cacc, out)
    else:
        m = float(min(spent[c, 0], spent[c, 1]))
        showdown_values(ro, nlive[b, 0] + nlive[b, 1], up[b, p], up_cards[b, p], down[b, p], down_cards[b, p], m,
                        cacc, out)


@numba.njit(cache=True, fastmath=True, nogil=True)
def walk_dl(kind, player, spent, child_start, num_actions, board, deal_count, edge_child, coff,
            nlive, idx, pos, cards, same, up, up_cards, down, down_cards,
            sigma, root_reach, p, mode, regret, strat_sum, w_pos, w_neg, floor_zero, s_old, s_new,
            rbuf, cv, sg, tmp, cacc, tot, rid, fn, fa, out,
            me, k, leaf_of, leaf_reg, leaf_sum, leaf_avg, leaf_pick,
            leaf_root, ckind, cplayer, cspent, cstart, cnum, cchild, cboard, cdeal, csrow, s_me, s_op,
            bucket, valid, order, sstrength, nvalid, hands, dealt, mask, lpick,
            lrin, lrbuf, lvbuf, lrid, lfn, lfa, lnin, ltv, lrho, lcard, lcout, lsbuf):
    """:func:`subgame.kernels.walk` on a depth-limited tree (no chance nodes: the tree ends with the
    current round); a showdown node ``c`` with ``leaf_of[c] >= 0`` is valued by :func:`leaf_values`."""
    o = 1 - p
    b0 = board[0]
    for s in range(2):
        for j in range(nlive[b0, s]):
            rbuf[0, s, j] = root_reach[s, j]
        rid[0, s] = 0
    d = 0
    fn[0] = 0
    fa[0] = 0
    enter = True
    while True:
        n = fn[d]
        bn = board[n]
        if enter:
            enter = False
            if mode == 0:
                q = player[n]
                A = num_actions[n]
                L = nlive[bn, q]
                base = coff[n]
                t = tot
                for j in range(L):
                    t[j] = 0.0
                for a in range(A):
                    rg = regret[base + a * L: base + (a + 1) * L]
                    sa = sg[d, a]
                    for j in range(L):
                        x = rg[j]
                        x = x if x > 0 else 0.0
                        sa[j] = x
                        t[j] += x
                for j in range(L):
                    t[j] = 1.0 / t[j] if t[j] > 0 else 0.0
                inv_a = 1.0 / A
                for a in range(A):
                    sa = sg[d, a]
                    for j in range(L):
                        sa[j] = sa[j] * t[j] if t[j] > 0 else inv_a
        a = fa[d]
        if a < num_actions[n]:
            fa[d] = a + 1
            c = edge_child[child_start[n] + a]
            kc = kind[c]
            lf = leaf_of[c]
            q = player[n]
            # the traverser's own reach is needed below its nodes, and at a leaf for the opponent's
            # average-strategy sums
            if q == p and (mode != 0 or kc == KIND_FOLD or (kc == KIND_SHOWDOWN and (lf < 0 or p == me))):
                rid[d + 1, q] = rid[d, q]
            else:
                L = nlive[bn, q]
                src = rbuf[rid[d, q], q]
                dst = rbuf[d + 1, q]
                if mode == 0:
                    sa = sg[d, a]
                    for j in range(L):
                        dst[j] = src[j] * sa[j]
                else:
                    base = coff[n] + a * L
                    sa2 = sigma[base: base + L]
                    for j in range(L):
                        dst[j] = src[j] * sa2[j]
                rid[d + 1, q] = d + 1
            rid[d + 1, 1 - q] = rid[d, 1 - q]
            if kc == KIND_SHOWDOWN and lf >= 0:
                leaf_values(lf, p, me, mode, k, board[c], nlive, idx, rbuf[rid[d + 1, o], o], rbuf[rid[d + 1, p], p],
                            leaf_reg, leaf_sum, leaf_avg, leaf_pick, w_pos, w_neg, floor_zero, s_old, s_new,
                            leaf_root, ckind, cplayer, cspent, cstart, cnum, cchild, cboard, cdeal, csrow, s_me, s_op,
                            bucket, valid, order, sstrength, nvalid, hands, dealt, mask, lpick,
                            lrin, lrbuf, lvbuf, lrid, lfn, lfa, lnin, ltv, lrho, lcard, lcout, lsbuf, cv[d, a])
            elif kc == KIND_FOLD or kc == KIND_SHOWDOWN:
                _terminal(c, p, kind, player, spent, board, nlive, cards, same, up, up_cards, down, down_cards,
                          rbuf[rid[d + 1, o], o], cacc, cv[d, a])
            else:
                d += 1
                fn[d] = c
                fa[d] = 0
                enter = True
            continue
        if d == 0:
            dst = out
        else:
            dst = cv[d - 1, fa[d - 1] - 1]
        L = nlive[bn, p]
        q = player[n]
        A = num_actions[n]
        if q != p:
            for j in range(L):
                dst[j] = cv[d, 0, j]
            for a in range(1, A):
                vc = cv[d, a]
                for j in range(L):
                    dst[j] += vc[j]
        elif mode == 1:
            for j in range(L):
                dst[j] = cv[d, 0, j]
            for a in range(1, A):
                vc = cv[d, a]
                for j in range(L):
                    dst[j] = max(dst[j], vc[j])
        else:
            base = coff[n]
            for j in range(L):
                dst[j] = 0.0
            for a in range(A):
                vc = cv[d, a]
                sa = sg[d, a] if mode == 0 else sigma[base + a * L: base + (a + 1) * L]
                for j in range(L):
                    dst[j] += sa[j] * vc[j]
            if mode == 0:
                rp = rbuf[rid[d, p], p]
                for a in range(A):
                    vc = cv[d, a]
                    sa = sg[d, a]
                    rg = regret[base + a * L: base + (a + 1) * L]
                    ss = strat_sum[base + a * L: base + (a + 1) * L]
                    for j in range(L):
                        x = rg[j]
                        x = x * (w_pos if x > 0 else w_neg) + (vc[j] - dst[j])
                        if floor_zero and x < 0:
                            x = 0.0
                        rg[j] = x
                        ss[j] = ss[j] * s_old + s_new * rp[j] * sa[j]
        if d == 0:
            return
        d -= 1
