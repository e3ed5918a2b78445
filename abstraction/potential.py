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

**Pruning (exact).** The nearest-centre searches visit a fraction of the centres and return the
plain arg-min: :mod:`abstraction.potential_kernels` (the numba kernels of this build) says how.

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

import numpy as np

from abstraction.bucket_common import (
    AbstractionError,
    SampleSpec,
    card_structure,
    claim_partial,
    run_chunks,
    save_npz_atomic,
)
from abstraction.clustering import kmeans
from abstraction.isomorphism import HandIndexer
from abstraction.potential_kernels import (
    OCHS_BINS,
    assign_emd_chunk,
    assign_l2_chunk,
    centres_from,
    final_hs_hist_chunk,
    ground_of,
    l2_centres,
    river_assign_chunk,
    river_sample_chunk,
    round_assign_chunk,
    sample_hists_chunk,
    seed_update_emd,
)
from holdem.gamedef import GameDef
from mccfr_util.progress import progress_bar

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
        _pool_map(lambda lo, hi: assign_l2_chunk(X, C, cps, corder, u, lo, hi, new, dist), n, threads)
        changed = int((new != labels).sum())
        labels = new
        l2_centres(X, labels, C)
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
            lambda lo, hi: seed_update_emd(pidx, pm, nnz, EP, c, ec, ground, gorder, D, lo, hi), n, threads
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
            lambda lo, hi: assign_emd_chunk(
                pidx, pm, nnz, E_next, C, Ec, cps, corder, u, ground, gorder, lo, hi, new, dist
            ),
            n,
            threads,
        )
        changed = int((new != labels).sum())
        labels = new
        C, _ = centres_from(pidx, pm, nnz, labels, k, kn, C)
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
                    lambda lo, hi: river_sample_chunk(boards, nb, hk, hole_lab, K, S, N, lo, hi, rows, X),
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
                lambda lo, hi: river_assign_chunk(
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
                        lambda lo, hi: sample_hists_chunk(
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
                    lambda lo, hi: round_assign_chunk(
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
        ground_of(Cr, ground, gorder, g)
        ground = 0.5 * (g + g.T)
        np.fill_diagonal(ground, 0.0)
        E_next = Cr @ E_next
    log(f"potential-aware buckets {list(buckets)}: stages done in {time.perf_counter() - t0:.1f} s")
    return [np.asarray(t, np.uint16) for t in labels]


def _hist_part(boards, nb, holes, hole_cls, S, N, deck, n_cls):
    hist = np.zeros((n_cls, OCHS_BINS))
    final_hs_hist_chunk(boards, nb, holes, hole_cls, S, N, deck, hist)
    return hist
