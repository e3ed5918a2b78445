"""Card buckets per round from expected hand strength, built once and cached.

Hand strength (HS) on the last round is the probability of beating a uniformly random opponent
hand (ties count half), with card removal. Earlier rounds use its moments over the cards still to
come: E[HS] ("EHS") and E[HS^2] (which also rewards potential; Johanson et al. 2013). Every
quantity is computed per suit-isomorphism class of (hole cards, board as a set) (see
:mod:`abstraction.isomorphism`), so the tables are indexed by the class of a hand.

How the last round is computed without an O(n^2) loop: for each class of final *boards* (one
canonical board per class) every hole hand is ranked once, the hands are sorted by strength, and
one pass over the strength groups counts, for each hand, the opponents below and tied with it
minus those sharing one of its cards (inclusion-exclusion over at most two hole cards): O(n log n)
per board. An earlier round's moments average the next round's over every way to deal that
round's cards, by table lookup.

Percentile buckets: a round's classes are sorted by the chosen statistic and cut into ``B`` buckets
of equal *probability* (each class weighted by how many raw hands it stands for), so each bucket
is equally likely to be dealt. A round whose bucket count equals its number of classes is lossless
(hold'em preflop: 169).

Files (``DIR/abstraction.bin``, :mod:`abstraction.storage`): a msgpack header (the card structure,
method, bucket counts, content hash) and per round the uint16 bucket of every class, lz4
compressed; written atomically, and a partial build is never loaded as complete. Intermediate
per-round statistics go to ``DIR/partial/`` so an interrupted build resumes with the rounds done;
``partial/request.json`` names the request they belong to, and another request's stages are refused.
``potential`` on decks where the exact clustering is out of reach (52 cards) is built from samples
by :mod:`abstraction.potential` (the ``medium`` and ``large`` recipes).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import time
from math import comb
from pathlib import Path
from typing import Callable, Optional

import numba
import numpy as np

from abstraction.bucket_common import (
    HIST_BINS,
    HS_SCALE,
    AbstractionError,
    SampleSpec,
    assign_buckets,
    board_hs,
    card_structure,
    claim_partial,
    holes_of,
    percentile_thresholds,
    rest_of,
    run_chunks,
    save_npz_atomic,
)
from abstraction.clustering import check_feasible, cluster_tables
from abstraction.combinatorics import next_combination
from abstraction.isomorphism import HandIndexer, iso_index, iso_unindex
from abstraction.potential import build_potential_sampled
from abstraction.storage import METHODS, VERSION, write_abstraction
from holdem.gamedef import GameDef

# ---------------------------------------------------------------------------------------------
# numba kernels


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _final_round_chunk(
    t_board, t_hand, round_, nb, lo, hi, board_w, hole_k, num_suits, num_ranks, out_hs, hist
):
    """Canonical final boards ``lo..hi``: the HS of every hand class (uint16, x 65535) into
    ``out_hs`` and the class weights into the histogram ``hist`` of quantized HS."""
    deck = num_suits * num_ranks
    board = np.zeros(max(nb, 1), np.int64)
    hand = np.empty(hole_k + nb, np.int64)
    for bidx in range(lo, hi):
        if nb > 0:
            iso_unindex(t_board, bidx, 0, board)
        b = board[:nb]
        holes = holes_of(rest_of(b, nb, deck), hole_k)
        n = holes.shape[0]
        skip = np.zeros(n, np.bool_)
        hs = np.empty(n, np.float64)
        board_hs(b, holes, num_suits, num_ranks, deck, hs, skip)
        for j in range(nb):
            hand[hole_k + j] = b[j]
        w = board_w[bidx]
        for i in range(n):
            for j in range(hole_k):
                hand[j] = holes[i, j]
            cls = iso_index(t_hand, hand, round_)
            q = min(int(hs[i] * HS_SCALE + 0.5), 65535)
            out_hs[cls] = q
            hist[q] += w


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _earlier_round_chunk(
    t_board,
    t_hand,
    round_,
    next_round,
    nb,
    new_k,
    lo,
    hi,
    board_w,
    hole_k,
    num_suits,
    num_ranks,
    next_m1,
    next_m2,
    next_is_final,
    out_m1,
    out_m2,
    hist1,
    hist2,
    hole_lo,
    hole_hi,
):
    """Canonical boards ``lo..hi`` of ``round_``: E[HS] and E[HS^2] of every hand class from the
    next round's tables, averaged over every way to deal the next round's ``new_k`` cards.
    Only the hole hands ``hole_lo..hole_hi`` of each board (so one board can be split)."""
    deck = num_suits * num_ranks
    board = np.zeros(max(nb, 1), np.int64)
    hand = np.empty(hole_k + nb + new_k, np.int64)
    idx = np.zeros(max(new_k, 1), np.int64)
    for bidx in range(lo, hi):
        if nb > 0:
            iso_unindex(t_board, bidx, 0, board)
        b = board[:nb]
        rest = rest_of(b, nb, deck)
        holes = holes_of(rest, hole_k)
        avail = np.empty(rest.shape[0], np.int64)
        for j in range(nb):
            hand[hole_k + j] = b[j]
        w = board_w[bidx]
        for i in range(max(hole_lo, 0), min(hole_hi, holes.shape[0])):
            for j in range(hole_k):
                hand[j] = holes[i, j]
            na = 0
            for c in range(rest.shape[0]):
                x = rest[c]
                clash = False
                for j in range(hole_k):
                    if holes[i, j] == x:
                        clash = True
                if not clash:
                    avail[na] = x
                    na += 1
            s1 = 0.0
            s2 = 0.0
            cnt = 0
            for j in range(new_k):
                idx[j] = j
            while True:
                for j in range(new_k):
                    hand[hole_k + nb + j] = avail[idx[j]]
                cls = iso_index(t_hand, hand, next_round)
                if next_is_final:
                    v = next_m1[cls] / HS_SCALE
                    s1 += v
                    s2 += v * v
                else:
                    s1 += next_m1[cls]
                    s2 += next_m2[cls]
                cnt += 1
                if not next_combination(idx, new_k, na):
                    break
            cls = iso_index(t_hand, hand, round_)
            e1 = s1 / cnt
            e2 = s2 / cnt
            out_m1[cls] = e1
            out_m2[cls] = e2
            hist1[min(int(e1 * HS_SCALE + 0.5), 65535)] += w
            hist2[min(int(e2 * HS_SCALE + 0.5), 65535)] += w


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _penultimate_chunk(
    t_board,
    t_hand,
    round_,
    nb,
    new_k,
    lo,
    hi,
    board_w,
    hole_k,
    num_suits,
    num_ranks,
    out_m1,
    out_m2,
    hist1,
    hist2,
):
    """Like :func:`_earlier_round_chunk` for the round before the last, computed directly: for
    each way to complete the board, every hand's HS comes from one sorted pass (no lookups)."""
    deck = num_suits * num_ranks
    board = np.zeros(max(nb, 1), np.int64)
    full = np.empty(nb + new_k, np.int64)
    hand = np.empty(hole_k + nb, np.int64)
    idx = np.zeros(max(new_k, 1), np.int64)
    for bidx in range(lo, hi):
        if nb > 0:
            iso_unindex(t_board, bidx, 0, board)
        for j in range(nb):
            full[j] = board[j]
            hand[hole_k + j] = board[j]
        rest = rest_of(board, nb, deck)
        holes = holes_of(rest, hole_k)
        n = holes.shape[0]
        s1 = np.zeros(n, np.float64)
        s2 = np.zeros(n, np.float64)
        cnt = np.zeros(n, np.int64)
        hs = np.empty(n, np.float64)
        skip = np.zeros(n, np.bool_)
        na = rest.shape[0]
        for j in range(new_k):
            idx[j] = j
        while True:
            for j in range(new_k):
                full[nb + j] = rest[idx[j]]
            for i in range(n):
                clash = False
                for a in range(hole_k):
                    for j in range(new_k):
                        if holes[i, a] == full[nb + j]:
                            clash = True
                skip[i] = clash
            board_hs(full, holes, num_suits, num_ranks, deck, hs, skip)
            for i in range(n):
                if not skip[i]:
                    s1[i] += hs[i]
                    s2[i] += hs[i] * hs[i]
                    cnt[i] += 1
            if not next_combination(idx, new_k, na):
                break
        w = board_w[bidx]
        for i in range(n):
            for j in range(hole_k):
                hand[j] = holes[i, j]
            cls = iso_index(t_hand, hand, round_)
            e1 = s1[i] / cnt[i]
            e2 = s2[i] / cnt[i]
            out_m1[cls] = e1
            out_m2[cls] = e2
            hist1[min(int(e1 * HS_SCALE + 0.5), 65535)] += w
            hist2[min(int(e2 * HS_SCALE + 0.5), 65535)] += w


@numba.njit(cache=True, error_model="numpy")
def _board_weights(t_board, deck, nb, size):
    """Raw boards per board class: enumerate every ``nb``-card board (nb <= 5)."""
    w = np.zeros(size, np.float64)
    idx = np.arange(nb)
    cards = np.empty(nb, np.int64)
    if nb == 0:
        w[0] = 1.0
        return w
    while True:
        for j in range(nb):
            cards[j] = idx[j]
        w[iso_index(t_board, cards, 0)] += 1.0
        if not next_combination(idx, nb, deck):
            break
    return w


# ---------------------------------------------------------------------------------------------
# building


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Bucket counts per round and the method (``ehs``: E[HS] percentiles; ``ehs2``: E[HS^2];
    ``potential``: potential-aware k-means, sampled on 52 cards with ``spec``)."""

    method: str
    buckets: tuple[int, ...]
    spec: Optional[SampleSpec] = None  # for sampled potential-aware builds

    def key(self) -> str:
        return f"{self.method}|{self.buckets}" + (f"|{dataclasses.asdict(self.spec)}" if self.spec else "")


# Preflop is lossless (169 classes) in every recipe. ``small`` is the main job's: cheap to build on
# two cores (E[HS^2] percentiles). ``medium`` and ``large`` are potential-aware (Ganzfried &
# Sandholm 2014; OCHS on the river), k-means fitted on samples and every class assigned
# (:mod:`abstraction.potential`); ``large`` is Pluribus-sized.
RECIPES = {
    "small": Recipe("ehs2", (169, 50, 50, 50)),
    "medium": Recipe("potential", (169, 100, 100, 100), SampleSpec()),
    "large": Recipe("potential", (169, 200, 200, 200), SampleSpec(sample=200_000, river_boards=1000)),
    # finer than large: E[HS^2] percentiles, as small, 20x the buckets after the flop (the
    # abstraction ladder in BENCHMARKS.md: the strongest at 3 minutes of the main job's training)
    "fine": Recipe("ehs2", (169, 1000, 1000, 1000)),
}


def validate_request(game: GameDef, buckets: tuple[int, ...], method: str) -> HandIndexer:
    if method not in METHODS:
        raise AbstractionError(f"unknown bucketing method {method!r}: this version has {', '.join(METHODS)}")
    if game.num_hole_cards not in (1, 2):
        raise AbstractionError(
            f"hand-strength buckets support 1 or 2 hole cards, the game has {game.num_hole_cards}"
        )
    if game.total_board_cards == 0:
        raise AbstractionError("the game has no board cards: use the lossless abstraction")
    if len(buckets) != game.num_rounds:
        raise AbstractionError(
            f"need {game.num_rounds} bucket counts (one per round), got {len(buckets)}: {list(buckets)}"
        )
    indexer = HandIndexer.for_game(game)
    for r, b in enumerate(buckets):
        if not isinstance(b, (int, np.integer)) or b < 1:
            raise AbstractionError(f"round {r + 1}: bucket count must be a positive integer, got {b!r}")
        if b > min(indexer.size(r), 65535):
            raise AbstractionError(
                f"round {r + 1}: {b} buckets but the round has only {indexer.size(r):,} hand classes"
                if b > indexer.size(r)
                else f"round {r + 1}: at most 65,535 buckets, got {b}"
            )
    return indexer


def build_buckets(
    game: GameDef,
    buckets: tuple[int, ...],
    method: str,
    out_dir,
    progress: bool = True,
    threads: Optional[int] = None,
    log: Callable[[str], None] = print,
    direct_penultimate: bool = True,
    keep_stats: bool = False,
    seed: int = 0,
    last_round: str = "hs",
    ochs_clusters: Optional[int] = None,
    sampled: Optional[bool] = None,
    spec=None,
    fill: bool = False,
) -> Path:
    """Build the abstraction into ``out_dir/abstraction.bin`` (resuming a partial build there).

    ``direct_penultimate``: compute the round before the last by direct evaluation (faster on
    hold'em's turn) rather than by lookups into the last round's table; both give the same values.
    ``keep_stats``: keep the per-class statistics in ``out_dir/stats/round<r>.npz``.
    ``method`` ``distribution`` / ``potential``: k-means clusters (:mod:`abstraction.clustering`)
    from the last round's hand strength, seeded by ``seed``; the file format is the same.
    ``last_round`` (clustered methods): ``hs`` (the default: hand-strength percentiles on the last
    round, the earlier rounds clustered as ``method`` says) or ``ochs`` (k-means of OCHS vectors,
    which lost to it in every measurement of BENCHMARKS.md, "Three-round small deck");
    ``ochs_clusters``: the number of opponent clusters of OCHS (default
    :data:`abstraction.clustering.OCHS_CLUSTERS`).
    ``fill`` (``ehs``, ``ehs2``): percentile buckets dealt out again where tied strengths would leave
    some empty (:func:`abstraction.bucket_common.percentile_thresholds`); off by default, so the named
    recipes keep the tables their runs were trained on.
    ``sampled`` (``potential``): k-means on samples, every class assigned
    (:mod:`abstraction.potential`, with ``spec``, a ``SampleSpec``; its last round is OCHS k-means);
    ``None``: when the exact clustering is out of reach (52-card hold'em).
    """
    buckets = tuple(int(b) for b in buckets)
    indexer = validate_request(game, buckets, method)
    out_dir = Path(out_dir)
    partial = out_dir / "partial"
    partial.mkdir(parents=True, exist_ok=True)
    threads = threads or os.cpu_count() or 1
    S, N, deck, k = game.num_suits, game.num_ranks, game.deck_size, game.num_hole_cards
    t_hand = indexer.tables
    R = game.num_rounds
    T = [game.board_cards_through(r) for r in range(R)]
    t_start = time.perf_counter()
    clustered = method in ("distribution", "potential")
    if method == "potential" and sampled is None:
        try:
            check_feasible(game, indexer, buckets)
            sampled = False
        except AbstractionError:
            sampled = True
    if method == "potential" and sampled:
        spec = spec or SampleSpec(seed=seed)
        tables = build_potential_sampled(
            game, indexer, buckets, out_dir, spec, threads=threads, progress=progress, log=log
        )
        path = write_abstraction(
            out_dir,
            game,
            method,
            buckets,
            [indexer.size(r) for r in range(R)],
            tables,
            extra={"sampling": dataclasses.asdict(spec)},
        )
        shutil.rmtree(partial, ignore_errors=True)
        log(
            f"built sampled potential-aware buckets {list(buckets)} for {game.name or 'the game'} in "
            f"{time.perf_counter() - t_start:.1f} s: {path}"
        )
        return path
    claim_partial(
        partial,
        {
            "cards": card_structure(game),
            "buckets": list(buckets),
            "method": method,
            "seed": seed,
            "last_round": last_round,
        },
    )
    if clustered:  # refuse before the expensive part
        check_feasible(game, indexer, buckets)

    def board_indexer(nb):
        if nb == 0:
            return np.zeros(8, np.int64), 1, np.ones(1, np.float64)
        bi = HandIndexer(S, N, (nb,))
        return bi.tables, bi.size(0), _board_weights(bi.tables, deck, nb, bi.size(0))

    stats: dict[int, dict[str, np.ndarray]] = {}
    # the last round: hand strength
    rf = R - 1
    f_final = partial / f"round{rf}.npz"
    if f_final.exists():
        stats[rf] = dict(np.load(f_final))
        log(f"round {rf + 1}: reusing {f_final}")
    else:
        tb, nboards, bw = board_indexer(T[rf])
        hs = np.zeros(indexer.size(rf), np.uint16)

        def work(lo, hi):
            hist = np.zeros(HIST_BINS, np.float64)
            _final_round_chunk(tb, t_hand, rf, T[rf], lo, hi, bw, k, S, N, hs, hist)
            return hist

        hists = run_chunks(work, nboards, threads, f"round {rf + 1} hand strength", progress)
        hist = np.sum(hists, axis=0)
        stats[rf] = {"hs": hs, "hist1": hist, "hist2": hist}
        save_npz_atomic(f_final, **stats[rf])
    # earlier rounds: moments over the next round, down to the first round that is not lossless
    # (clustered methods derive their features from the last round's strength instead)
    first_lossy = next((r for r in range(R) if buckets[r] != indexer.size(r)), rf)
    for r in [] if clustered else range(rf - 1, first_lossy - 1, -1):
        if T[r] == T[r + 1]:
            stats[r] = stats[r + 1]
            continue
        fr = partial / f"round{r}.npz"
        if fr.exists():
            stats[r] = dict(np.load(fr))
            log(f"round {r + 1}: reusing {fr}")
            continue
        tb, nboards, bw = board_indexer(T[r])
        m1 = np.zeros(indexer.size(r), np.float32)
        m2 = np.zeros(indexer.size(r), np.float32)
        nxt = stats[r + 1]
        final_next = "hs" in nxt
        n1 = nxt["hs"] if final_next else nxt["m1"]
        n2 = nxt["hs"] if final_next else nxt["m2"]
        new_k = T[r + 1] - T[r]

        direct = final_next and direct_penultimate

        def work(
            lo,
            hi,
            r=r,
            tb=tb,
            bw=bw,
            n1=n1,
            n2=n2,
            final_next=final_next,
            new_k=new_k,
            m1=m1,
            m2=m2,
            direct=direct,
        ):
            h1 = np.zeros(HIST_BINS, np.float64)
            h2 = np.zeros(HIST_BINS, np.float64)
            if direct:
                _penultimate_chunk(tb, t_hand, r, T[r], new_k, lo, hi, bw, k, S, N, m1, m2, h1, h2)
            elif nboards == 1:  # one board (no board yet): split its hole hands instead
                _earlier_round_chunk(
                    tb,
                    t_hand,
                    r,
                    r + 1,
                    T[r],
                    new_k,
                    0,
                    1,
                    bw,
                    k,
                    S,
                    N,
                    n1,
                    n2,
                    final_next,
                    m1,
                    m2,
                    h1,
                    h2,
                    lo,
                    hi,
                )
            else:
                _earlier_round_chunk(
                    tb,
                    t_hand,
                    r,
                    r + 1,
                    T[r],
                    new_k,
                    lo,
                    hi,
                    bw,
                    k,
                    S,
                    N,
                    n1,
                    n2,
                    final_next,
                    m1,
                    m2,
                    h1,
                    h2,
                    0,
                    1 << 40,
                )
            return h1, h2

        n_items = comb(deck, k) if (nboards == 1 and not direct) else nboards
        res = run_chunks(work, n_items, threads, f"round {r + 1} E[HS], E[HS^2]", progress)
        stats[r] = {
            "m1": m1,
            "m2": m2,
            "hist1": np.sum([a for a, _ in res], axis=0),
            "hist2": np.sum([b for _, b in res], axis=0),
        }
        save_npz_atomic(fr, **stats[r])
    # buckets
    tables = []
    if clustered:
        kw = {} if ochs_clusters is None else {"ochs_clusters": ochs_clusters}
        tables = cluster_tables(
            game,
            indexer,
            buckets,
            method,
            stats[rf]["hs"],
            seed=seed,
            threads=threads,
            log=log,
            last_round=last_round,
            **kw,
        )
    for r in [] if clustered else range(R):
        size = indexer.size(r)
        if buckets[r] == size:
            tables.append(np.arange(size, dtype=np.uint16))
            continue
        st = stats[r]
        if "hs" in st:  # already quantized
            values, scale, hist = st["hs"], 1.0, st["hist1"]
        elif method == "ehs":
            values, scale, hist = st["m1"], HS_SCALE, st["hist1"]
        else:
            values, scale, hist = st["m2"], HS_SCALE, st["hist2"]
        th = percentile_thresholds(hist, buckets[r], fill=fill)
        out = np.zeros(size, np.uint16)
        assign_buckets(values, scale, th, out)
        tables.append(out)
    path = write_abstraction(out_dir, game, method, buckets, [indexer.size(r) for r in range(R)], tables)
    if keep_stats:  # the per-class statistics, for inspection and tests
        shutil.rmtree(out_dir / "stats", ignore_errors=True)
        os.replace(partial, out_dir / "stats")
    else:  # they are only needed to resume a build
        shutil.rmtree(partial, ignore_errors=True)
    log(
        f"built {method} buckets {list(buckets)} for {game.name or 'the game'} in "
        f"{time.perf_counter() - t_start:.1f} s: {path}"
    )
    return path


def cache_root() -> Path:
    return Path(os.environ.get("MCCFR_CACHE", Path.home() / ".cache" / "mccfr"))


def recipe_dir(game: GameDef, name: str) -> Path:
    rec = RECIPES[name]
    key = hashlib.blake2b(
        f"{card_structure(game)}|{rec.key()}|v{VERSION}".encode(), digest_size=8
    ).hexdigest()
    return cache_root() / "abstractions" / f"{name}-{key}"


class MissingAbstractionError(AbstractionError):
    """A card abstraction recipe that is not built in the cache, asked for without building it
    (``ensure_recipe(..., build=False)``). ``name`` is the recipe, ``path`` where it would be."""

    def __init__(self, message: str, name: str, path: Path):
        super().__init__(message)
        self.name = name
        self.path = path


def ensure_recipe(
    game: GameDef,
    name: str,
    progress: bool = True,
    log: Callable[[str], None] = print,
    threads: Optional[int] = None,
    build: bool = True,
) -> Path:
    """The cached build of recipe ``name`` for ``game``, building it on first use.

    ``build=False``: load only; :class:`MissingAbstractionError` when it is not built (queries
    never start a build: ``mccfr abstraction build --abstraction NAME`` does, explicitly)."""
    if name not in RECIPES:
        raise AbstractionError(f"unknown abstraction recipe {name!r}: choose one of {', '.join(RECIPES)}")
    rec = RECIPES[name]
    d = recipe_dir(game, name)
    f = d / "abstraction.bin"
    if f.exists():
        return f
    if not build:
        raise MissingAbstractionError(
            f"the {name!r} card abstraction for {game.name or 'this game'} is not built: {f} does not exist "
            f"(cache {cache_root()}); build it with 'mccfr abstraction build --abstraction {name}' and the game",
            name,
            f,
        )
    buckets = rec.buckets
    if game.num_hole_cards != 2 or game.deck_size != 52:
        raise AbstractionError(f"recipe {name!r} is for 52-card hold'em; use --buckets for other games")
    log(f"building the {name!r} card abstraction for {game.name or 'the game'} (cached in {d})")
    return build_buckets(
        game, buckets, rec.method, d, progress=progress, log=log, threads=threads, spec=rec.spec
    )
