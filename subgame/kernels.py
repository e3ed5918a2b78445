"""numba kernels of the range-vectorized subgame solver (arrays: abstraction.tree, subgame.tree).

Compact hand lists. On each board only some hands matter for a seat: those not blocked by the board
and inside the seat's *support* (the hands its root reach may give weight to; by default every
unblocked hand). :class:`subgame.tree.HandLists` numbers them ``0 .. nlive[b, s] - 1`` per board and
seat; every vector the walk carries (reach, values, strategy rows) is sized to such a list, and a
chance node maps its board's list to each child board's list (a gather for reach going down, a
scatter-add for values coming up). Strategy tables are flat in the same layout: decision node ``n``
of seat ``q`` on board ``b`` owns ``num_actions[n]`` rows of ``nlive[b, q]`` entries from
``coff[n]`` on.

:func:`walk` is one depth-first pass (an explicit stack, one frame per depth): reach vectors go down
as the walk descends, values come up as it returns, and only the frames on the current path hold
vectors, so the working set is ``depth x actions x hands`` whatever the tree's size. In a CFR walk
(mode 0) each decision's strategy is regret matching of its regrets, computed when the walk enters
it. Terminal values cost O(L) per node with exact card removal (the two seats' lists on the board;
:mod:`blueprint.range_kernels`):

* fold: ``sum_{h' ~ h} r[h'] = T - C[c1] - C[c2] + r[h]`` (``T`` the total opponent reach, ``C[c]``
  the reach of opponent hands holding card ``c``, ``h ~ h'`` for hands sharing no card);
* showdown: both seats' lists merged by strength (once per board); one ascending sweep adds the
  opponent hands strictly weaker than each traverser hand, one descending sweep subtracts those
  strictly stronger (at a tie the traverser's hand is read first, so ties count zero without any
  grouping, and a hand never counts against itself).

A depth-limited tree's walk is the same :func:`walk` with a hook: its depth-limit leaves
(:mod:`subgame.depth`) are valued by :func:`subgame.depth_kernels.leaf_values`.

Modes: 0 = a CFR iteration for the traverser (regrets and average strategy updated), 1 = best
response of the traverser to ``sigma`` (max over its actions), 2 = the traverser's values when
both play ``sigma``.
"""

from __future__ import annotations

import types
from typing import NamedTuple

import numba
import numpy as np

from abstraction.tree import KIND_CHANCE, KIND_DECISION, KIND_FOLD, KIND_SHOWDOWN
from blueprint.range_kernels import fold_values, showdown_values
from subgame.depth_kernels import leaf_values

MODE_CFR, MODE_BR, MODE_EV = 0, 1, 2


class WalkTree(NamedTuple):
    """The node and edge arrays of a subgame tree that :func:`walk` reads, as one argument
    (:func:`walk_tree`): :class:`abstraction.tree.TreeArrays` has no ``board``/``deal_count`` (and
    its own dtypes), so the subgame walk has its own. Fixed dtypes, C-contiguous: one compilation."""

    kind: np.ndarray  # int8 [N]
    player: np.ndarray  # int8 [N]
    spent: np.ndarray  # int32 [N, 2]
    child_start: np.ndarray  # int32 [N]
    num_actions: np.ndarray  # int16 [N]
    edge_child: np.ndarray  # int32 [E]
    board: np.ndarray  # int32 [N]
    deal_count: np.ndarray  # int64 [N]


_WALK_TREE_DTYPES = {
    "kind": np.int8,
    "player": np.int8,
    "spent": np.int32,
    "child_start": np.int32,
    "num_actions": np.int16,
    "edge_child": np.int32,
    "board": np.int32,
    "deal_count": np.int64,
}


def walk_tree(tree) -> WalkTree:
    """``tree``'s :class:`WalkTree` (the subgame builder's arrays already have these dtypes: no copy)."""
    return WalkTree(**{f: np.ascontiguousarray(getattr(tree, f), dt) for f, dt in _WALK_TREE_DTYPES.items()})


class HandArrays(NamedTuple):
    """Per-board hand data of the compact lists (:meth:`subgame.tree.HandLists.kernel_arrays`, see
    :class:`subgame.tree.HandLists` for the layout)."""

    coff: np.ndarray  # int64 [N]
    nlive: np.ndarray  # int32 [B, 2]
    idx: np.ndarray  # int16 [B, 2, H]
    pos: np.ndarray  # int16 [B, 2, H]
    cards: np.ndarray  # uint8 [B, 2, H, k]
    same: np.ndarray  # int16 [B, 2, H]
    up: np.ndarray  # int16 [B, 2, 2H]
    up_cards: np.ndarray  # uint8 [B, 2, 2H, k]
    down: np.ndarray  # int16 [B, 2, 2H]
    down_cards: np.ndarray  # uint8 [B, 2, 2H, k]


class WalkState(NamedTuple):
    """The strategy and regret tables of a walk (compact layout, flat): ``sigma`` is read in modes
    1 and 2, ``regret``/``strat_sum`` in mode 0 (a 1-entry dummy where unused). ``fixed`` (uint8
    ``[N]``): 1 at the decision nodes whose strategy is locked (:mod:`subgame.locking`), where a
    best response (mode 1) plays ``sigma`` instead of maximising."""

    sigma: np.ndarray
    regret: np.ndarray
    strat_sum: np.ndarray
    fixed: np.ndarray


class WalkOptions(NamedTuple):
    """The walk's scalars (:func:`walk_options` fixes their types: one compilation)."""

    p: int  # traverser
    mode: int  # MODE_CFR, MODE_BR or MODE_EV
    w_pos: float  # R <- R * (w_pos if R > 0 else w_neg) + r
    w_neg: float
    floor_zero: bool  # regrets floored at 0
    s_old: float  # S <- S * s_old + s_new * own reach * sigma
    s_new: float


def walk_options(p, mode, w=(1.0, 1.0, False, 1.0, 0.0)) -> WalkOptions:
    return WalkOptions(int(p), int(mode), float(w[0]), float(w[1]), bool(w[2]), float(w[3]), float(w[4]))


class WalkWork(NamedTuple):
    """Work arrays of :func:`walk` (one frame per depth ``d``, see its docstring), and ``out``."""

    rbuf: np.ndarray  # [D, 2, H] reach
    cv: np.ndarray  # [D, A, H] child values
    sg: np.ndarray  # [D, A, H] strategy (mode 0)
    tmp: np.ndarray  # [D, H] a chance child's values
    cacc: np.ndarray  # float64 [cards]
    tot: np.ndarray  # float64 [H]
    rid: np.ndarray  # int64 [D, 2]
    fn: np.ndarray  # int64 [D]
    fa: np.ndarray  # int64 [D]
    out: np.ndarray  # [H] root values


class ParWork(NamedTuple):
    """Work of a walk whose chance nodes' subtrees run on several threads (:func:`chance_reach`,
    :func:`chance_tasks`, then :func:`walk` with this ``pw``). The *tasks* are the children of the
    top chance nodes (those without a chance node above them): ``task0[n]`` is the first task of
    top chance node ``n`` (its children in order), -1 elsewhere. A task's subtree is walked by one
    thread with that thread's :class:`WalkWork` (the ``[T, ...]`` arrays, ``T`` threads)."""

    task0: np.ndarray  # int64 [N]
    task_node: np.ndarray  # int64 [J]: the task's node (a chance child)
    trr: np.ndarray  # [J, 2, H] each seat's reach at the task's node (its board's lists)
    vals: np.ndarray  # [J, H] the traverser's values there
    rbuf: np.ndarray  # [T, D, 2, H]
    cv: np.ndarray  # [T, D, A, H]
    sg: np.ndarray  # [T, D, A, H]
    tmp: np.ndarray  # [T, D, H]
    cacc: np.ndarray  # float64 [T, cards]
    tot: np.ndarray  # float64 [T, H]
    rid: np.ndarray  # int64 [T, D, 2]
    fn: np.ndarray  # int64 [T, D]
    fa: np.ndarray  # int64 [T, D]
    out: np.ndarray  # [T, H]


def par_work(tree, T: int, D: int, A: int, H: int, dtype) -> ParWork:
    """:class:`ParWork` for ``T`` threads (tree depth ``D``, ``A`` actions, ``H`` hands)."""
    kind = np.asarray(tree.kind)
    N = len(kind)
    under = np.zeros(N, np.bool_)  # a chance node above (nodes are in preorder)
    task0 = np.full(N, -1, np.int64)
    nodes: list[int] = []
    for n in range(N):
        lo = int(tree.child_start[n])
        kids = tree.edge_child[lo : lo + int(tree.num_actions[n])]
        if kind[n] == KIND_CHANCE and not under[n]:
            task0[n] = len(nodes)
            nodes.extend(int(c) for c in kids)
        if kind[n] == KIND_CHANCE or under[n]:
            under[kids] = True
    J = len(nodes)
    return ParWork(
        task0,
        np.array(nodes, np.int64),
        np.zeros((J, 2, H), dtype),
        np.zeros((J, H), dtype),
        np.zeros((T, D, 2, H), dtype),
        np.zeros((T, D, A, H), dtype),
        np.zeros((T, D, A, H), dtype),
        np.zeros((T, D, H), dtype),
        np.zeros((T, tree.game.deck_size), np.float64),
        np.zeros((T, H), np.float64),
        np.zeros((T, D, 2), np.int64),
        np.zeros((T, D), np.int64),
        np.zeros((T, D), np.int64),
        np.zeros((T, H), dtype),
    )


@numba.njit(cache=True, nogil=True)
def fill_blueprint_rows(sigma, rows, nacts, offsets, slots, bucket_of, probs):
    """``sigma[rows[i] + a, h] = probs[offsets[i] + bucket_of[slots[i], h] * nacts[i] + a]`` for
    each node ``i`` (the blueprint's row of hand ``h``'s bucket at the node's abstract node), and
    ``1 / nacts[i]`` where the hand's bucket is -1 (blocked by the board)."""
    H = sigma.shape[1]
    for i in range(rows.shape[0]):
        r0, A, s = rows[i], nacts[i], offsets[i]
        tab = bucket_of[slots[i]]
        for h in range(H):
            b = tab[h]
            if b < 0:
                for a in range(A):
                    sigma[r0 + a, h] = 1.0 / A
            else:
                for a in range(A):
                    sigma[r0 + a, h] = probs[s + b * A + a]


@numba.njit(cache=True, nogil=True)
def strategy_from(acc, sigma, kind, num_actions, row):
    """``sigma`` = regret matching of ``acc`` (positive parts normalised; uniform where none), in the
    full-width ``(rows, H)`` layout of :attr:`BettingTree.row <abstraction.tree.BettingTree>`."""
    H = acc.shape[1]
    for n in range(kind.shape[0]):
        if kind[n] != KIND_DECISION:
            continue
        r0 = row[n]
        A = num_actions[n]
        for h in range(H):
            tot = 0.0
            for a in range(A):
                x = acc[r0 + a, h]
                if x > 0:
                    tot += x
            if tot > 0:
                for a in range(A):
                    x = acc[r0 + a, h]
                    sigma[r0 + a, h] = x / tot if x > 0 else 0.0
            else:
                for a in range(A):
                    sigma[r0 + a, h] = 1.0 / A


@numba.njit(cache=True, nogil=True)
def strategy_from_compact(acc, sigma, kind, num_actions, board, player, coff, nlive):
    """:func:`strategy_from` in the compact layout (``acc`` and ``sigma`` flat, see the module doc)."""
    for n in range(kind.shape[0]):
        if kind[n] != KIND_DECISION:
            continue
        A = num_actions[n]
        L = nlive[board[n], player[n]]
        base = coff[n]
        for j in range(L):
            tot = 0.0
            for a in range(A):
                x = acc[base + a * L + j]
                if x > 0:
                    tot += x
            if tot > 0:
                for a in range(A):
                    x = acc[base + a * L + j]
                    sigma[base + a * L + j] = x / tot if x > 0 else 0.0
            else:
                for a in range(A):
                    sigma[base + a * L + j] = 1.0 / A


@numba.njit(cache=True, nogil=True)
def compress_strategy(full, out, kind, num_actions, board, player, row, coff, nlive, idx):
    """``full`` ``(rows, H)`` -> compact ``out`` (each decision's rows restricted to its seat's list)."""
    for n in range(kind.shape[0]):
        if kind[n] != KIND_DECISION:
            continue
        b = board[n]
        q = player[n]
        L = nlive[b, q]
        for a in range(num_actions[n]):
            src = full[row[n] + a]
            base = coff[n] + a * L
            for j in range(L):
                out[base + j] = src[idx[b, q, j]]


@numba.njit(cache=True, nogil=True)
def expand_strategy(comp, out, kind, num_actions, board, player, row, coff, nlive, idx):
    """Compact ``comp`` -> full ``(rows, H)`` ``out``; hands outside a list get the uniform strategy."""
    for n in range(kind.shape[0]):
        if kind[n] != KIND_DECISION:
            continue
        b = board[n]
        q = player[n]
        L = nlive[b, q]
        A = num_actions[n]
        for a in range(A):
            dst = out[row[n] + a]
            dst[:] = 1.0 / A
            base = coff[n] + a * L
            for j in range(L):
                dst[idx[b, q, j]] = comp[base + j]


@numba.njit(cache=True, nogil=True)
def max_depth(kind, child_start, num_actions, edge_child):
    """Deepest node below the root (the root at depth 0); nodes are in preorder."""
    N = kind.shape[0]
    depth = np.zeros(N, np.int64)
    best = 0
    for n in range(N):
        d = depth[n]
        if d > best:
            best = d
        for a in range(num_actions[n]):
            depth[edge_child[child_start[n] + a]] = d + 1
    return best


@numba.njit(cache=True, nogil=True, fastmath=True, _nrt=False)
def _terminal(
    c, p, kind, player, spent, board, nlive, cards, same, up, up_cards, down, down_cards, ro, cacc, out
):
    """Traverser ``p``'s values at fold or showdown node ``c`` (opponent reach ``ro``, compact lists;
    the arrays of :class:`WalkTree` and :class:`HandArrays`, passed one by one: a call boundary
    inside the walk copies and reference-counts whole NamedTuples)."""
    o = 1 - p
    b = board[c]
    if kind[c] == KIND_FOLD:
        f = player[c]
        u = -float(spent[c, p]) if f == p else float(spent[c, f])
        fold_values(ro, nlive[b, o], cards[b, o], cards[b, p], same[b, p], nlive[b, p], u, cacc, out)
    else:
        m = float(min(spent[c, 0], spent[c, 1]))
        showdown_values(
            ro,
            nlive[b, 0] + nlive[b, 1],
            up[b, p],
            up_cards[b, p],
            down[b, p],
            down_cards[b, p],
            m,
            cacc,
            out,
        )


@numba.njit(cache=True, nogil=True, fastmath=True, _nrt=False)
def _scatter_up(vals, acc, p, pb, cb, nlive, idx, pos):
    """Add a chance child's values (list of board ``cb``) into its parent's (list of board ``pb``)."""
    for j in range(nlive[cb, p]):
        acc[pos[pb, p, idx[cb, p, j]]] += vals[j]


@numba.njit(cache=True, fastmath=True, nogil=True)
def chance_reach(ta, hd, st, root_reach, opt, wk, pw):
    """Each seat's reach at every task of ``pw`` (:class:`ParWork`) into ``pw.trr``: the part of
    :func:`walk` above the top chance nodes, reach only (the same strategies and products)."""
    kind = ta.kind
    player = ta.player
    num_actions = ta.num_actions
    board = ta.board
    child_start = ta.child_start
    edge_child = ta.edge_child
    nlive = hd.nlive
    idx = hd.idx
    pos = hd.pos
    coff = hd.coff
    sigma = st.sigma
    regret = st.regret
    p = opt.p
    mode = opt.mode
    rbuf = wk.rbuf
    sg = wk.sg
    tot = wk.tot
    rid = wk.rid
    fn = wk.fn
    fa = wk.fa
    b0 = board[0]
    for s in range(2):
        for j in range(nlive[b0, s]):
            rbuf[0, s, j] = root_reach[s, j]
        rid[0, s] = 0
    if kind[0] == KIND_FOLD or kind[0] == KIND_SHOWDOWN:
        return
    d = 0
    fn[0] = 0
    fa[0] = 0
    enter = True
    while True:
        n = fn[d]
        kn = kind[n]
        bn = board[n]
        if enter:
            enter = False
            if kn == KIND_DECISION:
                if mode == 0:  # regret matching, as walk
                    q = player[n]
                    A = num_actions[n]
                    L = nlive[bn, q]
                    base = coff[n]
                    t = tot
                    for j in range(L):
                        t[j] = 0.0
                    for a in range(A):
                        rg = regret[base + a * L : base + (a + 1) * L]
                        sa = sg[d, a]
                        for j in range(L):
                            x = rg[j]
                            x = x if x > 0 else 0.0
                            sa[j] = x
                            t[j] += x
                    for j in range(L):
                        t[j] = 1.0 / t[j] if t[j] > 0 else 0.0
                    inv_a = 1.0 / A
                    for a in range(A):
                        sa = sg[d, a]
                        for j in range(L):
                            sa[j] = sa[j] * t[j] if t[j] > 0 else inv_a
            else:  # a top chance node: its children's reach, as walk gathers it
                j0 = pw.task0[n]
                for i in range(num_actions[n]):
                    bc = board[edge_child[child_start[n] + i]]
                    dst = pw.trr[j0 + i]
                    for s in range(2):
                        src = rbuf[rid[d, s], s]
                        for j in range(nlive[bc, s]):
                            dst[s, j] = src[pos[bn, s, idx[bc, s, j]]]
                fa[d] = num_actions[n]
        a = fa[d]
        if a < num_actions[n]:
            fa[d] = a + 1
            c = edge_child[child_start[n] + a]
            kc = kind[c]
            if kc == KIND_FOLD or kc == KIND_SHOWDOWN:
                continue
            q = player[n]
            if q == p and mode != 0:
                rid[d + 1, q] = rid[d, q]
            else:
                L = nlive[bn, q]
                src = rbuf[rid[d, q], q]
                dst = rbuf[d + 1, q]
                if mode == 0:
                    sa = sg[d, a]
                    for j in range(L):
                        dst[j] = src[j] * sa[j]
                else:
                    base = coff[n] + a * L
                    sa2 = sigma[base : base + L]
                    for j in range(L):
                        dst[j] = src[j] * sa2[j]
                rid[d + 1, q] = d + 1
            rid[d + 1, 1 - q] = rid[d, 1 - q]
            d += 1
            fn[d] = c
            fa[d] = 0
            enter = True
            continue
        if d == 0:
            return
        d -= 1


@numba.njit(cache=True, nogil=True, parallel=True)
def chance_tasks(ta, hd, st, opt, pw):
    """Every task of ``pw`` (:class:`ParWork`, reach from :func:`chance_reach`): its subtree walked
    by :func:`walk_one` on the calling thread's work arrays, its values into ``pw.vals``. Tasks'
    subtrees share no table rows: threads write disjoint parts of ``st``."""
    p = opt.p
    nlive = hd.nlive
    for j in numba.prange(pw.task_node.shape[0]):
        t = numba.get_thread_id()
        wk = WalkWork(
            pw.rbuf[t],
            pw.cv[t],
            pw.sg[t],
            pw.tmp[t],
            pw.cacc[t],
            pw.tot[t],
            pw.rid[t],
            pw.fn[t],
            pw.fa[t],
            pw.out[t],
        )
        c = pw.task_node[j]
        walk_one(ta, hd, st, pw.trr[j], opt, wk, None, c, None, None, None)
        v = pw.vals[j]
        o = wk.out
        for i in range(nlive[ta.board[c], p]):
            v[i] = o[i]


@numba.njit(cache=True, fastmath=True, nogil=True)  # nogil: concurrent solves (the service) use every core
def walk(ta, hd, st, root_reach, opt, wk, pw, n0, lv, cm, cw):
    """One depth-first walk for traverser ``opt.p`` of the subtree of node ``n0`` (0: the whole
    tree); ``wk.out[:nlive[board[n0], p]]`` gets its root values.

    ``ta`` :class:`WalkTree`, ``hd`` :class:`HandArrays`, ``st`` :class:`WalkState`, ``opt``
    :class:`WalkOptions`, ``wk`` :class:`WalkWork`. ``root_reach[s, :nlive[board[n0], s]]``: each
    seat's reach on the root board's lists. ``st.sigma`` (compact) is read in modes 1 and 2; mode 0
    plays regret matching of ``st.regret`` and updates it (``R <- R * (w_pos if R > 0 else w_neg) + r``,
    floored at 0 when ``floor_zero``) and ``st.strat_sum`` (``S <- S * s_old + s_new * own reach *
    sigma``) at ``p``'s nodes. Work arrays (one frame per depth ``d``): ``rbuf[d, s]`` reach,
    ``cv[d, a]`` child values (a chance node sums into ``cv[d, 0]``), ``sg[d, a]`` the strategy
    (mode 0), ``tmp[d]`` a chance child's values, ``rid[d, s]`` the frame whose ``rbuf`` holds seat
    ``s``'s reach at depth ``d`` (a decision changes only its seat's).

    ``pw``: None, or a :class:`ParWork` whose tasks (the top chance nodes' children) have been
    walked (:func:`chance_reach`, then :func:`chance_tasks` on several threads): their values are
    then read from ``pw.vals`` and added up in the same order as one thread adds them, so the
    values, tables and floating-point sums are the same.

    Depth-limit leaves (the hook; None, None, None for a full-depth tree): ``lv``
    (:class:`subgame.depth_kernels.Leaves`) with ``cm``/``cw`` the continuation model
    (:class:`~subgame.depth_kernels.ContModel`) and its work arrays
    (:class:`~subgame.depth_kernels.ContWork`). A showdown node ``c`` with ``lv.leaf_of[c] >= 0`` is
    valued by :func:`subgame.depth_kernels.leaf_values`. ``pw is None`` and ``lv is None`` are
    decided when numba compiles the walk (one specialization per combination): a full-depth walk
    runs none of the leaf code."""
    kind = ta.kind
    player = ta.player
    num_actions = ta.num_actions
    board = ta.board
    child_start = ta.child_start
    edge_child = ta.edge_child
    spent = ta.spent
    nlive = hd.nlive
    idx = hd.idx
    pos = hd.pos
    coff = hd.coff
    cards = hd.cards
    same = hd.same
    up = hd.up
    up_cards = hd.up_cards
    down = hd.down
    down_cards = hd.down_cards
    sigma = st.sigma
    regret = st.regret
    strat_sum = st.strat_sum
    p = opt.p
    mode = opt.mode
    w_pos = opt.w_pos
    w_neg = opt.w_neg
    floor_zero = opt.floor_zero
    s_old = opt.s_old
    s_new = opt.s_new
    rbuf = wk.rbuf
    cv = wk.cv
    sg = wk.sg
    tmp = wk.tmp
    cacc = wk.cacc
    tot = wk.tot
    rid = wk.rid
    fn = wk.fn
    fa = wk.fa
    out = wk.out
    me = -1
    if lv is not None:  # (``lv is None`` branches are pruned at compile time)
        me = lv.me
    o = 1 - p
    b0 = board[n0]
    for s in range(2):
        for j in range(nlive[b0, s]):
            rbuf[0, s, j] = root_reach[s, j]
        rid[0, s] = 0
    if kind[n0] == KIND_FOLD or kind[n0] == KIND_SHOWDOWN:
        _terminal(
            n0,
            p,
            kind,
            player,
            spent,
            board,
            nlive,
            cards,
            same,
            up,
            up_cards,
            down,
            down_cards,
            rbuf[0, o],
            cacc,
            out,
        )
        return
    d = 0
    fn[0] = n0
    fa[0] = 0
    enter = True
    while True:
        n = fn[d]
        kn = kind[n]
        bn = board[n]
        if enter:  # prepare node n at depth d
            enter = False
            if kn == KIND_DECISION:
                if mode == 0:
                    q = player[n]
                    A = num_actions[n]
                    L = nlive[bn, q]
                    base = coff[n]
                    t = tot
                    for j in range(L):
                        t[j] = 0.0
                    for a in range(A):  # positive parts, and their sum per hand
                        rg = regret[base + a * L : base + (a + 1) * L]
                        sa = sg[d, a]
                        for j in range(L):
                            x = rg[j]
                            x = x if x > 0 else 0.0
                            sa[j] = x
                            t[j] += x
                    for j in range(L):
                        t[j] = 1.0 / t[j] if t[j] > 0 else 0.0
                    inv_a = 1.0 / A
                    for a in range(A):
                        sa = sg[d, a]
                        for j in range(L):
                            sa[j] = sa[j] * t[j] if t[j] > 0 else inv_a
            else:  # chance: values summed into cv[d, 0]
                acc = cv[d, 0]
                for j in range(nlive[bn, p]):
                    acc[j] = 0.0
                if pw is not None:  # (``pw is None`` is pruned at compile time)
                    j0 = pw.task0[n]
                    if j0 >= 0:  # the children's values are in pw.vals: added in child order
                        for i in range(num_actions[n]):
                            bc = board[edge_child[child_start[n] + i]]
                            _scatter_up(pw.vals[j0 + i], acc, p, bn, bc, nlive, idx, pos)
                        fa[d] = num_actions[n]
        a = fa[d]
        if a < num_actions[n]:
            fa[d] = a + 1
            c = edge_child[child_start[n] + a]
            bc = board[c]
            kc = kind[c]
            lf = -1
            if lv is not None:
                lf = lv.leaf_of[c]
            if kn == KIND_DECISION:
                q = player[n]
                # the traverser's own reach is not needed (but it is at a leaf, for the opponent's
                # average-strategy sums)
                if q == p and (mode != 0 or kc == KIND_FOLD or (kc == KIND_SHOWDOWN and (lf < 0 or p == me))):
                    rid[d + 1, q] = rid[d, q]
                else:
                    L = nlive[bn, q]
                    src = rbuf[rid[d, q], q]
                    dst = rbuf[d + 1, q]
                    if mode == 0:
                        sa = sg[d, a]
                        for j in range(L):
                            dst[j] = src[j] * sa[j]
                    else:
                        base = coff[n] + a * L
                        sa2 = sigma[base : base + L]
                        for j in range(L):
                            dst[j] = src[j] * sa2[j]
                    rid[d + 1, q] = d + 1
                rid[d + 1, 1 - q] = rid[d, 1 - q]
            else:
                for s in range(2):
                    src = rbuf[rid[d, s], s]
                    dst = rbuf[d + 1, s]
                    for j in range(nlive[bc, s]):
                        dst[j] = src[pos[bn, s, idx[bc, s, j]]]
                    rid[d + 1, s] = d + 1
            if kc == KIND_FOLD or kc == KIND_SHOWDOWN:
                at_leaf = False
                if lv is not None:
                    if lf >= 0:  # a depth-limit leaf (a showdown node)
                        leaf_values(
                            lf,
                            bc,
                            rbuf[rid[d + 1, o], o],
                            rbuf[rid[d + 1, p], p],
                            nlive,
                            idx,
                            opt,
                            lv,
                            cm,
                            cw,
                            cv[d, a] if kn == KIND_DECISION else tmp[d + 1],
                        )
                        at_leaf = True
                if kn == KIND_DECISION:
                    if not at_leaf:
                        _terminal(
                            c,
                            p,
                            kind,
                            player,
                            spent,
                            board,
                            nlive,
                            cards,
                            same,
                            up,
                            up_cards,
                            down,
                            down_cards,
                            rbuf[rid[d + 1, o], o],
                            cacc,
                            cv[d, a],
                        )
                else:
                    if not at_leaf:
                        _terminal(
                            c,
                            p,
                            kind,
                            player,
                            spent,
                            board,
                            nlive,
                            cards,
                            same,
                            up,
                            up_cards,
                            down,
                            down_cards,
                            rbuf[rid[d + 1, o], o],
                            cacc,
                            tmp[d + 1],
                        )
                    _scatter_up(tmp[d + 1], cv[d, 0], p, bn, bc, nlive, idx, pos)
            else:
                d += 1
                fn[d] = c
                fa[d] = 0
                enter = True
            continue
        # every child done: node n's values into its parent's slot
        if d == 0:
            dst = out
        elif kind[fn[d - 1]] == KIND_DECISION:
            dst = cv[d - 1, fa[d - 1] - 1]
        else:
            dst = tmp[d]
        L = nlive[bn, p]
        if kn == KIND_CHANCE:
            inv = 1.0 / ta.deal_count[n]
            acc = cv[d, 0]
            for j in range(L):
                dst[j] = acc[j] * inv
        else:
            q = player[n]
            A = num_actions[n]
            if q != p:
                for j in range(L):
                    dst[j] = cv[d, 0, j]
                for a in range(1, A):
                    vc = cv[d, a]
                    for j in range(L):
                        dst[j] += vc[j]
            elif mode == 1 and st.fixed[n] == 0:  # a locked node plays sigma (below)
                for j in range(L):
                    dst[j] = cv[d, 0, j]
                for a in range(1, A):
                    vc = cv[d, a]
                    for j in range(L):
                        dst[j] = max(dst[j], vc[j])
            else:
                base = coff[n]
                for j in range(L):
                    dst[j] = 0.0
                for a in range(A):
                    vc = cv[d, a]
                    sa = sg[d, a] if mode == 0 else sigma[base + a * L : base + (a + 1) * L]
                    for j in range(L):
                        dst[j] += sa[j] * vc[j]
                if mode == 0:
                    rp = rbuf[rid[d, p], p]
                    for a in range(A):
                        vc = cv[d, a]
                        sa = sg[d, a]
                        rg = regret[base + a * L : base + (a + 1) * L]
                        ss = strat_sum[base + a * L : base + (a + 1) * L]
                        for j in range(L):
                            x = rg[j]
                            x = x * (w_pos if x > 0 else w_neg) + (vc[j] - dst[j])
                            if floor_zero and x < 0:
                                x = 0.0
                            rg[j] = x
                            ss[j] = ss[j] * s_old + s_new * rp[j] * sa[j]
        if d == 0:
            return
        d -= 1
        if kind[fn[d]] == KIND_CHANCE:
            _scatter_up(tmp[d + 1], cv[d, 0], p, board[fn[d]], bn, nlive, idx, pos)


def _copy(f, name: str):
    """A second function object with ``f``'s code, named ``name`` (its own numba dispatcher and cache)."""
    g = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    g.__qualname__ = name
    g.__doc__ = f.__doc__
    return g


#: :func:`walk` as a dispatcher of its own: the one-thread walk of a task's subtree that
#: :func:`chance_tasks` runs (a parallel region calling a dispatcher that also has an overload
#: taking a :class:`ParWork` failed to link)
walk_one = numba.njit(cache=True, fastmath=True, nogil=True)(_copy(walk.py_func, "walk_one"))
