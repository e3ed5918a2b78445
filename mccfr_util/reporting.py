"""How results are reported, in one place: chips to milli-big-blinds, and the 95% interval of a mean.

A game whose two blinds differ (hold'em) reports results in mbb (1/1000 of its big blind) per
game or hand; an ante game (equal blinds: Kuhn, Leduc) reports chips. Intervals are normal 95%
intervals of a mean of independent samples (``Z95 * s / sqrt(n)``, ``s`` the sample standard
deviation). It lives in :mod:`mccfr_util`, the lowest layer, because every layer that reports a
result uses it (``cli``, ``evaluation``, ``serving``, ``scripts``).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile
MBB_PER_BB = 1000.0

__all__ = ["MBB_PER_BB", "Z95", "big_blind_of", "chips_to_mbb", "ci95", "mbb_per_chip", "percentile"]


class _Blinds(Protocol):
    """What :func:`big_blind_of` reads of a game definition (:class:`holdem.GameDef`)."""

    @property
    def blind(self) -> tuple[int, ...]: ...


def big_blind_of(gamedef: _Blinds) -> int | None:
    """The big blind of a blinds game; None for an ante game (equal blinds: Kuhn, Leduc)."""
    b = gamedef.blind
    return max(b) if b[0] != b[1] else None


def mbb_per_chip(big_blind: int | None) -> float:
    """Milli-big-blinds per chip; 1.0 (the result stays in chips) without a big blind."""
    return MBB_PER_BB / big_blind if big_blind else 1.0


def chips_to_mbb(chips, big_blind: int):
    """``chips`` (a number or an array) in milli-big-blinds of ``big_blind``."""
    return chips * mbb_per_chip(big_blind)


def ci95(x) -> float:
    """Half-width of the 95% normal interval of the mean of the independent samples ``x``
    (infinite with fewer than two)."""
    x = np.asarray(x)
    return Z95 * float(x.std(ddof=1)) / math.sqrt(len(x)) if len(x) > 1 else math.inf


def percentile(x, p: float) -> float:
    """The nearest-rank ``p`` quantile of the samples ``x`` (``p`` in [0, 1]: 0.5 the median, 0.99
    the 99th percentile): the smallest sample with at least a ``p`` share of the samples at or below
    it; NaN for no samples. Latencies are reported with it (p50, p99)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"percentile: p must be in [0, 1], got {p}")
    s = sorted(x)
    if not s:
        return math.nan
    return float(s[min(len(s) - 1, max(0, math.ceil(p * len(s)) - 1))])
