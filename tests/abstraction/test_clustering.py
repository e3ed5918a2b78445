"""Clustered buckets: EMD values, k-means on hand-built data, and distribution/potential builds."""

import numpy as np
import pytest

from abstraction.buckets import AbstractionError, build_buckets
from abstraction.cards import TABLE, from_file
from abstraction.clustering import (
    _distances,
    cluster_tables,
    emd,
    emd_1d,
    emd_greedy,
    kmeans,
    preflop_weights,
    transitions,
)
from abstraction.isomorphism import HandIndexer
from abstraction.storage import read_abstraction
from holdem.gamedef import PRESETS, GameDef

# a 20-card two-round limit hold'em: preflop, a 3-card flop (25 and 7,760 classes)
TWO = GameDef("limit", 2, (2000, 2000), (10, 5), (10, 20), (1, 0), (2, 2), 4, 5, 2, (0, 3), "lim2r5")


# -- EMD -------------------------------------------------------------------------------------


def test_emd_known_values():
    line = np.abs(np.subtract.outer(np.arange(4.0), np.arange(4.0)))
    p = np.array([1.0, 0, 0, 0])
    q = np.array([0, 0, 0, 1.0])
    assert emd_1d(p, q) == pytest.approx(3.0)
    assert emd(p, q, line) == pytest.approx(3.0)
    a = np.array([0.5, 0.5, 0, 0])
    b = np.array([0, 0, 0.5, 0.5])
    assert emd_1d(a, b) == pytest.approx(2.0) and emd(a, b, line) == pytest.approx(2.0)
    # in 1-D the LP and the CDF formula agree; the greedy transport is an upper bound, exact here
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, y = rng.random(6), rng.random(6)
        g6 = np.abs(np.subtract.outer(np.arange(6.0), np.arange(6.0)))
        assert emd(x, y, g6) == pytest.approx(emd_1d(x, y), abs=1e-7)
        assert emd_greedy(x, y, g6) >= emd(x, y, g6) - 1e-9
        assert emd(x, x, g6) == pytest.approx(0.0, abs=1e-9) and emd_greedy(x, x, g6) == pytest.approx(0.0)
    # a non-line ground distance: mass moves to the cheap bin
    ground = np.array([[0.0, 1.0, 5.0], [1.0, 0.0, 5.0], [5.0, 5.0, 0.0]])
    assert emd([1, 0, 0], [0.5, 0, 0.5], ground) == pytest.approx(2.5)
    assert emd([1, 1, 0], [0, 1, 1], ground) == pytest.approx(2.5)


# -- k-means ---------------------------------------------------------------------------------


def blobs(rng, centres, n=40, scale=0.05):
    X = np.concatenate([c + scale * rng.standard_normal((n, len(c))) for c in centres])
    return X, np.repeat(np.arange(len(centres)), n)


def same_partition(a, b):
    return all(len(set(b[a == v])) == 1 for v in np.unique(a)) and len(np.unique(a)) == len(np.unique(b))


@pytest.mark.parametrize("metric", ["l2", "l1"])
def test_kmeans_finds_separable_clusters(metric):
    rng = np.random.default_rng(1)
    X, truth = blobs(rng, [np.array([0.0, 0.0]), np.array([3.0, 0.0]), np.array([0.0, 3.0])])
    km = kmeans(X, 3, rng=np.random.default_rng(7), metric=metric, n_init=3)
    assert same_partition(km.labels, truth)


def test_kmeans_emd_on_histograms_and_weights():
    rng = np.random.default_rng(2)
    ground = np.abs(np.subtract.outer(np.arange(5.0), np.arange(5.0)))
    lo = rng.dirichlet([8, 4, 1, 0.2, 0.2], 30)
    hi = rng.dirichlet([0.2, 0.2, 1, 4, 8], 30)
    X = np.concatenate([lo, hi])
    truth = np.repeat([0, 1], 30)
    for exact in (True, False):
        km = kmeans(X, 2, rng=np.random.default_rng(3), metric="emd", ground=ground, exact=exact)
        assert same_partition(km.labels, truth)
    # a heavy point pulls its centre: with one cluster the weighted mean is the heavy point
    w = np.ones(60)
    w[0] = 1e9
    km = kmeans(X, 1, w, rng=np.random.default_rng(3), metric="l2")
    assert np.allclose(km.centers[0], X[0], atol=1e-6)


def test_kmeans_is_deterministic_and_never_splits_equal_points():
    rng = np.random.default_rng(4)
    base = rng.random((15, 3))
    X = base[rng.integers(0, 15, 200)]  # 15 distinct points, many repeats
    a = kmeans(X, 6, rng=np.random.default_rng(5), n_init=2)
    b = kmeans(X, 6, rng=np.random.default_rng(5), n_init=2)
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.centers, b.centers)
    for v in range(15):
        rows = np.flatnonzero(np.all(X == base[v], 1))
        if len(rows):
            assert len(set(a.labels[rows])) == 1
    # as many clusters as distinct points: k-means++ seeds every distinct point, nothing merges
    distinct = len(np.unique(X, axis=0))
    full = kmeans(X, distinct, rng=np.random.default_rng(5))
    assert full.inertia == pytest.approx(0.0, abs=1e-12)
    assert len(np.unique(full.labels)) == distinct
    # more clusters fit no worse (best of several restarts)
    inertias = [kmeans(X, k, rng=np.random.default_rng(6), n_init=4).inertia for k in (2, 4, 8)]
    assert inertias[0] >= inertias[1] >= inertias[2]


def test_kmeans_bad_input():
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match="k must be in 1..3"):
        kmeans(X, 4, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown k-means metric 'cosine'"):
        kmeans(X, 2, rng=np.random.default_rng(0), metric="cosine")
    with pytest.raises(ValueError, match="ground distance"):
        kmeans(X + 1, 2, rng=np.random.default_rng(0), metric="emd")


# -- features and builds ---------------------------------------------------------------------


def test_transitions_and_multiplicities():
    ix = HandIndexer.for_game(TWO)
    T = transitions(TWO, ix, 0)
    assert T.shape == (ix.size(0), ix.size(1))
    assert np.allclose(np.asarray(T.sum(1)).ravel(), 816)  # C(18, 3) flops per hole hand
    w0 = preflop_weights(TWO, ix)
    assert w0.sum() == 190  # C(20, 2)
    w1 = np.asarray(T.T @ w0).ravel()
    assert w1.sum() == 190 * 816 and np.all(w1 > 0)  # every flop class is reached


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = {}
    for m in ("distribution", "potential"):
        for nf in (6, 24):
            d = tmp_path_factory.mktemp(f"{m}{nf}")
            # distribution with OCHS on the last round, potential with the default (HS percentiles)
            build_buckets(
                TWO,
                (4, nf),
                m,
                d,
                progress=False,
                log=lambda s: None,
                seed=3,
                keep_stats=True,
                **({"last_round": "ochs"} if m == "distribution" else {}),
            )
            out[m, nf] = d
    return out


@pytest.mark.parametrize("method", ["distribution", "potential"])
def test_clustered_buckets_are_valid_and_load(built, method):
    ix = HandIndexer.for_game(TWO)
    for nf in (6, 24):
        header, tables = read_abstraction(built[method, nf])
        assert header["method"] == method and header["buckets"] == [4, nf]
        for r, b in enumerate((4, nf)):
            assert len(tables[r]) == ix.size(r) and tables[r].max() < b
            if method == "potential" and r == 1:  # HS percentiles: buckets ordered by hand strength
                hs = np.load(built[method, nf] / "stats" / "round1.npz")["hs"]
                assert np.all(np.diff(tables[r][np.argsort(hs, kind="stable")].astype(int)) >= 0)
                assert len(np.unique(tables[r])) >= b - 3  # ties of HS may leave a percentile empty
            else:
                assert len(np.unique(tables[r])) >= b - 1  # the buckets are used
        ab = from_file(TWO, built[method, nf])
        assert ab.kind == TABLE and ab.num_buckets == (4, nf)
    # more flop buckets refine the fit: fewer flop hands share a bucket with a different OCHS bucket
    _, t6 = read_abstraction(built[method, 6])
    _, t24 = read_abstraction(built[method, 24])
    assert len(np.unique(t24[1])) > len(np.unique(t6[1]))


def test_distribution_never_merges_more_with_more_buckets(built):
    """Preflop hands with equal final-strength histograms share a bucket, and the preflop fit
    (mean EMD to the bucket's median CDF) is no worse with more buckets."""
    import abstraction.clustering as cl

    ix = HandIndexer.for_game(TWO)
    hs = np.load(built["distribution", 6] / "stats" / "round1.npz")["hs"]
    logs = {}
    for b in (2, 4, 8):
        lines = []
        t = cl.cluster_tables(TWO, ix, (b, 6), "distribution", hs, seed=1, log=lines.append)
        logs[b] = float(lines[-1].rsplit(" ", 1)[1])
        assert t[0].max() < b
    assert logs[2] >= logs[4] >= logs[8]


def test_seed_determinism(tmp_path, built):
    d = tmp_path / "again"
    build_buckets(TWO, (4, 6), "potential", d, progress=False, log=lambda s: None, seed=3)
    assert read_abstraction(d)[0]["hash"] == read_abstraction(built["potential", 6])[0]["hash"]


def test_clustered_errors(tmp_path):
    with pytest.raises(AbstractionError, match="unknown bucketing method 'kmeans'"):
        build_buckets(TWO, (4, 6), "kmeans", tmp_path, progress=False)
    ix = HandIndexer.for_game(TWO)
    with pytest.raises(AbstractionError, match="unknown clustering method 'ehs'"):
        cluster_tables(TWO, ix, (4, 6), "ehs", np.zeros(ix.size(1), np.uint16))
    with pytest.raises(AbstractionError, match="transition entries"):
        build_buckets(PRESETS["hulhe"], (169, 50, 50, 50), "distribution", tmp_path, progress=False)


def test_distances_shapes():
    X = np.random.default_rng(0).random((5, 3))
    C = X[:2]
    assert _distances(X, C, "l2").shape == (5, 2)
    assert np.allclose(_distances(X, C, "l1")[:2].diagonal(), 0)


def test_line_cdf_features_give_the_exact_emd():
    """On a 1-D ground (bins at arbitrary positions, in any order) the L1 distance of the
    gap-scaled CDF features equals the transport LP's EMD."""
    from abstraction.clustering import line_cdf_features

    rng = np.random.default_rng(5)
    for _ in range(20):
        pos = rng.random(7)
        H = rng.random((2, 7)) * (rng.random((2, 7)) < 0.7) + 1e-3
        H /= H.sum(1, keepdims=True)
        F = line_cdf_features(H, pos)
        ground = np.abs(np.subtract.outer(pos, pos))
        assert np.abs(F[0] - F[1]).sum() == pytest.approx(emd(H[0], H[1], ground), abs=1e-9)
        assert emd_greedy(H[0], H[1], ground) >= np.abs(F[0] - F[1]).sum() - 1e-9


def test_potential_over_hs_percentiles_uses_the_exact_emd(built):
    """Potential-aware buckets over hand-strength percentiles: the log names the exact 1-D EMD,
    and the fit (mean EMD to the centres) beats the greedy transport's clustering when both are
    scored exactly."""
    import abstraction.clustering as cl

    ix = HandIndexer.for_game(TWO)
    hs = np.load(built["potential", 6] / "stats" / "round1.npz")["hs"]
    lines = []
    t = cl.cluster_tables(TWO, ix, (4, 6), "potential", hs, seed=1, log=lines.append)
    assert "exact 1-D EMD" in lines[-1]
    # score both preflop partitions by the exact EMD of each class to its cluster's best centre
    flop = t[1].astype(np.int64)
    T = cl.transitions(TWO, ix, 0)
    H = np.asarray((T.multiply(1.0 / np.asarray(T.sum(1))).tocsr()) @ np.eye(6)[flop])
    hsf = hs.astype(np.float64) / 65535.0
    w1 = np.asarray(T.T @ cl.preflop_weights(TWO, ix)).ravel()
    pos = np.bincount(flop, weights=w1 * hsf, minlength=6) / np.maximum(
        np.bincount(flop, weights=w1, minlength=6), 1e-300
    )
    F = cl.line_cdf_features(H, pos)
    w0 = cl.preflop_weights(TWO, ix)

    def cost(labels):
        tot = 0.0
        for j in np.unique(labels):
            m = labels == j
            c = cl._weighted_median(F[m], w0[m])
            tot += float((w0[m] * np.abs(F[m] - c).sum(1)).sum())
        return tot

    greedy = cl.kmeans(
        H,
        4,
        w0,
        rng=np.random.default_rng(1),
        metric="emd",
        ground=np.abs(np.subtract.outer(pos, pos)),
        exact=False,
        n_init=3,
    )
    assert cost(t[0].astype(np.int64)) <= cost(greedy.labels) + 1e-12
