"""Progress of long work (training, card-abstraction builds): a live tqdm bar on a terminal; when
the stream is not a terminal (a log file, a pipe, a job runner), :class:`PlainProgress`: one plain
line per interval and one at the end, the same figures, and no carriage-return frames.

No numpy and no tqdm at import (tqdm only for a terminal): the command line's start-up imports it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any

#: Seconds between two lines of :class:`PlainProgress` (progress when stderr is not a terminal).
PLAIN_PROGRESS_SECONDS = 20.0

__all__ = ["PLAIN_PROGRESS_SECONDS", "PlainProgress", "progress_bar"]


def _clock_text(seconds: float) -> str:
    """``M:SS`` or ``H:MM:SS``."""
    m, sec = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def _rate_text(rate: float) -> str:
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


class PlainProgress:
    """Progress as plain lines, for a stderr that is not a terminal: the part of tqdm's interface
    the progress reports use (``n``, ``update``, ``set_postfix``, ``set_postfix_str``, ``refresh``,
    ``write``, ``close``), written as at most one line per ``interval`` seconds and a last one at
    ``close``::

        DESC: N/TOTAL UNIT (P%), RATE UNIT/s, ELAPSED elapsed, ETA LEFT[, POSTFIX]

    (without a total: ``DESC: N UNIT, ...``). The rate is over the span since the previous line."""

    def __init__(
        self,
        total: int | None,
        desc: str,
        unit: str = "it",
        *,
        file: IO[str] | None = None,
        interval: float = PLAIN_PROGRESS_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total = total
        self.desc = desc
        self.unit = unit
        self.file = file if file is not None else sys.stderr
        self.interval = interval
        self.clock = clock
        self.n = 0
        self.postfix = ""
        self.start = self.last_time = clock()
        self.last_n = 0
        self.last_state: tuple[int, str] | None = None  # (n, postfix) of the last line written
        self.closed = False

    def update(self, n: int = 1) -> None:
        self.n += n
        self.refresh(due_only=True)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s
        if refresh:
            self.refresh(due_only=True)

    def set_postfix(
        self, ordered_dict: dict[str, Any] | None = None, refresh: bool = True, **kwargs: Any
    ) -> None:
        items = {**(ordered_dict or {}), **kwargs}
        self.set_postfix_str(", ".join(f"{k}={v}" for k, v in items.items()), refresh=refresh)

    def refresh(self, due_only: bool = True) -> None:
        """Write a line if ``interval`` seconds passed since the last one (``due_only=False``: now)."""
        now = self.clock()
        if not self.closed and (not due_only or now - self.last_time >= self.interval):
            self._emit(now)

    def write(self, s: str, file: IO[str] | None = None, end: str = "\n") -> None:
        print(s, end=end, file=file if file is not None else self.file, flush=True)

    def close(self) -> None:
        """The last line (unless the previous one already said the same), once."""
        if self.closed:
            return
        if self.last_state != (self.n, self.postfix):
            self._emit(self.clock())
        self.closed = True

    def line(self, now: float) -> str:
        elapsed = now - self.start
        span = now - self.last_time
        # over the span since the previous line (none: since the start)
        rate = (self.n - self.last_n) / span if span > 0 else (self.n / elapsed if elapsed > 0 else 0.0)
        head = f"{self.desc}: {self.n:,}"
        if self.total:
            head += f"/{self.total:,} {self.unit} ({100 * self.n / self.total:.0f}%)"
        else:
            head += f" {self.unit}"
        parts = [head, f"{_rate_text(rate)} {self.unit}/s", f"{_clock_text(elapsed)} elapsed"]
        if self.total and 0 < self.n < self.total and elapsed > 0:
            parts.append(f"ETA {_clock_text((self.total - self.n) * elapsed / self.n)}")
        if self.postfix:
            parts.append(self.postfix)
        return ", ".join(parts)

    def _emit(self, now: float) -> None:
        self.write(self.line(now))
        self.last_time, self.last_n = now, self.n
        self.last_state = (self.n, self.postfix)


def _isatty(file: Any) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def progress_bar(
    total: int | None,
    desc: str,
    unit: str = "it",
    *,
    file: IO[str] | None = None,
    interval: float = PLAIN_PROGRESS_SECONDS,
    **tqdm_options: Any,
) -> Any:
    """A progress display on ``file`` (default: stderr, looked up at the call): a tqdm bar
    (``tqdm_options`` passed on) when it is a terminal, else a :class:`PlainProgress` writing one
    line per ``interval`` seconds and a last one at ``close``, so that logs get lines instead of
    thousands of carriage-return frames."""
    file = sys.stderr if file is None else file
    if _isatty(file):
        from tqdm import tqdm  # only for a terminal: a plain run never imports it

        return tqdm(total=total, desc=desc, unit=unit, file=file, **tqdm_options)
    return PlainProgress(total, desc, unit, file=file, interval=interval)
