"""Benchmark abstraction.isomorphism on hold'em: table build, memory, index throughput.

Usage: python scripts/benchmarks/bench_isomorphism.py [--hands N] [--repeats K] [--seed S]

(1) Build time and table memory of ``HandIndexer(4, 13, (2, 3, 1, 1))`` for both groupings
    (board as one set per round, the default; and ``perfect_recall=True``), after a warm-up build.
(2) Throughput, one thread: ``iso_index`` called from a numba loop over N pre-generated random
    hands (uint8 cards) per round, best of K passes by wall clock and by the thread's CPU time;
    likewise ``iso_unindex`` over N / 4 random indices.
(3) The peer, measured in the same run: a brute-force canonicalisation in numba, the minimum over
    all 24 suit permutations of the hand's encoding (each group sorted). It yields a canonical
    key, not a dense index, so it is a lower bound on the work of a naive indexer.
Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from itertools import permutations

import numba
import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from abstraction.isomorphism import HandIndexer, iso_index, iso_unindex

PERMS = np.array(list(permutations(range(4))), np.int64)  # [24, 4]


@numba.njit(cache=True)
def _index_loop(tables, hands, round_, repeats):
    """Index every row ``repeats`` times; the checksum keeps the work from being elided."""
    total = np.int64(0)
    for _ in range(repeats):
        for i in range(hands.shape[0]):
            total += iso_index(tables, hands[i], round_)
    return total


@numba.njit(cache=True)
def _unindex_loop(tables, indices, round_, out):
    total = np.int64(0)
    for i in range(indices.shape[0]):
        iso_unindex(tables, indices[i], round_, out)
        total += out[0]
    return total


@numba.njit(cache=True)
def _brute_loop(hands, g_lo, g_hi, perms, repeats):
    """Minimum over suit permutations of the hand encoded base 52 with each group sorted."""
    total = np.int64(0)
    n = hands.shape[1]
    buf = np.empty(n, np.int64)
    for _ in range(repeats):
        for i in range(hands.shape[0]):
            best = np.int64(1) << 62
            for p in range(perms.shape[0]):
                for j in range(n):
                    c = hands[i, j]
                    buf[j] = (c >> 2) * 4 + perms[p, c & 3]
                for g in range(g_lo.shape[0]):  # insertion sort inside the group
                    for a in range(g_lo[g] + 1, g_hi[g]):
                        v = buf[a]
                        b = a
                        while b > g_lo[g] and buf[b - 1] > v:
                            buf[b] = buf[b - 1]
                            b -= 1
                        buf[b] = v
                key = np.int64(0)
                for j in range(n):
                    key = key * 52 + buf[j]
                best = min(best, key)
            total += best
    return total


def random_hands(rng: np.random.Generator, count: int, n: int, chunk: int = 1_000_000) -> np.ndarray:
    out = np.empty((count, n), np.uint8)
    for lo in range(0, count, chunk):
        hi = min(count, lo + chunk)
        out[lo:hi] = np.argsort(rng.random((hi - lo, 52)), axis=1)[:, :n]
    return out


def best_rate(fn, args: tuple, count: int, repeats: int) -> tuple[float, float]:
    """Items per second of ``fn(*args)``: best of ``repeats`` passes by wall clock and by the
    thread's CPU time (the latter is steadier on a shared machine)."""
    fn(*args)  # compile / warm
    wall = cpu = float("inf")
    for _ in range(repeats):
        t, c = time.perf_counter(), time.thread_time()
        fn(*args)
        wall = min(wall, time.perf_counter() - t)
        cpu = min(cpu, time.thread_time() - c)
    return count / wall, count / cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hands", type=int, default=2_000_000)
    ap.add_argument("--peer-hands", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)

    result: dict = {"bench": "hand_isomorphism", "hands": args.hands, "peer_hands": args.peer_hands,
                    "repeats": args.repeats, "seed": args.seed, "modes": {}}  # fmt: skip
    HandIndexer(4, 13, (2, 3, 1, 1))  # warm-up: imports and first-use costs out of the timing
    hands7 = random_hands(rng, args.hands, 7)
    for mode, pr in (("board_set", False), ("perfect_recall", True)):
        t = time.perf_counter()
        ix = HandIndexer(4, 13, (2, 3, 1, 1), perfect_recall=pr)
        build_s = time.perf_counter() - t
        mem = ix.tables.nbytes
        rows = []
        for r in range(4):
            n = ix.hand_size(r)
            hands = np.ascontiguousarray(hands7[:, :n])
            rate, rate_cpu = best_rate(_index_loop, (ix.tables, hands, r, 1), len(hands), args.repeats)
            idx = rng.integers(0, ix.size(r), args.hands // 4)
            out = np.empty(n, np.int64)
            urate, _ = best_rate(_unindex_loop, (ix.tables, idx, r, out), len(idx), args.repeats)
            peer = np.ascontiguousarray(hands[: args.peer_hands])
            sizes = np.array(ix.round_groups[r], np.int64)
            hi = np.cumsum(sizes)
            lo = hi - sizes
            brate, brate_cpu = best_rate(_brute_loop, (peer, lo, hi, PERMS, 1), len(peer), args.repeats)
            rows.append({"round": r, "size": ix.size(r), "index_per_s": round(rate),
                         "index_per_cpu_s": round(rate_cpu), "unindex_per_s": round(urate),
                         "brute_canonical_per_s": round(brate),
                         "brute_canonical_per_cpu_s": round(brate_cpu)})  # fmt: skip
        result["modes"][mode] = {"build_s": round(build_s, 3), "table_bytes": int(mem), "rounds": rows}
        print(f"\n{mode}: build {build_s:.3f} s, tables {mem:,} bytes")
        print(f"{'round':>5} {'classes':>15} {'iso_index/s':>12} {'(cpu)':>12} {'unindex/s':>11} "
              f"{'brute min/s':>12} {'(cpu)':>11}")  # fmt: skip
        for row in rows:
            print(f"{row['round']:>5} {row['size']:>15,} {row['index_per_s']:>12,} {row['index_per_cpu_s']:>12,} "
                  f"{row['unindex_per_s']:>11,} {row['brute_canonical_per_s']:>12,} "
                  f"{row['brute_canonical_per_cpu_s']:>11,}")  # fmt: skip
    result["loadavg_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
