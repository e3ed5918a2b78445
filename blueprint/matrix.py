"""Regret matching on two-player zero-sum matrix games, with the production regret-matching kernel.

Installed for ``mccfr matrix`` (:mod:`mccfr.cli.matrix`), which runs it; ``examples/rps.py`` uses it too.

The game is a payoff matrix ``A`` (float64 ``[m, n]``): the row player picks row ``i``, the column
player column ``j``, the row player receives ``A[i, j]`` and the column player ``-A[i, j]``.

Regret matching (Hart & Mas-Colell 2000), both players updating simultaneously. At iteration
``t`` each player's current strategy is its cumulative regret's positive part, normalized
(uniform when no regret is positive): ``x_t = RM(R_row)``, ``y_t = RM(R_col)``, computed by
:func:`blueprint.kernels.regret_matching`, the kernel the MCCFR traversals use. Then, with the
action values ``u_row = A y_t`` and ``u_col = -A^T x_t``, each player adds its instantaneous
regret ``r = u - <strategy, u>``:

* standard:       ``R += r``
* positive-only:  ``R += max(r, 0)`` (the variant of some course notes; cumulative regrets never
  decrease, so it is *not* the no-regret algorithm of Hart & Mas-Colell and carries no
  convergence guarantee; it is here to reproduce those notes' worked steps).

The *average* strategies ``x_bar = mean_t x_t`` and ``y_bar = mean_t y_t`` converge to a Nash
equilibrium in the standard variant (the average regret vanishes as ``O(1/sqrt(T))``); the
current strategies need not. With one player's strategy fixed (``fixed_row`` / ``fixed_column``)
only the other learns, and its average strategy goes to a best response to the fixed one.

Value and exploitability of a strategy pair ``(x, y)`` follow OpenSpiel's convention:
``value = x^T A y`` (row player's payoff), and ``exploitability = NashConv / 2`` where
``NashConv = (max_i (A y)_i - value) + (value - min_j (x^T A)_j)``: the sum of both sides'
best-response gains. It is 0 exactly at an equilibrium.

CSV format (:func:`load_csv`): no header, one line per row-player action, one comma-separated
number per column-player action, the row player's payoff; blank lines are ignored. Ragged rows,
entries that are not finite numbers and empty files are errors naming the row and column.

Example (rock-paper-scissors converges to (1/3, 1/3, 1/3), value 0)::

    >>> g = MatrixGame(np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], float))
    >>> rm = RegretMatching(g)
    >>> rm.run(10_000)
    >>> bool(rm.exploitability() < 0.01)
    True
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import os
from collections.abc import Callable, Sequence

import numba
import numpy as np

from blueprint.kernels import regret_matching


class MatrixGameError(ValueError):
    """A malformed payoff matrix or CSV file; the message names the row and column."""


@dataclasses.dataclass(frozen=True)
class MatrixGame:
    """A two-player zero-sum matrix game: ``payoff`` float64 ``[m, n]``, the row player's payoff."""

    payoff: np.ndarray
    source: str = "<matrix>"

    def __post_init__(self) -> None:
        a = np.asarray(self.payoff, dtype=np.float64)
        if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
            raise MatrixGameError(
                f"{self.source}: the payoff matrix must be 2-D and non-empty, got shape {a.shape}"
            )
        bad = np.argwhere(~np.isfinite(a))
        if len(bad):
            i, j = (int(x) for x in bad[0])
            raise MatrixGameError(
                f"{self.source}: row {i + 1}, column {j + 1}: payoff {a[i, j]} is not finite"
            )
        a = np.ascontiguousarray(a)
        a.setflags(write=False)
        object.__setattr__(self, "payoff", a)

    @property
    def shape(self) -> tuple[int, int]:
        return self.payoff.shape  # type: ignore[return-value]

    def value(self, x: np.ndarray, y: np.ndarray) -> float:
        """The row player's expected payoff ``x^T A y``."""
        return float(x @ self.payoff @ y)

    def best_response_gains(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """``(row gain, column gain)``: what each side wins by switching to a best response."""
        v = self.value(x, y)
        return float((self.payoff @ y).max() - v), float(v - (x @ self.payoff).min())

    def exploitability(self, x: np.ndarray, y: np.ndarray) -> float:
        """NashConv / 2 (OpenSpiel's convention): the mean of both best-response gains."""
        g_row, g_col = self.best_response_gains(x, y)
        return (g_row + g_col) / 2.0


def parse_csv(text: str, source: str = "<csv>") -> MatrixGame:
    """A :class:`MatrixGame` from CSV text (format in the module docstring)."""
    rows: list[list[float]] = []
    first_len = -1
    first_line = 0
    for line_no, fields in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not fields or all(not f.strip() for f in fields):
            if len(fields) > 1:
                raise MatrixGameError(f"{source}: line {line_no}: a row of empty entries")
            continue
        r = len(rows) + 1
        vals = []
        for c, f in enumerate(fields, start=1):
            s = f.strip()
            where = f"{source}: row {r} (line {line_no}), column {c}"
            if not s:
                raise MatrixGameError(f"{where}: empty entry")
            try:
                v = float(s)
            except ValueError:
                raise MatrixGameError(f"{where}: {s!r} is not a number") from None
            if not math.isfinite(v):
                raise MatrixGameError(f"{where}: {s!r} is not a finite number")
            vals.append(v)
        if first_len < 0:
            first_len, first_line = len(vals), line_no
        elif len(vals) != first_len:
            raise MatrixGameError(
                f"{source}: row {r} (line {line_no}) has {len(vals)} entries, but row 1 (line {first_line}) "
                f"has {first_len}: every row needs one entry per column action"
            )
        rows.append(vals)
    if not rows:
        raise MatrixGameError(f"{source}: empty: no payoff rows (expected one CSV line per row action)")
    return MatrixGame(np.array(rows, np.float64), source)


def load_csv(path: str | os.PathLike) -> MatrixGame:
    """Read a payoff matrix from a CSV file (format in the module docstring)."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise MatrixGameError(f"cannot read {path}: {exc}") from None
    return parse_csv(text, str(path))


@numba.njit(cache=True, error_model="numpy")
def _rm_iterations(a, n_iters, reg_r, reg_c, sum_r, sum_c, positive_only, fix_r, fix_c, x, y, u_r, u_c):
    """``n_iters`` simultaneous regret-matching iterations; updates regrets and strategy sums.

    ``a`` float64 [m, n]; ``reg_*``/``sum_*``/``u_*`` float64 [m] or [n]. ``x``/``y`` hold the
    fixed strategy of a fixed side (``fix_r``/``fix_c``) and are overwritten otherwise.
    """
    m, n = a.shape
    for _ in range(n_iters):
        if not fix_r:
            regret_matching(reg_r, 0, m, x, 0)
        if not fix_c:
            regret_matching(reg_c, 0, n, y, 0)
        vr = 0.0
        for i in range(m):
            s = 0.0
            for j in range(n):
                s += a[i, j] * y[j]
            u_r[i] = s
            vr += x[i] * s
        for j in range(n):
            s = 0.0
            for i in range(m):
                s -= a[i, j] * x[i]
            u_c[j] = s
        vc = -vr
        for i in range(m):
            sum_r[i] += x[i]
        for j in range(n):
            sum_c[j] += y[j]
        if not fix_r:
            for i in range(m):
                r = u_r[i] - vr
                if positive_only and r < 0.0:
                    r = 0.0
                reg_r[i] += r
        if not fix_c:
            for j in range(n):
                r = u_c[j] - vc
                if positive_only and r < 0.0:
                    r = 0.0
                reg_c[j] += r


def _strategy(p: Sequence[float] | None, k: int, who: str) -> np.ndarray | None:
    if p is None:
        return None
    s = np.asarray(p, np.float64)
    if s.shape != (k,):
        raise MatrixGameError(f"the fixed {who} strategy needs {k} probabilities, got shape {s.shape}")
    if (s < 0).any() or not np.isclose(s.sum(), 1.0, atol=1e-9):
        raise MatrixGameError(f"the fixed {who} strategy must be probabilities summing to 1, got {list(s)}")
    return s / s.sum()


class RegretMatching:
    """Regret matching for both players of a :class:`MatrixGame` (see the module docstring).

    Args:
        game: the matrix game.
        positive_only: add only the positive part of each instantaneous regret.
        fixed_row, fixed_column: a fixed strategy for that side (it does not learn).
        initial_regret: ``(row regrets [m], column regrets [n])`` to start from (default zeros).

    State (float64): ``regret_row [m]``, ``regret_col [n]`` cumulative regrets;
    ``sum_row [m]``, ``sum_col [n]`` sums of the current strategies; ``iteration``.
    """

    def __init__(
        self,
        game: MatrixGame,
        positive_only: bool = False,
        fixed_row: Sequence[float] | None = None,
        fixed_column: Sequence[float] | None = None,
        initial_regret: tuple[Sequence[float], Sequence[float]] | None = None,
    ):
        m, n = game.shape
        self.game = game
        self.positive_only = bool(positive_only)
        self.fixed_row = _strategy(fixed_row, m, "row")
        self.fixed_column = _strategy(fixed_column, n, "column")
        if initial_regret is None:
            self.regret_row, self.regret_col = np.zeros(m), np.zeros(n)
        else:
            self.regret_row = np.array(initial_regret[0], np.float64)
            self.regret_col = np.array(initial_regret[1], np.float64)
            if self.regret_row.shape != (m,) or self.regret_col.shape != (n,):
                raise MatrixGameError(
                    f"initial regrets need shapes ({m},) and ({n},), got {self.regret_row.shape} "
                    f"and {self.regret_col.shape}"
                )
        self.sum_row, self.sum_col = np.zeros(m), np.zeros(n)
        self.iteration = 0

    def run(
        self,
        iterations: int,
        callback: Callable[[RegretMatching], None] | None = None,
        report_at: Sequence[int] = (),
    ) -> None:
        """Advance by ``iterations``; ``callback(self)`` when the total count hits ``report_at``."""
        if iterations < 0:
            raise ValueError(f"iterations must be >= 0, got {iterations}")
        m, n = self.game.shape
        x = self.fixed_row.copy() if self.fixed_row is not None else np.zeros(m)
        y = self.fixed_column.copy() if self.fixed_column is not None else np.zeros(n)
        u_r, u_c = np.zeros(m), np.zeros(n)
        end = self.iteration + iterations
        stops = sorted({int(t) for t in report_at if self.iteration < t <= end} | {end})
        for stop in stops:
            _rm_iterations(
                self.game.payoff,
                stop - self.iteration,
                self.regret_row,
                self.regret_col,
                self.sum_row,
                self.sum_col,
                self.positive_only,
                self.fixed_row is not None,
                self.fixed_column is not None,
                x,
                y,
                u_r,
                u_c,
            )
            self.iteration = stop
            if callback is not None and stop in report_at:
                callback(self)

    def current_strategies(self) -> tuple[np.ndarray, np.ndarray]:
        """The strategies the next iteration plays (regret matching of the cumulative regrets)."""
        m, n = self.game.shape
        x = self.fixed_row.copy() if self.fixed_row is not None else np.zeros(m)
        y = self.fixed_column.copy() if self.fixed_column is not None else np.zeros(n)
        if self.fixed_row is None:
            regret_matching(self.regret_row, 0, m, x, 0)
        if self.fixed_column is None:
            regret_matching(self.regret_col, 0, n, y, 0)
        return x, y

    def average_strategies(self) -> tuple[np.ndarray, np.ndarray]:
        """Averages of the strategies played so far (the current ones before any iteration)."""
        if self.iteration == 0:
            return self.current_strategies()
        return self.sum_row / self.sum_row.sum(), self.sum_col / self.sum_col.sum()

    def value(self) -> float:
        """Row player's payoff under the average strategies."""
        return self.game.value(*self.average_strategies())

    def exploitability(self) -> float:
        """NashConv / 2 of the average strategies."""
        return self.game.exploitability(*self.average_strategies())

    def summary(self) -> dict:
        """JSON-ready ``row``, ``column``, ``value``, ``exploitability``, ``iterations``."""
        x, y = self.average_strategies()
        g_row, g_col = self.game.best_response_gains(x, y)
        return {
            "iterations": self.iteration,
            "row": [float(v) for v in x],
            "column": [float(v) for v in y],
            "value": self.game.value(x, y),
            "exploitability": (g_row + g_col) / 2.0,
            "br_gains": [g_row, g_col],
        }


def report_points(iterations: int, per_decade: int = 3) -> list[int]:
    """Log-spaced iteration counts up to ``iterations`` (1, 2, 5, 10, 20, 50, ... and the end)."""
    steps = (1, 2, 5) if per_decade == 3 else (1,)
    out = []
    k = 1
    while k <= iterations:
        for s in steps:
            if s * k <= iterations:
                out.append(s * k)
        k *= 10
    if not out or out[-1] != iterations:
        out.append(iterations)
    return out
