"""Action translation for off-tree bets: the pseudo-harmonic mapping (Ganzfried & Sandholm 2013).

Bet sizes are pot fractions: a raise to ``X`` at a state with largest commitment ``M``, pot ``P``
and amount to call ``C`` has size ``x = (X - M) / (P + C)``, the same measure the bet abstraction
uses. For abstract sizes ``A < x < B`` the pseudo-harmonic mapping sends ``x`` to ``A`` with
probability

    f(x) = (B - x) (1 + A) / ((B - A) (1 + x))

and to ``B`` otherwise. It is the baseline that nested subgame solving has to beat. Sizes below the
smallest abstract size map to it, sizes above the largest to the largest.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np


def pseudo_harmonic(x: float, a: float, b: float) -> float:
    """Probability of mapping size ``x`` to the smaller size ``a`` (``a <= x <= b``)."""
    if b <= a:
        return 1.0
    x = min(max(x, a), b)
    return (b - x) * (1.0 + a) / ((b - a) * (1.0 + x))


def translate(x: float, sizes: Sequence[float], rng: Optional[np.random.Generator] = None) -> int:
    """Index into ``sizes`` (increasing) that the size ``x`` maps to.

    With ``rng`` the choice is randomized with the pseudo-harmonic probabilities; without it the
    more likely neighbour is taken (ties go to the smaller size), so a query is repeatable.
    """
    if not len(sizes):
        raise ValueError("no abstract sizes to translate to")
    if x <= sizes[0]:
        return 0
    if x >= sizes[-1]:
        return len(sizes) - 1
    hi = int(np.searchsorted(sizes, x, side="left"))
    if sizes[hi] == x:
        return hi
    lo = hi - 1
    p = pseudo_harmonic(x, sizes[lo], sizes[hi])
    if rng is None:
        return lo if p >= 0.5 else hi
    return lo if rng.random() < p else hi


def translate_probs(x: float, sizes: Sequence[float]) -> list[tuple[int, float]]:
    """The distribution of :func:`translate` with an ``rng``: ``[(index into sizes, probability)]``."""
    if not len(sizes):
        raise ValueError("no abstract sizes to translate to")
    if x <= sizes[0]:
        return [(0, 1.0)]
    if x >= sizes[-1]:
        return [(len(sizes) - 1, 1.0)]
    hi = int(np.searchsorted(sizes, x, side="left"))
    if sizes[hi] == x:
        return [(hi, 1.0)]
    lo = hi - 1
    p = pseudo_harmonic(x, sizes[lo], sizes[hi])
    return [(lo, p), (hi, 1.0 - p)]
