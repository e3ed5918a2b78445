"""Lazy discounting's schedule: the factors of a window of discount boundaries, for the kernels.

Linear CFR and DCFR discount the tables at every ``discount_every`` iterations (boundary ``j`` at
iteration count ``j * discount_every``, up to ``discount_until``). The trainer applies them lazily
(:func:`blueprint.kernels.settle_row`): a row that a traversal touches goes through the boundaries
it missed at once, each entry multiplied by one factor for its sign class, the product of the
missed boundaries' factors. :class:`DiscountWindow` holds, for the boundaries from the window's
``base`` epoch on, the cumulative logarithms of the factors (float64, summed in order from
``base``: the factor from epoch ``e`` to ``n`` is ``exp(L[n] - L[e])``), each boundary's own
factors (:meth:`blueprint.algo.AlgoConfig.factors`, for the whole-table sweeps that must match the
Ray job's eager discounting), and, from epoch ``wbase`` on, the effective iteration count ``W``
after each boundary (the unit of the pruning threshold and the regret floor), grown as the run
advances.

The window's ``base`` is a multiple of :data:`MAX_WINDOW` (:func:`window_base`): the trainer
brings every row to that epoch when the run reaches it (so every row's epoch is >= ``base``), which
bounds the arrays, and a run resumed from a checkpoint opens its window at the same ``base`` and
so computes the same factors bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from blueprint.algo import AlgoConfig
from blueprint.kernels import Schedule

__all__ = ["DiscountWindow", "MAX_WINDOW", "window_base"]

MAX_WINDOW = 255
"""Boundaries a window spans before the trainer brings every row to its next multiple and starts
a new one (255,000 iterations at the default ``discount_every``, seconds of the main job; the
sweep costs about as much as 100 iterations of it). The rows' epochs count from the window's first
in one byte each (``uint8``: the epoch array stays in the caches), and a traversal's factor
tables (:func:`blueprint.kernels.fill_factors`) hold one entry per boundary of the window,
refilled at each boundary: at most 765 ``exp``, against three per row touched."""

_TINY = 1e-300  # a factor below this (it underflows float32 tables anyway) counts as this


def window_base(epoch: int) -> int:
    """The first epoch of the window that holds ``epoch``."""
    return (int(epoch) // MAX_WINDOW) * MAX_WINDOW


def _log(f: float) -> float:
    return math.log(max(float(f), _TINY))


class DiscountWindow:
    """The schedule of ``algo``'s boundaries from epoch ``base`` on, ``W`` from epoch ``wbase``
    on, ``W`` being ``w_base`` at iteration count ``t_base`` (the state after the boundaries of
    epoch ``wbase``)."""

    def __init__(self, algo: AlgoConfig, base: int, wbase: int, w_base: float, t_base: int):
        if not 0 <= base <= wbase:
            raise ValueError(f"window base {base} must be in [0, {wbase}]")
        self.algo = algo
        self.every = int(algo.discount_every) if algo.discount != "none" else 0
        self.until = int(algo.discount_until)
        self.base = int(base)
        self.wbase = int(wbase)
        cap = 64
        self.pos = np.ones(cap, np.float64)
        self.neg = np.ones(cap, np.float64)
        self.avg = np.ones(cap, np.float64)
        self.lpos = np.zeros(cap, np.float64)
        self.lneg = np.zeros(cap, np.float64)
        self.lavg = np.zeros(cap, np.float64)
        self.length = 1  # epochs base .. base + length - 1 are filled in (index 0: L = 0)
        self.w = np.zeros(cap, np.float64)
        self.t_at = np.zeros(cap, np.int64)
        self.w[0] = w_base
        self.t_at[0] = t_base
        self.wlength = 1  # epochs wbase .. wbase + wlength - 1
        self._kernel: Schedule | None = None
        self.cover(self.wbase)

    @classmethod
    def at(cls, algo: AlgoConfig, iteration: int, w_base: float, t_base: int) -> "DiscountWindow":
        """The window holding the epoch of ``iteration`` (its schedule state ``w_base``/``t_base``)."""
        w = cls(algo, 0, 0, w_base, t_base)
        e = w.epoch(iteration)
        return cls(algo, window_base(e), e, w_base, t_base)

    def epoch(self, t: int) -> int:
        """The boundaries iteration ``t`` has seen (:func:`blueprint.kernels.epoch_at`)."""
        if self.every <= 0:
            return 0
        if 0 <= self.until < t:
            t = self.until
        return t // self.every

    @staticmethod
    def _grow(arr: np.ndarray, have: int, need: int, fill: float) -> np.ndarray:
        if need <= len(arr):
            return arr
        new = np.full(max(need, 2 * len(arr)), fill, arr.dtype)
        new[:have] = arr[:have]
        return new

    def cover(self, epoch: int) -> None:
        """Fill in the boundaries up to ``epoch``: their factors, the factors' cumulative logs
        (summed in order from ``base``) and ``W`` after each, as
        :meth:`blueprint.trainer.Trainer.discount_factors` moves it (the same float operations)."""
        need = epoch - self.base + 1
        if need > self.length:
            for name, fill in (
                ("pos", 1.0),
                ("neg", 1.0),
                ("avg", 1.0),
                ("lpos", 0.0),
                ("lneg", 0.0),
                ("lavg", 0.0),
            ):
                setattr(self, name, self._grow(getattr(self, name), self.length, need, fill))
            for i in range(self.length, need):
                f = self.algo.factors(self.base + i)
                self.pos[i], self.neg[i], self.avg[i] = f
                self.lpos[i] = self.lpos[i - 1] + _log(f[0])
                self.lneg[i] = self.lneg[i - 1] + _log(f[1])
                self.lavg[i] = self.lavg[i - 1] + _log(f[2])
            self.length = need
            self._kernel = None
        wneed = epoch - self.wbase + 1
        if wneed > self.wlength:
            self.w = self._grow(self.w, self.wlength, wneed, 0.0)
            self.t_at = self._grow(self.t_at, self.wlength, wneed, 0)
            for i in range(self.wlength, wneed):
                j = self.wbase + i
                b = j * self.every
                nf = float(self.neg[j - self.base])
                self.w[i] = (float(self.w[i - 1]) + (b - int(self.t_at[i - 1]))) * nf
                self.t_at[i] = b
            self.wlength = wneed
            self._kernel = None

    def state(self, t: int) -> tuple[float, int]:
        """``(w_base, t_base)`` at iteration count ``t`` (after the boundaries ``<= t``)."""
        i = self.epoch(t) - self.wbase
        return float(self.w[i]), int(self.t_at[i])

    def w_at(self, t: int) -> float:
        """``W(t)`` (:func:`blueprint.kernels.effective_iterations`)."""
        w, t_base = self.state(t)
        return w + float(t - t_base)

    def past(self, t: int) -> Schedule:
        """A schedule without boundaries that keeps ``W(t)`` from iteration ``t`` on, for spans past
        the last boundary whose rows are all through it: traversals then check no epoch."""
        w, t_at = self.state(t)
        one, zero = np.ones(1), np.zeros(1)
        return Schedule(
            0, -1, 0, one, one, one, zero, zero, zero, 0, np.array([w]), np.array([t_at], np.int64)
        )

    def kernel(self) -> Schedule:
        """The window as the kernels take it (the arrays themselves: valid until :meth:`cover` grows them)."""
        if self._kernel is None:
            self._kernel = Schedule(
                self.every,
                self.until,
                self.base,
                self.pos,
                self.neg,
                self.avg,
                self.lpos,
                self.lneg,
                self.lavg,
                self.wbase,
                self.w,
                self.t_at,
            )
        return self._kernel
