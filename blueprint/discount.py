"""Lazy discounting's schedule: the factors of a window of discount boundaries, for the kernels.

Linear CFR and DCFR discount the tables at every ``discount_every`` iterations (boundary ``j`` at
iteration count ``j * discount_every``, up to ``discount_until``). The trainer applies them lazily
(:func:`blueprint.kernels.settle_row`): a row that a traversal touches goes through the boundaries
it missed, one by one. :class:`DiscountWindow` holds, for the boundaries from the window's first
epoch on, the factors (:meth:`blueprint.algo.AlgoConfig.factors`, computed in Python exactly as
the eager sweep computed them) and the effective iteration count ``W`` after each (the unit of the
pruning threshold and the regret floor), grown as the run advances and dropped when the tables
are settled (the trainer starts a new window from its ``w_base``/``t_base``).
"""

from __future__ import annotations

import numpy as np

from blueprint.algo import AlgoConfig
from blueprint.kernels import Schedule

__all__ = ["DiscountWindow", "MAX_WINDOW"]

MAX_WINDOW = 1 << 16
"""Boundaries a window may span before the trainer settles every row and starts a new one: its
arrays take 48 bytes a boundary (3 MB), and a row untouched for that long (65M iterations at the
default ``discount_every``, minutes of the main job) has its factors applied at the next barrier."""


class DiscountWindow:
    """The schedule of ``algo``'s boundaries from epoch ``base`` (the boundaries seen by the
    iteration after ``t_base``) on, ``W`` being ``w_base`` at iteration count ``t_base``."""

    def __init__(self, algo: AlgoConfig, base: int, w_base: float, t_base: int):
        self.algo = algo
        self.every = int(algo.discount_every) if algo.discount != "none" else 0
        self.until = int(algo.discount_until)
        self.base = int(base)
        cap = 64
        self.pos = np.ones(cap, np.float64)
        self.neg = np.ones(cap, np.float64)
        self.avg = np.ones(cap, np.float64)
        self.w = np.zeros(cap, np.float64)
        self.t_at = np.zeros(cap, np.int64)
        self.w[0] = w_base
        self.t_at[0] = t_base
        self.length = 1  # epochs base .. base + length - 1 are filled in
        self._kernel: Schedule | None = None

    @classmethod
    def at(cls, algo: AlgoConfig, iteration: int, w_base: float, t_base: int) -> "DiscountWindow":
        """The window starting at the epoch of ``iteration`` (its schedule state ``w_base``/``t_base``)."""
        w = cls(algo, 0, w_base, t_base)
        w.base = w.epoch(iteration)
        return w

    def epoch(self, t: int) -> int:
        """The boundaries iteration ``t`` has seen (:func:`blueprint.kernels.epoch_at`)."""
        if self.every <= 0:
            return 0
        if 0 <= self.until < t:
            t = self.until
        return t // self.every

    def cover(self, epoch: int) -> None:
        """Fill in the boundaries up to ``epoch``: their factors and ``W`` after each, as
        :meth:`blueprint.trainer.Trainer.discount_factors` moves it (the same float operations)."""
        need = epoch - self.base + 1
        if need <= self.length:
            return
        if need > len(self.w):
            cap = max(need, 2 * len(self.w))
            for name in ("pos", "neg", "avg", "w", "t_at"):
                old = getattr(self, name)
                new = np.ones(cap, old.dtype) if name in ("pos", "neg", "avg") else np.zeros(cap, old.dtype)
                new[: self.length] = old[: self.length]
                setattr(self, name, new)
        for i in range(self.length, need):
            j = self.base + i
            b = j * self.every
            f = self.algo.factors(j)
            self.pos[i], self.neg[i], self.avg[i] = f
            self.w[i] = (float(self.w[i - 1]) + (b - int(self.t_at[i - 1]))) * f[1]
            self.t_at[i] = b
        self.length = need
        self._kernel = None

    def state(self, t: int) -> tuple[float, int]:
        """``(w_base, t_base)`` at iteration count ``t`` (after the boundaries ``<= t``)."""
        i = self.epoch(t) - self.base
        return float(self.w[i]), int(self.t_at[i])

    def w_at(self, t: int) -> float:
        """``W(t)`` (:func:`blueprint.kernels.effective_iterations`)."""
        w, t_base = self.state(t)
        return w + float(t - t_base)

    def kernel(self) -> Schedule:
        """The window as the kernels take it (the arrays themselves: valid until :meth:`cover` grows them)."""
        if self._kernel is None:
            self._kernel = Schedule(
                self.every, self.until, self.base, self.pos, self.neg, self.avg, self.w, self.t_at
            )
        return self._kernel
