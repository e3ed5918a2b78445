"""numba kernels of the N-seat depth-limited search (:mod:`subgame.multiway`): external-sampling
MCCFR with linear weighting over the blueprint's betting tree from the start of the current
round to its end, where every seat still in the hand picks one of ``k`` continuation strategies
and the rest of the hand is rolled out under them (Pluribus's search, Brown and Sandholm 2019).

One iteration draws every seat's hand from its range (jointly: no card twice), the rest of the
board uniformly, and each seat's card buckets for the later rounds; then every seat still in the
hand traverses in turn. At a decision of the round the seat to act plays regret matching over
its actions for its real hand (no card abstraction inside the round); at a leaf (the first
decision of the next round) every live seat picks a continuation with regret matching over ``k``
choices for its hand, and the hand is played to its end by the blueprint, each seat's actions
biased by its choice (:data:`BIAS_NONE`: the blueprint; fold, call or raise probabilities
multiplied by ``bias`` then renormalised). The traverser values every one of its choices by one
rollout each; the others' choices are sampled. A second traversal per iteration holds the
searching seat's real hand (the others' hands drawn given it), so that the one information set
the answer is read from is updated every iteration.

The arrays (``N`` blueprint nodes, ``E`` edges, ``P`` seats, ``H`` hands) are one
:class:`Problem`; the per-iteration state one :class:`Scratch`.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from abstraction.cards import card_buckets_n
from abstraction.tree import KIND_DECISION
from blueprint.numerics import rng_below, rng_uniform
from blueprint.payoffs import nseat_utility
from holdem.betting import CALL, FOLD, RAISE

BIAS_NONE, BIAS_FOLD, BIAS_CALL, BIAS_RAISE = 0, 1, 2, 3
SAMPLE_TRIES = 64  # joint draws of the seats' hands before drawing seat by seat


class Problem(NamedTuple):
    """One search, as flat arrays (read-only in the kernel but for the tables)."""

    kind: np.ndarray  # int8 [N]
    player: np.ndarray  # int8 [N]
    round: np.ndarray  # int8 [N]
    spent: np.ndarray  # int32 [N, P]
    live: np.ndarray  # uint16 [N]
    num_actions: np.ndarray  # int16 [N]
    child_start: np.ndarray  # int32 [N]
    edge_child: np.ndarray  # int32 [E]
    edge_kind: np.ndarray  # int8 [E]
    probs: np.ndarray  # float [entries]: the blueprint's P(action) per table entry
    row_offset: np.ndarray  # int64 [N]: the blueprint's first entry of each decision node
    sub_off: np.ndarray  # int64 [N]: first regret of a decision of the round (-1 elsewhere)
    leaf_off: np.ndarray  # int64 [N]: first continuation regret of a leaf (-1 elsewhere)
    frozen: np.ndarray  # int64 [N]: the edge the searching seat took there with its hand (-1)
    hands: np.ndarray  # int64 [H, num_hole]
    round_bucket: np.ndarray  # int64 [H]: each hand's bucket in the round (-1 where the board blocks it)
    cdf: np.ndarray  # float64 [P, H]: each seat's range as a cumulative distribution (last = 1)
    board: np.ndarray  # int64 [known]: the board dealt so far, in deal order
    root: int
    me: int  # the searching seat
    my_hand: int  # its hand's index in ``hands``
    cur: int  # the node it decides at
    k: int  # continuations (1 to 4)
    bias: float


class Scratch(NamedTuple):
    """Tables and work arrays of one search."""

    regret: np.ndarray  # float64: the round's decisions, [node rows][H][actions]
    cont: np.ndarray  # float64: the leaves' choices, [leaf][P][H][k]
    acc: np.ndarray  # float64 [actions at cur]: the searching seat's linear-weighted strategy
    acc_all: np.ndarray  # float64 [H * actions at cur]: the same for every hand of the seat
    hand: np.ndarray  # int64 [P]: this iteration's hands (indices)
    deal: np.ndarray  # int64: the seats' hole cards, then the board
    used: np.ndarray  # bool [deck]
    buckets: np.ndarray  # int64 [P, rounds]
    strength: np.ndarray  # int64 [P]
    rem: np.ndarray  # int64 [P]
    work: np.ndarray  # int64: card_buckets_n's scratch
    choice: np.ndarray  # int64 [P]: the continuations picked at this iteration's leaf
    sig: np.ndarray  # float64 [(depth + 1) * maxa]
    val: np.ndarray  # float64 [(depth + 1) * maxa]
    f_node: np.ndarray  # int64 [depth]: the traverser's decisions on the stack
    f_base: np.ndarray  # int64 [depth]
    f_next: np.ndarray  # int64 [depth]
    f_val: np.ndarray  # float64 [depth]
    roll: np.ndarray  # float64 [maxa]
    stats: np.ndarray  # int64 [3]: traversals, leaves rolled out, seat-by-seat hand draws


@numba.njit(cache=True, inline="always", error_model="numpy")
def _match_or(table, base, na, out, off, prior, poff):
    """Regret matching of ``table[base:base+na]`` into ``out[off:off+na]`` (as
    :func:`blueprint.kernels.regret_matching` over a float64 table), but where no regret is
    positive the ``prior`` distribution at ``poff`` (the blueprint's strategy) instead of the
    uniform one; ``poff`` < 0: the first action (a leaf's blueprint continuation)."""
    total = 0.0
    for a in range(na):
        r = table[base + a]
        if r > 0.0:
            out[off + a] = r
            total += r
        else:
            out[off + a] = 0.0
    if total > 0.0:
        for a in range(na):
            out[off + a] /= total
    elif poff < 0:
        out[off] = 1.0
    else:
        for a in range(na):
            out[off + a] = prior[poff + a]


@numba.njit(cache=True, inline="always", error_model="numpy")
def _pick(dist, off, na, rng):
    x = rng_uniform(rng)
    acc = 0.0
    for a in range(na - 1):
        acc += dist[off + a]
        if x < acc:
            return a
    return na - 1


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _draw(cdf, p, rng):
    """A hand index of seat ``p``'s range (binary search of its cumulative distribution)."""
    x = rng_uniform(rng)
    lo, hi = 0, cdf.shape[1] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cdf[p, mid] > x:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _fits(hands, h, used):
    for c in range(hands.shape[1]):
        if used[hands[h, c]]:
            return False
    return True


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _take(hands, h, used, flag):
    for c in range(hands.shape[1]):
        used[hands[h, c]] = flag


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def sample_hands(pb, sc, rng, fix_me):
    """Every seat's hand into ``sc.hand`` (the searching seat's real hand with ``fix_me``), no
    card twice: joint draws from the ranges (exact: the ranges' product given no shared card);
    after :data:`SAMPLE_TRIES` failures, seat by seat (each seat redrawn until it fits)."""
    P = pb.cdf.shape[0]
    used = sc.used
    for attempt in range(SAMPLE_TRIES + 1):
        used[:] = False
        for c in range(pb.board.shape[0]):
            used[pb.board[c]] = True
        ok = True
        for p in range(P):
            if fix_me and p == pb.me:
                h = pb.my_hand
            elif attempt < SAMPLE_TRIES:
                h = _draw(pb.cdf, p, rng)
            else:
                h = _draw(pb.cdf, p, rng)
                tries = 0
                while not _fits(pb.hands, h, used) and tries < 1000:
                    h = _draw(pb.cdf, p, rng)
                    tries += 1
                if not _fits(pb.hands, h, used):  # a range left no hand: any hand that fits
                    h = rng_below(rng, pb.hands.shape[0])
                    while not _fits(pb.hands, h, used):
                        h = rng_below(rng, pb.hands.shape[0])
            if not _fits(pb.hands, h, used):
                ok = False
                break
            _take(pb.hands, h, used, True)
            sc.hand[p] = h
        if ok:
            if attempt == SAMPLE_TRIES:
                sc.stats[2] += 1
            return


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def deal_rest(pb, sc, cards, rng):
    """The deal array (hole cards, then the board: the known cards, then uniform draws of the
    rest from the cards left), and every seat's buckets and strength for it."""
    P = pb.cdf.shape[0]
    nh = pb.hands.shape[1]
    for p in range(P):
        for c in range(nh):
            sc.deal[p * nh + c] = pb.hands[sc.hand[p], c]
    pos = P * nh
    for c in range(pb.board.shape[0]):
        sc.deal[pos] = pb.board[c]
        pos += 1
    deck = sc.used.shape[0]
    while pos < sc.deal.shape[0]:
        c = rng_below(rng, deck)
        while sc.used[c]:
            c = rng_below(rng, deck)
        sc.used[c] = True
        sc.deal[pos] = c
        pos += 1
    card_buckets_n(cards, sc.deal, sc.buckets, sc.work, sc.strength)


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def rollout(pb, sc, n, trav, rng):
    """Play the hand from node ``n`` to its end with the blueprint, each seat's actions biased by
    its continuation ``sc.choice``; the traverser's net chips."""
    while pb.kind[n] == KIND_DECISION:
        if (pb.live[n] >> trav) & 1 == 0:
            return -float(pb.spent[n, trav])
        s = pb.player[n]
        na = pb.num_actions[n]
        cs = pb.child_start[n]
        off = pb.row_offset[n] + sc.buckets[s, pb.round[n]] * na
        c = sc.choice[s]
        total = 0.0
        for a in range(na):
            q = float(pb.probs[off + a])
            ek = pb.edge_kind[cs + a]
            if (
                (c == BIAS_FOLD and ek == FOLD)
                or (c == BIAS_CALL and ek == CALL)
                or (c == BIAS_RAISE and ek == RAISE)
            ):
                q *= pb.bias
            sc.roll[a] = q
            total += q
        x = rng_uniform(rng) * total
        a = 0
        acc = sc.roll[0]
        while a < na - 1 and x >= acc:
            a += 1
            acc += sc.roll[a]
        n = pb.edge_child[cs + a]
    return nseat_utility(n, trav, pb.kind, pb.spent, pb.live, sc.strength, sc.rem)


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def _leaf(pb, sc, n, trav, w, off, rng):
    """A leaf: every live seat picks a continuation; the traverser tries each (``sc.sig`` and
    ``sc.val`` from ``off`` are its scratch)."""
    P = pb.cdf.shape[0]
    H = pb.hands.shape[0]
    k = pb.k
    live = pb.live[n]
    for p in range(P):
        sc.choice[p] = BIAS_NONE
        if p != trav and (live >> p) & 1:
            base = pb.leaf_off[n] + (p * H + sc.hand[p]) * k
            _match_or(sc.cont, base, k, sc.sig, off, pb.probs, -1)
            sc.choice[p] = _pick(sc.sig, off, k, rng)
    sc.stats[1] += 1
    base = pb.leaf_off[n] + (trav * H + sc.hand[trav]) * k
    _match_or(sc.cont, base, k, sc.sig, off, pb.probs, -1)
    u = 0.0
    for c in range(k):
        sc.choice[trav] = c
        v = rollout(pb, sc, n, trav, rng)
        sc.val[off + c] = v
        u += sc.sig[off + c] * v
    for c in range(k):
        sc.cont[base + c] += w * (sc.val[off + c] - u)
    return u


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def traverse(pb, sc, trav, w, maxa, rng):
    """The traverser's sampled counterfactual value at the root, updating its regrets. An
    explicit stack of the traverser's decisions (numba's cache cannot hold a recursive kernel):
    frame ``f`` keeps its node, its first regret, the next action to value and the value so far;
    its strategy and its actions' values are ``sc.sig`` and ``sc.val`` from ``f * maxa``. The
    others' decisions and the leaves use the row after the deepest frame."""
    depth = sc.f_node.shape[0]
    tmp = depth * maxa
    sp = 0
    n = pb.root
    ret = 0.0
    while True:
        # descend from n until a value (terminal, leaf, a folded traverser) or a new frame
        while True:
            if (pb.live[n] >> trav) & 1 == 0:
                ret = -float(pb.spent[n, trav])
                break
            if pb.kind[n] != KIND_DECISION:
                ret = nseat_utility(n, trav, pb.kind, pb.spent, pb.live, sc.strength, sc.rem)
                break
            if pb.sub_off[n] < 0:
                ret = _leaf(pb, sc, n, trav, w, tmp, rng)
                break
            s = pb.player[n]
            na = pb.num_actions[n]
            cs = pb.child_start[n]
            h = sc.hand[s]
            if s == pb.me and h == pb.my_hand and pb.frozen[n] >= 0:
                n = pb.edge_child[pb.frozen[n]]
                continue
            base = pb.sub_off[n] + h * na
            poff = pb.row_offset[n] + pb.round_bucket[h] * na
            if s != trav:
                _match_or(sc.regret, base, na, sc.sig, tmp, pb.probs, poff)
                n = pb.edge_child[cs + _pick(sc.sig, tmp, na, rng)]
                continue
            _match_or(sc.regret, base, na, sc.sig, sp * maxa, pb.probs, poff)
            sc.f_node[sp] = n
            sc.f_base[sp] = base
            sc.f_next[sp] = 0
            sc.f_val[sp] = 0.0
            sp += 1
            n = pb.edge_child[cs]
        # return ret up the frames until one has an action left to value
        more = False
        while sp > 0:
            f = sp - 1
            off = f * maxa
            a = sc.f_next[f]
            sc.val[off + a] = ret
            sc.f_val[f] += sc.sig[off + a] * ret
            a += 1
            sc.f_next[f] = a
            m = sc.f_node[f]
            if a < pb.num_actions[m]:
                n = pb.edge_child[pb.child_start[m] + a]
                more = True
                break
            u = sc.f_val[f]
            base = sc.f_base[f]
            for b in range(pb.num_actions[m]):
                sc.regret[base + b] += w * (sc.val[off + b] - u)
            ret = u
            sp -= 1
        if not more:
            return ret


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def search_iterations(pb, sc, cards, t0, n_iters, maxa, rng):
    """Iterations ``t0 + 1 .. t0 + n_iters`` (their linear weights), each of every live seat's
    traversal on one joint deal and the searching seat's on a deal that holds its real hand;
    after each, the searching seat's current strategy at ``cur`` added to ``sc.acc`` with the
    iteration's weight; at the end, every hand's into ``sc.acc_all`` with the call's."""
    P = pb.cdf.shape[0]
    H = pb.hands.shape[0]
    root_live = pb.live[pb.root]
    na_cur = pb.num_actions[pb.cur]
    base_cur = pb.sub_off[pb.cur] + pb.my_hand * na_cur
    poff_cur = pb.row_offset[pb.cur] + pb.round_bucket[pb.my_hand] * na_cur
    for it in range(n_iters):
        w = float(t0 + it + 1)
        sample_hands(pb, sc, rng, False)
        deal_rest(pb, sc, cards, rng)
        for trav in range(P):
            if (root_live >> trav) & 1:
                traverse(pb, sc, trav, w, maxa, rng)
                sc.stats[0] += 1
        sample_hands(pb, sc, rng, True)
        deal_rest(pb, sc, cards, rng)
        traverse(pb, sc, pb.me, w, maxa, rng)
        sc.stats[0] += 1
        _match_or(sc.regret, base_cur, na_cur, sc.roll, 0, pb.probs, poff_cur)
        for a in range(na_cur):
            sc.acc[a] += w * sc.roll[a]
    # every hand's strategy there, once a call with the call's weight (the seat's range after
    # its action: what later searches take as its range, as Pluribus tracked its own; every
    # iteration would cost as much as the traversals with 1,326 hands)
    w = 0.0
    for it in range(n_iters):
        w += float(t0 + it + 1)
    base_all = pb.sub_off[pb.cur]
    for h in range(H):
        if pb.round_bucket[h] < 0:
            continue
        _match_or(
            sc.regret,
            base_all + h * na_cur,
            na_cur,
            sc.roll,
            0,
            pb.probs,
            pb.row_offset[pb.cur] + pb.round_bucket[h] * na_cur,
        )
        for a in range(na_cur):
            sc.acc_all[h * na_cur + a] += w * sc.roll[a]
