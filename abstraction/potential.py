"""Potential-aware card buckets for full-size decks (52-card hold'em), built from samples.

The exact builder (:mod:`abstraction.clustering`) enumerates every transition between classes and
clusters every class; on 52 cards that is out of reach (14M turn classes x 46 river cards). This
builder follows Ganzfried & Sandholm 2014 as Pluribus and Libratus do, with k-means fitted on a
*sample* of hands and then every class *assigned* to its nearest centre:

1. **Opponent clusters** (for OCHS): the hole-card classes are clustered into ``K`` groups
   (k-medians under 1-D EMD of their final hand-strength histograms, measured on ``opp_boards``
   random final boards).
2. **Last round: OCHS** (Johanson et al. 2013): a hand's vector of hand strength against each
   opponent cluster, exact with card removal, computed per final board for every hole hand at once
   (one sort of the hands by strength, per-cluster counts, inclusion-exclusion over the two hole
   cards: O(n K) a board). k-means (squared L2) on the hands of ``river_boards`` random boards,
   then every class assigned: one pass over the canonical final boards.
3. **Earlier rounds, last to first: potential-aware.** A hand's feature is its histogram over the
   *next round's buckets* (every way to deal the next round's cards); the distance is the earth
   mover's distance whose ground distance between next-round buckets is the distance between their
   centres (L2 between OCHS centres for the last round, then recursively the EMD between the
   histogram centres). The EMD is the greedy transport of :func:`abstraction.clustering._emd_greedy`
   (each of the point's bins, in order, sends its mass to the nearest centre bins with capacity
   left; an upper bound of the exact EMD, the approximation of Ganzfried & Sandholm). k-means on
   ``sample`` random hands of the round, then every class assigned.

**Pruning (exact).** Every next-round bucket ``j`` has an *embedding* ``e_j`` (its OCHS centre on
the last round; the mean embedding of a centre's histogram before that) with ground distance
``g(i, j) >= ||e_i - e_j||``, so for histograms ``p``, ``q`` any transport costs at least
``||sum p_i e_i - sum q_j e_j||`` (and so does the greedy one). The nearest-centre search visits the
centres in order of the projection of their embedding on ``u = (1, ..., 1) / sqrt(d)`` outward
from the point's, skips a centre whose embedding bound already exceeds the best distance and stops
when the projected gap does: the result is the plain arg-min (lowest index on ties) at a fraction
of the EMD evaluations. The same search with squared L2 assigns OCHS vectors.

**Build.** Each stage shows a progress bar with the time left (k-means: per iteration), runs on
every core (the kernels release the GIL), and saves its result under ``DIR/partial/`` (opponent
clusters; per round the centres, then the labels), so an interrupted build resumes at the stage it
was in; ``partial/request.json`` names the request, and a directory holding another request's
partial build is refused. Everything is deterministic given the seed and the sample sizes.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from math import comb
from pathlib import Path

import numba
import numpy as np

from abstraction.bucketing import (
    AbstractionError,
    SampleSpec,
    board_hs,
    card_structure,
    claim_partial,
    holes_of,
    rest_of,
    run_chunks,
    save_npz_atomic,
)
from abstraction.clustering import kmeans
from abstraction.combinatorics import next_combination
from abstraction.isomorphism import HandIndexer, iso_index, iso_unindex, prefetch
from holdem.evaluator import rank_hand
from holdem.gamedef import GameDef
from holdem.progress import progress_bar

OCHS_BINS = 50  # final-strength histogram bins of the opponent clustering
_TOL = 1e-9  # slack on the pruning bounds (rounding of the embeddings)


# ---------------------------------------------------------------------------------------------
# kernels: OCHS of every hand on a final board


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _board_ochs(board, nb, holes, hole_lab, K, S, N, deck, out):
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
def _final_hs_hist_chunk(boards, nb, holes, hole_cls, S, N, deck, hist):
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
def _river_sample_chunk(boards, nb, hole_k, hole_lab, K, S, N, lo, hi, rows_out, feats):
    """OCHS of every hand on the sampled final boards ``lo..hi`` into ``feats`` from row
    ``rows_out[b]`` of board ``b`` on."""

    deck = S * N
    for b in range(lo, hi):
        board = boards[b, :nb]
        holes = holes_of(rest_of(board, nb, deck), hole_k)
        _board_ochs(
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
def _assign_l2_chunk(X, C, cps, corder, u, lo, hi, labels, dist):
    for i in range(lo, hi):
        j, d = _nearest_l2(X[i], C, cps, corder, u)
        labels[i] = j
        dist[i] = d


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _l2_centres(X, labels, C):
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
def _river_assign_chunk(t_board, t_hand, rf, nb, hole_k, hole_lab, K, S, N, C, cps, corder, u, lo, hi, out):
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
        _board_ochs(b, nb, holes, hole_lab, K, S, N, deck, feats[:n])
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
def _emd_sparse(pidx, pm, nnz, q, ground, gorder, used, stamp, epoch, limit=np.inf):
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
        dist = _emd_sparse(pidx, pm, nnz, C[j], ground, gorder, used, stamp, ctr[0], best)
        if dist < best or (dist == best and j < bi):
            best = dist
            bi = j
    return bi, best


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _sample_hists_chunk(t_hand, r, hands, hand_r, new_k, deck, next_labels, kn, lo, hi, pidx, pm, nnz):
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
def _assign_emd_chunk(pidx, pm, nnz, E_next, C, Ec, cps, corder, u, ground, gorder, lo, hi, labels, dist):
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
def _round_assign_chunk(
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
def _seed_update_emd(pidx, pm, nnz, EP, c, ec, ground, gorder, D, lo=0, hi=-1):
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
        e = _emd_sparse(pidx[i], pm[i], nnz[i], c, ground, gorder, used, stamp, epoch, D[i])
        D[i] = min(D[i], e)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _centres_from(pidx, pm, nnz, labels, k, kn, old):
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
def _ground_of(C, ground, gorder, out):
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
            out[a, b] = _emd_sparse(pidx, pm, nz, C[b], ground, gorder, used, stamp, epoch)


# ---------------------------------------------------------------------------------------------
# driving


class _Clock:
    """Wall and CPU seconds (all threads) of a stage, logged with its rate when it ends."""

    def __init__(self, log, desc: str, items: int = 0, unit: str = ""):
        self.log, self.desc, self.items, self.unit = log, desc, items, unit

    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            w, c = time.perf_counter() - self.w, time.process_time() - self.c
            rate = f", {self.items / max(c, 1e-9):,.0f} {self.unit} per CPU second" if self.items else ""
            self.log(f"stage {self.desc}: {w:.1f} s wall, {c:.1f} s CPU{rate}")


def _pool_map(fn, n_items: int, threads: int, chunks: int | None = None):
    """``fn(lo, hi)`` over ``0..n_items`` on ``threads`` threads (no progress bar)."""
    n_chunks = max(1, min(n_items, chunks or threads * 4))
    bounds = np.linspace(0, n_items, n_chunks + 1).astype(np.int64)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futs = [pool.submit(fn, int(bounds[i]), int(bounds[i + 1])) for i in range(n_chunks)]
        return [f.result() for f in futs]


def _proj(E: np.ndarray):
    u = np.full(E.shape[1], 1.0 / np.sqrt(E.shape[1]))
    p = E @ u
    order = np.argsort(p, kind="stable").astype(np.int64)
    return u, np.ascontiguousarray(p[order]), order


def _bar(total, desc, unit, progress):
    if not progress:
        return None
    return progress_bar(total, desc, unit, dynamic_ncols=True, leave=True)


class _Stages:
    """Stage results under ``DIR/partial/`` (npz, written atomically), for resuming."""

    def __init__(self, partial: Path, request: dict, log):
        claim_partial(partial, request)
        self.dir = partial
        self.log = log

    def load(self, name: str):
        f = self.dir / f"{name}.npz"
        if not f.exists():
            return None
        try:
            with np.load(f) as z:
                out = {k: z[k] for k in z.files}
        except Exception as exc:  # noqa: BLE001 - a damaged stage file is an error to report
            raise AbstractionError(
                f"{f}: damaged stage file ({type(exc).__name__}: {exc}); delete it to redo the stage"
            ) from None
        self.log(f"resuming: {f.name} reused")
        return out

    def save(self, name: str, **arrays):
        save_npz_atomic(self.dir / f"{name}.npz", **arrays)


def _kmeans_l2(X, k, rng, max_iter, threads, desc, progress, log):
    """k-means++ then Lloyd (squared L2) on the rows of ``X`` (equal weights)."""
    n = X.shape[0]
    if n < k:
        raise AbstractionError(f"{desc}: {n} sample points for {k} clusters; sample more")
    C = np.empty((k, X.shape[1]))
    C[0] = X[rng.integers(n)]
    D = ((X - C[0]) ** 2).sum(1)
    for j in range(1, k):
        s = D.sum()
        C[j] = X[rng.choice(n, p=D / s)] if s > 0 else X[rng.integers(n)]
        D = np.minimum(D, ((X - C[j]) ** 2).sum(1))
    labels = np.full(n, -1, np.int64)
    dist = np.empty(n)
    bar = _bar(max_iter, desc, "iter", progress)
    it = 0
    for it in range(1, max_iter + 1):
        u, cps, corder = _proj(C)
        new = np.empty(n, np.int64)
        _pool_map(lambda lo, hi: _assign_l2_chunk(X, C, cps, corder, u, lo, hi, new, dist), n, threads)
        changed = int((new != labels).sum())
        labels = new
        _l2_centres(X, labels, C)
        if bar is not None:
            bar.set_postfix(changed=changed, inertia=f"{dist.mean():.4g}", refresh=False)
            bar.update(1)
            bar.refresh()
        if changed == 0:
            break
    if bar is not None:
        bar.close()
    log(f"{desc}: {it} iterations, mean squared distance {dist.mean():.4g}")
    return C


def _kmeans_emd(pidx, pm, nnz, E_next, k, ground, rng, max_iter, threads, desc, progress, log):
    """k-means++ then Lloyd under the greedy EMD on sparse histograms; centres are mean histograms."""
    n, kn = pidx.shape[0], E_next.shape[0]
    if n < k:
        raise AbstractionError(f"{desc}: {n} sample points for {k} clusters; sample more")
    gorder = np.argsort(ground, axis=1, kind="stable").astype(np.int64)
    EP = np.zeros((n, E_next.shape[1]))

    def point(i):
        c = np.zeros(kn)
        c[pidx[i, : nnz[i]]] = pm[i, : nnz[i]]
        return c

    for i in range(n):
        EP[i] = pm[i, : nnz[i]] @ E_next[pidx[i, : nnz[i]]]
    C = np.empty((k, kn))
    C[0] = point(rng.integers(n))
    D = np.full(n, np.inf)
    bar = _bar(k, f"{desc} seeding", "centres", progress)
    for j in range(k):
        if j:
            s = D.sum()
            C[j] = point(rng.choice(n, p=D / s) if s > 0 else rng.integers(n))
        c, ec = C[j], C[j] @ E_next
        _pool_map(
            lambda lo, hi: _seed_update_emd(pidx, pm, nnz, EP, c, ec, ground, gorder, D, lo, hi), n, threads
        )
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    labels = np.full(n, -1, np.int64)
    dist = np.empty(n)
    bar = _bar(max_iter, desc, "iter", progress)
    it = 0
    for it in range(1, max_iter + 1):
        Ec = C @ E_next
        u, cps, corder = _proj(Ec)
        new = np.empty(n, np.int64)
        _pool_map(
            lambda lo, hi: _assign_emd_chunk(
                pidx, pm, nnz, E_next, C, Ec, cps, corder, u, ground, gorder, lo, hi, new, dist
            ),
            n,
            threads,
        )
        changed = int((new != labels).sum())
        labels = new
        C, _ = _centres_from(pidx, pm, nnz, labels, k, kn, C)
        if bar is not None:
            bar.set_postfix(changed=changed, emd=f"{dist.mean():.4g}", refresh=False)
            bar.update(1)
            bar.refresh()
        if changed == 0:
            break
    if bar is not None:
        bar.close()
    log(f"{desc}: {it} iterations, mean EMD {dist.mean():.4g}")
    return C


def _random_hands(rng, n, deck, size):
    """int64 ``[n, size]``: distinct random cards per row (uniform over ordered deals)."""
    return np.argsort(rng.random((n, deck)), axis=1)[:, :size].astype(np.int64)


def build_potential_sampled(
    game: GameDef,
    indexer: HandIndexer,
    buckets: tuple[int, ...],
    out_dir,
    spec: SampleSpec | None = None,
    threads: int = 1,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> list[np.ndarray]:
    """Per round the uint16 bucket of every class (see the module doc); stages resume from
    ``out_dir/partial``. Preflop (round 0) may be lossless or clustered like the other rounds."""
    spec = spec or SampleSpec()

    S, N, deck, hk = game.num_suits, game.num_ranks, game.deck_size, game.num_hole_cards
    R = game.num_rounds
    rf = R - 1
    T = [game.board_cards_through(r) for r in range(R)]
    if game.num_board_cards[0] != 0:
        raise AbstractionError("potential-aware buckets need a first round without board cards")
    if hk not in (1, 2):
        raise AbstractionError(f"OCHS needs 1 or 2 hole cards, the game has {hk}")
    for r in range(1, R):
        if game.num_board_cards[r] == 0:
            raise AbstractionError(
                f"round {r + 1} deals no card: potential-aware buckets need a new card every round"
            )
        if buckets[r] >= indexer.size(r):
            raise AbstractionError(
                f"round {r + 1}: potential-aware buckets need fewer buckets than its "
                f"{indexer.size(r):,} classes (the histograms are over its buckets)"
            )
    stages = _Stages(
        Path(out_dir) / "partial",
        {
            "cards": card_structure(game),
            "buckets": list(buckets),
            "method": "potential-sampled",
            "spec": dataclasses.asdict(spec),
        },
        log,
    )
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(spec.seed).spawn(R + 2)]
    t0 = time.perf_counter()

    # 1. opponent clusters of the hole-card classes
    hole_ix = HandIndexer(S, N, (hk,))
    holes_all = np.array(list(itertools.combinations(range(deck), hk)), np.int64)
    hole_cls = hole_ix.index_many(holes_all, 0)
    K = min(spec.opp_clusters, hole_ix.size(0))
    st = stages.load("opponents")
    if st is None:
        boards = _random_hands(rngs[R], spec.opp_boards, deck, T[rf])
        with _Clock(log, "opponent histograms", spec.opp_boards, "boards"):
            hists = run_chunks(
                lambda lo, hi: _hist_part(
                    boards[lo:hi], T[rf], holes_all, hole_cls, S, N, deck, hole_ix.size(0)
                ),
                spec.opp_boards,
                threads,
                "opponent clusters: final-strength histograms",
                progress,
            )
        hist = np.sum(hists, axis=0)
        mult = np.bincount(hole_cls, minlength=hole_ix.size(0)).astype(np.float64)
        cdf = np.cumsum(hist / np.maximum(hist.sum(1, keepdims=True), 1e-300), 1)
        opp = kmeans(cdf, K, mult, rng=rngs[R], metric="l1", n_init=3)
        stages.save("opponents", labels=opp.labels)
        opp_labels = opp.labels
    else:
        opp_labels = st["labels"]
    hole_lab = np.zeros(deck * deck if hk == 2 else deck, np.int64)
    lab_raw = opp_labels[hole_cls]
    if hk == 2:
        hole_lab[holes_all[:, 0] * deck + holes_all[:, 1]] = lab_raw
        hole_lab[holes_all[:, 1] * deck + holes_all[:, 0]] = lab_raw
    else:
        hole_lab[holes_all[:, 0]] = lab_raw

    labels: list[np.ndarray | None] = [None] * R
    # 2. the last round: OCHS
    st = stages.load(f"round{rf}_labels")
    if st is None:
        stc = stages.load(f"round{rf}_centres")
        if stc is None:
            nb = T[rf]
            boards = _random_hands(rngs[rf], spec.river_boards, deck, nb)
            per = comb(deck - nb, hk)
            rows = np.arange(spec.river_boards, dtype=np.int64) * per
            X = np.empty((spec.river_boards * per, K))
            with _Clock(log, f"round {rf + 1} OCHS sample", spec.river_boards, "boards"):
                run_chunks(
                    lambda lo, hi: _river_sample_chunk(boards, nb, hk, hole_lab, K, S, N, lo, hi, rows, X),
                    spec.river_boards,
                    threads,
                    f"round {rf + 1} OCHS sample",
                    progress,
                )
            with _Clock(log, f"round {rf + 1} k-means ({X.shape[0]:,} points, {buckets[rf]} clusters)"):
                C = _kmeans_l2(
                    X,
                    buckets[rf],
                    rngs[rf],
                    spec.max_iter,
                    threads,
                    f"round {rf + 1} k-means (OCHS)",
                    progress,
                    log,
                )
            del X
            stages.save(f"round{rf}_centres", centres=C)
        else:
            C = stc["centres"]
        bi = HandIndexer(S, N, (T[rf],))
        out = np.zeros(indexer.size(rf), np.uint16)
        u, cps, corder = _proj(C)
        with _Clock(log, f"round {rf + 1} assign every class", bi.size(0), "canonical boards"):
            run_chunks(
                lambda lo, hi: _river_assign_chunk(
                    bi.tables,
                    indexer.tables,
                    rf,
                    T[rf],
                    hk,
                    hole_lab,
                    K,
                    S,
                    N,
                    C,
                    cps,
                    corder,
                    u,
                    lo,
                    hi,
                    out,
                ),
                bi.size(0),
                threads,
                f"round {rf + 1} assign every class",
                progress,
            )
        stages.save(f"round{rf}_labels", labels=out, centres=C)
        labels[rf] = out
    else:
        labels[rf], C = st["labels"], st["centres"]
    E_next = C  # embeddings of the next round's buckets
    ground = np.sqrt(np.maximum(((C[:, None, :] - C[None, :, :]) ** 2).sum(2), 0.0))

    # 3. earlier rounds: histograms over the next round's buckets
    for r in range(rf - 1, -1, -1):
        if buckets[r] == indexer.size(r):  # lossless (preflop)
            labels[r] = np.arange(indexer.size(r), dtype=np.uint16)
            break
        new_k = T[r + 1] - T[r]
        hand_r = hk + T[r]
        st = stages.load(f"round{r}_labels")
        if st is not None:
            labels[r], Cr = st["labels"], st["centres"]
        else:
            stc = stages.load(f"round{r}_centres")
            next_labels = np.ascontiguousarray(
                labels[r + 1], np.uint16
            )  # 2 bytes a class: 246 MB on the river
            gorder = np.argsort(ground, axis=1, kind="stable").astype(np.int64)
            if stc is None:
                n = spec.sample
                hands = _random_hands(rngs[r], n, deck, hand_r)
                kn = buckets[r + 1]
                width = min(comb(deck - hand_r, new_k), kn)
                pidx = np.zeros((n, width), np.int64)
                pm = np.zeros((n, width))
                nnz = np.zeros(n, np.int64)
                with _Clock(log, f"round {r + 1} sample histograms", n, "hands"):
                    run_chunks(
                        lambda lo, hi: _sample_hists_chunk(
                            indexer.tables,
                            r,
                            hands,
                            hand_r,
                            new_k,
                            deck,
                            next_labels,
                            kn,
                            lo,
                            hi,
                            pidx,
                            pm,
                            nnz,
                        ),
                        n,
                        threads,
                        f"round {r + 1} sample histograms",
                        progress,
                        unit="hands",
                    )
                with _Clock(log, f"round {r + 1} k-means ({n:,} points, {buckets[r]} clusters)"):
                    Cr = _kmeans_emd(
                        pidx,
                        pm,
                        nnz,
                        E_next,
                        buckets[r],
                        ground,
                        rngs[r],
                        spec.max_iter,
                        threads,
                        f"round {r + 1} k-means (EMD)",
                        progress,
                        log,
                    )
                del pidx, pm, nnz
                stages.save(f"round{r}_centres", centres=Cr)
            else:
                Cr = stc["centres"]
            Ec = Cr @ E_next
            u, cps, corder = _proj(Ec)
            out = np.zeros(indexer.size(r), np.uint16)
            with _Clock(log, f"round {r + 1} assign every class", indexer.size(r), "classes"):
                run_chunks(
                    lambda lo, hi: _round_assign_chunk(
                        indexer.tables,
                        r,
                        hand_r,
                        new_k,
                        deck,
                        next_labels,
                        E_next,
                        Cr,
                        Ec,
                        cps,
                        corder,
                        u,
                        ground,
                        gorder,
                        lo,
                        hi,
                        out,
                    ),
                    indexer.size(r),
                    threads,
                    f"round {r + 1} assign every class",
                    progress,
                    unit="classes",
                )
            stages.save(f"round{r}_labels", labels=out, centres=Cr)
            labels[r] = out
        # the ground distance between this round's buckets, for the round before
        gorder = np.argsort(ground, axis=1, kind="stable").astype(np.int64)
        g = np.empty((Cr.shape[0], Cr.shape[0]))
        _ground_of(Cr, ground, gorder, g)
        ground = 0.5 * (g + g.T)
        np.fill_diagonal(ground, 0.0)
        E_next = Cr @ E_next
    log(f"potential-aware buckets {list(buckets)}: stages done in {time.perf_counter() - t0:.1f} s")
    return [np.asarray(t, np.uint16) for t in labels]


def _hist_part(boards, nb, holes, hole_cls, S, N, deck, n_cls):
    hist = np.zeros((n_cls, OCHS_BINS))
    _final_hs_hist_chunk(boards, nb, holes, hole_cls, S, N, deck, hist)
    return hist
