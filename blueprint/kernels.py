"""Numba MCCFR kernels over the flat betting tree and flat regret / strategy tables.

Layout. A decision node ``n`` owns the block ``[row_offset[n], row_offset[n] + B_r * A_n)`` of
the flat tables, where ``B_r`` is the number of card buckets of the node's round and ``A_n`` its
number of actions; the entry of (bucket ``b``, action ``a``) is ``row_offset[n] + b * A_n + a``.
An information set is (node, bucket). ``regret`` is float32 or int32 (see :mod:`numerics`),
``strat`` (average-strategy sums) float32.

External sampling (Lanctot et al. 2009, "Monte Carlo Sampling for Regret Minimization in
Extensive Games"): one iteration is a traversal for each seat. Chance is sampled once per
iteration (the whole deal, shared by the two traversals: each seat's regrets and the other's
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
threshold and the regret floor are ``c * W`` where ``W`` is the effective number of iterations
under the discounting of negative regrets, so they keep their meaning (an average regret per
iteration, in chips) when regrets are discounted.

Discounting (linear CFR and DCFR, Brown & Sandholm 2019) is not done here: the trainer calls
:func:`discount_tables` every ``discount_every`` iterations, so no iteration sweeps the table.

Threads: :func:`es_iterations`, :func:`discount_tables` and :func:`merge_copy` release the GIL, so
the trainer runs them on several threads over the same tables (:mod:`blueprint.threads`).

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
from abstraction.tree import KIND_DECISION, KIND_FOLD
from blueprint.numerics import rng_below, rng_uniform


class ESOptions(NamedTuple):
    """The options of :func:`es_iterations` (float64, but ``int_regret``), in the units of the
    stored regrets (:mod:`blueprint.numerics`)."""

    prune_start: float  # iteration from which traversals may prune
    prune_prob: float  # probability that a traversal prunes (0 disables pruning)
    prune_c: float  # pruning threshold per effective iteration (negative)
    floor_c: float  # regret floor per effective iteration (negative)
    w_base: float  # the effective iteration count W at iteration t_base: W(t) = w_base + t - t_base
    t_base: float
    ceil: float  # regrets are clipped to [max(floor, -ceil), ceil]
    int_regret: bool  # int32 regrets: each update is rounded to an integer
    scale: float  # stored units per chip
    explore: float  # opponent actions sampled from (1 - explore) * sigma + explore * uniform
    prefetch: bool  # ask the cache for the children's rows at each node (tables bigger than a cache)


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
    stats: np.ndarray  # int64 [2]: decision nodes visited, actions pruned


@numba.njit(cache=True, inline="always", error_model="numpy")
def terminal_utility(n, trav, kind, player, spent, winner):
    """Net chips for seat ``trav`` at terminal node ``n``."""
    if kind[n] == KIND_FOLD:
        folder = player[n]
        if folder == trav:
            return -float(spent[n, trav])
        return float(spent[n, folder])
    if winner < 0:
        return 0.0
    v = float(min(spent[n, 0], spent[n, 1]))
    return v if winner == trav else -v


@numba.njit(cache=True, inline="always", error_model="numpy")
def regret_matching(regret, base, na, out, off):
    """Current strategy of the block at ``base`` into ``out[off:off+na]``."""
    total = 0.0
    for a in range(na):
        r = float(regret[base + a])
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
def _prefetch_children(n, trav, tree, tables, buckets):
    """Ask the cache for the rows of ``n``'s decision children for this deal's buckets (the
    regrets, and the strategy sums an opponent's node adds to), so that their misses overlap the
    work at ``n`` and at the siblings explored first instead of stalling the walk one by one."""
    kind, player, rnd, nact = tree.kind, tree.player, tree.round, tree.num_actions
    cs = tree.child_start[n]
    for a in range(nact[n]):
        c = tree.edge_child[cs + a]
        if kind[c] == KIND_DECISION:
            row = tables.row_offset[c] + buckets[player[c], rnd[c]] * nact[c]
            prefetch(tables.regret, row)
            if player[c] != trav:
                prefetch(tables.strat, row)


@numba.njit(cache=True, error_model="numpy")
def _es_traverse(trav, tree, tables, buckets, winner, rng, prune_now, thresh, floor, opts, last_round, st):
    """One external-sampling traversal for seat ``trav`` from the root; returns its value.

    Iterative depth-first search: a frame per traverser node on the current path (``st`` a
    :class:`_Stack`: ``f_*`` arrays, strategy in ``sig[d * maxa:]``, child values in ``val``,
    explored flags in ``flag``); opponent nodes need no frame (one sampled child).
    """
    kind, player, rnd, spent = tree.kind, tree.player, tree.round, tree.spent
    nact, cstart, echild = tree.num_actions, tree.child_start, tree.edge_child
    row_off, regret, strat = tables.row_offset, tables.regret, tables.strat
    ceil, int_regret, scale = opts.ceil, opts.int_regret, opts.scale
    explore = opts.explore
    keep = 1.0 - explore
    pf = opts.prefetch
    sig, val, flag, osig, maxa, stats = st.sig, st.val, st.flag, st.osig, st.maxa, st.stats
    f_node, f_base, f_next, f_val, f_prune = st.f_node, st.f_base, st.f_next, st.f_val, st.f_prune
    visits = 0  # counted here, added to ``stats`` once per traversal
    npruned = 0
    sp = 0
    cur = 0
    while True:
        # descend through opponent nodes to a terminal or a traverser node
        while kind[cur] == KIND_DECISION and player[cur] != trav:
            visits += 1
            na = nact[cur]
            base = row_off[cur] + buckets[player[cur], rnd[cur]] * na
            if pf:
                _prefetch_children(cur, trav, tree, tables, buckets)
            regret_matching(regret, base, na, osig, 0)
            for a in range(na):
                strat[base + a] += osig[a]
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
            ret = terminal_utility(cur, trav, kind, player, spent, winner)
            have_ret = True
        else:
            visits += 1
            na = nact[cur]
            base = row_off[cur] + buckets[trav, rnd[cur]] * na
            if pf:
                _prefetch_children(cur, trav, tree, tables, buckets)
            off = sp * maxa
            regret_matching(regret, base, na, sig, off)
            prune = prune_now and rnd[cur] != last_round
            if prune:
                cs = cstart[cur]
                prunable = 0
                for a in range(na):
                    if regret[base + a] < thresh and kind[echild[cs + a]] == KIND_DECISION:
                        prunable += 1
                prune = prunable < na
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
            while (
                a < na and f_prune[f] and regret[base + a] < thresh and kind[echild[cs + a]] == KIND_DECISION
            ):
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
            for b in range(na):
                if flag[off + b]:
                    r = float(regret[base + b]) + (val[off + b] - v) * scale
                    if r < floor:
                        r = floor
                    elif r > ceil:
                        r = ceil
                    if int_regret:
                        r = np.floor(r + 0.5)
                    regret[base + b] = r
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
def es_iterations(n_iters, t0, tree, cards, tables, rng, opts, max_depth, maxa):
    """Run ``n_iters`` external-sampling iterations starting at iteration ``t0`` (0-based).

    ``tree``: :class:`abstraction.tree.TreeArrays`; ``cards``: :class:`abstraction.cards.CardArrays`;
    ``tables``: :class:`blueprint.tables.Tables` (``regret`` and ``strat`` are updated in place);
    ``rng``: the xoshiro state (advanced in place); ``opts``: :class:`ESOptions`; ``max_depth`` and
    ``maxa``: the tree's depth (:func:`blueprint.tables.tree_depth`) and the most actions of a node,
    which size the traversal's stack.
    Returns int64 [2]: decision nodes visited, actions pruned.

    Releases the GIL: several threads may run it at once on the same ``tables``, each with its own
    ``rng`` (:mod:`blueprint.threads`); its scratch arrays are allocated per call.
    """
    board_per_round = cards.board_per_round
    num_rounds = board_per_round.shape[0]
    ncards = 2 * cards.num_hole
    for r in range(num_rounds):
        ncards += board_per_round[r]
    deal = np.empty(ncards, np.int64)
    perm = np.empty(cards.deck_size, np.int64)
    work = np.empty(2 * ncards + 2, np.int64)
    buckets = np.zeros((2, num_rounds), np.int64)
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
        np.zeros(2, np.int64),
    )
    prune_start, prune_prob, prune_c, floor_c = opts.prune_start, opts.prune_prob, opts.prune_c, opts.floor_c
    w_base, t_base, ceil = opts.w_base, opts.t_base, opts.ceil
    last_round = num_rounds - 1
    for it in range(n_iters):
        t = t0 + it
        w = w_base + (t - t_base)
        thresh = prune_c * w
        floor = floor_c * w
        if floor < -ceil:
            floor = -ceil
        # one deal for both traversals: each is still a chance sample of its own (the seats'
        # updates touch different information sets), and the deal and its buckets cost about a
        # quarter of a hold'em traversal
        sample_deal(rng, perm, cards.deck_size, deal)
        winner = card_buckets(cards, deal, buckets, work)
        for trav in range(2):
            prune_now = False
            if prune_prob > 0.0 and t >= prune_start:
                prune_now = rng_uniform(rng) < prune_prob
            _es_traverse(
                trav, tree, tables, buckets, winner, rng, prune_now, thresh, floor, opts, last_round, st
            )
    return st.stats


@numba.njit(cache=True, inline="always", error_model="numpy")
def _merge_entry(i, regret, strat, c_reg, c_str, b_reg, b_str, floor, ceil, int_regret):
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
    c_reg[i] = regret[i]
    b_reg[i] = c_reg[i]
    c_str[i] = strat[i]
    b_str[i] = c_str[i]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def merge_copy(regret, strat, c_reg, c_str, b_reg, b_str, floor, ceil, int_regret):
    """Add a thread's updates of its copy of the tables since the last merge (``c - b``) to the
    shared ``regret`` and ``strat``, the regrets clipped to ``[floor, ceil]`` as a traversal clips
    them, then take the shared tables (every other thread's merged updates with them) as the copy
    and its new base (:mod:`blueprint.threads`, "Copies")."""
    for i in range(regret.shape[0]):
        _merge_entry(i, regret, strat, c_reg, c_str, b_reg, b_str, floor, ceil, int_regret)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def merge_copy_rows(rows, regret, strat, c_reg, c_str, b_reg, b_str, floor, ceil, int_regret):
    """:func:`merge_copy` of the entries ``rows`` only (the first round's, merged more often)."""
    for k in range(rows.shape[0]):
        _merge_entry(rows[k], regret, strat, c_reg, c_str, b_reg, b_str, floor, ceil, int_regret)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def discount_tables(regret, strat, pos_f, neg_f, avg_f, int_regret):
    """Scale positive regrets by ``pos_f``, negative by ``neg_f`` and strategy sums by ``avg_f``."""
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
