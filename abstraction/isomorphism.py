"""Lossless suit isomorphism: a perfect index of suit-canonical hands, per round.

After Waugh (2013), "A Fast and Optimal Hand Isomorphism Algorithm" (AAAI workshop on computer
poker and imperfect information). The code and the table layout here are our own.

**Hands.** A player's hand in round ``r`` is a sequence of *groups* of cards: cards within a group
are unordered, the groups are ordered. Two hands are *isomorphic* when one permutation of the
suits maps one onto the other group by group. The index is a bijection from the isomorphism classes
of round ``r`` onto ``0 .. size(r) - 1``; ``unindex`` returns one member of a class. Two groupings:

* board as one set (the default; what imperfect-recall card abstractions bucket): the hole cards,
  then every board card dealt so far. Hold'em: 169; 1,286,792; 13,960,050; 123,156,254.
* ``perfect_recall=True``: the hole cards, then each round's board cards as their own group, so the
  order in which the board arrived is kept (Waugh's ``{2, 3, 1, 1}``). Hold'em: 169; 1,286,792;
  55,190,538; 2,428,287,420.

Board cards dealt in round 0 are a group of their own in both (public cards never trade places
with hole cards); a round that deals nothing repeats the previous round's classes.

**Per-suit index.** Fix a suit ``s``. Its cards form a rank set ``A_k(s)`` in each group ``k``; the
sets are disjoint, so group ``k``'s set is a ``c_k``-subset of the ``N - u_k`` ranks that earlier
groups left unused (``N`` ranks, ``u_k = sum_{j<k} c_j``). Renumber the unused ranks densely (rank
``x`` becomes ``x - #{used ranks below x}``) and take the colex rank of the subset,
``sum_i C(p_i, i + 1)`` over its positions ``p_0 < p_1 < ...``; the mixed-radix number with digit
``k`` in radix ``C(N - u_k, c_k)`` is the suit's index ``i(s)``, dense in ``0 .. m(c) - 1`` with
``m(c) = prod_k C(N - u_k, c_k)`` for the count vector ``c = (c_0, c_1, ...)``. A count vector is
stored as the integer code ``sum_k c_k * prod_{j<k} (n_j + 1)`` (``n_k`` the size of group ``k``).

**Configurations.** A suit permutation permutes the pairs ``(code(s), i(s))``, so a class is the
multiset of those pairs, and sorting the suits by (code, index) gives its canonical form. The
multiset of codes alone, the *configuration*, picks a block of indices; blocks are laid out one
after another. Inside a block, the ``m`` suits that share a code ``c`` have indices
``a_1 <= ... <= a_m``, a multiset over ``m(c)`` values; its rank is the colex rank of the strictly
increasing ``a_j + j - 1``, i.e. ``sum_j C(a_j + j - 1, j)``, dense in
``0 .. C(m(c) + m - 1, m) - 1``. Runs combine by mixed radix in canonical order. Each step is a
bijection, so the index is perfect.

**Finding the block fast.** No hashing: for each group, the labelled split of its ``n_k`` cards over
the suits (a composition of ``n_k``) gets a dense number; these combine by mixed radix into a
*pattern* and ``pattern -> block offset`` is a table (560 patterns on the hold'em river, 3,200 with
perfect recall). Every suit relabelling of a pattern stores the same offset.

**Numba use.** ``HandIndexer.tables`` is one flat int64 array (layout below); :func:`iso_index`,
:func:`iso_index_masks` and :func:`iso_unindex` take it inside any njit kernel. A hand is an int
array: the hole cards followed by the board cards through the round, in deal order; a card is
``rank * num_suits + suit``. The index works on 64-bit masks with one 16-bit lane per suit (the
evaluator's cardset layout), so the four suits advance together: counts by a SWAR popcount, each
suit's colex digit summed card by card into its lane. It allocates nothing, divides by no variable
and branches only in its loops; with a single table array this lets numba prune the reference
counting of its array arguments, atomic updates worth 15-30 ns a call (a tuple of arrays would
cost one update per array touched). About 9M hold'em river indexes per second per
core (``scripts/benchmarks/bench_isomorphism.py``).

**Table layout** (``tables``, int64). S suits, N ranks, R rounds; the groups of
all rounds are numbered together (F of them), round r's are ``rg_base[r] .. rg_base[r + 1] - 1``.
``tables[0:4]`` = S, N, R, ``ceil(65536 / S)``; ``tables[4 + i]`` is where section i starts
(:data:`SECTIONS` order):

- ``rg_base`` ``[R + 1]``; ``g_lo``, ``g_hi`` ``[F]``: the group's positions ``g_lo .. g_hi - 1``
  in the hand.
- ``code_w`` ``[F]``: ``prod`` over the round's earlier groups j of ``(n_j + 1)``, the weight of a
  card of this group in its suit's code.
- ``comp_w`` ``[F]``: ``n_g + 1``, the radix of the raw number ``sum_s count_s (n_g + 1) ** s``
  of the group's split over the suits.
- ``comp_tab`` (group g's part at ``comp_base[g]``): raw split -> dense composition number times
  the product of the composition counts of the round's earlier groups; summed over a round's
  groups, the pattern.
- ``pat_off`` (round r's part at ``pat_base[r]``): pattern -> block offset (-1: no hand has it).
- ``suit_size`` (round r's part at ``ss_base[r]``, ``ss_base`` ``[R + 1]``): code -> ``m(c)`` (0: a
  suit cannot hold it), then one spare code with size 1, the code of the suits a deck lacks.
- ``binom`` ``[N + 1, N + 1]``: ``C(n, k)``.
- ``cfg_off`` (round r's configurations ``cfg_base[r] .. cfg_base[r + 1] - 1``): block offsets,
  increasing; ``cfg_codes`` ``[configurations, S]``: each configuration's codes, ascending.
- ``sizes`` ``[R]``: classes per round.
"""

from __future__ import annotations

import itertools
from math import comb

import numba
import numpy as np
from llvmlite import ir
from numba.extending import intrinsic

from holdem.gamedef import GameDef

MAX_SUITS = 4
MAX_RANKS = 13
MAX_ROUNDS = 4
MAX_GROUPS = 5  # hole cards, a board dealt in round 0, three more boards: the kernel's limit
SECTIONS = (
    "rg_base", "g_lo", "g_hi", "code_w", "comp_w", "comp_tab", "comp_base", "pat_off", "pat_base",
    "suit_size", "ss_base", "binom", "cfg_off", "cfg_base", "cfg_codes", "sizes",
)  # fmt: skip
(
    _RG_BASE, _G_LO, _G_HI, _CODE_W, _COMP_W, _COMP_TAB, _COMP_BASE, _PAT_OFF, _PAT_BASE,
    _SUIT_SIZE, _SS_BASE, _BINOM, _CFG_OFF, _CFG_BASE, _CFG_CODES, _SIZES,
) = range(4, 4 + len(SECTIONS))  # fmt: skip
_HEADER = 4 + len(SECTIONS)
_IDX_BITS = 40  # a suit's sort key: its index in the low 40 bits, its code above
_IDX_MASK = (1 << _IDX_BITS) - 1
_MAX_CODE = 1 << 15  # codes are packed in 16-bit lanes
_MAX_TABLE = 1 << 24  # entries in one table (patterns of a round, raw splits of a group)
_LANE_ONES = 0x0001000100010001
_INV3 = -6148914691236517205  # 3 * _INV3 == 1 modulo 2**64


class IsomorphismError(ValueError):
    """A hand, round, index or deck the indexer cannot take; the message names the bad value."""


# -- numba kernels ---------------------------------------------------------------------------


@intrinsic
def _popcount(typingctx, x):
    """Bits set in an int64 (one ``popcnt`` instruction)."""

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return numba.types.int64(numba.types.int64), codegen


@intrinsic
def _ctz(typingctx, x):
    """Trailing zeros of a non-zero int64 (one ``tzcnt`` instruction)."""

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return numba.types.int64(numba.types.int64), codegen


@intrinsic
def prefetch(typingctx, arr, i):
    """Ask the cache for ``arr[i]`` ahead of its read (``llvm.prefetch``; no effect on results).

    For the table lookups of a deal: issued as soon as an entry's index is known, so the
    cache misses overlap the arithmetic that follows instead of stalling one after another.
    """
    if not isinstance(arr, numba.types.Array) or not isinstance(i, numba.types.Integer):
        return None

    def codegen(context, builder, signature, args):
        from numba.core import cgutils

        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = context.cast(builder, args[1], signature.args[1], numba.types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])  # read, keep, data
        return context.get_dummy_value()

    return numba.types.void(arr, i), codegen


@numba.njit(cache=True, inline="always", error_model="numpy")
def _choose(x, k):
    """C(x, k) for 0 <= k <= 4 and any x >= 0 (constant divisors: no division instruction)."""
    if k == 1:
        return x
    if k == 2:
        return x * (x - 1) // 2
    if k == 3:
        return x * (x - 1) * (x - 2) // 6
    if k == 4:
        return x * (x - 1) * (x - 2) * (x - 3) // 24
    return np.int64(1)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _ld(t, i):
    """``t[i]`` for ``i >= 0``: an unsigned index spares numba's negative-index wraparound."""
    return t[np.uint64(i)]


@numba.njit(cache=True, inline="always", error_model="numpy")
def _lane_counts(m):
    """The number of bits set in each 16-bit lane of ``m``, in the same lanes (SWAR popcount)."""
    x = m - ((m >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return (x + (x >> 8)) & 0x001F001F001F001F


@numba.njit(cache=True, inline="always", error_model="numpy")
def _multichoose(a, j):
    """C(a + j - 1, j), multisets of size ``0 <= j <= 4`` over ``a`` values; select, no branch.

    Exact divisions by 2, 3, 4 as shifts and a multiply by the inverse of 3 modulo 2**64: no
    division instruction, and no zero-division path (which would keep numba's reference
    counting alive in the caller). The unused products may overflow; only the selected one is
    exact.
    """
    m2 = (a * (a + 1)) >> 1
    m3 = m2 * (a + 2) * _INV3
    m4 = (m3 * (a + 3)) >> 2
    # selection by arithmetic, not `x if c else y`, which would be a branch in numba's IR
    return (
        np.int64(j == 0)
        + np.int64(j == 1) * a
        + np.int64(j == 2) * m2
        + np.int64(j == 3) * m3
        + np.int64(j == 4) * m4
    )


@numba.njit(cache=True, inline="always", error_model="numpy")
def _run_step(t, ssb, state, key):
    """Fold the next suit (canonical order) into ``(total, mult, rank, code, j, size)``.

    Suits sharing a code form a run; ``rank`` is the run's multiset rank so far (colex of the
    strictly increasing ``a_j + j - 1``), ``j`` the suit's 1-based place in the run, ``size`` the
    suit-index count of the run's code. A finished run enters ``total`` in mixed radix ``mult``.
    Arithmetic rather than branches: equal codes are data, not structure.
    """
    total, mult, rank, prev, j, size = state
    code = key >> _IDX_BITS
    same = np.int64(code == prev)
    new = 1 - same
    total += new * rank * mult
    mult *= same + new * _multichoose(size, j)
    rank *= same
    j = j * same + 1
    rank += _multichoose(key & _IDX_MASK, j)
    return (total, mult, rank, code, j, _ld(t, ssb + code))


@numba.njit(cache=True, inline="always", error_model="numpy")
def iso_index(t, cards, round_):
    """Index of the hand ``cards`` (hole then board through ``round_``) in ``0 .. size - 1``.

    ``t`` is :attr:`HandIndexer.tables`; ``cards`` any integer array holding at least the round's
    hand (extra entries are ignored). No allocation; the hand is trusted (distinct cards of the
    deck): :meth:`HandIndexer.index` validates.
    """
    zero = np.int64(0)
    return _index(t, cards, np.int64(1), round_, zero, zero, zero, zero, zero)


@numba.njit(cache=True, inline="always", error_model="numpy")
def iso_index_masks(t, round_, m0, m1, m2, m3, m4):
    """:func:`iso_index` of a hand given as the packed rank masks of its groups.

    ``m_k`` is the round's group ``k`` (hole cards first) with bit ``16 * suit + rank`` set per
    card, the layout of ``holdem.evaluator``'s cardsets; masks past the round's groups are ignored.
    """
    return _index(t, t, np.int64(0), round_, m0, m1, m2, m3, m4)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _index(t, cards, read_cards, round_, m0, m1, m2, m3, m4):
    """The index of a hand given by ``cards`` (``read_cards`` 1) or by its group masks (0).

    Written for numba's reference-count pruning: nothing here can raise (no division by a
    variable) and there is no branch outside the loops (selects are arithmetic), so the per-call
    increments and decrements of the two arrays (atomic; 15-30 ns a call on the benchmark
    machine) are removed.
    """
    S = t[0]
    N = t[1]
    inv = t[3]  # c // S == (c * inv) >> 16 for every card c < 64
    gb = t[t[_RG_BASE] + round_]
    ge = t[t[_RG_BASE] + round_ + 1]
    g_lo = t[_G_LO]
    g_hi = t[_G_HI]
    code_w = t[_CODE_W]
    comp_w = t[_COMP_W]
    comp_tab = t[_COMP_TAB]
    comp_base = t[_COMP_BASE]
    binom = t[_BINOM]
    bw = N + 1
    zero = np.int64(0)
    one = np.int64(1)
    # per suit: index so far and the radix of its next digit; packed per suit in 16-bit lanes:
    # ranks held in earlier groups, their count, and the count-vector code so far
    i0 = i1 = i2 = i3 = zero
    r0 = r1 = r2 = r3 = one
    used = ucnt = codes = zero
    pattern = zero
    for g in range(gb, ge):
        k = g - gb
        m = (  # this group's ranks, packed like used
            np.int64(k == 0) * m0
            + np.int64(k == 1) * m1
            + np.int64(k == 2) * m2
            + np.int64(k == 3) * m3
            + np.int64(k == 4) * m4
        )
        lo = _ld(t, g_lo + g)
        for j in range(lo, lo + (_ld(t, g_hi + g) - lo) * read_cards):
            c = np.int64(cards[j])
            r = (c * inv) >> 16
            m |= one << (((c - r * S) << 4) + r)
        # Colex rank of each suit's ranks in this group, renumbered over the ranks that earlier
        # groups left unused, summed card by card into 16-bit lanes (each < C(13, 6) = 1716):
        # a card of rank r is the i-th of its suit here (i = its suit's cards below it) and sits
        # at position r - (its suit's used ranks below r); its term is C(position, i + 1). The
        # loop runs once per card of the group, a fixed count, so its branch predicts well.
        col = zero
        rest = m
        while rest:
            bit = _ctz(rest)
            rest &= rest - 1
            low = one << (bit & 48)
            below = (one << bit) - low  # the same suit's bits below the card
            pos = (bit & 15) - _popcount(used & below)
            col += _ld(t, binom + pos * bw + _popcount(m & below) + 1) * low
        cnt = _lane_counts(m)
        # a suit's next digit is its colex rank, in radix C(unused ranks, its cards here);
        # absent suits (S < 4) have empty lanes and change nothing
        i0 += (col & 0xFFFF) * r0
        i1 += ((col >> 16) & 0xFFFF) * r1
        i2 += ((col >> 32) & 0xFFFF) * r2
        i3 += (col >> 48) * r3
        at = (N * bw) * _LANE_ONES - ucnt * bw + cnt  # lane s: C(N - ucnt_s, cnt_s)'s place
        r0 *= _ld(t, binom + (at & 0xFFFF))
        r1 *= _ld(t, binom + ((at >> 16) & 0xFFFF))
        r2 *= _ld(t, binom + ((at >> 32) & 0xFFFF))
        r3 *= _ld(t, binom + (at >> 48))
        used |= m
        ucnt += cnt
        codes += cnt * _ld(t, code_w + g)
        # the group's split over the suits, in radix w = n_g + 1
        w = _ld(t, comp_w + g)
        raw = (cnt & 0xFFFF) + w * (((cnt >> 16) & 0xFFFF) + w * (((cnt >> 32) & 0xFFFF) + w * (cnt >> 48)))
        pattern += _ld(t, comp_tab + _ld(t, comp_base + g) + raw)
    offset = _ld(t, t[_PAT_OFF] + _ld(t, t[_PAT_BASE] + round_) + pattern)

    # each suit's sort key: code << 40 | index. An absent suit (S < 4) gets the round's spare
    # code, one past the real ones, whose suit size is 1: it sorts last, in a run of its own
    # whose rank is 0.
    ss = t[_SS_BASE] + round_
    ssb = t[_SUIT_SIZE] + _ld(t, ss)
    spare = (_ld(t, ss + 1) - _ld(t, ss) - 1) << _IDX_BITS
    k0 = ((codes & 0xFFFF) << _IDX_BITS) | i0
    k1 = (((codes >> 16) & 0xFFFF) << _IDX_BITS) | i1
    k2 = (((codes >> 32) & 0xFFFF) << _IDX_BITS) | i2
    k3 = ((codes >> 48) << _IDX_BITS) | i3
    k1 += np.int64(S < 2) * (spare - k1)
    k2 += np.int64(S < 3) * (spare - k2)
    k3 += np.int64(S < 4) * (spare - k3)
    # sorting network for four keys, ascending: the canonical order of the suits
    k0, k1 = min(k0, k1), max(k0, k1)
    k2, k3 = min(k2, k3), max(k2, k3)
    k0, k2 = min(k0, k2), max(k0, k2)
    k1, k3 = min(k1, k3), max(k1, k3)
    k1, k2 = min(k1, k2), max(k1, k2)
    state = (zero, np.int64(1), zero, np.int64(-1), zero, zero)
    state = _run_step(t, ssb, state, k0)
    state = _run_step(t, ssb, state, k1)
    state = _run_step(t, ssb, state, k2)
    state = _run_step(t, ssb, state, k3)
    total, mult, rank, _, _, _ = state
    return offset + total + rank * mult


@numba.njit(cache=True, error_model="numpy")
def iso_index_many(t, hands, round_, out):
    """``out[i] = iso_index(t, hands[i], round_)`` for an int array ``hands[n, >= length]``."""
    for i in range(hands.shape[0]):
        out[i] = iso_index(t, hands[i], round_)


@numba.njit(cache=True, error_model="numpy")
def iso_index_rounds(t, cards, last_round, out):
    """``out[r] = iso_index(t, cards, r)`` for every round ``r <= last_round``."""
    for r in range(last_round + 1):
        out[r] = iso_index(t, cards, r)


@numba.njit(cache=True, error_model="numpy")
def iso_unindex(t, index, round_, out):
    """Write a canonical member of class ``index`` of ``round_`` into ``out`` (hand layout).

    Each group's cards come out in increasing order. ``index`` is trusted to be in range.
    """
    S = t[0]
    N = t[1]
    bw = N + 1
    binom = t[_BINOM]
    gb = t[t[_RG_BASE] + round_]
    ge = t[t[_RG_BASE] + round_ + 1]
    g_lo = t[_G_LO]
    g_hi = t[_G_HI]
    ssb = t[_SUIT_SIZE] + t[t[_SS_BASE] + round_]
    lo = t[t[_CFG_BASE] + round_]
    hi = t[t[_CFG_BASE] + round_ + 1]
    cfg_off = t[_CFG_OFF]
    while hi - lo > 1:  # the last configuration whose block starts at or before index
        mid = (lo + hi) // 2
        if t[cfg_off + mid] <= index:
            lo = mid
        else:
            hi = mid
    rem = index - t[cfg_off + lo]
    codes = t[t[_CFG_CODES] + lo * S : t[_CFG_CODES] + (lo + 1) * S]
    sidx = np.zeros(S, np.int64)
    i = 0
    while i < S:
        code = codes[i]
        m = 1
        while i + m < S and codes[i + m] == code:
            m += 1
        ss = t[ssb + code]
        size = _choose(ss + m - 1, m)
        r = rem % size
        rem //= size
        for j in range(m, 0, -1):  # colex unrank of x_j = a_j + j - 1, largest first
            a = j - 1
            b = ss + j - 1  # C(b, j) > r always holds
            while b - a > 1:
                mid = (a + b) // 2
                if _choose(mid, j) <= r:
                    a = mid
                else:
                    b = mid
            r -= _choose(a, j)
            sidx[i + j - 1] = a - j + 1
        i += m

    fill = np.empty(ge - gb, np.int64)
    for g in range(gb, ge):
        fill[g - gb] = t[g_lo + g]
    for s in range(S):
        code = codes[s]
        idx = sidx[s]
        used = 0
        ucnt = 0
        for g in range(gb, ge):
            c = (code // t[t[_CODE_W] + g]) % (t[g_hi + g] - t[g_lo + g] + 1)
            if c == 0:
                continue
            radix = t[binom + (N - ucnt) * bw + c]
            v = idx % radix
            idx //= radix
            new = 0
            for e in range(c, 0, -1):  # colex unrank, largest position first
                p = e - 1
                while t[binom + (p + 1) * bw + e] <= v:
                    p += 1
                v -= t[binom + p * bw + e]
                x = -1  # the p-th (0-based) rank that earlier groups left unused
                seen = -1
                while seen < p:
                    x += 1
                    if not (used >> x) & 1:
                        seen += 1
                out[fill[g - gb]] = x * S + s
                fill[g - gb] += 1
                new |= 1 << x
            used |= new
            ucnt += c
    for g in range(gb, ge):  # increasing order inside each group
        for a in range(t[g_lo + g] + 1, t[g_hi + g]):
            v = out[a]
            b = a
            while b > t[g_lo + g] and out[b - 1] > v:
                out[b] = out[b - 1]
                b -= 1
            out[b] = v


@numba.njit(cache=True, error_model="numpy")
def iso_unindex_many(t, indices, round_, out):
    """``iso_unindex`` of each ``indices[i]`` into ``out[i]``."""
    for i in range(indices.shape[0]):
        iso_unindex(t, indices[i], round_, out[i])


# -- table construction ----------------------------------------------------------------------


def _compositions(n: int, num_suits: int) -> list[tuple[int, ...]]:
    """Every split of ``n`` cards over the suits, as per-suit counts, in a fixed order."""
    return [c for c in itertools.product(range(n + 1), repeat=num_suits) if sum(c) == n]


class _RoundTables:
    """The tables of one round whose hand is the non-empty groups ``sizes``, in order."""

    def __init__(self, r: int, S: int, N: int, sizes: tuple[int, ...]) -> None:
        G = len(sizes)
        self.code_w = [1] * G
        for k in range(1, G):
            self.code_w[k] = self.code_w[k - 1] * (sizes[k - 1] + 1)
        P = self.code_w[-1] * (sizes[-1] + 1) if G else 1
        if P > _MAX_CODE:
            raise IsomorphismError(
                f"round {r}: groups {list(sizes)} give {P:,} count vectors per suit, over {_MAX_CODE:,}"
            )
        self.suit_size = np.zeros(P, np.int64)
        for code in range(P):
            counts = [(code // self.code_w[k]) % (sizes[k] + 1) for k in range(G)]
            if sum(counts) <= N:
                m, u = 1, 0
                for c in counts:
                    m *= comb(N - u, c)
                    u += c
                self.suit_size[code] = m
        if self.suit_size.max() > _IDX_MASK:
            raise IsomorphismError(
                f"round {r}: one suit has {int(self.suit_size.max()):,} indices, over 2**{_IDX_BITS}"
            )

        comps = [_compositions(n, S) for n in sizes]
        self.comp_w = [n + 1 for n in sizes]
        self.comp_tabs = []
        pmul = 1
        for n, cs in zip(sizes, comps):
            if (n + 1) ** S > _MAX_TABLE:
                raise IsomorphismError(
                    f"round {r}: a group of {n} cards over {S} suits needs a table of {(n + 1) ** S:,} entries"
                )
            tab = np.full((n + 1) ** S, -1, np.int64)
            for ci, c in enumerate(cs):
                tab[sum(c[s] * (n + 1) ** s for s in range(S))] = ci * pmul
            self.comp_tabs.append(tab)
            pmul *= len(cs)
        if pmul > _MAX_TABLE:
            raise IsomorphismError(f"round {r}: {pmul:,} suit splits exceed the table limit {_MAX_TABLE:,}")

        pat_cfg: dict[int, tuple[int, ...]] = {}
        for choice in itertools.product(*(range(len(cs)) for cs in comps)):
            codes = [0] * S
            pattern, mul = 0, 1
            for k, ci in enumerate(choice):
                pattern += ci * mul
                mul *= len(comps[k])
                for s, c in enumerate(comps[k][ci]):
                    codes[s] += c * self.code_w[k]
            if all(self.suit_size[c] > 0 for c in codes):
                pat_cfg[pattern] = tuple(sorted(codes))
        self.configs = sorted(set(pat_cfg.values()))
        offset_of = {}
        total = 0
        for cfg in self.configs:
            offset_of[cfg] = total
            block = 1
            for code, run in itertools.groupby(cfg):
                m = len(list(run))
                block *= comb(int(self.suit_size[code]) + m - 1, m)
            total += block
        if total >= 1 << 62:
            raise IsomorphismError(f"round {r}: {total:,} classes do not fit an int64 index")
        self.size = total
        self.cfg_off = [offset_of[c] for c in self.configs]
        self.pat_off = np.full(pmul, -1, np.int64)
        for pattern, cfg in pat_cfg.items():
            self.pat_off[pattern] = offset_of[cfg]


def _concat(parts: list) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate 1-D parts; also each part's start within the result."""
    arrays = [np.asarray(p, np.int64).reshape(-1) for p in parts]
    starts = np.zeros(len(arrays), np.int64)
    if len(arrays) > 1:
        starts[1:] = np.cumsum([len(a) for a in arrays[:-1]])
    data = np.concatenate(arrays) if arrays else np.zeros(0, np.int64)
    return data, starts


def _build_tables(S: int, N: int, round_groups: list[tuple[int, ...]]) -> np.ndarray:
    R = len(round_groups)
    rounds = [_RoundTables(r, S, N, sizes) for r, sizes in enumerate(round_groups)]
    rg_base = np.zeros(R + 1, np.int64)
    g_lo, g_hi = [], []
    for r, sizes in enumerate(round_groups):
        rg_base[r + 1] = rg_base[r] + len(sizes)
        pos = 0
        for n in sizes:
            g_lo.append(pos)
            g_hi.append(pos + n)
            pos += n
    comp_tab, comp_base = _concat([tab for rt in rounds for tab in rt.comp_tabs])
    pat_off, pat_base = _concat([rt.pat_off for rt in rounds])
    # one spare code per round past the real ones, suit size 1: the key of an absent suit
    suit_size, ss_base = _concat([np.append(rt.suit_size, 1) for rt in rounds])
    ss_base = np.append(ss_base, len(suit_size))
    cfg_base = np.zeros(R + 1, np.int64)
    for r, rt in enumerate(rounds):
        cfg_base[r + 1] = cfg_base[r] + len(rt.configs)
    sections = {
        "rg_base": rg_base,
        "g_lo": g_lo,
        "g_hi": g_hi,
        "code_w": [w for rt in rounds for w in rt.code_w],
        "comp_w": [w for rt in rounds for w in rt.comp_w],
        "comp_tab": comp_tab,
        "comp_base": comp_base,
        "pat_off": pat_off,
        "pat_base": pat_base,
        "suit_size": suit_size,
        "ss_base": ss_base,
        "binom": [[comb(n, k) for k in range(N + 1)] for n in range(N + 1)],
        "cfg_off": [o for rt in rounds for o in rt.cfg_off],
        "cfg_base": cfg_base,
        "cfg_codes": [c for rt in rounds for c in rt.configs],
        "sizes": [rt.size for rt in rounds],
    }
    body, starts = _concat([sections[name] for name in SECTIONS])
    header = np.concatenate([[S, N, R, (65535 + S) // S], starts + _HEADER]).astype(np.int64)
    out = np.concatenate([header, body])
    out.flags.writeable = False
    return out


# -- the Python facade -----------------------------------------------------------------------


class HandIndexer:
    """Perfect index of the suit-isomorphism classes of a player's hands, per round.

    Args:
        num_suits: 1..4.
        num_ranks: 1..13.
        cards_per_round: ``cards_per_round[0]`` hole cards, ``cards_per_round[k]`` (k >= 1) the
            board cards dealt in round ``k``; 0 is allowed (that round repeats the previous
            round's classes).
        perfect_recall: how the board is grouped. ``False`` (the default, for imperfect-recall
            card abstractions): round ``r``'s hand is the hole cards and the board so far as one
            unordered set; hold'em sizes 169; 1,286,792; 13,960,050; 123,156,254. ``True``:
            each round's board cards are a separate group, so the order in which board cards
            arrived is kept (Waugh's ``{2, 3, 1, 1}`` indexer); hold'em sizes 169; 1,286,792;
            55,190,538; 2,428,287,420.

    A hand of round ``r`` is an int array of ``hand_size(r)`` cards: the hole cards, then the
    board cards through round ``r`` in deal order. :attr:`tables` feeds the numba functions
    :func:`iso_index` / :func:`iso_unindex`. Build for a game with :meth:`for_game`.
    """

    def __init__(
        self,
        num_suits: int,
        num_ranks: int,
        cards_per_round: tuple[int, ...],
        *,
        perfect_recall: bool = False,
    ) -> None:
        cpr = [int(n) for n in cards_per_round]
        if not cpr:
            raise IsomorphismError("cards_per_round is empty: give at least the hole cards")
        self._setup(num_suits, num_ranks, cpr[0], [0] + cpr[1:], perfect_recall)

    @classmethod
    def for_game(cls, game: GameDef, *, perfect_recall: bool = False) -> HandIndexer:
        """The indexer of a game's hands (hole cards, then the board), one entry per round.

        Board cards dealt in round 0 are a group of their own after the hole cards: they are
        public, so no suit permutation may exchange them with hole cards.
        """
        return cls.for_deal(
            game.num_suits,
            game.num_ranks,
            game.num_hole_cards,
            tuple(game.num_board_cards),
            perfect_recall=perfect_recall,
        )

    @classmethod
    def for_deal(
        cls,
        num_suits: int,
        num_ranks: int,
        num_hole_cards: int,
        num_board_cards: tuple[int, ...],
        *,
        perfect_recall: bool = False,
    ) -> HandIndexer:
        """:meth:`for_game` from the deal alone (``num_board_cards[r]``: board cards dealt in round
        ``r``); :class:`IsomorphismError` for a deal outside the limits of ``__init__``."""
        obj = cls.__new__(cls)
        obj._setup(num_suits, num_ranks, num_hole_cards, [int(n) for n in num_board_cards], perfect_recall)
        return obj

    def _setup(
        self, num_suits: int, num_ranks: int, hole: int, boards: list[int], perfect_recall: bool
    ) -> None:
        """``boards[r]``: board cards dealt in round r (the round count is ``len(boards)``)."""
        if not 1 <= num_suits <= MAX_SUITS:
            raise IsomorphismError(f"num_suits must be 1..{MAX_SUITS}, got {num_suits}")
        if not 1 <= num_ranks <= MAX_RANKS:
            raise IsomorphismError(f"num_ranks must be 1..{MAX_RANKS}, got {num_ranks}")
        if hole < 0 or any(n < 0 for n in boards):
            raise IsomorphismError(f"card counts must be non-negative, got hole {hole}, board {boards}")
        if not 1 <= len(boards) <= MAX_ROUNDS:
            raise IsomorphismError(f"1..{MAX_ROUNDS} rounds are supported, got {len(boards)}")
        if hole + sum(boards) > num_suits * num_ranks:
            raise IsomorphismError(f"{hole + sum(boards)} cards do not fit a deck of {num_suits * num_ranks}")
        round_groups: list[tuple[int, ...]] = []
        for r in range(len(boards)):
            groups = [hole] + (boards[: r + 1] if perfect_recall else [sum(boards[: r + 1])])
            round_groups.append(tuple(n for n in groups if n > 0))
        self.num_suits = int(num_suits)
        self.num_ranks = int(num_ranks)
        self.num_rounds = len(boards)
        self.perfect_recall = bool(perfect_recall)
        self.round_groups = tuple(round_groups)
        self.hand_sizes = tuple(sum(g) for g in round_groups)
        self.tables = _build_tables(self.num_suits, self.num_ranks, round_groups)

    def sections(self) -> dict[str, np.ndarray]:
        """Read-only views of the sections of :attr:`tables`, by name (for inspection)."""
        t = self.tables
        starts = list(t[4:_HEADER]) + [len(t)]
        return {name: t[starts[i] : starts[i + 1]] for i, name in enumerate(SECTIONS)}

    # -- queries ------------------------------------------------------------------------------
    def size(self, round_: int) -> int:
        """Number of isomorphism classes of round ``round_``."""
        return int(self.tables[self.tables[_SIZES] + self._round(round_)])

    def hand_size(self, round_: int) -> int:
        """Cards in a hand of round ``round_`` (hole plus board through the round)."""
        return self.hand_sizes[self._round(round_)]

    def index(self, cards, round_: int) -> int:
        """Index in ``0 .. size(round_) - 1`` of a hand (hole then board, in deal order)."""
        r = self._round(round_)
        hand = np.asarray(cards)
        if hand.ndim != 1:
            raise IsomorphismError(
                f"a hand is a 1-D card array, got shape {hand.shape}; use index_many for rows"
            )
        hands = self._hands(hand[None, :], r, single=True)
        out = np.empty(1, np.int64)
        iso_index_many(self.tables, hands, r, out)  # the batch kernel: one compiled entry point
        return int(out[0])

    def index_many(self, cards2d, round_: int) -> np.ndarray:
        """int64 ``[n]``: the index of each row of ``cards2d`` (int ``[n, hand_size(round_)]``)."""
        r = self._round(round_)
        hands = self._hands(np.asarray(cards2d), r, single=False)
        out = np.empty(hands.shape[0], np.int64)
        iso_index_many(self.tables, hands, r, out)
        return out

    def unindex(self, index: int, round_: int) -> np.ndarray:
        """int64 ``[hand_size(round_)]``: a member of class ``index``, each group ascending."""
        return self.unindex_many(np.asarray([index]), round_)[0]

    def unindex_many(self, indices, round_: int) -> np.ndarray:
        """int64 ``[n, hand_size(round_)]``: :meth:`unindex` of each entry of ``indices``."""
        r = self._round(round_)
        idx = self._indices(np.asarray(indices).reshape(-1), r)
        out = np.empty((idx.shape[0], self.hand_sizes[r]), np.int64)
        iso_unindex_many(self.tables, idx, r, out)
        return out

    # -- validation at the boundary -----------------------------------------------------------
    def _round(self, round_: int) -> int:
        if (
            isinstance(round_, bool)
            or not isinstance(round_, (int, np.integer))
            or not 0 <= round_ < self.num_rounds
        ):
            raise IsomorphismError(f"round must be an integer in 0..{self.num_rounds - 1}, got {round_!r}")
        return int(round_)

    def _hands(self, hands: np.ndarray, r: int, single: bool) -> np.ndarray:
        n = self.hand_sizes[r]
        what = "hand" if single else "hands"
        if hands.ndim != 2 or hands.shape[1] != n:
            shape = hands.shape[1:] if single else hands.shape
            raise IsomorphismError(
                f"round {r} {what} need {n} cards each (hole then board), got shape {shape}"
            )
        if hands.size and not np.issubdtype(hands.dtype, np.integer):
            raise IsomorphismError(f"cards must be integers, got dtype {hands.dtype}")
        hands = hands.astype(np.int64, copy=False)
        deck = self.num_suits * self.num_ranks
        bad = (hands < 0) | (hands >= deck)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise IsomorphismError(
                f"card {int(hands[row, col])} at {what} row {row}, position {col} is outside the deck 0..{deck - 1}"
            )
        if n > 1:
            srt = np.sort(hands, axis=1)
            dup = srt[:, 1:] == srt[:, :-1]
            if dup.any():
                row, col = np.argwhere(dup)[0]
                raise IsomorphismError(f"card {int(srt[row, col])} appears twice in {what} row {row}")
        return np.ascontiguousarray(hands)

    def _indices(self, idx: np.ndarray, r: int) -> np.ndarray:
        if idx.size and not np.issubdtype(idx.dtype, np.integer):
            raise IsomorphismError(f"indices must be integers, got dtype {idx.dtype}")
        idx = idx.astype(np.int64, copy=False)
        size = self.size(r)
        bad = (idx < 0) | (idx >= size)
        if bad.any():
            raise IsomorphismError(f"index {int(idx[np.argmax(bad)])} is outside 0..{size - 1} for round {r}")
        return idx

    def __repr__(self) -> str:
        sizes = ", ".join(f"{self.size(r):,}" for r in range(self.num_rounds))
        groups = " ".join(str(list(g)) for g in self.round_groups)
        return f"HandIndexer({self.num_suits} suits, {self.num_ranks} ranks, groups by round {groups}; sizes {sizes})"
