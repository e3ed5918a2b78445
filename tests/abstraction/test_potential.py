"""Sampled potential-aware buckets (abstraction.potential and its abstraction.potential_kernels):
kernels against oracles, builds on small decks (valid, deterministic, resumable), and the refusals."""

import itertools

import numpy as np
import pytest

from abstraction.buckets import AbstractionError, SampleSpec, build_buckets
from abstraction.cards import TABLE, from_file
from abstraction.clustering import _emd_greedy, ochs_features
from abstraction.isomorphism import HandIndexer
from abstraction.potential import _proj
from abstraction.potential_kernels import assign_emd_chunk, assign_l2_chunk, board_ochs, emd_sparse
from abstraction.storage import read_abstraction
from holdem.gamedef import PRESETS, GameDef

# a 24-card three-round hold'em: preflop, a 3-card flop, a 1-card turn
SMALL = GameDef(
    "nolimit", 3, (2000, 2000), (100, 50), (0, 0, 0), (1, 0, 0), (255, 255, 255), 4, 6, 2, (0, 3, 1), "tiny"
)
SPEC = SampleSpec(opp_clusters=4, opp_boards=200, river_boards=60, sample=2000, max_iter=8, seed=5)
BUCKETS = (12, 10, 10)


def test_board_ochs_matches_the_direct_count():
    """OCHS of every hand on a final board (one sorted pass, inclusion-exclusion per cluster)
    equals clustering's direct enumeration of the opponent hands."""
    ix = HandIndexer.for_game(SMALL)
    hole_ix = HandIndexer(4, 6, (2,))
    rng = np.random.default_rng(0)
    hole_labels = rng.integers(0, 3, hole_ix.size(0)).astype(np.int64)
    K = 3
    ref = ochs_features(SMALL, ix, hole_labels, hole_ix)  # [size(2), K]
    holes_all = np.array(list(itertools.combinations(range(24), 2)), np.int64)
    lab = hole_labels[hole_ix.index_many(holes_all, 0)]
    hole_lab = np.zeros(24 * 24, np.int64)
    hole_lab[holes_all[:, 0] * 24 + holes_all[:, 1]] = lab
    hole_lab[holes_all[:, 1] * 24 + holes_all[:, 0]] = lab
    for _ in range(20):
        board = rng.choice(24, 4, replace=False).astype(np.int64)
        holes = np.array([h for h in holes_all if not set(h) & set(board)], np.int64)
        out = np.empty((len(holes), K))
        board_ochs(board, 4, holes, hole_lab, K, 4, 6, 24, out)
        cls = ix.index_many(np.concatenate([holes, np.repeat(board[None], len(holes), 0)], 1), 2)
        assert np.allclose(out, ref[cls], atol=1e-12)


def test_sparse_greedy_emd_and_pruned_nearest_centre_are_exact():
    rng = np.random.default_rng(1)
    kn, k, n, d = 12, 7, 300, 3
    E = rng.random((kn, d))
    ground = np.sqrt(((E[:, None] - E[None]) ** 2).sum(2))
    gorder = np.argsort(ground, axis=1, kind="stable").astype(np.int64)
    C = rng.random((k, kn)) ** 3
    C /= C.sum(1, keepdims=True)
    C[3] = C[1]  # a tie: the lower index wins
    width = 5
    pidx = np.zeros((n, width), np.int64)
    pm = np.zeros((n, width))
    nnz = rng.integers(1, width + 1, n).astype(np.int64)
    for i in range(n):
        pidx[i, : nnz[i]] = np.sort(rng.choice(kn, nnz[i], replace=False))
        m = rng.random(nnz[i])
        pm[i, : nnz[i]] = m / m.sum()
    brute = np.empty((n, k))
    for i in range(n):
        p = np.zeros(kn)
        p[pidx[i, : nnz[i]]] = pm[i, : nnz[i]]
        for j in range(k):
            brute[i, j] = _emd_greedy(p, C[j], ground, gorder)
            used, stamp = np.zeros(kn), np.zeros(kn, np.int64)
            assert (
                abs(emd_sparse(pidx[i], pm[i], nnz[i], C[j], ground, gorder, used, stamp, 1) - brute[i, j])
                < 1e-12
            )
            # stopped at a limit below the full cost: more than the limit; at or above it: the full cost
            full = brute[i, j]
            for limit in (0.0, full / 3, full * (1 - 1e-9), full, full * 2):
                used, stamp = np.zeros(kn), np.zeros(kn, np.int64)
                got = emd_sparse(pidx[i], pm[i], nnz[i], C[j], ground, gorder, used, stamp, 1, limit)
                assert got > limit if full > limit else abs(got - full) < 1e-12
    Ec = C @ E
    u, cps, corder = _proj(Ec)
    labels, dist = np.empty(n, np.int64), np.empty(n)
    assign_emd_chunk(pidx, pm, nnz, E, C, Ec, cps, corder, u, ground, gorder, 0, n, labels, dist)
    assert np.array_equal(labels, brute.argmin(1)) and np.allclose(dist, brute.min(1))
    assert not np.any(labels == 3)
    # the same search in squared L2
    X = rng.random((n, d))
    u, cps, corder = _proj(E)
    assign_l2_chunk(X, E, cps, corder, u, 0, n, labels, dist)
    full = ((X[:, None] - E[None]) ** 2).sum(2)
    assert np.array_equal(labels, full.argmin(1)) and np.allclose(dist, full.min(1))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("pot")
    build_buckets(SMALL, BUCKETS, "potential", d, progress=False, log=lambda s: None, sampled=True, spec=SPEC)
    return d


@pytest.mark.slow  # the build takes a minute on 2 cores (the refusals below run by default)
def test_sampled_build_is_valid_and_loads(built):
    header, tables = read_abstraction(built)
    ix = HandIndexer.for_game(SMALL)
    assert header["method"] == "potential" and header["buckets"] == list(BUCKETS)
    assert header["sampling"]["sample"] == SPEC.sample
    for r, b in enumerate(BUCKETS):
        assert len(tables[r]) == ix.size(r) and tables[r].max() < b
        assert len(np.unique(tables[r])) == b  # every bucket is used
    ab = from_file(SMALL, built)
    assert ab.kind == TABLE and ab.num_buckets == BUCKETS
    assert not (built / "partial").exists()
    # isomorphic hands share their bucket by construction; the pairs of aces are together preflop
    hole = HandIndexer(4, 6, (2,))
    aces = [ix.index(np.array([20 + a, 20 + b]), 0) for a, b in itertools.combinations(range(4), 2)]
    assert len(set(tables[0][aces])) == 1 and hole.size(0) == ix.size(0)


@pytest.mark.slow  # the build takes a minute on 2 cores (the refusals below run by default)
def test_sampled_build_resumes_and_is_deterministic(tmp_path, built, monkeypatch):
    """Interrupted after the last round's stage: the rerun reuses it and gives the same tables."""
    import abstraction.potential as pot

    d = tmp_path / "b"
    calls = []

    def boom(*a):
        calls.append(1)
        raise RuntimeError("interrupted")

    with monkeypatch.context() as m:
        m.setattr(pot, "round_assign_chunk", boom)
        with pytest.raises(RuntimeError, match="interrupted"):
            build_buckets(
                SMALL, BUCKETS, "potential", d, progress=False, log=lambda s: None, sampled=True, spec=SPEC
            )
    assert calls and not (d / "abstraction.bin").exists()
    with pytest.raises(AbstractionError, match="no abstraction file"):
        from_file(SMALL, d)  # a partial build is never loaded
    assert (d / "partial" / "round2_labels.npz").exists() and (d / "partial" / "round1_centres.npz").exists()
    lines = []
    build_buckets(SMALL, BUCKETS, "potential", d, progress=False, log=lines.append, sampled=True, spec=SPEC)
    assert any("round2_labels.npz reused" in s for s in lines)
    assert read_abstraction(d)[0]["hash"] == read_abstraction(built)[0]["hash"]


@pytest.mark.slow  # the build takes a minute on 2 cores (the refusals below run by default)
def test_sampled_build_is_the_one_of_before_the_speedups(built):
    """Golden digest: the early-stopping EMD and the prefetched histograms change no decision, so
    this build's tables are exactly those of the code before them (commit 2654eb9)."""
    assert read_abstraction(built)[0]["hash"] == "c660d2d9943dcb4f"


def test_partial_directory_of_another_request_or_damaged_is_refused(tmp_path):
    d = tmp_path / "p"
    (d / "partial").mkdir(parents=True)
    (d / "partial" / "request.json").write_text('{"buckets": [1, 2, 3]}')
    with pytest.raises(AbstractionError, match="partial build of another request"):
        build_buckets(SMALL, BUCKETS, "potential", d, progress=False, sampled=True, spec=SPEC)
    with pytest.raises(AbstractionError, match="partial build of another request"):
        build_buckets(SMALL, BUCKETS, "ehs2", d, progress=False)
    (d / "partial" / "request.json").unlink()
    (d / "partial" / "round2.npz").write_bytes(b"junk")
    with pytest.raises(AbstractionError, match="stage files of an unknown request"):
        build_buckets(SMALL, BUCKETS, "potential", d, progress=False, sampled=True, spec=SPEC)
    # a damaged stage file of this request: a clear error, not a wrong abstraction
    e = tmp_path / "e"
    import dataclasses

    from abstraction.buckets import card_structure, claim_partial

    claim_partial(
        e / "partial",
        {
            "cards": card_structure(SMALL),
            "buckets": list(BUCKETS),
            "method": "potential-sampled",
            "spec": dataclasses.asdict(SPEC),
        },
    )
    (e / "partial" / "opponents.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(AbstractionError, match="damaged stage file"):
        build_buckets(SMALL, BUCKETS, "potential", e, progress=False, sampled=True, spec=SPEC)


def test_sampled_build_refusals(tmp_path):
    # a round with as many buckets as classes cannot be a histogram target
    ix = HandIndexer.for_game(SMALL)
    with pytest.raises(AbstractionError, match="fewer buckets than its"):
        build_buckets(
            SMALL, (12, ix.size(1), 10), "potential", tmp_path / "a", progress=False, sampled=True, spec=SPEC
        )
    with pytest.raises(AbstractionError, match="sample points for"):
        build_buckets(
            SMALL,
            BUCKETS,
            "potential",
            tmp_path / "b",
            progress=False,
            sampled=True,
            spec=SampleSpec(opp_clusters=2, opp_boards=20, river_boards=60, sample=5, max_iter=2),
        )
    # recipes are for 52-card hold'em; unknown names are named
    from abstraction.buckets import ensure_recipe

    with pytest.raises(AbstractionError, match="recipe 'medium' is for 52-card hold'em"):
        ensure_recipe(PRESETS["leduc"], "medium", progress=False)
    with pytest.raises(AbstractionError, match="unknown abstraction recipe 'huge'"):
        ensure_recipe(PRESETS["hunl"], "huge", progress=False)
