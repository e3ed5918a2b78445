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

import numba
import numpy as np

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
