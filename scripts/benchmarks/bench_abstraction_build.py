"""Per-stage CPU rates of the sampled potential-aware build (abstraction/potential.py) at 100 vs 200
centres, on subsets, single thread (time.process_time), from the stage files a `medium` build keeps
in DIR/partial/ until it ends (run it while the build is in the flop or turn stage):

    python scripts/benchmarks/bench_abstraction_build.py DIR/partial
"""

import itertools
import json
import os
import sys
import time

import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from abstraction import potential as P
from abstraction import potential_kernels as PK
from abstraction.isomorphism import HandIndexer
from holdem.gamedef import load_gamedef

g = load_gamedef("hunl100")
ix = HandIndexer.for_game(g)
part = sys.argv[1].rstrip("/") + "/"  # a medium build's partial/ (stages kept until the build ends)
opp = np.load(part + "opponents.npz")["labels"]
riv = np.load(part + "round3_labels.npz")
lab3, C3 = riv["labels"], riv["centres"]
S, N, deck, hk = 4, 13, 52, 2
hole_ix = HandIndexer(S, N, (hk,))
holes_all = np.array(list(itertools.combinations(range(deck), hk)), np.int64)
hole_lab = np.zeros(deck * deck, np.int64)
lr = opp[hole_ix.index_many(holes_all, 0)]
hole_lab[holes_all[:, 0] * deck + holes_all[:, 1]] = lr
hole_lab[holes_all[:, 1] * deck + holes_all[:, 0]] = lr
K = 8
rng = np.random.default_rng(0)
bi = HandIndexer(S, N, (5,))
out = np.zeros(ix.size(3), np.uint16)
res = {"load_before": os.getloadavg()}
# river: 100 centres (medium's) vs 200 (k-means++ seeds of an OCHS sample)
boards = P._random_hands(rng, 300, deck, 5)
X = np.empty((300 * 1081, K))
rows = np.arange(300, dtype=np.int64) * 1081
PK.river_sample_chunk(boards, 5, hk, hole_lab, K, S, N, 0, 300, rows, X)


def seeds(X, k):
    C = np.empty((k, X.shape[1]))
    C[0] = X[0]
    D = ((X - C[0]) ** 2).sum(1)
    for j in range(1, k):
        C[j] = X[rng.choice(len(X), p=D / D.sum())]
        D = np.minimum(D, ((X - C[j]) ** 2).sum(1))
    return C


C200 = seeds(X, 200)
lo, hi = 50_000, 50_600
for name, C in (("river k=100", C3), ("river k=200", C200), ("river k=100 again", C3)):
    u, cps, corder = P._proj(C)
    PK.river_assign_chunk(
        bi.tables, ix.tables, 3, 5, hk, hole_lab, K, S, N, C, cps, corder, u, lo, lo + 5, out
    )
    t = time.process_time()
    PK.river_assign_chunk(bi.tables, ix.tables, 3, 5, hk, hole_lab, K, S, N, C, cps, corder, u, lo, hi, out)
    res[name] = (hi - lo) / (time.process_time() - t)
    print(name, f"{res[name]:.0f} canonical boards per CPU second", flush=True)
# turn: histograms over the 100 river buckets; 100 vs 200 turn centres (k-means++ seeds from 20k sample hands)
E = C3
ground = np.sqrt(np.maximum(((C3[:, None] - C3[None]) ** 2).sum(2), 0))
gorder = np.argsort(ground, axis=1, kind="stable").astype(np.int64)
n = 20000
hands = P._random_hands(rng, n, deck, 6)
pidx = np.zeros((n, 46), np.int64)
pm = np.zeros((n, 46))
nnz = np.zeros(n, np.int64)
t = time.process_time()
PK.sample_hists_chunk(ix.tables, 2, hands, 6, 1, deck, lab3, 100, 0, n, pidx, pm, nnz)
res["turn sample histograms"] = n / (time.process_time() - t)
print("turn sample histograms", f"{res['turn sample histograms']:.0f} hands per CPU second", flush=True)
Cm = np.load(part + "round2_centres.npz")["centres"]


def seeds_emd(k):
    EP = np.stack([pm[i, : nnz[i]] @ E[pidx[i, : nnz[i]]] for i in range(n)])
    C = np.zeros((k, 100))
    D = np.full(n, np.inf)
    for j in range(k):
        i = rng.integers(n) if j == 0 else rng.choice(n, p=D / D.sum())
        C[j, pidx[i, : nnz[i]]] = pm[i, : nnz[i]]
        PK.seed_update_emd(pidx, pm, nnz, EP, C[j], C[j] @ E, ground, gorder, D)
    return C


C2_200 = seeds_emd(200)
lab2 = np.zeros(ix.size(2), np.uint16)
lo, hi = 3_000_000, 3_020_000
for name, C in (("turn assign k=100", Cm), ("turn assign k=200", C2_200), ("turn assign k=100 again", Cm)):
    Ec = C @ E
    u, cps, corder = P._proj(Ec)
    PK.round_assign_chunk(
        ix.tables, 2, 6, 1, deck, lab3, E, C, Ec, cps, corder, u, ground, gorder, lo, lo + 10, lab2
    )
    t = time.process_time()
    PK.round_assign_chunk(
        ix.tables, 2, 6, 1, deck, lab3, E, C, Ec, cps, corder, u, ground, gorder, lo, hi, lab2
    )
    res[name] = (hi - lo) / (time.process_time() - t)
    print(name, f"{res[name]:.0f} classes per CPU second", flush=True)
    # one Lloyd assignment over the 20k sample
    labels = np.empty(n, np.int64)
    dist = np.empty(n)
    t = time.process_time()
    PK.assign_emd_chunk(pidx, pm, nnz, E, C, Ec, cps, corder, u, ground, gorder, 0, n, labels, dist)
    res[name + " (Lloyd step, sample)"] = n / (time.process_time() - t)
    print(name, "Lloyd step", f"{res[name + ' (Lloyd step, sample)']:.0f} points per CPU second", flush=True)
res["load_after"] = os.getloadavg()
print(json.dumps(res))
