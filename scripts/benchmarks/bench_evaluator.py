"""Benchmark holdem.evaluator: agreement with eval7/phevaluator and single-thread throughput.

Usage: python scripts/benchmarks/bench_evaluator.py [--agree N] [--speed N] [--peer N] [--seed S]

(1) Agreement on N random 7-card hands of the 52-card deck: every hand's dense class index (its
    rank among the distinct values seen) must be the same under our values and the peer's, and
    the signs of N random pairwise comparisons must agree; mismatches are counted.
(2) Throughput: our rank_hand in a numba loop over pre-generated hands (one thread, best of
    --repeats passes), beside the peers' Python-level calls over the same hands (eval7.evaluate,
    phevaluator.evaluate_cards; neither offers a vectorized batch call).
Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time

import numba
import numpy as np
from harness import machine_row

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from holdem.cards import card_name
from holdem.evaluator import rank_hand, rank_many


def random_hands(rng: np.random.Generator, count: int, n: int = 7, chunk: int = 1_000_000) -> np.ndarray:
    """uint8[count, n]: n distinct cards of the 52-card deck per row."""
    out = np.empty((count, n), np.uint8)
    for lo in range(0, count, chunk):
        hi = min(count, lo + chunk)
        out[lo:hi] = np.argsort(rng.random((hi - lo, 52)), axis=1)[:, :n]
    return out


@numba.njit(cache=True)
def _rank_loop(hands, repeats):
    """Rank every row `repeats` times; returns a checksum so the work cannot be elided."""
    total = np.int64(0)
    rows, n = hands.shape
    for _ in range(repeats):
        for i in range(rows):
            total += rank_hand(hands[i], n, 4, 13)
    return total


def agreement(ours: np.ndarray, theirs: np.ndarray, rng: np.random.Generator) -> dict:
    _, dense_ours = np.unique(ours, return_inverse=True)
    _, dense_theirs = np.unique(theirs, return_inverse=True)
    i = rng.integers(0, len(ours), len(ours))
    j = rng.integers(0, len(ours), len(ours))
    return {
        "hands": int(len(ours)),
        "classes": int(dense_ours.max() + 1),
        "class_mismatches": int(np.count_nonzero(dense_ours != dense_theirs)),
        "pairs": int(len(ours)),
        "pair_sign_mismatches": int(
            np.count_nonzero(np.sign(ours[i] - ours[j]) != np.sign(theirs[i] - theirs[j]))
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agree", type=int, default=1_000_000, help="hands for the agreement check")
    ap.add_argument("--speed", type=int, default=5_000_000, help="hands for our throughput")
    ap.add_argument("--peer", type=int, default=300_000, help="hands for each peer's throughput")
    ap.add_argument("--repeats", type=int, default=7, help="timed passes over our hands; best reported")
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)

    import eval7
    import phevaluator

    e7_deck = [eval7.Card(card_name(c, 4)) for c in range(52)]

    # (1) agreement
    hands = random_hands(rng, args.agree)
    ours = rank_many(hands.astype(np.int64), 4, 13)
    rows = hands.tolist()
    e7 = np.fromiter((eval7.evaluate([e7_deck[c] for c in r]) for r in rows), np.int64, len(rows))
    ph = -np.fromiter((phevaluator.evaluate_cards(*r) for r in rows), np.int64, len(rows))  # lower = better
    agree = {"eval7": agreement(ours, e7, rng), "phevaluator": agreement(ours, ph, rng)}

    # (2) throughput, one thread
    speed_hands = random_hands(rng, args.speed)
    _rank_loop(speed_hands[:10], 1)  # compile
    best = float("inf")
    for _ in range(args.repeats):  # best of: the machine may be shared
        t = time.perf_counter()
        _rank_loop(speed_hands, 1)
        best = min(best, time.perf_counter() - t)
    ours_rate = args.speed / best

    peer_rows = speed_hands[: args.peer].tolist()
    peer_cards = [[e7_deck[c] for c in r] for r in peer_rows]
    t = time.perf_counter()
    for cs in peer_cards:
        eval7.evaluate(cs)
    e7_rate = len(peer_cards) / (time.perf_counter() - t)
    t = time.perf_counter()
    for r in peer_rows:
        phevaluator.evaluate_cards(*r)
    ph_rate = len(peer_rows) / (time.perf_counter() - t)

    row = machine_row()
    print(f"{row['machine']}; numba {row['numba']}, numpy {row['numpy']}; load {row['load_average'][0]:.2f}")
    print("\nAgreement on random 7-card hands (52-card deck)")
    print(f"{'peer':<12} {'hands':>10} {'classes':>8} {'class mism.':>12} {'pairs':>10} {'pair mism.':>11}")
    for name, a in agree.items():
        print(
            f"{name:<12} {a['hands']:>10,} {a['classes']:>8,} {a['class_mismatches']:>12} "
            f"{a['pairs']:>10,} {a['pair_sign_mismatches']:>11}"
        )
    print("\nThroughput, 7-card hands, one thread")
    print(f"{'evaluator':<44} {'hands':>10} {'hands/s':>14}")
    print(f"{'holdem.evaluator.rank_hand (numba loop)':<44} {args.speed:>10,} {ours_rate:>14,.0f}")
    print(f"{'eval7.evaluate (Python loop, Card lists)':<44} {len(peer_cards):>10,} {e7_rate:>14,.0f}")
    print(f"{'phevaluator.evaluate_cards (Python loop)':<44} {len(peer_rows):>10,} {ph_rate:>14,.0f}")
    print(
        json.dumps(
            {
                "bench": "hand_evaluator",
                "agreement": agree,
                "throughput_hands_per_s": {
                    "ours_numba_rank_hand": round(ours_rate),
                    "eval7_python_loop": round(e7_rate),
                    "phevaluator_python_loop": round(ph_rate),
                },
                "speed_hands": args.speed,
                "peer_hands": args.peer,
                "seed": args.seed,
                "repeats": args.repeats,
                **row,
            }
        )
    )


if __name__ == "__main__":
    main()
