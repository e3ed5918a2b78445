"""Numerics in one place: table dtypes, the regret scale, floors, and the RNG the kernels use.

Regret tables are ``float32`` (default) or ``int32``. An ``int32`` table stores
``round(regret * INT_SCALE_PER_BB / big_blind)``: 1/100 of a big blind resolution, saturating at
the int32 bounds, as Pluribus stored integer regrets with a floor. Regret matching is invariant
to the scale, so the stored units only matter for thresholds, which are given in big blinds and
converted here.

The kernels use xoshiro256** (Blackman & Vigna 2018) on a ``uint64[4]`` state array, so the RNG
state is plain data that goes into checkpoints and resumes exactly; it is seeded from a
``numpy.random.SeedSequence``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from llvmlite import ir
from numba.extending import intrinsic, overload

REGRET_DTYPES = {"float32": np.float32, "int32": np.int32}
INT_SCALE_PER_BB = 100.0
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
# keep float32 regrets within a range where adding a typical update is still exact enough
FLOAT_REGRET_MAX = 3.0e38


def regret_scale(dtype: str, big_blind: int) -> float:
    """Stored units per chip."""
    return INT_SCALE_PER_BB / big_blind if dtype == "int32" else 1.0


def regret_bounds(dtype: str) -> tuple[float, float]:
    if dtype == "int32":
        return float(INT32_MIN + 1), float(INT32_MAX - 1)
    return -FLOAT_REGRET_MAX, FLOAT_REGRET_MAX


def seed_rng_state(seed_seq: np.random.SeedSequence) -> np.ndarray:
    """A fresh ``uint64[4]`` xoshiro256** state (never all zero)."""
    st = seed_seq.generate_state(4, dtype=np.uint64)
    if not st.any():
        st[0] = 1
    return st


@numba.njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@numba.njit(cache=True)
def rng_next(s):
    """Next 64-bit output of xoshiro256** with state ``s`` (uint64[4], updated in place)."""
    result = _rotl(s[1] * np.uint64(5), 7) * np.uint64(9)
    t = s[1] << np.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@numba.njit(cache=True)
def rng_uniform(s):
    """A double in [0, 1) from the top 53 bits."""
    return (rng_next(s) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True)
def rng_below(s, n):
    """An integer in [0, n) (n small; the modulo bias is below 2**-50)."""
    return np.int64(rng_next(s) % np.uint64(n))


# -- Compact tables: bfloat16 -----------------------------------------------------------------
#
# With ``table_bits`` 16 the regret and strategy-sum tables are ``uint16`` arrays holding
# bfloat16 values: the upper 16 bits of a float32 (sign, the full 8-bit exponent, 7 stored
# mantissa bits). Decoding is a shift and a bitcast (:func:`bf16_load`). Encoding a traversal's
# update rounds stochastically (:func:`bf16_round_sr`: 16 random bits added below the kept ones,
# then truncated), so each stored value is an unbiased estimate of the exact one however small
# the update is against the value's spacing; discounts (a product, not a sum) round to nearest
# (:func:`bf16_round_rn`). A value above the largest finite bfloat16 saturates there and one that
# is nonzero but rounds to zero underflows; both are counted (``counts[0]``, ``counts[1]``),
# never wrapped. A per-row scale (postflop-solver's i16/u16) costs 8 bytes per row: 4 + 8 / width
# bytes per entry, 6.7 at the main job's mean width; bfloat16 is 4 bytes flat.

TABLE_BITS = (16, 32)
BF16_MAX_BITS = 0x7F7F  # the largest finite bfloat16 (about 3.39e38)


def table_dtypes(table_bits: int, regret_dtype: str) -> tuple[type, type]:
    """``(regret, strat)`` numpy dtypes of a run's tables."""
    if table_bits == 16:
        return np.uint16, np.uint16
    return REGRET_DTYPES[regret_dtype], np.float32


def bf16_decode(a: np.ndarray) -> np.ndarray:
    """bfloat16 bits (``uint16``) to float32 values, exactly."""
    return (np.asarray(a, np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def bf16_encode(x: np.ndarray) -> tuple[np.ndarray, int, int]:
    """float values to bfloat16 bits, rounded to nearest (ties to even): ``(bits, saturated,
    underflowed)``, values beyond the largest finite bfloat16 saturated to it, and counted."""
    f = np.ascontiguousarray(x, np.float32)
    u = f.view(np.uint32)
    sign = (u >> np.uint32(16)) & np.uint32(0x8000)
    mag = u & np.uint32(0x7FFFFFFF)
    over = mag > np.uint32(0x7F7F7FFF)  # rounds past the largest finite (NaN and inf included)
    lsb = (mag >> np.uint32(16)) & np.uint32(1)
    out = (mag + np.uint32(0x7FFF) + lsb) >> np.uint32(16)
    out = np.where(over, np.uint32(BF16_MAX_BITS), out)
    under = (out == 0) & (mag != 0)
    return (sign | out).astype(np.uint16), int(over.sum()), int(under.sum())


def table_values(a: np.ndarray) -> np.ndarray:
    """A table's values: bfloat16 bits decoded to float32, any other table as it is."""
    return bf16_decode(a) if a.dtype == np.uint16 else a


@intrinsic
def _f32_bits(typingctx, x):
    """The bits of a float32 as a uint32 (a bitcast: one register move)."""
    if x != numba.types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return numba.types.uint32(numba.types.float32), codegen


@intrinsic
def _bits_f32(typingctx, x):
    """The low 32 bits of an unsigned integer as a float32 (numba widens uint32 arithmetic to 64
    bits: the upper half is dropped)."""
    if not isinstance(x, numba.types.Integer) or x.signed:
        return None

    def codegen(context, builder, signature, args):
        v = args[0]
        if signature.args[0].bitwidth > 32:
            v = builder.trunc(v, ir.IntType(32))
        return builder.bitcast(v, ir.FloatType())

    return numba.types.float32(x), codegen


@numba.njit(cache=True, inline="always")
def bf16_load(b):
    """The float64 value of bfloat16 bits ``b``."""
    return float(_bits_f32(np.uint32(b) << np.uint32(16)))


@numba.njit(cache=True, inline="always")
def _bf16_finish(sign, mag, out, counts):
    if out == 0 and mag != 0:
        counts[1] += 1
    return np.uint16(sign | out)


@numba.njit(cache=True, inline="always")
def bf16_round_sr(x, r16, counts):
    """``x`` (float64) as bfloat16 bits, rounded up with probability the fraction of the spacing
    it lies above the value below (``r16``: 16 random bits, uint64 < 2**16): unbiased. Saturates
    at the largest finite bfloat16 (``counts[0]`` += 1); a nonzero value rounded to zero adds 1 to
    ``counts[1]``."""
    u = _f32_bits(np.float32(x))
    sign = (u >> np.uint32(16)) & np.uint32(0x8000)
    mag = u & np.uint32(0x7FFFFFFF)
    if mag > np.uint32(0x7F7F0000):
        counts[0] += 1
        return np.uint16(sign | np.uint32(BF16_MAX_BITS))
    out = (mag + np.uint32(r16)) >> np.uint32(16)
    return _bf16_finish(sign, mag, out, counts)


@numba.njit(cache=True, inline="always")
def bf16_round_rn(x):
    """``x`` (float64) as bfloat16 bits, rounded to nearest (ties to even), saturated at the
    largest finite bfloat16: for discounts, which only shrink values (a value discounted to zero
    has decayed, not underflowed: nothing is counted)."""
    u = _f32_bits(np.float32(x))
    sign = (u >> np.uint32(16)) & np.uint32(0x8000)
    mag = u & np.uint32(0x7FFFFFFF)
    if mag > np.uint32(0x7F7F7FFF):
        return np.uint16(sign | np.uint32(BF16_MAX_BITS))
    out = (mag + np.uint32(0x7FFF) + ((mag >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return np.uint16(sign | out)


def tload(arr, i):
    """``arr[i]`` as a float64: bfloat16 bits (``uint16`` tables) decoded, else the value."""
    return float(table_values(arr[i : i + 1])[0])


_LCG_MUL = np.uint64(6364136223846793005)  # Knuth's MMIX LCG: the rounding bits' stream
_LCG_ADD = np.uint64(1442695040888963407)


def sr_seed(arr, rng, srng):
    """For ``uint16`` (bfloat16) tables: seed the rounding stream ``srng`` (uint64 ``[1]``) from one
    draw of ``rng`` (once per traversal); any other table: nothing (32-bit runs draw nothing)."""
    if arr.dtype == np.uint16:
        srng[0] = rng_next(rng)


def tstore_sr(arr, i, x, srng, counts):
    """``arr[i] = x``: for ``uint16`` (bfloat16) tables rounded stochastically with the top 16
    bits of the next step of the LCG ``srng`` (one multiply-add, where a xoshiro draw per store
    cost more; seeded by :func:`sr_seed`) (:func:`bf16_round_sr`, saturation and underflow
    counted in ``counts``); any other table is assigned as numpy assigns."""
    if arr.dtype == np.uint16:
        srng[0] = srng[0] * _LCG_MUL + _LCG_ADD
        arr[i] = bf16_round_sr(x, srng[0] >> np.uint64(48), counts)
    else:
        arr[i] = x


def tstore_rn(arr, i, x):
    """``arr[i] = x``, bfloat16 tables rounded to nearest (:func:`bf16_round_rn`)."""
    arr[i] = bf16_round_rn(x) if arr.dtype == np.uint16 else x


@overload(tload)
def _tload(arr, i):
    if isinstance(arr, numba.types.Array) and arr.dtype == numba.types.uint16:
        return lambda arr, i: bf16_load(arr[i])
    return lambda arr, i: float(arr[i])


@overload(sr_seed)
def _sr_seed(arr, rng, srng):
    if isinstance(arr, numba.types.Array) and arr.dtype == numba.types.uint16:

        def impl(arr, rng, srng):
            srng[0] = rng_next(rng)

        return impl
    return lambda arr, rng, srng: None


@overload(tstore_sr)
def _tstore_sr(arr, i, x, srng, counts):
    if isinstance(arr, numba.types.Array) and arr.dtype == numba.types.uint16:

        def impl(arr, i, x, srng, counts):
            s = srng[0] * _LCG_MUL + _LCG_ADD
            srng[0] = s
            arr[i] = bf16_round_sr(x, s >> np.uint64(48), counts)

        return impl

    def plain(arr, i, x, srng, counts):
        arr[i] = x

    return plain


@overload(tstore_rn)
def _tstore_rn(arr, i, x):
    if isinstance(arr, numba.types.Array) and arr.dtype == numba.types.uint16:

        def impl(arr, i, x):
            arr[i] = bf16_round_rn(x)

        return impl

    def plain(arr, i, x):
        arr[i] = x

    return plain


# -- Compact tables: strategy sums as block floating point -------------------------------------
#
# bfloat16 strategy sums do not converge: adding a probability (at most 1) to a sum whose
# spacing is 1/128 of its value leaves, even with stochastic rounding, a noise that does not
# shrink with the iterations (Kuhn, pluribus, 500,000 iterations: exploitability 0.0099 against
# 0.0013 with float32 sums and bfloat16 regrets; docs/training.md). So 16-bit strategy sums are
# block floating point: a row's (information set's) sums are 16-bit unsigned mantissas ``m`` with
# one shared int8 exponent ``e``, value ``m * 2**e``, renormalized at each update so that the
# row's largest sum has the full 16 bits (256 times finer than bfloat16's spacing). One byte per
# row: 0.41 bytes per entry at the main job's mean row width of 2.46.

SUM_EXP_INIT = -16  # a fresh row's exponent: sums of 2**-16 .. 1 exactly representable
SUM_EXP_MIN, SUM_EXP_MAX = -128, 127
_POW2_BIAS = 300
_POW2 = np.ldexp(1.0, np.arange(-_POW2_BIAS, _POW2_BIAS + 1))  # 2**k at k + _POW2_BIAS


class Sums(NamedTuple):
    """16-bit strategy sums as the kernels take them (in place of a float32 array)."""

    m: np.ndarray  # uint16 [table entries]: mantissas
    exp: np.ndarray  # int8 [information sets]: each row's exponent


def sums_values(m: np.ndarray, exp: np.ndarray, width: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """float32 values of block-floating-point sums (``width``, ``rows``: a
    :class:`blueprint.tables.RowLayout`'s, the rows in entry order)."""
    per_entry = np.repeat(np.asarray(exp, np.int32), np.repeat(np.asarray(width, np.int64), rows))
    return np.ldexp(np.asarray(m, np.float32), per_entry).astype(np.float32)


def sums_add(strat, row, base, na, add, srng, counts):
    """Add ``add[0:na]`` to row ``row``'s strategy sums (entries ``base ..``)."""
    raise NotImplementedError  # numba only (the overload below)


def sums_scale(strat, row, base, na, af):
    """Multiply row ``row``'s strategy sums by ``af`` (a discount)."""
    raise NotImplementedError


def sums_prefetch(strat, i, row):
    """Ask the cache for the strategy sum ``i`` of row ``row`` (and, 16 bits, the row's exponent;
    :func:`abstraction.isomorphism.prefetch`)."""
    raise NotImplementedError


@numba.njit(cache=True, inline="always")
def _renorm_exp(mx):
    """The exponent that puts ``mx`` (> 0) in [2**15 - 1/2, 2**16 - 1) as a mantissa (rounded up,
    it stays below 2**16), clamped to int8; and whether it clamped at the top (saturation)."""
    k = math.frexp(mx)[1] - 16
    if math.ldexp(mx, -k) >= 65535.0:
        k += 1
    if k < SUM_EXP_MIN:
        return SUM_EXP_MIN, False
    if k > SUM_EXP_MAX:
        return SUM_EXP_MAX, True
    return k, False


@overload(sums_add)
def _sums_add(strat, row, base, na, add, srng, counts):
    if isinstance(strat, numba.types.Array):

        def plain(strat, row, base, na, add, srng, counts):
            for a in range(na):
                strat[base + a] += add[a]

        return plain

    def block(strat, row, base, na, add, srng, counts):
        m, exp = strat.m, strat.exp
        e = np.int64(exp[row])
        inv = _POW2[_POW2_BIAS - e]  # 2**-e: the row's mantissa units
        mx = 0.0  # the row's largest sum after the update, in those units
        for a in range(na):
            x = m[base + a] + add[a] * inv
            if x > mx:
                mx = x
        if mx <= 0.0:
            return
        scale = 1.0  # what the mantissas are multiplied by: 1 unless the exponent moves
        if mx >= 65535.0:  # the largest would not fit: a coarser exponent (adds only grow sums)
            e2, sat = _renorm_exp(mx * _POW2[_POW2_BIAS + e])
            if sat:
                counts[0] += 1
            scale = _POW2[_POW2_BIAS + e - e2]
            exp[row] = e2
        for a in range(na):
            s = srng[0] * _LCG_MUL + _LCG_ADD
            srng[0] = s
            x = (m[base + a] + add[a] * inv) * scale
            q = np.floor(x + (s >> np.uint64(11)) * (1.0 / 9007199254740992.0))
            if q > 65535.0:
                q = 65535.0
                counts[0] += 1
            m[base + a] = np.uint16(q)

    return block


@overload(sums_scale)
def _sums_scale(strat, row, base, na, af):
    if isinstance(strat, numba.types.Array):

        def plain(strat, row, base, na, af):
            for a in range(na):
                strat[base + a] = float(strat[base + a]) * af

        return plain

    def block(strat, row, base, na, af):
        m, exp = strat.m, strat.exp
        e = np.int64(exp[row])
        mx = 0.0
        for a in range(na):
            x = m[base + a] * af
            if x > mx:
                mx = x
        if mx <= 0.0:
            return
        # a finer exponent where the discount leaves room: the largest sum keeps its 16 bits
        e2, _ = _renorm_exp(mx * _POW2[_POW2_BIAS + e])
        scale = af * _POW2[_POW2_BIAS + e - e2]
        for a in range(na):
            q = np.floor(m[base + a] * scale + 0.5)
            m[base + a] = np.uint16(min(q, 65535.0))
        exp[row] = e2

    return block


@overload(sums_prefetch)
def _sums_prefetch(strat, i, row):
    from abstraction.isomorphism import prefetch

    if isinstance(strat, numba.types.Array):
        return lambda strat, i, row: prefetch(strat, i)

    def both(strat, i, row):
        prefetch(strat.m, i)
        prefetch(strat.exp, row)

    return both
