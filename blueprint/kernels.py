"""Numba MCCFR kernels over the flat betting tree and flat regret / strategy tables.

Layout. A decision node ``n`` owns the block ``[row_offset[n], row_offset[n] + B_r * A_n)`` of
the flat tables, where ``B_r`` is the number of card buckets of the node's round and ``A_n`` its
number of actions; the entry of (bucket ``b``, action ``a``) is ``row_offset[n] + b * A_n + a``.
An information set is (node, bucket). ``regret`` is float32 or int32 (see :mod:`numerics`),
``strat`` (average-strategy sums) float32; with 16-bit tables ``regret`` is bfloat16 bits
(uint16, read through :func:`blueprint.numerics.tload`, written with stochastic rounding) and
``strat`` a :class:`blueprint.numerics.Sums` (16-bit mantissas, one exponent per row). Each kernel
compiles once per table type; the 32-bit types compile to the arithmetic they had before.

External sampling (Lanctot et al. 2009, "Monte Carlo Sampling for Regret Minimization in
Extensive Games"): one iteration is a traversal for each seat, of 2 to 10 (with more than two,
the tree's live-seat masks and each seat's hand strength give the side pots, :class:`Showdown`;
two seats compile to the two-seat code alone: :mod:`blueprint.payoffs`). Chance is sampled once per
iteration (the whole deal, shared by the traversals: each seat's regrets and the others'
strategy sums still get an unbiased sample, and hold'em's deal and buckets cost as much as a
quarter of a traversal), the opponent's actions are sampled from the current strategy (regret
matching; with ``explore`` > 0 from its mixture with the uniform strategy, without importance
weights: each seat then learns against an opponent that trembles, a perturbed game), and every
action of the traverser is explored. At a traverser node with strategy
``sigma`` and sampled action values ``v(a)`` the regret of ``a`` grows by ``v(a) - sum sigma v``;
at opponent nodes ``sigma`` is added to the average-strategy sum ("simple" averaging as in
OpenSpiel). Both estimates are unbiased up to a per-information-set constant.

Regret-based pruning (Brown & Sandholm; as in Pluribus): when a traversal is chosen for pruning
(after ``prune_start`` iterations, with probability ``prune_prob``), traverser actions whose
regret is below ``threshold`` are skipped and their regret left alone, except on the last round,
for actions that end the hand (their child is terminal), and never all actions of a node. The
threshold and the regret floor at node ``n`` are ``c_pot * pot(n) + c_w * W``: a multiple of the
chips in the node's pot (the presets; :mod:`blueprint.algo` says why), or, in runs from before,
of the effective number of iterations ``W`` under the discounting of negative regrets.

Discounting (linear CFR and DCFR, Brown & Sandholm 2019) is lazy: nothing sweeps the table at a
discount boundary. Each information set's row (its ``A_n`` entries) records in ``Rows.epoch`` how
many boundaries its regrets and, apart, its strategy sums have been through, and a traversal that
touches a row first applies the boundaries it missed at once (:func:`settle_row`; the
traverser's rows only their regrets, which it alone reads, the opponent's both): positive regrets times the product of their
factors, negative regrets times theirs, strategy sums times theirs, each product one ``exp`` of a
difference of the schedule's cumulative logs (a regret cannot change sign between two touches, so
one factor per sign class is right). The values differ from a whole-table sweep at each boundary
only in the rounding (one rounding to float32, or to an integer for int32 regrets, instead of one
per boundary; docs/training.md has the figures). The factors come from a :class:`Schedule` over a
window of boundaries. Only what the run itself does touches the rows, so a checkpoint holds the
rows with their epochs and a resumed run is the unbroken one bit for bit; whole-table reads
(strategies, blueprint files) settle a copy (:func:`settle_tables`). Iteration ``t`` has seen the
boundaries ``b <= t`` (:func:`epoch_at`), and the ``W`` of its pruning threshold and regret
floor is the effective iteration count ``W(t)`` that the schedule carries
(:func:`effective_iterations`).

Threads: :func:`es_iterations`, :func:`settle_tables` and :func:`merge_copy` release the GIL, so
the trainer runs them on several threads over the same tables (:mod:`blueprint.threads`).
:func:`discount_tables` (the eager sweep) is left to the Ray job's shards, which discount a round's
boundaries before adding its deltas (:func:`blueprint.trainer.discount_span`).

The full-traversal kernel (:func:`cfr_full_iteration`) runs vanilla CFR or CFR+ (Tammelin 2014)
over an explicit list of deals with the same tree, tables and card buckets, for small games.

Arguments. The kernels take their arrays in a few typed NamedTuples, each one argument (numba
passes a tuple's members as it would pass them one by one): the tree as
:class:`abstraction.tree.TreeArrays` (``BettingTree.kernel_arrays()``), the card abstraction and the
deal's shape as :class:`abstraction.cards.CardArrays` (``CardAbstraction.kernel_arrays(game)``), the
tables with their layout as :class:`blueprint.tables.Tables`, and the sampled kernel's options as
:class:`ESOptions`. Each field's type is fixed, so each kernel compiles once per regret dtype.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from abstraction.cards import card_buckets
from abstraction.isomorphism import prefetch
from abstraction.tree import KIND_DECISION
from blueprint.numerics import (
    rng_below,
    rng_uniform,
    sr_seed,
    sums_add,
    sums_prefetch,
    sums_scale,
    tload,
    tstore_rn,
    tstore_sr,
)
from blueprint.payoffs import Showdown, deal_winner, pot_at, terminal_utility, utility


class ESOptions(NamedTuple):
    """The options of :func:`es_iterations` (float64, but ``int_regret``), in the units of the
    stored regrets (:mod:`blueprint.numerics`)."""

    prune_start: float  # iteration from which traversals may prune
    prune_prob: float  # probability that a traversal prunes (0 disables pruning)
    prune_c: float  # pruning threshold per effective iteration (negative; 0 with prune_pot)
    floor_c: float  # regret floor per effective iteration (negative; 0 with floor_pot)
    prune_pot: float  # pruning threshold per chip in the node's pot (negative; 0: per iteration)
    floor_pot: float  # regret floor per chip in the node's pot (negative; 0: per iteration)
    ceil: float  # regrets are clipped to [max(floor, -ceil), ceil]
    int_regret: bool  # int32 regrets: each update is rounded to an integer
    scale: float  # stored units per chip
    explore: float  # opponent actions sampled from (1 - explore) * sigma + explore * uniform
    prefetch: bool  # ask the cache for the children's rows at each node (tables bigger than a cache)


class Schedule(NamedTuple):
    """The discount schedule over a window of boundaries (:class:`blueprint.discount.DiscountWindow`),
    for :func:`settle_row` and the thresholds: boundary ``j`` (the ``j``-th, at iteration count
    ``j * every``) has index ``j - base`` in the factor arrays (index 0 is the window's first
    epoch: its factors unused, its cumulative logs 0) and ``j - wbase`` in ``w`` and ``t_at``."""

    every: int  # discount_every; 0: no discounting (every row stays at epoch 0)
    until: int  # boundaries fall at iteration counts <= until; -1: for the whole run
    base: int  # the epoch of index 0 (every row's epoch is >= base)
    pos: np.ndarray  # float64 [K]: positive-regret factor of boundary base + i
    neg: np.ndarray  # float64 [K]: negative-regret factor
    avg: np.ndarray  # float64 [K]: strategy-sum factor
    lpos: np.ndarray  # float64 [K]: sum of log(pos) over boundaries base + 1 .. base + i, in order
    lneg: np.ndarray  # float64 [K]: the same for the negative-regret factors
    lavg: np.ndarray  # float64 [K]: the same for the strategy-sum factors
    wbase: int  # the epoch of index 0 of w and t_at (>= base)
    w: np.ndarray  # float64 [KW]: the effective iteration count W at iteration count t_at[i]
    t_at: np.ndarray  # int64 [KW]: the iteration count of boundary wbase + i (W(t) = w + t - t_at)


class Rows(NamedTuple):
    """Information-set rows: their ids and how many discount boundaries each has been through."""

    node_row: np.ndarray  # int64 [N]: the row of (node, bucket 0); row (n, b) is node_row[n] + b
    # uint8 [2 * rows]: the boundaries applied to each row's regrets (2 * row) and strategy sums
    # (2 * row + 1), counted from the window's first (Schedule.base; at most MAX_WINDOW); None
    # where no boundary lies ahead (:meth:`under`)
    epoch: np.ndarray | None

    def under(self, sched: "Schedule") -> "Rows":
        """The rows as :func:`es_iterations` takes them under ``sched``: without their epochs where
        it has no boundary (``every`` 0: no discounting, or ``pluribus`` past its last), so that
        the kernel is compiled without the epoch checks (numba prunes ``epoch is not None`` on the
        argument's type). The checks do nothing there, yet their code costs speed: Leduc runs
        1.17x without it."""
        return self if sched.every > 0 else Rows(self.node_row, None)


class _Stack(NamedTuple):
    """Work arrays of :func:`_es_traverse` (allocated once per :func:`es_iterations` call): a frame
    per traverser node on the current path, ``maxa`` entries per frame in the flat ones."""

    sig: np.ndarray  # float64 [depth * maxa]: the frame's current strategy
    val: np.ndarray  # float64 [depth * maxa]: the values of the children explored
    flag: np.ndarray  # uint8 [depth * maxa]: 1 if the action was explored (not pruned)
    osig: np.ndarray  # float64 [maxa]: an opponent node's strategy
    f_node: np.ndarray  # int64 [depth]
    f_base: np.ndarray  # int64 [depth]: the node's row in the tables for the traverser's bucket
    f_next: np.ndarray  # int64 [depth]: the next action to explore
    f_val: np.ndarray  # float64 [depth]: the strategy-weighted value so far
    f_prune: np.ndarray  # bool [depth]: prune this node's actions
    maxa: int
    # int64 [4]: decision nodes visited, actions pruned, and with 16-bit tables the updates that
    # saturated at the largest bfloat16 and the nonzero ones that underflowed to zero
    stats: np.ndarray
    srng: np.ndarray  # uint64 [1]: 16-bit tables' rounding stream, seeded per traversal


@numba.njit(cache=True, inline="always", error_model="numpy")
def regret_matching(regret, base, na, out, off):
    """Current strategy of the block at ``base`` into ``out[off:off+na]``."""
    total = 0.0
    for a in range(na):
        r = tload(regret, base + a)
        if r > 0.0:
            out[off + a] = r
            total += r
        else:
            out[off + a] = 0.0
    if total > 0.0:
        for a in range(na):
            out[off + a] /= total
    else:
        u = 1.0 / na
        for a in range(na):
            out[off + a] = u


@numba.njit(cache=True, inline="always", error_model="numpy")
def _drop_pruned(sig, off, regret, base, na, th, kind, echild, cs):
    """The strategy a pruning traversal values the node by: no weight on the actions it skips
    (their regrets are negative, so regret matching gave them none unless every regret is <= 0
    and it played uniformly: then uniformly over the explored actions). Without this, the node's
    value would count a skipped action's unexplored value as 0."""
    total = 0.0
    for a in range(na):
        if tload(regret, base + a) < th and kind[echild[cs + a]] == KIND_DECISION:
            sig[off + a] = 0.0
        total += sig[off + a]
    for a in range(na):
        sig[off + a] /= total


@numba.njit(cache=True, inline="always", error_model="numpy")
def epoch_at(t, sched):
    """The boundaries iteration ``t`` (0-based; ``t`` iterations done before it) has seen."""
    if sched.every <= 0:
        return 0
    if 0 <= sched.until < t:
        t = sched.until
    return t // sched.every


@numba.njit(cache=True, inline="always", error_model="numpy")
def effective_iterations(t, sched):
    """``W(t)``: iterations counted with the negative regrets' discounting (the thresholds' unit)."""
    i = epoch_at(t, sched) - sched.wbase
    return sched.w[i] + float(t - sched.t_at[i])


@numba.njit(cache=True, inline="always", error_model="numpy")
def _scale_regrets(base, na, regret, pf, nf, int_regret):
    for a in range(na):
        r = tload(regret, base + a)
        r = r * pf if r > 0.0 else r * nf
        if int_regret:
            r = np.floor(r + 0.5)
        tstore_rn(regret, base + a, r)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _scale_sums(row, base, na, strat, af):
    if af != 1.0:
        sums_scale(strat, row, base, na, af)


@numba.njit(cache=True, inline="always", error_model="numpy")
def settle_row(row, base, na, regret, strat, epoch, to, sched, int_regret):
    """Bring row ``row`` (entries ``base .. base + na - 1``) through the boundaries up to epoch
    ``to`` it has not seen, all at once: positive regrets times the product of their factors,
    negative ones times theirs (a regret keeps its sign between touches, so one factor per sign
    class is exact up to rounding), rounded to an integer for int32 regrets, strategy sums times
    theirs; each product is ``exp(L[to] - L[e])`` of the schedule's cumulative logs, so the cost
    does not grow with the boundaries missed. The regrets' epoch is ``epoch[2 * row]``, the
    strategy sums' ``epoch[2 * row + 1]`` (a traverser's visit settles the regrets only). A part
    already at ``to`` or past it (another thread's later iteration on shared tables) is left
    alone. Its epoch is written first, which narrows the window in which two threads on shared
    tables could both discount it to a few instructions (as rare as a lost update)."""
    e = epoch[2 * row]
    if e < to:
        epoch[2 * row] = to
        pf = np.exp(sched.lpos[to] - sched.lpos[e])
        nf = np.exp(sched.lneg[to] - sched.lneg[e])
        _scale_regrets(base, na, regret, pf, nf, int_regret)
    e = epoch[2 * row + 1]
    if e < to:
        epoch[2 * row + 1] = to
        _scale_sums(row, base, na, strat, np.exp(sched.lavg[to] - sched.lavg[e]))


@numba.njit(cache=True, inline="always", error_model="numpy")
def fill_factors(now, sched, fac):
    """``fac[k, i]`` (float64 ``[3, K]``): the factor from epoch ``base + i`` to ``now`` for
    positive regrets (k = 0), negative ones (1) and strategy sums (2), for every ``i`` up to
    ``now``'s index: the very values :func:`settle_row` computes (the same ``exp`` of the same
    difference), so a traversal looks them up instead of computing three ``exp`` per row. At most
    :data:`blueprint.discount.MAX_WINDOW` of each, once per epoch a traversal reaches."""
    j = now
    lp, ln, la = sched.lpos[j], sched.lneg[j], sched.lavg[j]
    for i in range(j + 1):
        fac[0, i] = np.exp(lp - sched.lpos[i])
        fac[1, i] = np.exp(ln - sched.lneg[i])
        fac[2, i] = np.exp(la - sched.lavg[i])


@numba.njit(cache=True, inline="always", error_model="numpy")
def settle_regrets_at(row, base, na, regret, epoch, to, sched, fac, int_regret):
    """:func:`settle_row`'s regrets to ``to`` with the factors looked up in ``fac``
    (:func:`fill_factors` for ``to``): bit for bit the same values."""
    e = epoch[2 * row]
    if e < to:
        epoch[2 * row] = to
        _scale_regrets(base, na, regret, fac[0, e], fac[1, e], int_regret)


@numba.njit(cache=True, inline="always", error_model="numpy")
def settle_sums_at(row, base, na, strat, epoch, to, sched, fac):
    """:func:`settle_row`'s strategy sums to ``to``, the factor looked up in ``fac``."""
    e = epoch[2 * row + 1]
    if e < to:
        epoch[2 * row + 1] = to
        _scale_sums(row, base, na, strat, fac[2, e])


@numba.njit(cache=True, inline="always", error_model="numpy")
def settle_row_chain(row, base, na, regret, strat, epoch, to, sched, int_regret):
    """:func:`settle_row` one boundary after another, each as :func:`discount_tables` sweeps the
    whole table (bit for bit: the same float64 products, rounded to the tables' types at each
    boundary): for whole-table settling where the result must equal the Ray job's eager
    discounting (:meth:`blueprint.trainer.Trainer.settle`)."""
    e = epoch[2 * row]
    if e < to:
        epoch[2 * row] = to
        for j in range(e + 1, to + 1):
            _scale_regrets(base, na, regret, sched.pos[j], sched.neg[j], int_regret)
    e = epoch[2 * row + 1]
    if e < to:
        epoch[2 * row + 1] = to
        for j in range(e + 1, to + 1):
            _scale_sums(row, base, na, strat, sched.avg[j])


@numba.njit(cache=True, inline="always", error_model="numpy")
def _prefetch_children(n, trav, tree, tables, node_row, epoch, buckets):
    """Ask the cache for the rows of ``n``'s decision children for this deal's buckets (the
    regrets, the strategy sums an opponent's node adds to, and the rows' epochs under
    discounting), so that their misses overlap the work at ``n`` and at the siblings explored
    first instead of stalling the walk one by one."""
    kind, player, rnd, nact = tree.kind, tree.player, tree.round, tree.num_actions
    cs = tree.child_start[n]
    for a in range(nact[n]):
        c = tree.edge_child[cs + a]
        if kind[c] == KIND_DECISION:
            b = buckets[player[c], rnd[c]]
            row = tables.row_offset[c] + b * nact[c]
            prefetch(tables.regret, row)
            if player[c] != trav:
                sums_prefetch(tables.strat, row, node_row[c] + b)
            if epoch is not None:
                prefetch(epoch, 2 * (node_row[c] + b))


@numba.njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def _es_traverse(
    trav,
    tree,
    tables,
    node_row,
    epoch,
    sched,
    fac,
    now,
    buckets,
    winner,
    rng,
    prune_now,
    thresh,
    floor,
    opts,
    last_round,
    st,
):
    """One external-sampling traversal for seat ``trav`` from the root; returns its value.

    Iterative depth-first search: a frame per traverser node on the current path (``st`` a
    :class:`_Stack`: ``f_*`` arrays, strategy in ``sig[d * maxa:]``, child values in ``val``,
    explored flags in ``flag``); opponent nodes need no frame (one sampled child). Every row is
    brought to epoch ``now`` (:func:`settle_row`) before it is read: the traverser's rows their
    regrets, the opponent's their regrets and strategy sums (the only ones it adds to).

    ``winner``: the deal's showdown winner with two seats, a :class:`Showdown` with more (the
    kernel compiles once for each; the two-seat one has none of the N-seat code).
    """
    kind, player, rnd, spent = tree.kind, tree.player, tree.round, tree.spent
    nact, cstart, echild = tree.num_actions, tree.child_start, tree.edge_child
    row_off, regret, strat = tables.row_offset, tables.regret, tables.strat
    ceil, int_regret, scale = opts.ceil, opts.int_regret, opts.scale
    prune_pot, floor_pot = opts.prune_pot, opts.floor_pot
    explore = opts.explore
    keep = 1.0 - explore
    pf = opts.prefetch
    sig, val, flag, osig, maxa, stats = st.sig, st.val, st.flag, st.osig, st.maxa, st.stats
    f_node, f_base, f_next, f_val, f_prune = st.f_node, st.f_base, st.f_next, st.f_val, st.f_prune
    cnt = stats[2:4]  # 16-bit tables: values saturated, values underflowed to zero
    srng = st.srng
    sr_seed(regret, rng, srng)  # 16-bit tables: the stochastic rounding's stream (32: nothing)
    visits = 0  # counted here, added to ``stats`` once per traversal
    npruned = 0
    sp = 0
    cur = 0
    while True:
        # descend through opponent nodes to a terminal or a traverser node
        while kind[cur] == KIND_DECISION and player[cur] != trav:
            visits += 1
            na = nact[cur]
            b = buckets[player[cur], rnd[cur]]
            base = row_off[cur] + b * na
            if pf:
                _prefetch_children(cur, trav, tree, tables, node_row, epoch, buckets)
            if epoch is not None:
                settle_regrets_at(node_row[cur] + b, base, na, regret, epoch, now, sched, fac, int_regret)
                settle_sums_at(node_row[cur] + b, base, na, strat, epoch, now, sched, fac)
            regret_matching(regret, base, na, osig, 0)
            sums_add(strat, node_row[cur] + b, base, na, osig, srng, cnt)
            u = rng_uniform(rng)
            acc = 0.0
            pick = na - 1
            mix = explore / na
            for a in range(na):
                acc += keep * osig[a] + mix
                if u < acc:
                    pick = a
                    break
            cur = echild[cstart[cur] + pick]
        if kind[cur] != KIND_DECISION:
            ret = utility(cur, trav, kind, player, spent, winner)
            have_ret = True
        else:
            visits += 1
            na = nact[cur]
            b = buckets[trav, rnd[cur]]
            base = row_off[cur] + b * na
            if pf:
                _prefetch_children(cur, trav, tree, tables, node_row, epoch, buckets)
            if epoch is not None:
                settle_regrets_at(node_row[cur] + b, base, na, regret, epoch, now, sched, fac, int_regret)
            off = sp * maxa
            regret_matching(regret, base, na, sig, off)
            prune = prune_now and rnd[cur] != last_round
            if prune:
                cs = cstart[cur]
                th = thresh + prune_pot * pot_at(spent, cur, winner)
                prunable = 0
                for a in range(na):
                    if tload(regret, base + a) < th and kind[echild[cs + a]] == KIND_DECISION:
                        prunable += 1
                prune = prunable < na
                if prune and prunable > 0:
                    _drop_pruned(sig, off, regret, base, na, th, kind, echild, cs)
            f_node[sp] = cur
            f_base[sp] = base
            f_next[sp] = 0
            f_val[sp] = 0.0
            f_prune[sp] = prune
            sp += 1
            ret = 0.0
            have_ret = False
        # unwind: hand values up, and find the next child to explore
        while True:
            f = sp - 1
            if have_ret:
                if sp == 0:
                    stats[0] += visits
                    stats[1] += npruned
                    return ret
                a = f_next[f]
                val[f * maxa + a] = ret
                f_val[f] += sig[f * maxa + a] * ret
                f_next[f] = a + 1
                have_ret = False
            n = f_node[f]
            na = nact[n]
            cs = cstart[n]
            base = f_base[f]
            off = f * maxa
            a = f_next[f]
            if f_prune[f]:
                th = thresh + prune_pot * pot_at(spent, n, winner)
                while a < na and tload(regret, base + a) < th and kind[echild[cs + a]] == KIND_DECISION:
                    flag[off + a] = 0
                    npruned += 1
                    a += 1
            f_next[f] = a
            if a < na:
                flag[off + a] = 1
                cur = echild[cs + a]
                break
            # all children done: update regrets, pop the frame
            v = f_val[f]
            fl = floor + floor_pot * pot_at(spent, n, winner)
            if fl < -ceil:
                fl = -ceil
            for b in range(na):
                if flag[off + b]:
                    r = tload(regret, base + b) + (val[off + b] - v) * scale
                    if r < fl:
                        r = fl
                    elif r > ceil:
                        r = ceil
                    if int_regret:
                        r = np.floor(r + 0.5)
                    tstore_sr(regret, base + b, r, srng, cnt)
            sp -= 1
            ret = v
            have_ret = True


@numba.njit(cache=True, error_model="numpy")
def sample_deal(rng, perm, deck_size, deal):
    """Draw ``len(deal)`` distinct cards uniformly (partial Fisher-Yates from the identity)."""
    for i in range(deck_size):
        perm[i] = i
    for i in range(deal.shape[0]):
        j = i + rng_below(rng, deck_size - i)
        t = perm[i]
        perm[i] = perm[j]
        perm[j] = t
        deal[i] = perm[i]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def es_iterations(n_iters, t0, stride, tree, live, cards, tables, rows, sched, rng, opts, max_depth, maxa):
    """Run ``n_iters`` external-sampling iterations: iterations ``t0, t0 + stride, ...`` (0-based;
    one thread runs ``stride`` 1, ``T`` threads interleave their iterations with stride ``T``, so
    that they cross the discount boundaries together).

    ``tree``: :class:`abstraction.tree.TreeArrays`; ``live``: ``BettingTree.kernel_live()`` (None
    with two seats); ``cards``: :class:`abstraction.cards.CardArrays`;
    ``tables``: :class:`blueprint.tables.Tables` (``regret`` and ``strat`` are updated in place);
    ``rows``: :class:`Rows` (their epochs advance in place); ``sched``: :class:`Schedule` covering
    the iterations' epochs; ``rng``: the xoshiro state (advanced in place); ``opts``:
    :class:`ESOptions`; ``max_depth`` and ``maxa``: the tree's depth
    (:func:`blueprint.tables.tree_depth`) and the most actions of a node, which size the
    traversal's stack.
    Returns int64 [4]: decision nodes visited, actions pruned, updates saturated and updates
    underflowed (16-bit tables: :mod:`blueprint.numerics`, "Compact tables"; 0 otherwise).

    Releases the GIL: several threads may run it at once on the same ``tables``, each with its own
    ``rng`` (:mod:`blueprint.threads`); its scratch arrays are allocated per call.
    """
    board_per_round = cards.board_per_round
    num_rounds = board_per_round.shape[0]
    seats = 2
    if live is not None:
        seats = tree.spent.shape[1]
    ncards = seats * cards.num_hole
    for r in range(num_rounds):
        ncards += board_per_round[r]
    deal = np.empty(ncards, np.int64)
    perm = np.empty(cards.deck_size, np.int64)
    work = np.empty(2 * ncards + 2, np.int64)
    buckets = np.zeros((seats, num_rounds), np.int64)
    depth = max_depth + 1
    st = _Stack(
        np.zeros(depth * maxa, np.float64),
        np.zeros(depth * maxa, np.float64),
        np.zeros(depth * maxa, np.uint8),
        np.zeros(maxa, np.float64),
        np.zeros(depth, np.int64),
        np.zeros(depth, np.int64),
        np.zeros(depth, np.int64),
        np.zeros(depth, np.float64),
        np.zeros(depth, np.bool_),
        maxa,
        np.zeros(4, np.int64),
        np.zeros(1, np.uint64),
    )
    if live is None:
        showdown = None
    else:
        showdown = Showdown(live, np.zeros(seats, np.int64), np.zeros(seats, np.int64))
    fac = np.ones((3, sched.lpos.shape[0]), np.float64)
    _es_loop(
        n_iters,
        t0,
        stride,
        tree,
        cards,
        tables,
        rows.node_row,
        rows.epoch,
        sched,
        rng,
        opts,
        seats,
        deal,
        perm,
        work,
        buckets,
        st,
        showdown,
        fac,
    )
    return st.stats


@numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def _es_loop(
    n_iters,
    t0,
    stride,
    tree,
    cards,
    tables,
    node_row,
    epoch,
    sched,
    rng,
    opts,
    seats,
    deal,
    perm,
    work,
    buckets,
    st,
    showdown,
    fac,
):
    """:func:`es_iterations`' loop over its iterations, on the scratch arrays it allocated.

    Compiled without numba's reference counting (``_nrt=False``), as :func:`_es_traverse` and the
    deal's :func:`abstraction.cards.deal_buckets`: nothing here allocates or keeps an array, and
    the counts' atomic increments and decrements on every call and every read of a record's array
    took half of a Leduc iteration's time. :func:`_es_traverse` is inlined here: called, it was
    handed every record's arrays by value, a fifth of a 3-player Leduc iteration. ``epoch`` is an
    argument of its own (not ``rows.epoch``) so that numba still prunes the traversal's
    ``epoch is not None`` branches on its type."""
    prune_start, prune_prob, prune_c, floor_c = opts.prune_start, opts.prune_prob, opts.prune_c, opts.floor_c
    last_round = cards.board_per_round.shape[0] - 1
    have = -1  # the epoch fac holds the factors to
    for it in range(n_iters):
        t = t0 + it * stride
        now = epoch_at(t, sched) - sched.base  # epochs count from the window's first
        if now != have and sched.every > 0:
            fill_factors(now, sched, fac)
            have = now
        w = effective_iterations(t, sched)
        thresh = prune_c * w
        floor = floor_c * w  # plus the node's pot term, clipped at -ceil, in _es_traverse
        # one deal for both traversals: each is still a chance sample of its own (the seats'
        # updates touch different information sets), and the deal and its buckets cost about a
        # quarter of a hold'em traversal
        sample_deal(rng, perm, cards.deck_size, deal)
        winner = deal_winner(cards, deal, buckets, work, showdown)
        for trav in range(seats):
            prune_now = False
            if prune_prob > 0.0 and t >= prune_start:
                prune_now = rng_uniform(rng) < prune_prob
            _es_traverse(
                trav,
                tree,
                tables,
                node_row,
                epoch,
                sched,
                fac,
                now,
                buckets,
                winner,
                rng,
                prune_now,
                thresh,
                floor,
                opts,
                last_round,
                st,
            )


class Copy(NamedTuple):
    """A thread's copy of the tables and its base: the shared tables as of its last merge
    (:mod:`blueprint.threads`, "Copies"), each with its rows' epochs."""

    regret: np.ndarray
    strat: np.ndarray
    epoch: np.ndarray
    base_regret: np.ndarray
    base_strat: np.ndarray
    base_epoch: np.ndarray


@numba.njit(cache=True, inline="always", error_model="numpy")
def _merge_row(r, e, na, regret, strat, epoch, cp, sched, floor, ceil, int_regret):
    c_reg, c_str, c_ep, b_reg, b_str, b_ep = cp
    changed = c_ep[2 * r] != b_ep[2 * r] or c_ep[2 * r + 1] != b_ep[2 * r + 1]
    if not changed:
        for a in range(na):
            if c_reg[e + a] != b_reg[e + a] or c_str[e + a] != b_str[e + a]:
                changed = True
                break
    if changed:
        if sched.every > 0:
            # the shared row, the base and the copy through the same boundaries: the thread's
            # update is the copy minus its base discounted as the shared row is
            to = max(max(epoch[2 * r], epoch[2 * r + 1]), max(c_ep[2 * r], c_ep[2 * r + 1]))
            settle_row(r, e, na, regret, strat, epoch, to, sched, int_regret)
            settle_row(r, e, na, b_reg, b_str, b_ep, to, sched, int_regret)
            settle_row(r, e, na, c_reg, c_str, c_ep, to, sched, int_regret)
        for i in range(e, e + na):
            if c_reg[i] != b_reg[i]:
                x = float(regret[i]) + (float(c_reg[i]) - float(b_reg[i]))
                if x < floor:
                    x = floor
                elif x > ceil:
                    x = ceil
                if int_regret:
                    x = np.floor(x + 0.5)
                regret[i] = x
            if c_str[i] != b_str[i]:
                strat[i] += c_str[i] - b_str[i]
    for i in range(e, e + na):
        c_reg[i] = regret[i]
        b_reg[i] = c_reg[i]
        c_str[i] = strat[i]
        b_str[i] = c_str[i]
    for k in range(2 * r, 2 * r + 2):
        c_ep[k] = epoch[k]
        b_ep[k] = c_ep[k]


@numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def merge_copy(nodes, layout, regret, strat, epoch, cp, sched, floor, ceil, int_regret):
    """Add a thread's updates of its copy of the tables since the last merge (copy minus base) to
    the shared ``regret`` and ``strat``, the regrets clipped to ``[floor[d], ceil]`` as a traversal
    clips them (``floor``: float64 ``[D]``, each node's regret floor, >= ``-ceil``), then take the shared tables (every other thread's merged updates with them) as the
    copy and its new base (:mod:`blueprint.threads`, "Copies"); the rows of the decision nodes
    ``nodes`` (indices into ``layout``, a :class:`blueprint.tables.RowLayout`) only. ``cp``: a :class:`Copy`.

    Discounting folds into the merge: a row the thread changed is brought, in the shared tables,
    the copy and the base alike, through every boundary either the copy or the shared row has seen
    (:func:`settle_row`) before the copy's update is added; a row it left alone is handed back as
    the shared tables hold it, epoch and all, with no discounting."""
    for k in range(nodes.shape[0]):
        d = nodes[k]
        na = layout.width[d]
        for b in range(layout.rows[d]):
            _merge_row(
                layout.row[d] + b,
                layout.entry[d] + b * na,
                na,
                regret,
                strat,
                epoch,
                cp,
                sched,
                floor[d],
                ceil,
                int_regret,
            )


@numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def settle_tables(nodes, layout, regret, strat, epoch, to, sched, int_regret, chain):
    """Bring every row of the decision nodes ``nodes`` (indices into ``layout``) through the
    boundaries up to epoch ``to``: at once (:func:`settle_row`, as a traversal would), or with
    ``chain`` one boundary after another (:func:`settle_row_chain`, as the eager sweep)."""
    for k in range(nodes.shape[0]):
        d = nodes[k]
        na = layout.width[d]
        for b in range(layout.rows[d]):
            r = layout.row[d] + b
            e = layout.entry[d] + b * na
            if chain:
                settle_row_chain(r, e, na, regret, strat, epoch, to, sched, int_regret)
            else:
                settle_row(r, e, na, regret, strat, epoch, to, sched, int_regret)


@numba.njit(cache=True, nogil=True, error_model="numpy", _nrt=False)
def discount_tables(regret, strat, pos_f, neg_f, avg_f, int_regret):
    """Scale positive regrets by ``pos_f``, negative by ``neg_f`` and strategy sums by ``avg_f``: a
    whole table's (or a slice's) discount at one boundary, as the Ray job's shards apply it (the
    trainer discounts lazily, row by row: :func:`settle_row`)."""
    for i in range(regret.shape[0]):
        r = float(regret[i])
        r = r * pos_f if r > 0.0 else r * neg_f
        if int_regret:
            r = np.floor(r + 0.5)
        regret[i] = r
    if avg_f != 1.0:
        for i in range(strat.shape[0]):
            strat[i] *= avg_f


# Not cached: numba's on-disk cache mishandles self-recursive functions (a cached copy segfaults
# when loaded in a new process), so the full-traversal kernels compile in each process.
@numba.njit
def _full_traverse(
    n, trav, tree, tables, buckets, winner, delta, reach_p, reach_o, avg_w, sig, val, depth, maxa
):
    kind, player, nact, cstart, echild = (
        tree.kind,
        tree.player,
        tree.num_actions,
        tree.child_start,
        tree.edge_child,
    )
    regret, strat = tables.regret, tables.strat
    if kind[n] != KIND_DECISION:
        return terminal_utility(n, trav, kind, player, tree.spent, winner)
    p = player[n]
    na = nact[n]
    base = tables.row_offset[n] + buckets[p, tree.round[n]] * na
    off = depth * maxa
    regret_matching(regret, base, na, sig, off)
    cs = cstart[n]
    v = 0.0
    if p == trav:
        for a in range(na):
            va = _full_traverse(
                echild[cs + a],
                trav,
                tree,
                tables,
                buckets,
                winner,
                delta,
                reach_p * sig[off + a],
                reach_o,
                avg_w,
                sig,
                val,
                depth + 1,
                maxa,
            )
            val[off + a] = va
            v += sig[off + a] * va
        for a in range(na):
            delta[base + a] += reach_o * (val[off + a] - v)
            strat[base + a] += avg_w * reach_p * sig[off + a]
        return v
    for a in range(na):
        s = sig[off + a]
        if s > 0.0:
            v += s * _full_traverse(
                echild[cs + a],
                trav,
                tree,
                tables,
                buckets,
                winner,
                delta,
                reach_p,
                reach_o * s,
                avg_w,
                sig,
                val,
                depth + 1,
                maxa,
            )
    return v


@numba.njit
def cfr_full_iteration(t, tree, cards, tables, deals, delta, plus, max_depth, maxa):
    """One CFR iteration (alternating updates) over all ``deals`` (int64 [D, cards], equally likely).

    ``tree``, ``cards``, ``tables``, ``max_depth``, ``maxa`` as for :func:`es_iterations`
    (``tables.regret`` must be float here); ``delta``: float64 scratch of the tables' size.
    ``plus``: CFR+ (regrets floored at 0 after each update, average weighted by ``t + 1``);
    otherwise vanilla CFR (uniform average). Returns the expected value of seat 0 under the current
    strategy (computed in seat 0's pass).
    """
    regret = tables.regret
    num_rounds = cards.board_per_round.shape[0]
    buckets = np.zeros((2, num_rounds), np.int64)
    work = np.empty(2 * deals.shape[1] + 2, np.int64)
    sig = np.zeros((max_depth + 1) * maxa, np.float64)
    val = np.zeros((max_depth + 1) * maxa, np.float64)
    nd = deals.shape[0]
    w = 1.0 / nd
    avg_w = float(t + 1) if plus else 1.0
    ev0 = 0.0
    for trav in range(2):
        delta[:] = 0.0
        for d in range(nd):
            winner = card_buckets(cards, deals[d], buckets, work)
            v = _full_traverse(
                0, trav, tree, tables, buckets, winner, delta, 1.0, w, avg_w, sig, val, 0, maxa
            )
            if trav == 0:
                ev0 += w * v
        for i in range(regret.shape[0]):
            r = regret[i] + delta[i]
            if plus and r < 0.0:
                r = 0.0
            regret[i] = r
    return ev0
