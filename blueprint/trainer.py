"""The single-process trainer: tree, card buckets, tables, schedules, checkpoints.

:class:`Trainer` owns everything a run needs and advances it with the numba kernels of
:mod:`blueprint.kernels`. All schedules count iterations: discount boundaries fall at multiples of
``discount_every``, applied lazily (a row through the boundaries it missed when a traversal
touches it, every row at checkpoints, strategy reads and the end of :meth:`Trainer.run`: bit for
bit a discount of the whole tables at each boundary, without the sweep); progress reporting may
split the work into chunks of any size without changing the result, so the same seed gives the
same tables and a resumed run is bit-identical to an uninterrupted one.

Threads (:mod:`blueprint.threads`): with ``threads`` T > 1 the sampled kernel runs on T threads
on the same tables (lock-free, or each on a copy merged into them on a mid-sized table); every
span between barriers (reports, checkpoints; never discount boundaries) is split between them,
their iterations interleaved. One thread (the default of :func:`make_trainer`) is the
deterministic trainer described above, and its exact-resume guarantee; with T > 1 a run is not
bit-reproducible, but a checkpoint still holds exactly the tables at its barrier. Full-traversal
CFR / CFR+ runs on one thread whatever T is.

Checkpoints use :mod:`blueprint.checkpoints` (one shard): the tables, the RNG state and the
schedule state, with the resolved config and its hash in the manifest (the thread count is not
part of the config: a run may resume with another), and the blueprint file
(:mod:`blueprint.io.blueprint_file`).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from pathlib import Path
from typing import Callable, Optional, Union

import numpy as np

from abstraction.cards import CardAbstraction, CardArrays
from abstraction.tree import KIND_DECISION, BettingTree, TreeArrays, build_tree
from blueprint import nplayer, trainer_checkpoint
from blueprint.algo import AlgoConfig
from blueprint.best_response import BestResponse
from blueprint.checkpoints import load_latest, save_checkpoint
from blueprint.defaults import DEFAULT_ALGO, DEFAULT_GAME, DEFAULT_SEED, run_config
from blueprint.discount import MAX_WINDOW, DiscountWindow, window_base
from blueprint.io.blueprint_file import abstraction_hash, blueprint_file_payload
from blueprint.io.container import ArraySpec
from blueprint.io.errors import CheckpointError
from blueprint.kernels import (
    Copy,
    ESOptions,
    Rows,
    cfr_full_iteration,
    discount_tables,
    es_iterations,
    merge_copy,
    settle_tables,
)
from blueprint.numerics import (
    SUM_EXP_INIT,
    Sums,
    regret_bounds,
    regret_scale,
    seed_rng_state,
    sums_values,
    table_dtypes,
    table_values,
)
from blueprint.runconfig import MAX_FULL_DEALS, RunConfig, config_hash
from blueprint.session import card_abstraction
from blueprint.tables import Tables, layout, layout_nodes, normalize_blocks, row_layout, tree_depth
from blueprint.threads import (
    ThreadTeam,
    check_threads,
    copies_pay,
    copy_span,
    copy_sync_every,
    hot_sync_every,
    split_span,
    thread_rng_state,
    use_copies,
)
from holdem.gamedef import GameDef

__all__ = [
    "MAX_FULL_DEALS",
    "PARALLEL_SETTLE_MIN",
    "PREFETCH_MIN_ENTRIES",
    "RunConfig",
    "Trainer",
    "config_hash",
    "discount_span",
    "make_trainer",
    "run_for",
]

# tables at least this big are settled (every row through its pending discounts) by all the
# threads, each a slice (smaller: the sweep is shorter than waking the threads)
PARALLEL_SETTLE_MIN = 1 << 18
# tables at least this big (entries; 8 bytes each) have the kernel prefetch each node's children's
# rows: past the caches each row is a miss (node visits/s: `fine` cards 1.26x, with `standard` bets
# 1.65x); smaller tables stay in the caches and the prefetches only cost (`small` cards: 0.87x)
# (BENCHMARKS.md, "Training speed and memory")
PREFETCH_MIN_ENTRIES = 1 << 19


class Trainer:
    """Single-process MCCFR over one game, bet abstraction and card abstraction, on ``threads``
    threads (:meth:`set_threads`; 1 unless set).

    The constructor parses, loads and builds nothing: it takes the run's config with its game and
    bets parsed (:func:`blueprint.defaults.run_config`, or :meth:`RunConfig.from_manifest`) and the
    card abstraction already built or loaded (:func:`blueprint.session.card_abstraction`, which
    may take minutes for a recipe not in the cache; the Ray job's workers get the driver's).
    :func:`make_trainer` and :meth:`from_manifest_config` do all three steps.

    Args:
        config: what determines the run's result, parsed.
        cards: the card abstraction of ``config.cards``, built or loaded.
    """

    threads: int = 1
    stream_worker: Optional[int] = None  # a Ray worker's trainer: its threads' streams are its own
    _team: Optional[ThreadTeam] = None
    _thread_rngs: Optional[list[np.ndarray]] = None  # xoshiro states of threads 1..T-1
    _copy_arrays: Optional[list[Copy]] = None  # per thread: its copy and base
    _hot_rows: Optional[np.ndarray] = None  # the first round's table entries
    _hot_nodes: Optional[np.ndarray] = None  # the first round's decision nodes (RowLayout indices)
    _window: Optional[DiscountWindow] = None  # None: every row has seen every boundary (settled)
    _merge_lock = threading.Lock()  # merges of the threads' copies, one at a time

    def __init__(self, config: RunConfig, cards: CardAbstraction):
        self.config = config
        self.game: GameDef = config.gamedef
        self.bets = config.bet_abstraction
        self.tree: BettingTree = build_tree(self.game, self.bets)
        self.live = self.tree.kernel_live()  # the kernels' N-seat payoffs (None with two seats)
        self.cards = cards
        self.num_buckets = self.cards.buckets_array()
        self.row_offset, self.size = layout(self.tree, self.num_buckets)
        self.row_layout, self.node_row, self.num_rows = row_layout(
            self.tree, self.num_buckets, self.row_offset
        )
        self._all_nodes = np.arange(len(self.row_layout.entry), dtype=np.int64)
        self._layout_pot: Optional[np.ndarray] = None  # chips in the pot of each, layout order
        algo = config.algo
        regret_dtype, strat_dtype = table_dtypes(algo.table_bits, algo.regret_dtype)
        self.regret = np.zeros(self.size, regret_dtype)
        self.strat = np.zeros(self.size, strat_dtype)
        # 16-bit tables: each row's strategy-sum exponent (block floating point, blueprint.numerics);
        # 32-bit tables: empty
        self.strat_exp = np.full(self.num_rows if algo.table_bits == 16 else 0, SUM_EXP_INIT, np.int8)
        # per information set, the discount boundaries its regrets (2 * row) and its strategy sums
        # (2 * row + 1) have been through, counted from the window's first (lazy discounting:
        # blueprint.kernels; one byte each, the window being at most MAX_WINDOW = 255 long)
        self.row_epoch = np.zeros(2 * self.num_rows, np.uint8)
        self.iteration = 0
        self.rng = seed_rng_state(np.random.SeedSequence(config.seed))
        self.w_base = 0.0  # effective iteration count at t_base (for thresholds)
        self.t_base = 0
        self.node_visits = 0
        self.pruned = 0
        # 16-bit tables: updates saturated at the largest bfloat16, nonzero ones rounded to zero
        self.saturated = 0
        self.underflowed = 0
        self.seconds = 0.0
        self.max_depth = tree_depth(self.tree)
        self.max_actions = int(self.tree.num_actions.max())
        self._tree_arrays: Optional[TreeArrays] = None
        self._card_arrays: Optional[CardArrays] = None
        self._deals = self._delta = None  # full-traversal CFR's deals and regret deltas
        self._best_response = None
        self.config_dict = config.to_dict()
        self.config_hash = config_hash(self.config_dict)
        self.abstraction_hash = abstraction_hash(self.tree.content_hash(), self.cards.content_hash())

    # -- training -----------------------------------------------------------------------------
    def _opts(self) -> ESOptions:
        a = self.config.algo
        bb = self.game.big_blind
        scale = regret_scale(a.regret_dtype, bb)
        lo, hi = regret_bounds(a.regret_dtype)
        prune_prob = a.prune_prob if a.prune else 0.0
        prune_c = a.prune_threshold_bb * bb * scale
        floor_c = a.floor_bb * bb * scale if a.prune else lo
        prune_pot = floor_pot = 0.0
        if a.prune_threshold_pots is not None and a.floor_pots is not None:  # per pot, not per W
            prune_c, prune_pot = 0.0, a.prune_threshold_pots * scale
            if a.prune:
                floor_c, floor_pot = 0.0, a.floor_pots * scale
        return ESOptions(
            prune_start=float(a.prune_start),
            prune_prob=float(prune_prob),
            prune_c=float(prune_c),
            floor_c=float(floor_c),
            prune_pot=float(prune_pot),
            floor_pot=float(floor_pot),
            ceil=float(hi),
            int_regret=a.regret_dtype == "int32",
            scale=float(scale),
            explore=float(a.explore),
            prefetch=self.size >= PREFETCH_MIN_ENTRIES,
        )

    def _full_deals(self) -> np.ndarray:
        if self._deals is None:
            g = self.game
            n = g.cards_per_deal
            self._deals = np.array(list(itertools.permutations(range(g.deck_size), n)), np.int64)
            self._delta = np.zeros(self.size, np.float64)
        return self._deals

    def _kernel_args(self) -> tuple:
        """The tree, card and table arguments of the kernels (:class:`TreeArrays`,
        :class:`CardArrays`, :class:`Tables`); the tables are read from the trainer each call
        (a resumed or sharded run replaces its arrays)."""
        if self._tree_arrays is None:
            self._tree_arrays = self.tree.kernel_arrays()
            self._card_arrays = self.cards.kernel_arrays(self.game)
        return (
            self._tree_arrays,
            self._card_arrays,
            Tables(self.row_offset, self.regret, self.sums(self.strat)),
        )

    def sums(self, strat: np.ndarray, exp: Optional[np.ndarray] = None):
        """The strategy sums as the kernels take them: ``strat`` itself (32-bit tables), or with
        the rows' exponents (``exp``, default the trainer's) as :class:`blueprint.numerics.Sums`."""
        if self.table_bits == 32:
            return strat
        return Sums(strat, self.strat_exp if exp is None else exp)

    @property
    def table_bytes(self) -> int:
        """The tables' bytes: regrets, strategy sums and (16-bit tables) the rows' exponents."""
        return int(self.regret.nbytes + self.strat.nbytes + self.strat_exp.nbytes)

    def _step(self, n: int) -> None:
        a = self.config.algo
        tree, cards, tables = self._kernel_args()
        if a.full_traversal:
            deals = self._full_deals()
            for _ in range(n):
                cfr_full_iteration(
                    self.iteration,
                    tree,
                    cards,
                    tables,
                    deals,
                    self._delta,
                    a.name == "cfr+",
                    self.max_depth,
                    self.max_actions,
                )
                self.iteration += 1
            self.node_visits += n * 2 * len(deals) * int((self.tree.kind == KIND_DECISION).sum())
            return
        window = self._lazy_window()
        if window.every > 0:
            # a span ends where the run reaches the next window's first boundary (every row is
            # brought there, _rebase, at the same iteration however the run is chunked), and
            # where the last boundary is behind (the spans after it skip the epochs: _span_schedule)
            nxt = (window.base + MAX_WINDOW) * window.every
            cuts = [c for c in (nxt, window.until) if self.iteration < c < self.iteration + n]
            if cuts and (window.until < 0 or min(cuts) <= window.until):
                first = min(cuts) - self.iteration
                self._step(first)
                self._step(n - first)
                return
        window.cover(window.epoch(self.iteration + n))
        rows = Rows(self.node_row, self.row_epoch)
        opts = self._opts()
        shares = split_span(n, self.threads)
        on_copies = len(shares) > 1 and self.copies_used(min(shares))
        sched = window.kernel() if on_copies else self._span_schedule(window)
        if len(shares) == 1:
            stats = es_iterations(
                n,
                self.iteration,
                1,
                tree,
                self.live,
                cards,
                tables,
                rows.under(sched),
                sched,
                self.rng,
                opts,
                self.max_depth,
                self.max_actions,
            )
        else:
            # the threads interleave their iterations (thread k runs iteration + k, + k + T, ...):
            # they cross each discount boundary together, and their shares cover the span exactly
            threads = len(shares)
            rngs = [self.rng, *self._thread_states(threads)]
            starts = [self.iteration + k for k in range(threads)]
            if on_copies:
                copies = self._copies(threads)
                copy_args = [
                    (k, t0, threads, tree, cards, tables, rows, sched, rng, opts, c)
                    for k, t0, rng, c in zip(shares, starts, rngs, copies)
                ]
                stats = np.sum(self._thread_team().map(self._run_on_copy, copy_args), axis=0)
            else:
                args = [
                    (
                        k,
                        t0,
                        threads,
                        tree,
                        self.live,
                        cards,
                        tables,
                        rows.under(sched),
                        sched,
                        rng,
                        opts,
                        self.max_depth,
                        self.max_actions,
                    )
                    for k, t0, rng in zip(shares, starts, rngs)
                ]
                stats = np.sum(self._thread_team().map(es_iterations, args), axis=0)
        self.iteration += n
        self.w_base, self.t_base = window.state(self.iteration)
        self.node_visits += int(stats[0])
        self.pruned += int(stats[1])
        self.saturated += int(stats[2])
        self.underflowed += int(stats[3])
        if window.epoch(self.iteration) - window.base >= MAX_WINDOW:
            self._rebase()

    def warm_up(self) -> float:
        """Compile (or load from numba's cache) every kernel a run of this trainer calls, on empty
        inputs of the run's types, and build the arrays they take, so that training time counts
        training only (``mccfr train --time`` starts after this). Returns the seconds it took.
        Leaves the tables, the RNG and the schedule as they were."""
        t = time.perf_counter()
        a = self.config.algo
        tree, cards, tables = self._kernel_args()
        if a.full_traversal:
            deals = self._full_deals()
            scratch = Tables(self.row_offset, self.regret.copy(), self.strat.copy())  # one deal, thrown away
            cfr_full_iteration(
                self.iteration,
                tree,
                cards,
                scratch,
                deals[:1],
                self._delta,
                a.name == "cfr+",
                self.max_depth,
                self.max_actions,
            )
            return time.perf_counter() - t
        window = DiscountWindow.at(a, self.iteration, self.w_base, self.t_base)
        sched = window.kernel()
        rows = Rows(self.node_row, self.row_epoch)
        opts = self._opts()
        lean = [Rows(self.node_row, None)] if window.until >= 0 else []  # past the last boundary
        dims = (self.max_depth, self.max_actions)
        for r in [rows.under(sched), *lean]:
            es_iterations(
                0, self.iteration, 1, tree, self.live, cards, tables, r, sched, self.rng.copy(), opts, *dims
            )
        none = np.zeros(0, np.int64)
        for chain in (False, True):
            settle_tables(
                none,
                self.row_layout,
                self.regret,
                self.sums(self.strat),
                self.row_epoch,
                0,
                sched,
                opts.int_regret,
                chain,
            )
        if self.threads > 1:
            self._thread_team()
            self._thread_states(self.threads)
            if self._copyable:
                cp = self._copies(self.threads)[0]
                merge_copy(
                    none,
                    self.row_layout,
                    self.regret,
                    self.strat,
                    self.row_epoch,
                    cp,
                    sched,
                    np.zeros(len(self.row_layout.entry)),
                    1.0,
                    opts.int_regret,
                )
        return time.perf_counter() - t

    def _merge_floor(self, opts: ESOptions, w: float) -> np.ndarray:
        """Each decision node's regret floor (float64 ``[D]``, layout order) at effective
        iteration count ``w``, as :func:`blueprint.kernels.es_iterations` floors its regrets."""
        if self._layout_pot is None:
            nodes = layout_nodes(self.tree, self.row_offset)
            self._layout_pot = self.tree.spent[nodes].sum(axis=1).astype(np.float64)
        return np.maximum(opts.floor_c * w + opts.floor_pot * self._layout_pot, -opts.ceil)

    @property
    def table_bits(self) -> int:
        """16 (bfloat16 regrets and strategy sums) or 32 (:class:`blueprint.algo.AlgoConfig`)."""
        return self.config.algo.table_bits

    def copies_used(self, share: int) -> bool:
        """Whether threads whose shares of a span are at least ``share`` iterations each train on
        a copy of the tables (:mod:`blueprint.threads`, "Copies"): never with 16-bit tables (their
        threads share the one table: a copy's merge would round each thread's update to the
        shared value's spacing), not while the run discounts (:meth:`discounting`), else by the
        table's size, its first round's merges (:data:`blueprint.threads.COPY_MIN_HOT_SPAN`) and
        the span's length."""
        return not self.discounting() and self._copyable and copies_pay(self.size, share)

    def discounting(self) -> bool:
        """Whether discount boundaries still lie ahead. While they do, the threads share one table:
        discounting is lazy, so shared spans run across boundaries without a barrier, and a copy's
        merge must bring three rows through the boundaries. On the main job (idle 2-core VM, 2
        threads, 20 s) the shared table ran 157k it/s against 90k on copies (1 thread: 79k)."""
        a = self.config.algo
        return a.discount != "none" and (a.discount_until < 0 or self.iteration < a.discount_until)

    @property
    def _copyable(self) -> bool:  # 32-bit tables only (copies_used says why)
        hot = hot_sync_every(int(self.num_buckets[0]), self.threads)
        return self.table_bits == 32 and use_copies(self.size, self.regret.itemsize * 2, hot, self.threads)

    def _copy_span(self) -> int:
        """The shortest span on which this trainer's threads train on copies (0: never)."""
        if self.threads < 2 or self.config.algo.full_traversal or self.table_bits == 16:
            return 0
        if self.discounting() or not self._copyable:
            return 0
        return copy_span(self.size, self.threads)

    def _copies(self, threads: int) -> list[Copy]:
        """Per thread, its copy of the tables and their base (:mod:`blueprint.threads`,
        "Copies"), allocated once."""
        have = self._copy_arrays if self._copy_arrays is not None else []
        while len(have) < threads:
            have.append(Copy(*(np.empty_like(x) for x in (self.regret, self.strat, self.row_epoch) * 2)))
        self._copy_arrays = have
        return have[:threads]

    def first_round_entries(self) -> np.ndarray:
        """The table entries of the first betting round's decision nodes (merged most often)."""
        if self._hot_rows is None:
            t = self.tree
            b0 = int(self.num_buckets[0])
            nodes = np.flatnonzero((t.kind == KIND_DECISION) & (t.round == 0))
            parts = [
                np.arange(self.row_offset[v], self.row_offset[v] + b0 * int(t.num_actions[v])) for v in nodes
            ]
            self._hot_rows = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
        return self._hot_rows

    def first_round_nodes(self) -> np.ndarray:
        """The first betting round's decision nodes as indices into ``row_layout`` (their rows are
        merged most often)."""
        if self._hot_nodes is None:
            t = self.tree
            dec = np.flatnonzero(t.kind == KIND_DECISION)
            dec = dec[np.argsort(self.row_offset[dec], kind="stable")]  # row_layout's order
            self._hot_nodes = np.flatnonzero(t.round[dec] == 0).astype(np.int64)
        return self._hot_nodes

    def _run_on_copy(self, n, t0, stride, tree, cards, tables, rows, sched, rng, opts, cp) -> np.ndarray:
        """One thread's share of a span on its own copy of the tables (:mod:`blueprint.threads`,
        "Copies"): its iterations ``t0, t0 + stride, ...``; its first-round rows merged into the
        shared tables every :func:`~blueprint.threads.hot_sync_every` iterations, the whole table
        every :func:`~blueprint.threads.copy_sync_every` and at its end."""
        np.copyto(cp.regret, tables.regret)
        np.copyto(cp.strat, tables.strat)
        np.copyto(cp.epoch, rows.epoch)
        np.copyto(cp.base_regret, cp.regret)
        np.copyto(cp.base_strat, cp.strat)
        np.copyto(cp.base_epoch, cp.epoch)
        mine = Tables(tables.row_offset, cp.regret, cp.strat)
        my_rows = Rows(rows.node_row, cp.epoch).under(sched)
        hot = self.first_round_nodes()
        every = hot_sync_every(int(self.num_buckets[0]), self.threads)
        full = max(1, copy_sync_every(self.size) // every) * every
        window = self._window
        assert window is not None
        stats = np.zeros(4, np.int64)
        done = 0
        while done < n:
            m = min(every, n - done)
            stats += es_iterations(
                m,
                t0 + done * stride,
                stride,
                tree,
                self.live,
                cards,
                mine,
                my_rows,
                sched,
                rng,
                opts,
                self.max_depth,
                self.max_actions,
            )
            done += m
            floor = self._merge_floor(opts, window.w_at(t0 + (done - 1) * stride))
            nodes = self._all_nodes if done == n or done % full == 0 else hot
            with self._merge_lock:  # one merge at a time: no update is lost
                merge_copy(
                    nodes,
                    self.row_layout,
                    tables.regret,
                    tables.strat,
                    rows.epoch,
                    cp,
                    sched,
                    floor,
                    opts.ceil,
                    opts.int_regret,
                )
        return stats

    def set_threads(self, threads: int) -> None:
        """Train on ``threads`` threads from now on (1 to the cores this process may use; a
        ValueError naming ``threads`` otherwise). See :mod:`blueprint.threads`."""
        threads = check_threads(threads)
        if self._team is not None and self._team.size != threads:
            self._team.close()
            self._team = None
        self.threads = threads

    def _thread_team(self) -> ThreadTeam:
        if self._team is None:
            self._team = ThreadTeam(self.threads)
        return self._team

    def _thread_states(self, threads: int) -> list[np.ndarray]:
        """The RNG states of threads ``1 .. threads - 1``, each derived from the seed, the thread
        and the iteration at which it first runs (:func:`blueprint.threads.thread_rng_state`)."""
        have = self._thread_rngs if self._thread_rngs is not None else []
        for k in range(len(have) + 1, threads):
            have.append(thread_rng_state(self.config.seed, k, self.iteration, self.stream_worker))
        self._thread_rngs = have
        return have[: threads - 1]

    # -- lazy discounting ---------------------------------------------------------------------
    def _lazy_window(self) -> DiscountWindow:
        """The discount window of the rows' pending boundaries. Opened (``_window`` None) with
        every row taken as settled at the current iteration: a new trainer, one loaded from a
        checkpoint of settled tables, or one whose tables were settled or replaced (the Ray job's
        workers write settled tables)."""
        if self._window is None:
            a = self.config.algo
            self._window = DiscountWindow.at(a, self.iteration, self.w_base, self.t_base)
            self.row_epoch.fill(self._window.wbase - self._window.base)
        return self._window

    def _span_schedule(self, window: DiscountWindow):
        """The window's schedule while boundaries lie ahead; past the last (``pluribus``), every row
        settled in place as its next touch would, then :meth:`DiscountWindow.past`: no epoch checks."""
        if window.every <= 0 or self.discounting():
            return window.kernel()
        if self.pending():
            to = window.epoch(self.iteration)
            window.cover(to)
            self._settle_into(
                self.regret, self.strat, self.row_epoch, to - window.base, window.kernel(), False
            )
        return window.past(self.iteration)

    def _open_window(self, epochs: np.ndarray) -> None:
        """Take ``epochs`` as the rows' epochs (a checkpoint's) under the window of the current
        iteration (:func:`blueprint.discount.window_base`: the one the unbroken run had)."""
        self._window = DiscountWindow.at(self.config.algo, self.iteration, self.w_base, self.t_base)
        self.row_epoch = (np.asarray(epochs, np.int64).reshape(-1) - self._window.base).astype(np.uint8)
        self._copy_arrays = None

    def _settle_args(self, regret, strat, epoch, to, sched, chain: bool) -> list[tuple]:
        int_regret = self.config.algo.regret_dtype == "int32"
        parts = [self._all_nodes]
        if self.size >= PARALLEL_SETTLE_MIN and self.threads > 1:
            cuts = np.searchsorted(
                self.row_layout.entry, [self.size * k // self.threads for k in range(1, self.threads)]
            )
            parts = [p for p in np.split(self._all_nodes, cuts) if len(p)]
        return [(p, self.row_layout, regret, strat, epoch, to, sched, int_regret, chain) for p in parts]

    def _settle_into(self, regret, strat, epoch, to, sched, chain: bool, exp=None) -> None:
        args = self._settle_args(regret, self.sums(strat, exp), epoch, to, sched, chain)
        if len(args) == 1:
            settle_tables(*args[0])
        else:
            self._thread_team().map(settle_tables, args)

    def pending(self) -> bool:
        """Whether some row has discount boundaries still to apply."""
        window = self._window
        if window is None or window.every <= 0:
            return False
        return bool((self.row_epoch != window.epoch(self.iteration) - window.base).any())

    def _rebase(self) -> None:
        """Bring every row to the current epoch, a multiple of :data:`MAX_WINDOW` the run has just
        reached, each at once as a traversal would (the unbroken run and a resumed one alike),
        and open the window that starts there."""
        window = self._window
        assert window is not None
        to = window.epoch(self.iteration)
        window.cover(to)
        self._settle_into(self.regret, self.strat, self.row_epoch, to - window.base, window.kernel(), False)
        self.row_epoch.fill(0)  # the new window's first epoch
        self._window = DiscountWindow.at(self.config.algo, self.iteration, self.w_base, self.t_base)
        assert self._window.base == to

    def settled_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """``(regret, strat)`` with every row through the boundaries so far, for whole-table reads
        (strategies, blueprint files): the tables themselves when no row is pending, else settled
        copies (each row at once, as its next touch would settle it). The run's own tables are
        left as they are, so reading them never changes what the run computes next. 16-bit
        tables are read as float32 values (decoded copies)."""
        if not self.pending():
            return table_values(self.regret), self._sum_values(self.strat, self.strat_exp)
        window = self._window
        assert window is not None
        to = window.epoch(self.iteration)
        window.cover(to)
        regret, strat, epoch = self.regret.copy(), self.strat.copy(), self.row_epoch.copy()
        exp = self.strat_exp.copy()
        self._settle_into(regret, strat, epoch, to - window.base, window.kernel(), False, exp)
        return table_values(regret), self._sum_values(strat, exp)

    def _sum_values(self, strat: np.ndarray, exp: np.ndarray) -> np.ndarray:
        """Strategy sums as values: 16-bit tables' decoded to float32, else ``strat`` itself."""
        if self.table_bits == 32:
            return strat
        return sums_values(strat, exp, self.row_layout.width, self.row_layout.rows)

    def settle(self) -> None:
        """Bring every row, in place, through the discount boundaries it has not seen, one
        boundary after another as the eager sweep applies them (so that tables settled at a
        boundary and then discounted by :func:`discount_span` equal the Ray job's shards bit for
        bit). For the Ray job's workers and :meth:`skip_to`; this changes the rounding of what the
        run computes next (a run that settles is not the run that does not, in the last bits),
        which is why checkpoints and reads never call it."""
        window = self._window
        if window is None:
            return
        self._window = None
        to = window.epoch(self.iteration)
        if window.every <= 0:
            return
        window.cover(to)
        self._settle_into(self.regret, self.strat, self.row_epoch, to - window.base, window.kernel(), True)

    def discount_factors(self) -> Optional[tuple[float, float, float]]:
        """At a discount boundary: the (positive regret, negative regret, strategy sum) factors,
        after moving the effective-iteration count ``W`` across the boundary; else None.
        Whoever owns the tables (this trainer, or the Ray job's shards) applies the factors."""
        a = self.config.algo
        if not a.discounts_at(self.iteration):
            return None
        factors = a.factors(self.iteration // a.discount_every)
        self.w_base = (self.w_base + (self.iteration - self.t_base)) * factors[1]
        self.t_base = self.iteration
        return factors

    def skip_to(self, iteration: int, tables: bool = True) -> None:
        """Move the schedule to ``iteration`` without training: every discount boundary on the way
        moves ``w_base``/``t_base`` and, if ``tables``, discounts the tables, which are settled
        first (:meth:`settle`) and then discounted at each boundary as :func:`discount_span` does
        (the Ray job's workers skip the other workers' iterations of a round this way, equal to
        its shards bit for bit; its driver with ``tables=False``)."""
        if iteration < self.iteration:
            raise ValueError(f"cannot move the schedule back from {self.iteration} to {iteration}")
        self.settle()
        if tables:
            discount_span(self.config.algo, self.regret, self.strat, self.iteration, iteration)
        a = self.config.algo
        while self.iteration < iteration:
            nxt = iteration
            if a.discount != "none":
                nxt = min(nxt, (self.iteration // a.discount_every + 1) * a.discount_every)
            self.iteration = nxt
            self.discount_factors()

    def run(
        self,
        iterations: int,
        callback: Optional[Callable[["Trainer"], bool]] = None,
        report_seconds: float = 0.5,
    ) -> None:
        """Advance by ``iterations``; ``callback(self)`` about every ``report_seconds``.

        The callback may return True to stop early (at a chunk boundary). Spans run across
        discount boundaries (discounting is lazy); rows keep their pending boundaries when it
        returns (:meth:`settled_tables`, :meth:`save` and the strategies read them settled), so
        ``run(a)`` then ``run(b)`` is ``run(a + b)`` bit for bit.
        """
        end = self.iteration + iterations
        chunk = 1
        while self.iteration < end:
            n = min(chunk, end - self.iteration)
            t0 = time.perf_counter()
            self._step(n)
            dt = time.perf_counter() - t0
            self.seconds += dt
            if dt < report_seconds / 4:
                chunk *= 2
            elif dt > report_seconds and chunk > 1:
                chunk //= 2
            least = self._copy_span()
            if chunk < least and least * dt <= 2 * report_seconds * n:
                # spans long enough for the threads' copies to pay, when one takes at most two
                # report intervals (the main job on 2 threads: 70,082 iterations, about 0.3 s)
                chunk = least
            if callback is not None and callback(self):
                break

    def run_for(self, seconds: float, callback=None, report_seconds: float = 0.5) -> None:
        """Train for about ``seconds`` of wall time (stops at a chunk boundary)."""
        run_for(self, seconds, callback, report_seconds)

    # -- strategies ---------------------------------------------------------------------------
    def average_strategy(self) -> np.ndarray:
        """float64 probabilities in the table layout (uniform where never reached)."""
        return normalize_blocks(self.tree, self.row_offset, self.num_buckets, self.settled_tables()[1])

    def current_strategy(self) -> np.ndarray:
        return normalize_blocks(self.tree, self.row_offset, self.num_buckets, self.settled_tables()[0])

    def exploitability(self) -> tuple[float, list[float]]:
        """Exact exploitability of the average strategy (small games; ValueError otherwise). With
        more than two seats the NashConv, in chips, and each seat's best-response gain
        (:class:`blueprint.nplayer.TablesNashConv`: ``FlattenError`` if the game is too big)."""
        if self._best_response is None:
            exact = nplayer.TablesNashConv if self.game.num_players > 2 else BestResponse
            self._best_response = exact(self.tree, self.cards, self.row_offset)
        return self._best_response.exploitability(self.average_strategy())

    # -- checkpoints --------------------------------------------------------------------------
    def state_arrays(self) -> dict[str, np.ndarray]:
        """The arrays a checkpoint holds (:data:`blueprint.trainer_checkpoint.TABLES_FORMAT`): the tables as the run holds
        them, each row's epoch (the discount boundaries it has been through), the RNG."""
        base = self._lazy_window().base  # the epochs in the file count from 0
        epoch = (self.row_epoch.astype(np.int32) + base).reshape(self.num_rows, 2)
        out = {"regret": self.regret, "strat": self.strat, "epoch": epoch, "rng": self.rng}
        if self.table_bits == 16:
            out["strat_exp"] = self.strat_exp
        return out

    def manifest(self) -> dict:
        return {
            "iteration": self.iteration,
            "config": self.config_dict,
            "config_hash": self.config_hash,
            "abstraction_hash": self.abstraction_hash,
            "rng_state": [int(x) for x in self.rng],
            "w_base": self.w_base,
            "t_base": self.t_base,
            "tables_format": trainer_checkpoint.TABLES_FORMAT if self.table_bits == 16 else 2,
            "node_visits": self.node_visits,
            "pruned": self.pruned,
            "seconds": self.seconds,
            **(
                {"saturated": self.saturated, "underflowed": self.underflowed}
                if self.table_bits == 16
                else {}
            ),
        }

    def save(self, run_dir: Path, keep: Optional[int] = None) -> Path:
        """Checkpoint: the tables (one shard), the blueprint file (average strategy for queries),
        then the manifest. The tables are saved as the run holds them, rows with pending
        discount boundaries and their epochs (so the resumed run is the unbroken one); the
        blueprint file's strategy from the settled sums (:meth:`settled_tables`)."""
        meta = {"shard": 0, "of": 1, "layout_size": self.size}
        return save_checkpoint(
            Path(run_dir),
            self.iteration,
            [(self.state_arrays(), meta)],
            self.manifest(),
            keep=keep,
            replace=True,
            blueprint=blueprint_file_payload(self),
        )

    def epoch_bounds(self, iteration: int) -> tuple[int, int]:
        """The epochs a checkpoint's rows may have at ``iteration``: from its window's first
        (:func:`blueprint.discount.window_base`) to the boundaries seen."""
        e = DiscountWindow.at(self.config.algo, 0, 0.0, 0).epoch(iteration)
        return window_base(e), e

    @classmethod
    def from_manifest_config(cls, cfg: dict, cards: Optional[CardAbstraction] = None) -> "Trainer":
        """A fresh trainer for a checkpoint's resolved config (:meth:`RunConfig.from_manifest`)
        over ``cards`` (the Ray job's workers get the driver's), else over its card abstraction
        loaded (:func:`blueprint.session.card_abstraction`: built first if not in the cache)."""
        config = RunConfig.from_manifest(cfg)
        return cls(config, cards if cards is not None else card_abstraction(config.gamedef, config.cards))

    def checkpoint_layout(self, manifest: dict) -> list[dict[str, ArraySpec]]:
        """Per shard, the arrays a checkpoint of this run must hold
        (:func:`blueprint.trainer_checkpoint.checkpoint_layout`)."""
        return trainer_checkpoint.checkpoint_layout(self, manifest)

    @classmethod
    def load(cls, run_dir: Path, log=None) -> "Trainer":
        """Rebuild a trainer from the newest complete checkpoint of ``run_dir``."""
        return cls.load_checkpoint(run_dir, log=log)[0]

    @classmethod
    def load_checkpoint(cls, run_dir: Path, log=None) -> tuple["Trainer", dict]:
        """``(trainer, manifest)`` from the newest complete checkpoint of ``run_dir`` whose files
        match the layout its config implies (checked before the tables are read); damaged
        newer checkpoints are reported through ``log`` and skipped."""
        built: dict[str, Trainer] = {}

        def layout(manifest: dict) -> list:
            try:
                key = json.dumps(manifest["config"], sort_keys=True)
                if key not in built:
                    built.clear()
                    built[key] = cls.from_manifest_config(manifest["config"])
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise CheckpointError(f"its config cannot be rebuilt: {type(exc).__name__}: {exc}") from exc
            return built[key].checkpoint_layout(manifest)

        manifest, shards = load_latest(Path(run_dir), log=log, layout=layout)
        trainer = built.get(json.dumps(manifest["config"], sort_keys=True))
        return cls.from_checkpoint(run_dir, manifest, shards, trainer=trainer), manifest

    @classmethod
    def from_checkpoint(
        cls, run_dir: Path, manifest: dict, shards: list, trainer: Optional["Trainer"] = None
    ) -> "Trainer":
        """Rebuild a trainer from a loaded checkpoint (``load_latest``'s result); ``trainer``:
        one already built from ``manifest["config"]`` (its tables are replaced;
        :func:`blueprint.trainer_checkpoint.restore`)."""
        tr = trainer if trainer is not None else cls.from_manifest_config(manifest["config"])
        return trainer_checkpoint.restore(run_dir, manifest, shards, tr)


def discount_span(algo: AlgoConfig, regret: np.ndarray, strat: np.ndarray, t: int, t_end: int) -> int:
    """Discount tables (or slices of them) at every boundary in ``(t, t_end]``, in order, with the
    factors the trainer's lazy discounting applies there (the Ray job's shards and workers discount
    a round's snapshot this way). Returns the number of boundaries applied. 32-bit tables only."""
    if algo.table_bits != 32:
        raise ValueError("16-bit tables are discounted lazily only (the Ray job keeps 32-bit tables)")
    n = 0
    if algo.discount == "none":
        return n
    every = algo.discount_every
    for b in range((t // every + 1) * every, t_end + 1, every):
        if algo.discounts_at(b):
            discount_tables(regret, strat, *algo.factors(b // every), algo.regret_dtype == "int32")
            n += 1
    return n


def run_for(runner, seconds: float, callback=None, report_seconds: float = 0.5) -> None:
    """``runner.run`` (a Trainer or the Ray job) for about ``seconds`` of wall time."""
    deadline = time.perf_counter() + seconds

    def cb(r):
        stop = callback(r) if callback else False
        return stop or time.perf_counter() >= deadline

    runner.run(2**62, cb, report_seconds)


def make_trainer(
    game: Union[str, GameDef] = DEFAULT_GAME,
    bets: Optional[str] = None,
    cards: Optional[str] = None,
    algo: str = DEFAULT_ALGO,
    seed: int = DEFAULT_SEED,
    threads: int = 1,
    **algo_overrides,
) -> Trainer:
    """A trainer for ``game`` (a preset, a ``.game`` path or a parsed game; the main job's
    defaults), in the steps ``mccfr train`` takes: the config (:func:`blueprint.defaults.run_config`:
    the game parsed, the bets loaded, the algorithm with ``algo_overrides`` resolved), the card
    abstraction (:func:`blueprint.session.card_abstraction`: built first, which may take minutes,
    when a recipe is not in the cache), then the trainer. ``threads``: how many threads train on
    its tables (:meth:`Trainer.set_threads`); 1, the default, is bit-exact and deterministic, more
    are faster but not reproducible (``mccfr train`` defaults to every core)."""
    threads = check_threads(threads)
    if isinstance(game, GameDef):
        config = run_config(game.name, game, bets=bets, cards=cards, algo=algo, seed=seed, **algo_overrides)
    else:
        config = run_config(game, bets=bets, cards=cards, algo=algo, seed=seed, **algo_overrides)
    tr = Trainer(config, card_abstraction(config.gamedef, config.cards))
    tr.set_threads(threads)
    return tr
