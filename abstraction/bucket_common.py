"""What the bucket builders share: the base of :mod:`abstraction.buckets`,
:mod:`abstraction.clustering`, :mod:`abstraction.potential` and its kernels
(:mod:`abstraction.potential_kernels`).

Imports go one way: ``buckets`` -> ``potential`` -> ``clustering``, ``potential_kernels`` ->
``bucket_common`` (and each of them -> ``bucket_common``); this module imports none of them. Here: the error type, the hand-strength
quantization (``HS_SCALE``, ``HIST_BINS``), the last-round hand-strength kernels, equal-probability
percentile buckets, the sample settings of sampled builds, the chunked thread runner, the stage
files of a resumable build and the card structure that keys a build.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional

import numba
import numpy as np

from holdem.evaluator import rank_hand
from holdem.gamedef import GameDef
from mccfr_util.files import atomic_write_bytes, atomic_writer
from mccfr_util.progress import progress_bar

HS_SCALE = 65535.0
HIST_BINS = 1 << 16


class AbstractionError(ValueError):
    """A bad bucket request, or a corrupt, partial or foreign abstraction file."""


# ---------------------------------------------------------------------------------------------
# hand strength kernels


@numba.njit(cache=True, error_model="numpy")
def holes_of(rest, k):
    """All k-card hands (k in 1, 2) from the cards in ``rest``: int64 [n, k]."""
    m = rest.shape[0]
    if k == 1:
        out = np.empty((m, 1), np.int64)
        for i in range(m):
            out[i, 0] = rest[i]
        return out
    out = np.empty((m * (m - 1) // 2, 2), np.int64)
    n = 0
    for i in range(m):
        for j in range(i + 1, m):
            out[n, 0] = rest[i]
            out[n, 1] = rest[j]
            n += 1
    return out


@numba.njit(cache=True, error_model="numpy")
def board_hs(board, holes, num_suits, num_ranks, deck_size, hs, skip):
    """HS of every hole hand (rows of ``holes``) on the final ``board``; rows with ``skip`` set
    (sharing a card with the board) get -1. Card removal by inclusion-exclusion."""
    n = holes.shape[0]
    k = holes.shape[1]
    nb = board.shape[0]
    work = np.empty(k + nb, np.int64)
    for j in range(nb):
        work[k + j] = board[j]
    strength = np.empty(n, np.int64)
    live = 0
    for i in range(n):
        if skip[i]:
            strength[i] = -1
            continue
        live += 1
        for j in range(k):
            work[j] = holes[i, j]
        strength[i] = rank_hand(work, k + nb, num_suits, num_ranks)
    order = np.argsort(strength)
    low_card = np.zeros(deck_size, np.int64)
    tie_card = np.zeros(deck_size, np.int64)
    low_total = 0
    remaining = deck_size - nb - k  # cards an opponent can draw from, given ours
    opp_total = remaining if k == 1 else remaining * (remaining - 1) // 2
    i = 0
    while i < n:
        h = order[i]
        if skip[h]:
            hs[h] = -1.0
            i += 1
            continue
        s = strength[h]
        j = i
        while j < n and strength[order[j]] == s:
            j += 1
        tie_total = j - i
        for q in range(i, j):
            for c in range(k):
                tie_card[holes[order[q], c]] += 1
        for q in range(i, j):
            g = order[q]
            if k == 1:
                lower = low_total - low_card[holes[g, 0]]
                ties = tie_total - tie_card[holes[g, 0]]
            else:
                a = holes[g, 0]
                b = holes[g, 1]
                lower = low_total - low_card[a] - low_card[b]
                ties = tie_total - tie_card[a] - tie_card[b] + 1
            hs[g] = (lower + 0.5 * ties) / opp_total
        for q in range(i, j):
            for c in range(k):
                tie_card[holes[order[q], c]] -= 1
                low_card[holes[order[q], c]] += 1
        low_total += tie_total
        i = j


@numba.njit(cache=True, error_model="numpy")
def rest_of(board, nb, deck):
    used = np.zeros(deck, np.bool_)
    for j in range(nb):
        used[board[j]] = True
    rest = np.empty(deck - nb, np.int64)
    m = 0
    for c in range(deck):
        if not used[c]:
            rest[m] = c
            m += 1
    return rest


@numba.njit(cache=True, error_model="numpy")
def assign_buckets(values, scale, thresholds, out):
    """``out[i]`` = number of thresholds <= quantized value (``values * scale`` rounded)."""
    for i in range(values.shape[0]):
        q = int(values[i] * scale + 0.5)
        lo = 0
        hi = thresholds.shape[0]
        while lo < hi:
            mid = (lo + hi) // 2
            if thresholds[mid] <= q:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo


# ---------------------------------------------------------------------------------------------
# building


@dataclasses.dataclass(frozen=True)
class SampleSpec:
    """Sample sizes and k-means settings of a sampled potential-aware build
    (:mod:`abstraction.potential`; part of its cache key)."""

    opp_clusters: int = 8  # OCHS opponent clusters
    opp_boards: int = 2000  # random final boards for the opponent clustering
    river_boards: int = 600  # random final boards whose hands are the last round's k-means sample
    sample: int = 100_000  # random hands per earlier round for its k-means
    max_iter: int = 30  # Lloyd iterations at most (stops earlier when no label changes)
    seed: int = 0


def percentile_thresholds(hist: np.ndarray, n_buckets: int, fill: bool = False) -> np.ndarray:
    """Quantized values at which the cumulative weight crosses k / n_buckets, k = 1..n-1.

    Values are never split: a value that holds more than one bucket's share of the weight, or
    several crossings within one histogram bin, leaves buckets empty (exact river strengths tie
    often: the ``fine`` recipe uses 787 of its 1,000 river buckets). ``fill``: when that happens,
    deal the buckets out again from the left, each taking at least one non-empty bin and about an
    equal share of the weight still unassigned, so that every bucket is used whenever the
    histogram has as many non-empty bins as buckets (else one bucket per non-empty bin). Without
    ties the thresholds are the same either way."""
    cum = np.cumsum(hist)
    total = cum[-1]
    if total <= 0:
        raise AbstractionError("empty histogram: no hand was counted")
    targets = total * np.arange(1, n_buckets) / n_buckets
    # the first bin whose cumulative weight exceeds the target starts the next bucket
    th = np.minimum(np.searchsorted(cum, targets, side="right").astype(np.int64), HIST_BINS - 1)
    if not fill or (np.all(np.diff(th) > 0) and (len(th) == 0 or hist[: th[0]].sum() > 0)):
        return th
    return _filled_thresholds(np.asarray(hist, np.float64), n_buckets)


def _filled_thresholds(hist: np.ndarray, n_buckets: int) -> np.ndarray:
    nz = np.flatnonzero(hist > 0)
    out = np.full(n_buckets - 1, HIST_BINS, np.int64)  # past every value: buckets left unused
    if len(nz) <= n_buckets:
        out[: len(nz) - 1] = nz[1:]
        return out
    w = hist[nz]
    left, k, i = float(w.sum()), n_buckets, 0
    for b in range(n_buckets - 1):
        share = left / k
        end = len(nz) - (k - 1)  # leave a bin for each bucket still to come
        acc, j = w[i], i + 1
        while j < end and acc + w[j] <= share:
            acc += w[j]
            j += 1
        out[b] = nz[j]
        left -= acc
        k -= 1
        i = j
    return out


def run_chunks(
    fn,
    n_items: int,
    threads: int,
    desc: str,
    progress: bool,
    log: Optional[Callable] = None,
    unit: str = "boards",
):
    """Run ``fn(lo, hi)`` over ``0..n_items`` in chunks on ``threads`` threads (the kernels
    release the GIL) with progress and an ETA (:func:`mccfr_util.progress.progress_bar`: a bar on a
    terminal, plain lines otherwise)."""
    n_chunks = max(1, min(n_items, threads * 64))
    bounds = np.linspace(0, n_items, n_chunks + 1).astype(np.int64)
    bar = None
    if progress:
        bar = progress_bar(n_items, desc, unit, dynamic_ncols=True, leave=True)
    results = []
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futs = [pool.submit(fn, int(bounds[i]), int(bounds[i + 1])) for i in range(n_chunks)]
        for f, i in zip(futs, range(n_chunks)):
            results.append(f.result())
            if bar is not None:
                bar.update(int(bounds[i + 1] - bounds[i]))
    if bar is not None:
        bar.close()
    return results


def save_npz_atomic(path: Path, **arrays) -> None:
    """``np.savez`` of ``arrays`` to ``path``, written atomically (:mod:`mccfr_util.files`)."""
    with atomic_writer(path) as f:
        np.savez(f, **arrays)


def claim_partial(partial: Path, request: dict) -> None:
    """Make ``partial/`` the stage directory of ``request`` (its ``request.json``); refuse one that
    holds another request's stages, which must never be mixed into this build."""
    partial.mkdir(parents=True, exist_ok=True)
    req = partial / "request.json"
    text = json.dumps(request, sort_keys=True)
    if req.exists():
        if req.read_text() != text:
            raise AbstractionError(
                f"{partial.parent}: holds a partial build of another request ({req.read_text()}), not "
                f"{text}; remove {partial} or build into another directory"
            )
    else:
        if any(partial.iterdir()):
            raise AbstractionError(f"{partial}: stage files of an unknown request; remove it to rebuild")
        atomic_write_bytes(req, text.encode())


def card_structure(game: GameDef) -> str:
    """What buckets depend on: the deck and how cards are dealt (not blinds, stacks or betting)."""
    return (
        f"suits={game.num_suits} ranks={game.num_ranks} hole={game.num_hole_cards} "
        f"board={','.join(map(str, game.num_board_cards))}"
    )
