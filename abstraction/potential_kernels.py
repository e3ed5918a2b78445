"""The numba kernels of the sampled potential-aware build (:mod:`abstraction.potential`).

OCHS of every hole hand on a final board, and the sample and assignment passes built on it; the
histograms over the next round's buckets (every way to deal the next round's cards); the greedy
earth mover's distance on sparse histograms; the nearest-centre searches (squared L2 for OCHS
vectors, greedy EMD for histograms); centres and the ground distance between them. They release
the GIL (a ``*_chunk`` kernel takes one slice of the work), so the builder runs them on every core.

**Pruning (exact).** Every next-round bucket ``j`` has an *embedding* ``e_j`` (its OCHS centre on
the last round; the mean embedding of a centre's histogram before that) with ground distance
``g(i, j) >= ||e_i - e_j||``, so for histograms ``p``, ``q`` any transport costs at least
``||sum p_i e_i - sum q_j e_j||`` (and so does the greedy one). The nearest-centre search visits the
centres in order of the projection of their embedding on ``u = (1, ..., 1) / sqrt(d)`` outward
from the point's, skips a centre whose embedding bound already exceeds the best distance and stops
when the projected gap does: the result is the plain arg-min (lowest index on ties) at a fraction
of the EMD evaluations. The same search with squared L2 assigns OCHS vectors.
"""

from __future__ import annotations

import numba
import numpy as np

from abstraction.bucket_common import board_hs, holes_of, rest_of
from abstraction.combinatorics import next_combination
from abstraction.isomorphism import iso_index, iso_unindex, prefetch
from holdem.evaluator import rank_hand

OCHS_BINS = 50  # final-strength histogram bins of the opponent clustering
_TOL = 1e-9  # slack on the pruning bounds (rounding of the embeddings)


# ---------------------------------------------------------------------------------------------
# kernels: OCHS of every hand on a final board


@numba.njit(cache=True, nogil=True, error_model="numpy")
def board_ochs(board, nb, holes, hole_lab, K, S, N, deck, out):
    """``out[i, c]``: hand strength (wins + ties / 2) of hole hand ``holes[i]`` on the final
    ``board`` against the opponent hands of cluster ``c`` that share no card with it (0.5 when
    none is left). ``hole_lab``: cluster of a raw hole hand, by ``a * deck + b`` (two cards, both
    orders) or by the card (one card)."""
    n = holes.shape[0]
    k = holes.shape[1]
    work = np.empty(k + nb, np.int64)
    for j in range(nb):
        work[k + j] = board[j]
    strength = np.empty(n, np.int64)
    lab = np.empty(n, np.int64)
    tot_card = np.zeros((K, deck), np.int64)
    low_card = np.zeros((K, deck), np.int64)
    tie_card = np.zeros((K, deck), np.int64)
    tot = np.zeros(K, np.int64)
    low = np.zeros(K, np.int64)
    tie = np.zeros(K, np.int64)
    for i in range(n):
        for j in range(k):
            work[j] = holes[i, j]
        strength[i] = rank_hand(work, k + nb, S, N)
        lab[i] = hole_lab[holes[i, 0] * deck + holes[i, 1]] if k == 2 else hole_lab[holes[i, 0]]
        tot[lab[i]] += 1
        for j in range(k):
            tot_card[lab[i], holes[i, j]] += 1
    order = np.argsort(strength)
    i = 0
    while i < n:
        s = strength[order[i]]
        e = i
        while e < n and strength[order[e]] == s:
            e += 1
        for q in range(i, e):
            g = order[q]
            tie[lab[g]] += 1
            for j in range(k):
                tie_card[lab[g], holes[g, j]] += 1
        for q in range(i, e):
            g = order[q]
            a = holes[g, 0]
            b = holes[g, 1] if k == 2 else a
            for c in range(K):
                if k == 2:
                    own = 1 if lab[g] == c else 0
                    lower = low[c] - low_card[c, a] - low_card[c, b]
                    ties = tie[c] - tie_card[c, a] - tie_card[c, b] + own
                    cnt = tot[c] - tot_card[c, a] - tot_card[c, b] + own
                else:
                    lower = low[c] - low_card[c, a]
                    ties = tie[c] - tie_card[c, a]
                    cnt = tot[c] - tot_card[c, a]
                out[g, c] = (lower + 0.5 * ties) / cnt if cnt > 0 else 0.5
        for q in range(i, e):
            g = order[q]
            tie[lab[g]] -= 1
            low[lab[g]] += 1
            for j in range(k):
                tie_card[lab[g], holes[g, j]] -= 1
                low_card[lab[g], holes[g, j]] += 1
        i = e


@numba.njit(cache=True, nogil=True, error_model="numpy")
def final_hs_hist_chunk(boards, nb, holes, hole_cls, S, N, deck, hist):
    """Add each hole hand's hand strength on each final board of ``boards`` (rows) to its class's
    histogram ``hist[hole_cls[i], bin]`` (``OCHS_BINS`` equal bins on [0, 1])."""

    n = holes.shape[0]
    k = holes.shape[1]
    hs = np.empty(n, np.float64)
    skip = np.zeros(n, np.bool_)
    bins = hist.shape[1]
    for b in range(boards.shape[0]):
        board = boards[b, :nb]
        for i in range(n):
            clash = False
            for j in range(k):
                for t in range(nb):
                    if holes[i, j] == board[t]:
                        clash = True
            skip[i] = clash
        board_hs(board, holes, S, N, deck, hs, skip)
        for i in range(n):
            if not skip[i]:
                hist[hole_cls[i], min(int(hs[i] * bins), bins - 1)] += 1.0


@numba.njit(cache=True, nogil=True, error_model="numpy")
def river_sample_chunk(boards, nb, hole_k, hole_lab, K, S, N, lo, hi, rows_out, feats):
    """OCHS of every hand on the sampled final boards ``lo..hi`` into ``feats`` from row
    ``rows_out[b]`` of board ``b`` on."""

    deck = S * N
    for b in range(lo, hi):
        board = boards[b, :nb]
        holes = holes_of(rest_of(board, nb, deck), hole_k)
        board_ochs(
            board, nb, holes, hole_lab, K, S, N, deck, feats[rows_out[b] : rows_out[b] + holes.shape[0]]
        )


@numba.njit(cache=True, inline="always", error_model="numpy")
def _nearest_l2(x, C, cps, corder, u):
    """Index of the row of ``C`` nearest to ``x`` in L2 (lowest index on ties) and the squared
    distance; ``cps`` the centres' projections on ``u`` ascending, ``corder`` their rows."""
    k = C.shape[0]
    d = C.shape[1]
    ux = 0.0
    for t in range(d):
        ux += u[t] * x[t]
    lo = 0
    hi = k
    while lo < hi:
        mid = (lo + hi) // 2
        if cps[mid] < ux:
            lo = mid + 1
        else:
            hi = mid
    left = lo - 1
    right = lo
    best = np.inf
    bi = k
    while left >= 0 or right < k:
        if right >= k or (left >= 0 and ux - cps[left] <= cps[right] - ux):
            pos = left
            gap = ux - cps[left]
            left -= 1
        else:
            pos = right
            gap = cps[right] - ux
            right += 1
        if gap * gap > best + _TOL:
            break
        j = corder[pos]
        dist = 0.0
        for t in range(d):
            z = x[t] - C[j, t]
            dist += z * z
        if dist < best or (dist == best and j < bi):
            best = dist
            bi = j
    return bi, best


@numba.njit(cache=True, nogil=True, error_model="numpy")
def assign_l2_chunk(X, C, cps, corder, u, lo, hi, labels, dist):
    for i in range(lo, hi):
        j, d = _nearest_l2(X[i], C, cps, corder, u)
        labels[i] = j
        dist[i] = d


@numba.njit(cache=True, nogil=True, error_model="numpy")
def l2_centres(X, labels, C):
    """``C[j]``: the mean of the rows of ``X`` labelled ``j`` (kept where none is), in one pass over
    ``X`` (rows summed in order, then divided: numpy's ``X[labels == j].mean(0)`` exactly)."""
    k, d = C.shape
    sums = np.zeros((k, d), np.float64)
    counts = np.zeros(k, np.int64)
    for i in range(X.shape[0]):
        j = labels[i]
        counts[j] += 1
        for t in range(d):
            sums[j, t] += X[i, t]
    for j in range(k):
        if counts[j] > 0:
            for t in range(d):
                C[j, t] = sums[j, t] / counts[j]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def river_assign_chunk(t_board, t_hand, rf, nb, hole_k, hole_lab, K, S, N, C, cps, corder, u, lo, hi, out):
    """Every hand class of the last round on the canonical final boards ``lo..hi``: its OCHS
    vector's nearest centre into ``out[class]``."""

    deck = S * N
    board = np.zeros(max(nb, 1), np.int64)
    hand = np.empty(hole_k + nb, np.int64)
    feats = np.empty((comb_max(deck - nb, hole_k), K), np.float64)
    for bidx in range(lo, hi):
        iso_unindex(t_board, bidx, 0, board)
        b = board[:nb]
        holes = holes_of(rest_of(b, nb, deck), hole_k)
        n = holes.shape[0]
        board_ochs(b, nb, holes, hole_lab, K, S, N, deck, feats[:n])
        for j in range(nb):
            hand[hole_k + j] = b[j]
        for i in range(n):
            for j in range(hole_k):
                hand[j] = holes[i, j]
            lab, _ = _nearest_l2(feats[i], C, cps, corder, u)
            out[iso_index(t_hand, hand, rf)] = lab


@numba.njit(cache=True, inline="always", error_model="numpy")
def comb_max(m, k):
    return m if k == 1 else m * (m - 1) // 2


@numba.njit(cache=True, inline="always", error_model="numpy")
def _n_deals(m, k):
    """C(m, k): the ways to deal ``k`` cards from ``m``."""
    out = 1
    for i in range(k):
        out = out * (m - i) // (i + 1)
    return out


# ---------------------------------------------------------------------------------------------
# kernels: histograms over the next round's buckets, greedy EMD, nearest centre


@numba.njit(cache=True, inline="always", error_model="numpy")
def _next_hist(
    t_hand, r, hand, hand_r, new_k, deck, next_labels, cnt, touched, pidx, pm, used, avail, idx, pos
):
    """The histogram of ``hand`` (round ``r``, ``hand_r`` cards, first entries of ``hand``) over
    the next round's buckets: its bins ascending in ``pidx[:nnz]``, masses (sum 1) in ``pm``;
    returns ``nnz``. ``cnt`` (int64 ``[buckets]``) must be zero and is left zero; ``pos`` (int64,
    at least C(deck - hand_r, new_k) entries) is scratch.

    Memory-level parallelism: the next round's label table is large (123M classes on the river)
    and the reads are scattered, so every class index is computed first and its label
    prefetched, then the labels are read (the same counts as reading each one at once)."""
    for x in range(deck):
        used[x] = False
    for j in range(hand_r):
        used[hand[j]] = True
    na = 0
    for x in range(deck):
        if not used[x]:
            avail[na] = x
            na += 1
    for j in range(new_k):
        idx[j] = j
    nt = 0
    total = 0
    while True:
        for j in range(new_k):
            hand[hand_r + j] = avail[idx[j]]
        p = iso_index(t_hand, hand, r + 1)
        prefetch(next_labels, p)
        pos[total] = p
        total += 1
        if not next_combination(idx, new_k, na):
            break
    for e in range(total):
        lab = next_labels[pos[e]]
        if cnt[lab] == 0:
            touched[nt] = lab
            nt += 1
        cnt[lab] += 1
    for a in range(1, nt):  # ascending bins (insertion sort; a few dozen at most)
        v = touched[a]
        b = a
        while b > 0 and touched[b - 1] > v:
            touched[b] = touched[b - 1]
            b -= 1
        touched[b] = v
    for e in range(nt):
        pidx[e] = touched[e]
        pm[e] = cnt[touched[e]] / total
        cnt[touched[e]] = 0
    return nt


@numba.njit(cache=True, inline="always", error_model="numpy")
def emd_sparse(pidx, pm, nnz, q, ground, gorder, used, stamp, epoch, limit=np.inf):
    """Greedy transport cost from the sparse histogram ``(pidx, pm)[:nnz]`` to the dense ``q``:
    :func:`abstraction.clustering._emd_greedy` without copying ``q`` (the capacity taken from a
    bin is ``used[j]`` while ``stamp[j] == epoch``).

    The cost only grows as mass is moved, so once it exceeds ``limit`` (the best distance a
    nearest-centre search has so far) the partial cost, already more than ``limit``, is returned:
    a caller that keeps the smaller of the two decides exactly as with the full cost, for a
    fraction of the work on the candidates that lose (most of them)."""
    k = q.shape[0]
    cost = 0.0
    for e in range(nnz):
        i = pidx[e]
        rem = pm[e]
        if rem <= 0.0:
            continue
        for t in range(k):
            j = gorder[i, t]
            taken = used[j] if stamp[j] == epoch else 0.0
            cap = q[j] - taken
            if cap <= 0.0:
                continue
            m = min(cap, rem)
            cost += m * ground[i, j]
            if cost > limit:
                return cost
            used[j] = taken + m
            stamp[j] = epoch
            rem -= m
            if rem <= 1e-15:
                break
    return cost


@numba.njit(cache=True, inline="always", error_model="numpy")
def _nearest_emd(pidx, pm, nnz, E_next, C, Ec, cps, corder, u, ground, gorder, used, stamp, ctr, ep):
    """Nearest centre (rows of ``C``) of the sparse histogram under the greedy EMD, with the
    embedding bounds of the module doc; lowest index on ties. ``ctr``: int64 [1] epoch counter."""
    k = C.shape[0]
    d = E_next.shape[1]
    for t in range(d):
        ep[t] = 0.0
    for e in range(nnz):
        for t in range(d):
            ep[t] += pm[e] * E_next[pidx[e], t]
    ux = 0.0
    for t in range(d):
        ux += u[t] * ep[t]
    lo = 0
    hi = k
    while lo < hi:
        mid = (lo + hi) // 2
        if cps[mid] < ux:
            lo = mid + 1
        else:
            hi = mid
    left = lo - 1
    right = lo
    best = np.inf
    bi = k
    while left >= 0 or right < k:
        if right >= k or (left >= 0 and ux - cps[left] <= cps[right] - ux):
            pos = left
            gap = ux - cps[left]
            left -= 1
        else:
            pos = right
            gap = cps[right] - ux
            right += 1
        if gap > best + _TOL:
            break
        j = corder[pos]
        lb = 0.0
        for t in range(d):
            z = ep[t] - Ec[j, t]
            lb += z * z
        if np.sqrt(lb) > best + _TOL:
            continue
        ctr[0] += 1
        dist = emd_sparse(pidx, pm, nnz, C[j], ground, gorder, used, stamp, ctr[0], best)
        if dist < best or (dist == best and j < bi):
            best = dist
            bi = j
    return bi, best


@numba.njit(cache=True, nogil=True, error_model="numpy")
def sample_hists_chunk(t_hand, r, hands, hand_r, new_k, deck, next_labels, kn, lo, hi, pidx, pm, nnz):
    """Histograms of the sampled hands ``lo..hi`` (rows of ``hands``) over the ``kn`` buckets of the
    next round (``next_labels``, uint16 per class) into rows of ``pidx``/``pm``."""
    cnt = np.zeros(kn, np.int64)
    touched = np.empty(kn, np.int64)
    hand = np.empty(hand_r + new_k, np.int64)
    used = np.zeros(deck, np.bool_)
    avail = np.empty(deck, np.int64)
    idx = np.empty(max(new_k, 1), np.int64)
    pos = np.empty(_n_deals(deck - hand_r, new_k), np.int64)
    for i in range(lo, hi):
        for j in range(hand_r):
            hand[j] = hands[i, j]
        nnz[i] = _next_hist(
            t_hand,
            r,
            hand,
            hand_r,
            new_k,
            deck,
            next_labels,
            cnt,
            touched,
            pidx[i],
            pm[i],
            used,
            avail,
            idx,
            pos,
        )


@numba.njit(cache=True, nogil=True, error_model="numpy")
def assign_emd_chunk(pidx, pm, nnz, E_next, C, Ec, cps, corder, u, ground, gorder, lo, hi, labels, dist):
    """Nearest centre of the sampled histograms ``lo..hi``."""
    kn = C.shape[1]
    used = np.zeros(kn, np.float64)
    stamp = np.zeros(kn, np.int64)
    ctr = np.zeros(1, np.int64)
    ep = np.empty(E_next.shape[1], np.float64)
    for i in range(lo, hi):
        j, d = _nearest_emd(
            pidx[i], pm[i], nnz[i], E_next, C, Ec, cps, corder, u, ground, gorder, used, stamp, ctr, ep
        )
        labels[i] = j
        dist[i] = d


@numba.njit(cache=True, nogil=True, error_model="numpy")
def round_assign_chunk(
    t_hand, r, hand_r, new_k, deck, next_labels, E_next, C, Ec, cps, corder, u, ground, gorder, lo, hi, out
):
    """Every class ``lo..hi`` of round ``r``: its histogram's nearest centre into ``out``."""
    kn = C.shape[1]
    cnt = np.zeros(kn, np.int64)
    touched = np.empty(kn, np.int64)
    pidx = np.empty(kn, np.int64)
    pm = np.empty(kn, np.float64)
    hand = np.empty(hand_r + new_k, np.int64)
    used_c = np.zeros(deck, np.bool_)
    avail = np.empty(deck, np.int64)
    idx = np.empty(max(new_k, 1), np.int64)
    used = np.zeros(kn, np.float64)
    stamp = np.zeros(kn, np.int64)
    ctr = np.zeros(1, np.int64)
    ep = np.empty(E_next.shape[1], np.float64)
    pos = np.empty(_n_deals(deck - hand_r, new_k), np.int64)
    for c in range(lo, hi):
        iso_unindex(t_hand, c, r, hand)
        nz = _next_hist(
            t_hand, r, hand, hand_r, new_k, deck, next_labels, cnt, touched, pidx, pm, used_c, avail, idx, pos
        )
        j, _ = _nearest_emd(pidx, pm, nz, E_next, C, Ec, cps, corder, u, ground, gorder, used, stamp, ctr, ep)
        out[c] = j


@numba.njit(cache=True, nogil=True, error_model="numpy")
def seed_update_emd(pidx, pm, nnz, EP, c, ec, ground, gorder, D, lo=0, hi=-1):
    """k-means++: ``D[i] = min(D[i], EMD(point i, c))`` for the points ``lo..hi`` (all by default),
    skipping points whose embedding bound already reaches ``D[i]``; each point on its own, so
    chunks can run on several threads."""
    kn = c.shape[0]
    used = np.zeros(kn, np.float64)
    stamp = np.zeros(kn, np.int64)
    d = ec.shape[0]
    epoch = 0
    for i in range(lo, D.shape[0] if hi < 0 else hi):
        lb = 0.0
        for t in range(d):
            z = EP[i, t] - ec[t]
            lb += z * z
        if np.sqrt(lb) >= D[i]:
            continue
        epoch += 1
        e = emd_sparse(pidx[i], pm[i], nnz[i], c, ground, gorder, used, stamp, epoch, D[i])
        D[i] = min(D[i], e)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def centres_from(pidx, pm, nnz, labels, k, kn, old):
    """Mean histogram of each cluster (an empty cluster keeps its ``old`` centre); member counts."""
    C = np.zeros((k, kn), np.float64)
    n_of = np.zeros(k, np.int64)
    for i in range(labels.shape[0]):
        j = labels[i]
        n_of[j] += 1
        for e in range(nnz[i]):
            C[j, pidx[i, e]] += pm[i, e]
    for j in range(k):
        if n_of[j] > 0:
            for b in range(kn):
                C[j, b] /= n_of[j]
        else:
            for b in range(kn):
                C[j, b] = old[j, b]
    return C, n_of


@numba.njit(cache=True, nogil=True, error_model="numpy")
def ground_of(C, ground, gorder, out):
    """``out[a, b]``: greedy EMD between the dense histograms ``C[a]`` and ``C[b]``."""
    k, kn = C.shape
    pidx = np.empty(kn, np.int64)
    pm = np.empty(kn, np.float64)
    used = np.zeros(kn, np.float64)
    stamp = np.zeros(kn, np.int64)
    epoch = 0
    for a in range(k):
        nz = 0
        for b in range(kn):
            if C[a, b] > 0.0:
                pidx[nz] = b
                pm[nz] = C[a, b]
                nz += 1
        for b in range(k):
            epoch += 1
            out[a, b] = emd_sparse(pidx, pm, nz, C[b], ground, gorder, used, stamp, epoch)
