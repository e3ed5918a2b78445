"""Full-width CFR+ and exact best response vectorized over private hands, on the public tree.

Installed although no installed module runs it: a benchmark (``scripts/benchmarks/bench_threads.py``)
and an experiment (``scripts/experiments/abstraction_quality.py``) share it, and a script imports
only its own folder and the package (``scripts/benchmarks/harness.py``); the tests use it as an
exact reference (``tests/subgame/test_locking.py``, ``tests/blueprint/test_vector_cfr.py``).

For small-deck games with a few rounds (the card-abstraction quality experiment), where walking
every deal (:func:`blueprint.kernels.cfr_full_iteration`) or the dict-based exact best response
(:mod:`blueprint.best_response`) is too slow. One numba walk serves three modes:

* ``CFR``: one CFR+ traversal for the traverser (alternating updates): regrets per (node, bucket)
  accumulate ``sum_h w * (v_a(h) - v(h))`` over the hands ``h`` in the bucket and the boards on
  the path, the average strategy the traverser's reach times ``iteration + 1`` (linear averaging);
* ``BR``: the best responder's value in the *real* game (it knows its own cards and the board, so
  it maximizes per hand and board), the opponent playing a fixed strategy per (node, bucket);
* ``EV``: the traverser's value when both play the fixed strategy.

**Public states.** A state is (betting node, board). Boards are a flat list per round: the empty
board, then per round one representative of every orbit of that round's new cards under the
*stabilizer* of the board so far (the suit permutations that map it to itself: all of them for the
empty board), with its orbit size as weight, in deal order. The walk carries the opponent's (and
in ``CFR`` the traverser's) reach as a vector over all ``H`` hole hands; hands that share a card
with the board have reach 0 and value 0.

**Why representatives are enough.** Buckets are functions of isomorphism classes, so the strategy
is invariant under suit permutations, and the reach vectors at a board are invariant under its
stabilizer ``G``; for ``sigma`` in ``G`` the state at the continuation ``sigma(t)`` is the image of
the one at ``t``: its bucket sums (regrets, average strategy) are the same, so a representative
weighted by its orbit size stands for the orbit. The per-hand value that goes back to the board,
for hand ``h``, ``y(h) = sum_t |orbit(t)| v(h, t)`` over representatives, has the right bucket sums
but not the right value per hand; averaging it over ``G``, ``(1/|G|) sum_sigma y(sigma h)``, gives
the exact ``sum_t' v(h, t')`` over all raw continuations (``v(h, sigma t) = v(sigma^-1 h, t)``),
which the best response needs before it takes a maximum per hand. On the 5-rank game this cuts
the turn boards from 450 (canonical flops only) to 255.

**Terminals** in O(H) with card removal (:mod:`blueprint.range_kernels`, shared with the subgame
solver): a fold pays ``u * (R - R_c1 - R_c2 + r_h)`` (``R`` the opponent's total reach, ``R_c`` the
reach of hands holding card ``c``); a showdown sweeps the hands in order of strength keeping
per-card sums of the weaker and of the stronger hands.

A board step averages its boards (each weighted by its orbit weight over the number of boards
compatible with any two hands); the game value divides the sum over hands by the number of
ordered pairs of compatible hands.
"""

from __future__ import annotations

import itertools
from math import comb
from typing import NamedTuple

import numba
import numpy as np

from abstraction.cards import CardAbstraction
from abstraction.isomorphism import HandIndexer
from abstraction.tree import KIND_DECISION, KIND_FOLD, BettingTree
from blueprint.best_response import hand_buckets, hand_strengths
from blueprint.range_kernels import fold_values_all, showdown_values_all
from blueprint.tables import Tables, normalize_blocks

MODE_CFR, MODE_BR, MODE_EV = 0, 1, 2


class PublicBoards(NamedTuple):
    """The public chance tree of :class:`VectorCFR` and its per-board hand data, as one argument
    of :func:`_walk` (``B`` boards, ``H`` hole hands, ``P`` suit permutations; the arrays are the
    :class:`VectorCFR` attributes of the same names)."""

    b_lo: np.ndarray  # int64 [B]: first board of the next round continuing this one
    b_hi: np.ndarray  # int64 [B]: end of those continuations
    b_w: np.ndarray  # float64 [B]: orbit weight over the boards compatible with any two hands
    g_lo: np.ndarray  # int64 [B]: the board's stabilizer is g_ids[g_lo:g_hi]
    g_hi: np.ndarray  # int64 [B]
    g_ids: np.ndarray  # int64: suit permutations (rows of hand_perm)
    hand_perm: np.ndarray  # int64 [P, H]: the image of each hand under each suit permutation
    b_round: np.ndarray  # int64 [B]: the round the board belongs to
    bk: np.ndarray  # int64 [B, H]: each hand's bucket on the board (0 where not live)
    live: np.ndarray  # bool [B, H]: the hand shares no card with the board
    order: np.ndarray  # int64 [B, H]: last-round boards: live hands by increasing strength
    strength: np.ndarray  # int64 [B, H]: their strengths
    nlive: np.ndarray  # int64 [B]: number of live hands (last-round boards)
    hands: np.ndarray  # int64 [H, k]: the hole hands' cards
    deck: int  # cards in the deck


class Workspace(NamedTuple):
    """Scratch of :func:`_walk`, one row per depth (``out[d]`` is the value vector of the call at
    depth ``d``)."""

    out: np.ndarray  # float64 [depth, H]
    rs: np.ndarray  # float64 [depth, H]: the traverser's reach for a child
    ro: np.ndarray  # float64 [depth, H]: the opponent's reach for a child
    sig: np.ndarray  # float64 [depth, maxa, H]: the node's strategy per hand
    vals: np.ndarray  # float64 [depth, maxa, H]: the traverser's action values per hand


# Not cached: numba's on-disk cache mishandles self-recursive functions (see blueprint.kernels).
@numba.njit(error_model="numpy")
def _walk(n, bid, d, bw, trav, mode, rs, ro, tree, boards, tables, delta, probs, avg_w, ws):
    """The value vector of public state (``n``, board ``bid``) for ``trav``, into ``ws.out[d]``
    (``ws.*[d]`` is this call's scratch; a child at depth ``d + 1`` writes ``ws.out[d + 1]``).

    ``tree``: :class:`~abstraction.tree.TreeArrays`; ``boards``: :class:`PublicBoards`;
    ``tables``: :class:`~blueprint.tables.Tables` (``strat`` updated in ``CFR`` mode); ``delta``:
    the regret increments (``CFR``); ``probs``: the fixed strategy (``BR``, ``EV``); ``ws``:
    :class:`Workspace`."""
    kind, player, rnd, spent = tree.kind, tree.player, tree.round, tree.spent
    nact, cstart, echild = tree.num_actions, tree.child_start, tree.edge_child
    b_lo, b_hi, b_w, b_round, live, bk = (
        boards.b_lo,
        boards.b_hi,
        boards.b_w,
        boards.b_round,
        boards.live,
        boards.bk,
    )
    g_lo, g_hi, g_ids, hand_perm = boards.g_lo, boards.g_hi, boards.g_ids, boards.hand_perm
    hands, deck = boards.hands, boards.deck
    row_off, regret, strat = tables.row_offset, tables.regret, tables.strat
    w_out, w_rs, w_ro, w_sig, w_vals = ws.out, ws.rs, ws.ro, ws.sig, ws.vals
    H = rs.shape[0]
    out = w_out[d]
    for h in range(H):
        out[h] = 0.0
    if rnd[n] != b_round[bid]:  # a new round: average over its boards
        cro = w_ro[d]
        res = w_out[d + 1]
        for k in range(b_lo[bid], b_hi[bid]):
            w = b_w[k]
            lv = live[k]
            for h in range(H):
                cro[h] = ro[h] if lv[h] else 0.0
            _walk(n, k, d + 1, bw * w, trav, mode, rs, cro, tree, boards, tables, delta, probs, avg_w, ws)
            for h in range(H):
                out[h] += w * res[h]
        ng = g_hi[bid] - g_lo[bid]
        if ng > 1:  # representatives of orbits: average over the board's stabilizer
            for h in range(H):
                cro[h] = out[h]
            for h in range(H):
                v = 0.0
                for q in range(g_lo[bid], g_hi[bid]):
                    v += cro[hand_perm[g_ids[q], h]]
                out[h] = v / ng
        return 0
    lv = live[bid]
    if kind[n] != KIND_DECISION:
        if kind[n] == KIND_FOLD:
            folder = player[n]
            u = -float(spent[n, trav]) if folder == trav else float(spent[n, folder])
            fold_values_all(ro, lv, hands, u, np.zeros(deck), out)
        else:
            m = float(min(spent[n, 0], spent[n, 1]))
            showdown_values_all(
                ro, boards.order[bid], boards.strength[bid], boards.nlive[bid], hands, m, np.zeros(deck), out
            )
        return 0
    p = player[n]
    na = nact[n]
    base = row_off[n]
    bkt = bk[bid]
    sig = w_sig[d]
    for h in range(H):
        if not lv[h]:
            for a in range(na):
                sig[a, h] = 0.0
            continue
        row = base + bkt[h] * na
        if mode == MODE_CFR:
            tot = 0.0
            for a in range(na):
                x = regret[row + a]
                if x > 0.0:
                    tot += x
            if tot > 0.0:
                for a in range(na):
                    x = regret[row + a]
                    sig[a, h] = x / tot if x > 0.0 else 0.0
            else:
                for a in range(na):
                    sig[a, h] = 1.0 / na
        else:
            for a in range(na):
                sig[a, h] = probs[row + a]
    cs = cstart[n]
    res = w_out[d + 1]
    if p == trav:
        vals = w_vals[d]
        crs = w_rs[d]
        for a in range(na):
            for h in range(H):
                crs[h] = rs[h] * sig[a, h] if mode == MODE_CFR else rs[h]
            _walk(
                echild[cs + a],
                bid,
                d + 1,
                bw,
                trav,
                mode,
                crs,
                ro,
                tree,
                boards,
                tables,
                delta,
                probs,
                avg_w,
                ws,
            )
            for h in range(H):
                vals[a, h] = res[h]
        for h in range(H):
            if not lv[h]:
                continue
            if mode == MODE_BR:
                best = vals[0, h]
                for a in range(1, na):
                    best = max(best, vals[a, h])
                out[h] = best
            else:
                v = 0.0
                for a in range(na):
                    v += sig[a, h] * vals[a, h]
                out[h] = v
        if mode == MODE_CFR:
            for h in range(H):
                if not lv[h]:
                    continue
                row = base + bkt[h] * na
                for a in range(na):
                    delta[row + a] += bw * (vals[a, h] - out[h])
                    strat[row + a] += avg_w * bw * rs[h] * sig[a, h]
        return 0
    cro = w_ro[d]
    for a in range(na):
        nz = False
        for h in range(H):
            x = ro[h] * sig[a, h]
            cro[h] = x
            if x != 0.0:
                nz = True
        if not nz:
            continue
        _walk(
            echild[cs + a], bid, d + 1, bw, trav, mode, rs, cro, tree, boards, tables, delta, probs, avg_w, ws
        )
        for h in range(H):
            out[h] += res[h]
    return 0


@numba.njit(cache=True)
def _apply_delta(regret, delta, plus):
    for i in range(regret.shape[0]):
        x = regret[i] + delta[i]
        if plus and x < 0.0:
            x = 0.0
        regret[i] = x
        delta[i] = 0.0


class VectorCFR:
    """CFR+ on ``tree`` with the card abstraction ``cards`` (buckets from its tables), and the
    exact best response in the real game, both over the public tree (see the module doc).

    The first round must deal no board cards (hole cards only); later rounds deal any number.
    ``cards=None``: the lossless abstraction with perfect recall, one bucket per suit class of
    (hole cards, each round's board cards as its own group) (:class:`HandIndexer` with
    ``perfect_recall=True``), whose solution converges to an equilibrium of the real game.
    """

    def __init__(
        self,
        tree: BettingTree,
        cards: CardAbstraction | None,
        max_public_states: float = 5e7,
        canonical: bool = True,
    ):
        g = tree.game
        if g.num_board_cards[0] != 0:
            raise ValueError("VectorCFR needs a first round without board cards")
        self.tree, self.cards, self.g = tree, cards, g
        D, k = g.deck_size, g.num_hole_cards
        self.hands = np.array(list(itertools.combinations(range(D), k)), np.int64)
        H = len(self.hands)
        # boards per round: the empty board, then per board so far one representative per orbit of
        # the next round's cards under its stabilizer (``canonical=False``: every raw continuation)
        S = g.num_suits
        perms = (
            np.array(list(itertools.permutations(range(S))), np.int64) if canonical else np.arange(S)[None, :]
        )

        def image(p, cards):
            return tuple(sorted(int((c // S) * S + perms[p, c % S]) for c in cards))

        R = g.num_rounds
        boards: list[tuple] = [()]
        weights = [1.0]
        rounds = [0]
        lo, hi = [0], [0]
        groups: list[list[int]] = [list(range(len(perms)))]
        level = [0]
        for r in range(1, R):
            nb = g.num_board_cards[r]
            nxt = []
            for b in level:
                lo[b] = len(boards)
                G = groups[b]
                if nb == 0:
                    cands = [(boards[b], 1.0, G)]
                else:
                    used = set(boards[b])
                    orbit: dict[tuple, int] = {}
                    for c in itertools.combinations([c for c in range(D) if c not in used], nb):
                        key = min(image(p, c) for p in G)
                        orbit[key] = orbit.get(key, 0) + 1
                    cands = [
                        (boards[b] + key, float(cnt), [p for p in G if image(p, key) == key])
                        for key, cnt in orbit.items()
                    ]
                nposs = comb(D - 2 * k - len(boards[b]), nb)  # boards compatible with any two hands
                for cb, w, cg in cands:
                    boards.append(cb)
                    weights.append(w / nposs)
                    rounds.append(r)
                    lo.append(0)
                    hi.append(0)
                    groups.append(cg)
                    nxt.append(len(boards) - 1)
                hi[b] = len(boards)
            level = nxt
        nbrd = len(boards)
        work = float(nbrd) * H * max(1, len(tree.decision_nodes()) / max(1, R))
        if work > max_public_states * 1000:
            raise ValueError(f"public tree too large for VectorCFR: {nbrd:,} boards x {H:,} hands")
        self.boards = boards
        self.b_lo = np.array(lo, np.int64)
        self.b_hi = np.array(hi, np.int64)
        self.b_w = np.array(weights, np.float64)
        self.g_lo = np.cumsum([0] + [len(x) for x in groups[:-1]]).astype(np.int64)
        self.g_hi = self.g_lo + np.array([len(x) for x in groups], np.int64)
        self.g_ids = np.array([p for x in groups for p in x], np.int64)
        index = {tuple(int(c) for c in hnd): i for i, hnd in enumerate(self.hands)}
        self.hand_perm = np.array(
            [[index[image(p, hnd)] for hnd in self.hands] for p in range(len(perms))], np.int64
        )
        self.b_round = np.array(rounds, np.int64)
        masks = np.zeros(H, np.int64)
        for j in range(k):
            masks |= np.left_shift(np.int64(1), self.hands[:, j])
        self.live = np.zeros((nbrd, H), np.bool_)
        self.bk = np.zeros((nbrd, H), np.int64)
        self.order = np.zeros((nbrd, H), np.int64)
        self.strength = np.zeros((nbrd, H), np.int64)
        self.nlive = np.zeros(nbrd, np.int64)
        if cards is None:
            prix = HandIndexer.for_game(g, perfect_recall=True)
            num_buckets = tuple(prix.size(r) for r in range(R))
        else:
            kind, iso, table, offsets = cards.kernel_args()
            num_buckets = cards.num_buckets
        self.num_buckets = np.array(num_buckets, np.int64)
        bpr = np.array(g.num_board_cards, np.int64)
        for b, cb in enumerate(boards):
            bm = 0
            for c in cb:
                bm |= 1 << c
            lv = (masks & bm) == 0
            self.live[b] = lv
            barr = np.array(cb, np.int64)
            if cards is None:
                cardsr = np.concatenate([self.hands, np.broadcast_to(barr, (H, len(cb)))], axis=1)
                self.bk[b][lv] = prix.index_many(np.ascontiguousarray(cardsr[lv]), rounds[b])
            else:
                self.bk[b] = hand_buckets(
                    kind,
                    self.hands,
                    barr,
                    rounds[b],
                    k,
                    bpr,
                    D,
                    g.num_suits,
                    g.num_ranks,
                    iso,
                    table,
                    offsets,
                )
            self.bk[b][~lv] = 0
            if rounds[b] == R - 1:
                s = hand_strengths(self.hands, barr, g.num_suits, g.num_ranks)
                idx = np.flatnonzero(lv)
                o = idx[np.argsort(s[idx], kind="stable")]
                self.nlive[b] = len(o)
                self.order[b, : len(o)] = o
                self.strength[b, : len(o)] = s[o]
        # the table layout: one block [buckets, actions] per decision node
        nbk = self.num_buckets
        self.row_offset = np.zeros(tree.num_nodes, np.int64)
        off = 0
        for n in tree.decision_nodes():
            self.row_offset[n] = off
            off += int(nbk[tree.round[n]]) * int(tree.num_actions[n])
        self.size = off
        self.regret = np.zeros(off, np.float64)
        self.strat = np.zeros(off, np.float64)
        self.delta = np.zeros(off, np.float64)
        self.iteration = 0
        depth = self._depth(0) + 2 * R + 2
        maxa = int(tree.num_actions.max())
        self._ws = Workspace(
            np.zeros((depth, H)),
            np.zeros((depth, H)),
            np.zeros((depth, H)),
            np.zeros((depth, maxa, H)),
            np.zeros((depth, maxa, H)),
        )
        self._tree_arrays = tree.kernel_arrays()
        self._boards = PublicBoards(
            self.b_lo,
            self.b_hi,
            self.b_w,
            self.g_lo,
            self.g_hi,
            self.g_ids,
            self.hand_perm,
            self.b_round,
            self.bk,
            self.live,
            self.order,
            self.strength,
            self.nlive,
            self.hands,
            int(D),
        )
        # ordered pairs of compatible hands: the value normalizer (boards are averaged)
        self.norm = float(H) * comb(D - k, k)

    def _run(self, trav, mode, probs, avg_w):
        ones = self.live[0].astype(np.float64)
        _walk(
            0,
            0,
            0,
            1.0,
            trav,
            mode,
            ones.copy(),
            ones.copy(),
            self._tree_arrays,
            self._boards,
            Tables(self.row_offset, self.regret, self.strat),
            self.delta,
            probs,
            avg_w,
            self._ws,
        )
        return self._ws.out[0].copy()

    def _depth(self, n: int) -> int:
        t = self.tree
        best, stack = 0, [(n, 0)]
        while stack:
            m, dd = stack.pop()
            best = max(best, dd)
            for c in t.children(m):
                stack.append((int(c), dd + 1))
        return best

    def iterate(self, n: int = 1, plus: bool = True) -> None:
        """``n`` CFR+ iterations (alternating updates; linear averaging)."""
        dummy = np.zeros(1, np.float64)
        for _ in range(n):
            for trav in range(2):
                self._run(trav, MODE_CFR, dummy, float(self.iteration + 1) if plus else 1.0)
                _apply_delta(self.regret, self.delta, plus)
            self.iteration += 1

    def average(self) -> np.ndarray:
        """The average strategy per entry (rows that were never reached: uniform)."""
        return normalize_blocks(self.tree, self.row_offset, self.num_buckets, self.strat)

    def best_response_values(self, probs: np.ndarray) -> list[float]:
        return [float(self._run(i, MODE_BR, probs, 0.0).sum()) / self.norm for i in range(2)]

    def exploitability(self, probs: np.ndarray | None = None) -> tuple[float, list[float]]:
        """``(exploitability, [BR value of seat 0, seat 1])`` in chips, OpenSpiel's convention."""
        probs = self.average() if probs is None else np.ascontiguousarray(probs, np.float64)
        brv = self.best_response_values(probs)
        return (brv[0] + brv[1]) / 2.0, brv

    def expected_value(self, probs: np.ndarray) -> float:
        """Seat 0's expected chips when both seats play ``probs``."""
        return float(self._run(0, MODE_EV, np.ascontiguousarray(probs, np.float64), 0.0).sum()) / self.norm
