"""Clustered card buckets: distribution-aware (Johanson et al. 2013) and potential-aware
(Ganzfried & Sandholm 2014), for small decks.

Both methods work on the suit-isomorphism classes of :mod:`abstraction.isomorphism` and weight
every class by its *multiplicity*, the number of raw (hole, board) deals it stands for, so a
cluster's centre and the k-means objective are those of the real deal distribution.

**Transitions.** For a round ``r`` that is not the last, ``T_r`` (scipy CSR, ``[size(r),
size(r+1)]``, float64 counts) holds, for a class of round ``r``, how many ways to deal the next
round's cards lead to each class of round ``r + 1`` (every member of a class has the same counts,
so one canonical member is enumerated). ``P_r`` is ``T_r`` with rows normalized. Multiplicities
follow: ``w_0`` counts the raw hole hands of each preflop class, ``w_{r+1} = w_r @ T_r``.

**Last round (both methods)**: ``last_round="hs"`` (the default) cuts the last round's hand
strength into equal-probability percentiles (the ``ehs`` buckets of that round; a bucket's centre
is its mean HS); ``last_round="ochs"`` uses OCHS (opponent cluster hand strength, Johanson et al.
2013): the opponent's possible hole hands are grouped into ``K`` clusters (k-medians under EMD of
their preflop final-strength histograms, below); a last-round class gets the vector of its hand
strength (win + tie/2, card removal exact) against each cluster, float64 ``[size(R-1), K]``,
clustered by k-means under squared L2 (means as centres). OCHS is not the default because it lost
in every measurement on the three-round small deck (converged: 261 vs 198 mbb/game for
distribution-aware flop buckets at 10 buckets; BENCHMARKS.md).

**distribution** (earlier rounds): the histogram of the *final* hand strength over every way to
deal the rest of the board, ``HS_BINS`` equal-width bins on [0, 1] (``D_{R-1}`` one-hot,
``D_r = P_r @ D_{r+1}``). In one dimension the earth mover's distance is the L1 distance between
the cumulative histograms (times the bin width), so the features are the CDFs and k-means runs
under L1 with the coordinate-wise weighted *median* as the centre ("k-medians"): the median
minimizes the summed L1 distance, so every step lowers the EMD objective (Johanson et al. use the
mean histogram as the centre; the median is the exact minimizer for this metric).

**potential** (earlier rounds): the histogram over the *next round's buckets*,
``H_r = P_r @ onehot(labels_{r+1})``, clustered by k-means whose distance is the EMD with ground
distance between next-round buckets = the distance between their centres (on the last round the
difference of mean HS, or with ``ochs`` the L2 distance between OCHS centres; recursively the EMD between histogram centres on earlier rounds), centres are
weighted mean histograms (as in the paper). When the next round's buckets lie on a line (HS
percentiles on the last round: the ground distance is the difference of their mean HS) the EMD is
exact in closed form: L1 between the CDFs over the buckets in HS order, each step scaled by the gap
between neighbouring centres (:func:`line_cdf_features`), and k-means runs as k-medians on those
features, like ``distribution``. Otherwise (OCHS centres, earlier rounds) the EMD is solved exactly as a transport LP
(``scipy.optimize.linprog``, HiGHS) when the round has few classes (``EMD_EXACT_MAX`` point x
centre pairs per iteration) and otherwise by a greedy transport (each unit of the point's mass,
bin by bin, moves to the nearest target bin with capacity left), an upper bound of the EMD that is
0 for identical histograms, close to the approximation of Ganzfried & Sandholm 2014.

**k-means.** k-means++ seeding from a seeded ``numpy.random.Generator`` (probability
``w * D`` with ``D`` the distance to the nearest centre, squared under L2), Lloyd iterations to a
fixed point or ``max_iter``, the best of ``n_init`` restarts; ties go to the lower centre index, so
equal features always share a bucket. Everything is deterministic given the seed.

Cost: the transitions hold ``size(r) * C(remaining, new cards)`` entries per round and OCHS ranks
every opponent hand for every last-round class; :func:`check_feasible` refuses a game where that
is out of reach (52-card hold'em beyond the flop).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations
from math import comb

import numba
import numpy as np

from abstraction.bucket_common import HIST_BINS, AbstractionError, assign_buckets, percentile_thresholds
from abstraction.combinatorics import next_combination
from abstraction.isomorphism import HandIndexer, iso_index, iso_unindex
from holdem.evaluator import rank_hand
from holdem.gamedef import GameDef

METHODS = ("distribution", "potential")
HS_BINS = 50
OCHS_CLUSTERS = 8
EMD_EXACT_MAX = 4000  # point x centre pairs per Lloyd step for which the exact LP is used
MAX_TRANSITIONS = 2e8  # transition entries (all rounds) beyond which a build is refused
MAX_OCHS_WORK = 2e9  # last-round classes x opponent hands


# ---------------------------------------------------------------------------------------------
# earth mover's distance


def emd_1d(p: np.ndarray, q: np.ndarray, bin_width: float = 1.0) -> float:
    """EMD between two histograms on equally spaced bins: L1 between their CDFs (masses are
    normalized to 1 first)."""
    p = np.asarray(p, np.float64)
    q = np.asarray(q, np.float64)
    return float(np.abs(np.cumsum(p / p.sum()) - np.cumsum(q / q.sum())).sum() * bin_width)


def line_cdf_features(H: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Rows of ``H`` (histograms over bins at the 1-D ``positions``, rows summing to 1) as
    features whose L1 distance is their exact EMD under the ground distance ``|x_i - x_j|``: the
    CDF over the bins in position order, each step scaled by the gap to the next position."""
    order = np.argsort(positions, kind="stable")
    gaps = np.diff(np.asarray(positions, np.float64)[order])
    return np.cumsum(np.asarray(H, np.float64)[:, order], axis=1)[:, :-1] * gaps[None, :]


def emd(p: np.ndarray, q: np.ndarray, ground: np.ndarray) -> float:
    """Exact EMD between histograms ``p``, ``q`` (float ``[n]``, normalized to mass 1) under the
    ground distance ``ground`` (float ``[n, n]``): the transport LP over the two supports."""
    from scipy.optimize import linprog  # scipy is heavy: only exact EMD (small decks) needs it

    p = np.asarray(p, np.float64)
    q = np.asarray(q, np.float64)
    p = p / p.sum()
    q = q / q.sum()
    ii = np.flatnonzero(p > 0)
    jj = np.flatnonzero(q > 0)
    a, b = len(ii), len(jj)
    if a == 1 or b == 1:  # one source or one sink: the transport is forced
        return float((p[ii][:, None] * q[jj][None, :] * ground[np.ix_(ii, jj)]).sum())
    cost = ground[np.ix_(ii, jj)].ravel()
    rows = np.zeros((a + b, a * b))
    for x in range(a):
        rows[x, x * b : (x + 1) * b] = 1.0
    for y in range(b):
        rows[a + y, y::b] = 1.0
    rhs = np.concatenate([p[ii], q[jj]])
    # one equality is implied by equal masses; dropping it keeps the system full rank
    res = linprog(cost, A_eq=rows[:-1], b_eq=rhs[:-1], bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"transport LP failed: {res.message}")
    return float(res.fun)


@numba.njit(cache=True, error_model="numpy")
def _emd_greedy(p, q, ground, order):
    """Greedy transport cost from ``p`` to ``q`` (both mass 1): bin by bin, mass goes to the
    nearest target bins (``order[i]``: bins by increasing ``ground[i]``) with capacity left."""
    n = p.shape[0]
    cap = q.copy()
    cost = 0.0
    for i in range(n):
        rem = p[i]
        if rem <= 0.0:
            continue
        for t in range(n):
            j = order[i, t]
            if cap[j] <= 0.0:
                continue
            m = min(cap[j], rem)
            cost += m * ground[i, j]
            cap[j] -= m
            rem -= m
            if rem <= 1e-15:
                break
    return cost


@numba.njit(cache=True, error_model="numpy")
def _emd_greedy_all(X, C, ground, order, out):
    for a in range(X.shape[0]):
        for b in range(C.shape[0]):
            out[a, b] = _emd_greedy(X[a], C[b], ground, order)


def emd_greedy(p: np.ndarray, q: np.ndarray, ground: np.ndarray) -> float:
    """The greedy approximation of :func:`emd` used on large rounds (an upper bound)."""
    p = np.asarray(p, np.float64) / np.sum(p)
    q = np.asarray(q, np.float64) / np.sum(q)
    ground = np.ascontiguousarray(ground, np.float64)
    return float(_emd_greedy(p, q, ground, np.argsort(ground, axis=1, kind="stable")))


# ---------------------------------------------------------------------------------------------
# k-means


@dataclasses.dataclass(frozen=True)
class KMeans:
    """``labels`` int64 ``[n]``, ``centers`` float64 ``[k, d]``, ``inertia`` the weighted sum of
    each point's distance to its centre (squared under L2), ``iterations`` of the best restart."""

    labels: np.ndarray
    centers: np.ndarray
    inertia: float
    iterations: int


def _distances(X, C, metric, ground=None, exact=True):
    """float64 ``[n, k]``: squared L2, L1 or EMD (rows of X and C are histograms for EMD)."""
    if metric == "l2":
        d = (X * X).sum(1)[:, None] - 2.0 * X @ C.T + (C * C).sum(1)[None, :]
        return np.maximum(d, 0.0)
    if metric == "l1":
        out = np.empty((X.shape[0], C.shape[0]))
        step = max(1, 4_000_000 // max(1, C.shape[0] * X.shape[1]))
        for s in range(0, X.shape[0], step):
            out[s : s + step] = np.abs(X[s : s + step, None, :] - C[None, :, :]).sum(2)
        return out
    out = np.empty((X.shape[0], C.shape[0]))
    if exact:
        for a in range(X.shape[0]):
            for b in range(C.shape[0]):
                out[a, b] = emd(X[a], C[b], ground)
    else:
        order = np.argsort(ground, axis=1, kind="stable")
        _emd_greedy_all(np.ascontiguousarray(X), np.ascontiguousarray(C), ground, order, out)
    return out


def _weighted_median(X, w):
    """Coordinate-wise weighted median of the rows of ``X`` (the lower one on a tie)."""
    order = np.argsort(X, axis=0, kind="stable")
    cw = np.cumsum(w[order], axis=0)
    pick = (cw >= 0.5 * cw[-1][None, :]).argmax(0)
    return X[order[pick, np.arange(X.shape[1])], np.arange(X.shape[1])]


def kmeans(
    X: np.ndarray,
    k: int,
    weights: np.ndarray | None = None,
    *,
    rng: np.random.Generator,
    metric: str = "l2",
    ground: np.ndarray | None = None,
    max_iter: int = 100,
    n_init: int = 1,
    exact: bool | None = None,
) -> KMeans:
    """Weighted k-means of the rows of ``X`` (float ``[n, d]``) into ``k`` clusters.

    ``metric``: ``"l2"`` (squared Euclidean, mean centres), ``"l1"`` (coordinate-wise weighted
    median centres: on CDF rows this is k-medians under 1-D EMD) or ``"emd"`` (rows are
    histograms, ``ground`` float ``[d, d]`` the ground distance, mean centres). ``exact``
    (EMD only): the LP, or the greedy transport; default by :data:`EMD_EXACT_MAX`.
    """
    if metric not in ("l2", "l1", "emd"):
        raise ValueError(f"unknown k-means metric {metric!r}: l2, l1 or emd")
    X = np.ascontiguousarray(X, np.float64)
    n = X.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"k must be in 1..{n} (the number of points), got {k}")
    w = np.ones(n) if weights is None else np.asarray(weights, np.float64)
    if w.shape != (n,) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError("weights must be non-negative, one per point, not all zero")
    if metric == "emd":
        if ground is None or ground.shape != (X.shape[1], X.shape[1]):
            raise ValueError(f"EMD needs a [{X.shape[1]}, {X.shape[1]}] ground distance")
        ground = np.ascontiguousarray(ground, np.float64)
        X = X / X.sum(1, keepdims=True)
    if exact is None:
        exact = n * k <= EMD_EXACT_MAX
    best = None
    for _ in range(n_init):
        res = _lloyd(X, k, w, rng, metric, ground, max_iter, exact)
        if best is None or res.inertia < best.inertia - 1e-12:
            best = res
    return best


def _lloyd(X, k, w, rng, metric, ground, max_iter, exact):
    n = X.shape[0]
    p = w / w.sum()
    centers = [X[rng.choice(n, p=p)]]
    dmin = _distances(X, np.array(centers), metric, ground, exact)[:, 0]
    for _ in range(1, k):
        score = w * dmin
        if score.sum() <= 0:  # fewer distinct points than clusters: duplicate a centre
            c = X[rng.choice(n, p=p)]
        else:
            c = X[rng.choice(n, p=score / score.sum())]
        centers.append(c)
        dmin = np.minimum(dmin, _distances(X, c[None, :], metric, ground, exact)[:, 0])
    C = np.array(centers)
    labels = None
    it = 0
    for it in range(1, max_iter + 1):
        D = _distances(X, C, metric, ground, exact)
        new = D.argmin(1)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            m = labels == j
            if not np.any(m & (w > 0)):
                continue  # an empty cluster keeps its centre
            if metric == "l1":
                C[j] = _weighted_median(X[m], w[m])
            else:
                C[j] = (w[m][:, None] * X[m]).sum(0) / w[m].sum()
    D = _distances(X, C, metric, ground, exact)
    labels = D.argmin(1)
    inertia = float((w * D[np.arange(n), labels]).sum())
    return KMeans(labels.astype(np.int64), C, inertia, it)


# ---------------------------------------------------------------------------------------------
# per-class features


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _transition_chunk(t_hand, r, hand_r, new_k, deck, lo, hi, out):
    """``out[c - lo, j]``: the round ``r + 1`` class of the ``j``-th way to deal ``new_k`` cards
    to the canonical member of class ``c`` of round ``r``."""
    hand = np.empty(hand_r + new_k, np.int64)
    used = np.zeros(deck, np.bool_)
    avail = np.empty(deck, np.int64)
    idx = np.empty(new_k, np.int64)
    for c in range(lo, hi):
        iso_unindex(t_hand, c, r, hand)
        used[:] = False
        for j in range(hand_r):
            used[hand[j]] = True
        na = 0
        for x in range(deck):
            if not used[x]:
                avail[na] = x
                na += 1
        for j in range(new_k):
            idx[j] = j
        m = 0
        while True:
            for j in range(new_k):
                hand[hand_r + j] = avail[idx[j]]
            out[c - lo, m] = iso_index(t_hand, hand, r + 1)
            m += 1
            if not next_combination(idx, new_k, na):
                break


def transitions(game: GameDef, indexer: HandIndexer, r: int):
    """``T_r``: scipy CSR float64 ``[size(r), size(r + 1)]`` of deal counts (see the module doc)."""
    import scipy.sparse as sp  # scipy is heavy: only the builders' transition counts need it

    n, n2 = indexer.size(r), indexer.size(r + 1)
    new_k = game.num_board_cards[r + 1]
    if new_k == 0:
        return sp.identity(n, format="csr", dtype=np.float64)
    hand_r = indexer.hand_size(r)
    m = comb(game.deck_size - hand_r, new_k)
    cols = np.empty((n, m), np.int64)
    _transition_chunk(indexer.tables, r, hand_r, new_k, game.deck_size, 0, n, cols)
    rows = np.repeat(np.arange(n), m)
    return sp.csr_matrix((np.ones(n * m), (rows, cols.ravel())), shape=(n, n2))


def preflop_weights(game: GameDef, indexer: HandIndexer) -> np.ndarray:
    """float64 ``[size(0)]``: raw round-0 deals per class (hole cards and any round-0 board)."""
    k0 = indexer.hand_size(0)
    hole = game.num_hole_cards
    deals = []
    for h in combinations(range(game.deck_size), hole):
        rest = [c for c in range(game.deck_size) if c not in h]
        for b in combinations(rest, k0 - hole):
            deals.append(h + b)
    cls = indexer.index_many(np.array(deals, np.int64), 0)
    return np.bincount(cls, minlength=indexer.size(0)).astype(np.float64)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _ochs_chunk(t_hand, rf, hand_n, hole_k, t_hole, opp_label, K, S, N, lo, hi, out):
    """``out[c, j]``: HS of last-round class ``c`` against the opponent hands of cluster ``j``
    (0.5 where card removal leaves the cluster empty)."""
    deck = S * N
    hand = np.empty(hand_n, np.int64)
    work = np.empty(hand_n, np.int64)
    opp = np.empty(hole_k, np.int64)
    used = np.zeros(deck, np.bool_)
    rest = np.empty(deck, np.int64)
    wins = np.empty(K, np.float64)
    cnt = np.empty(K, np.float64)
    for c in range(lo, hi):
        iso_unindex(t_hand, c, rf, hand)
        me = rank_hand(hand, hand_n, S, N)
        used[:] = False
        for j in range(hand_n):
            used[hand[j]] = True
            work[j] = hand[j]
        nr = 0
        for x in range(deck):
            if not used[x]:
                rest[nr] = x
                nr += 1
        wins[:] = 0.0
        cnt[:] = 0.0
        for a in range(nr):
            lim_b = nr if hole_k == 2 else a + 1
            for b in range(a + 1 if hole_k == 2 else a, lim_b):
                opp[0] = rest[a]
                work[0] = rest[a]
                if hole_k == 2:
                    opp[1] = rest[b]
                    work[1] = rest[b]
                them = rank_hand(work, hand_n, S, N)
                lbl = opp_label[iso_index(t_hole, opp, 0)]
                cnt[lbl] += 1.0
                if me > them:
                    wins[lbl] += 1.0
                elif me == them:
                    wins[lbl] += 0.5
        for j in range(K):
            out[c, j] = wins[j] / cnt[j] if cnt[j] > 0 else 0.5


def ochs_features(
    game: GameDef, indexer: HandIndexer, hole_labels: np.ndarray, hole_indexer: HandIndexer, threads: int = 1
) -> np.ndarray:
    """float64 ``[size(R-1), K]``: OCHS of every last-round class; ``hole_labels`` int64 gives
    the opponent cluster of each class of ``hole_indexer`` (hole cards only)."""
    rf = game.num_rounds - 1
    n = indexer.size(rf)
    K = int(hole_labels.max()) + 1
    out = np.empty((n, K), np.float64)
    bounds = np.linspace(0, n, max(2, min(n, threads * 16) + 1)).astype(np.int64)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futs = [
            pool.submit(
                _ochs_chunk,
                indexer.tables,
                rf,
                indexer.hand_size(rf),
                game.num_hole_cards,
                hole_indexer.tables,
                hole_labels,
                K,
                game.num_suits,
                game.num_ranks,
                int(bounds[i]),
                int(bounds[i + 1]),
                out,
            )
            for i in range(len(bounds) - 1)
        ]
        for f in futs:
            f.result()
    return out


# ---------------------------------------------------------------------------------------------
# building


def check_feasible(game: GameDef, indexer: HandIndexer, buckets: tuple[int, ...]) -> None:
    """Raise ``AbstractionError`` when the clustered build is out of reach for ``game``."""
    if game.num_board_cards[0] != 0:
        raise AbstractionError(
            "clustered buckets need a first round without board cards (OCHS clusters "
            "the opponent's hole cards there)"
        )
    R = game.num_rounds
    entries = 0.0
    for r in range(R - 1):
        entries += indexer.size(r) * comb(game.deck_size - indexer.hand_size(r), game.num_board_cards[r + 1])
    if entries > MAX_TRANSITIONS:
        raise AbstractionError(
            f"clustered buckets for {game.name or 'this game'} need {entries:,.0f} transition entries "
            f"(limit {MAX_TRANSITIONS:,.0f}): use ehs/ehs2 for full-deck hold'em"
        )
    rf = R - 1
    ochs = indexer.size(rf) * comb(game.deck_size - indexer.hand_size(rf), game.num_hole_cards)
    if buckets[rf] < indexer.size(rf) and ochs > MAX_OCHS_WORK:
        raise AbstractionError(
            f"OCHS on the last round needs {ochs:,.0f} evaluations (limit {MAX_OCHS_WORK:,.0f})"
        )


def cluster_tables(
    game: GameDef,
    indexer: HandIndexer,
    buckets: tuple[int, ...],
    method: str,
    final_hs: np.ndarray,
    seed: int = 0,
    threads: int = 1,
    n_init: int = 3,
    log: Callable[[str], None] = print,
    ochs_clusters: int = OCHS_CLUSTERS,
    last_round: str = "hs",
) -> list[np.ndarray]:
    """Per round the uint16 bucket of every class (see the module doc).

    ``final_hs``: uint16 ``[size(R-1)]``, last-round hand strength x 65535 (from
    :func:`abstraction.buckets.build_buckets`). The generator of round ``r`` is spawned from
    ``SeedSequence(seed)``, so a round's buckets do not depend on the order rounds are built in.
    """
    if method not in METHODS:
        raise AbstractionError(f"unknown clustering method {method!r}: {', '.join(METHODS)}")
    check_feasible(game, indexer, buckets)
    R = game.num_rounds
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(R + 1)]
    T = [transitions(game, indexer, r) for r in range(R - 1)]
    P = []
    for t in T:
        rs = np.asarray(t.sum(1)).ravel()
        P.append(t.multiply(1.0 / rs[:, None]).tocsr())
    w = [preflop_weights(game, indexer)]
    for r in range(R - 1):
        w.append(np.asarray(T[r].T @ w[r]).ravel())
    # final-strength histograms, every round (for the opponent clusters and `distribution`)
    rf = R - 1
    bins = np.minimum((final_hs.astype(np.float64) / 65535.0 * HS_BINS).astype(np.int64), HS_BINS - 1)
    D = [None] * R
    D[rf] = np.zeros((indexer.size(rf), HS_BINS))
    D[rf][np.arange(indexer.size(rf)), bins] = 1.0
    for r in range(rf - 1, -1, -1):
        D[r] = np.asarray(P[r] @ D[r + 1])
    tables: list[np.ndarray | None] = [None] * R
    centers: list[np.ndarray | None] = [None] * R
    # the last round: OCHS
    if last_round not in ("ochs", "hs"):
        raise AbstractionError(f"unknown last-round clustering {last_round!r}: ochs or hs")
    if buckets[rf] == indexer.size(rf):
        tables[rf] = np.arange(indexer.size(rf), dtype=np.int64)
    elif last_round == "hs":  # equal-probability percentiles of hand strength; centres = mean HS
        hist = np.bincount(final_hs.astype(np.int64), weights=w[rf], minlength=HIST_BINS)
        th = percentile_thresholds(hist, buckets[rf])
        lab = np.zeros(indexer.size(rf), np.uint16)
        assign_buckets(final_hs.astype(np.float64), 1.0, th, lab)
        tables[rf] = lab.astype(np.int64)
        hs = final_hs.astype(np.float64) / 65535.0
        wsum = np.bincount(tables[rf], weights=w[rf], minlength=buckets[rf])
        centers[rf] = (
            np.bincount(tables[rf], weights=w[rf] * hs, minlength=buckets[rf]) / np.maximum(wsum, 1e-300)
        )[:, None]
        log(f"round {rf + 1}: {buckets[rf]} hand-strength percentile buckets")
    else:
        hole_ix = HandIndexer(game.num_suits, game.num_ranks, (game.num_hole_cards,))
        hole_hands = hole_ix.unindex_many(np.arange(hole_ix.size(0)), 0)
        hole_game_cls = indexer.index_many(hole_hands, 0)
        K = min(ochs_clusters, indexer.size(0))
        opp = kmeans(np.cumsum(D[0], 1) / HS_BINS, K, w[0], rng=rngs[R], metric="l1", n_init=n_init)
        hole_labels = opp.labels[hole_game_cls].astype(np.int64)
        feats = ochs_features(game, indexer, hole_labels, hole_ix, threads)
        km = kmeans(feats, buckets[rf], w[rf], rng=rngs[rf], metric="l2", n_init=n_init)
        tables[rf], centers[rf] = km.labels, km.centers
        log(f"round {rf + 1}: {buckets[rf]} OCHS clusters (K={K}), inertia {km.inertia / w[rf].sum():.4g}")
    ground = None  # ground distance between the next round's buckets (potential)
    line = None  # their positions instead, when they lie on a line (HS percentiles): exact EMD
    if method == "potential" and rf > 0:
        C = centers[rf]
        if C is not None:
            ground = np.sqrt(np.maximum(((C[:, None, :] - C[None, :, :]) ** 2).sum(2), 0.0))
            if C.shape[1] == 1:
                line = C[:, 0]
    for r in range(rf - 1, -1, -1):
        if buckets[r] == indexer.size(r):
            tables[r] = np.arange(indexer.size(r), dtype=np.int64)
            ground = None  # an earlier lossy round would need histograms over every class
            continue
        if method == "distribution":
            km = kmeans(
                np.cumsum(D[r], 1) / HS_BINS, buckets[r], w[r], rng=rngs[r], metric="l1", n_init=n_init
            )
            log(f"round {r + 1}: {buckets[r]} distribution clusters, mean EMD {km.inertia / w[r].sum():.4g}")
        else:
            if ground is None:
                raise AbstractionError(
                    f"potential-aware buckets: round {r + 2} is lossless, so round {r + 1}'s "
                    "histograms would span every class; make it lossy"
                )
            nb = buckets[r + 1]
            onehot = np.zeros((indexer.size(r + 1), nb))
            onehot[np.arange(indexer.size(r + 1)), tables[r + 1]] = 1.0
            H = np.asarray(P[r] @ onehot)
            if line is not None:  # 1-D ground: k-medians of gap-scaled CDFs minimize the exact EMD
                F = line_cdf_features(H, line)
                km = kmeans(F, buckets[r], w[r], rng=rngs[r], metric="l1", n_init=n_init)
                log(
                    f"round {r + 1}: {buckets[r]} potential-aware clusters (exact 1-D EMD), "
                    f"mean EMD {km.inertia / w[r].sum():.4g}"
                )
                ground = _distances(km.centers, km.centers, "l1")  # the EMD between the centres
                line = None
            else:
                km = kmeans(H, buckets[r], w[r], rng=rngs[r], metric="emd", ground=ground, n_init=n_init)
                exact = H.shape[0] * buckets[r] <= EMD_EXACT_MAX
                log(
                    f"round {r + 1}: {buckets[r]} potential-aware clusters ({'exact' if exact else 'greedy'} EMD), "
                    f"mean EMD {km.inertia / w[r].sum():.4g}"
                )
                C = km.centers
                ground = _distances(C, C, "emd", ground, exact=exact)
                ground = 0.5 * (ground + ground.T)
                np.fill_diagonal(ground, 0.0)
        tables[r] = km.labels
    return [t.astype(np.uint16) for t in tables]
