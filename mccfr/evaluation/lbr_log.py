"""The log of a long LBR run (:meth:`mccfr.evaluation.lbr.LocalBestResponse.run` with ``log=PATH``):
JSON lines, a header naming the run, then one line per finished duplicate pair, so that a stopped
run continues where it stopped and its per-deal values can be read while it goes.

The first line is the header, ``{"lbr_log": 1, "game": ..., "opponent": ..., ...}``: the game, the
opponent (its name, the spec it was given by, its model's settings: a solver's method, first
round and iterations, the blueprint's iteration and config hash), LBR's menu and settings
(pre-flop, check/call rounds, re-raises, equity samples), the seed and the number of hands. Each
later line is one pair, ``{"pair": j, "chips": [seat 0, seat 1], "decisions": n, "seconds": s,
"cpu_seconds": c, ...}`` (the opponent's solve counters when it solves), in the order the pairs finished.

:func:`open_log` reads a log that exists: a header that differs from the run's is an
:class:`LBRLogError` naming the first field that differs; a last line that is cut short or
corrupt (the run was killed while writing it) is dropped with a warning and its pair played
again; any other line that is not a pair of this run is an error naming its line number.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from mccfr.evaluation.lbr_opponents import LBRError

FORMAT = 1
COUNTERS = ("solves", "reused", "fallbacks")  # the opponent's counters kept per pair (a solver's)


class LBRLogError(LBRError):
    """An LBR log that this run cannot continue from (another run's, or damaged)."""


def canonical(header: dict[str, Any]) -> dict[str, Any]:
    """``header`` as it reads back from its JSON line (tuples become lists)."""
    return json.loads(json.dumps(header))


def pair_record(
    pair: int,
    chips: tuple[float, float],
    decisions: int,
    seconds: float,
    counters: dict,
    cpu_seconds: float | None = None,
) -> dict:
    """The log line of one finished pair (``seconds``: its wall time; ``cpu_seconds``: the CPU
    time of the process that played it, which a busy machine does not inflate)."""
    rec: dict[str, Any] = {
        "pair": int(pair),
        "chips": [float(chips[0]), float(chips[1])],
        "decisions": int(decisions),
        "seconds": round(float(seconds), 6),
    }
    if cpu_seconds is not None:
        rec["cpu_seconds"] = round(float(cpu_seconds), 6)
    rec.update({k: int(v) for k, v in counters.items()})
    return rec


def _check_pair(rec: Any, pairs: int) -> str | None:
    """Why ``rec`` is not a pair line of a run of ``pairs`` pairs (None: it is)."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    j = rec.get("pair")
    if not isinstance(j, int) or isinstance(j, bool) or not 0 <= j < pairs:
        return f"'pair' must be a pair index 0..{pairs - 1}, got {j!r}"
    chips = rec.get("chips")
    if (
        not isinstance(chips, list)
        or len(chips) != 2
        or not all(
            isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) for c in chips
        )
    ):
        return f"'chips' must be two finite numbers (seat 0, seat 1), got {chips!r}"
    for k in ("decisions", *COUNTERS):
        v = rec.get(k, 0)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            return f"{k!r} must be a count, got {v!r}"
    for k in ("seconds", "cpu_seconds"):
        s = rec.get(k, 0.0)
        if not isinstance(s, (int, float)) or isinstance(s, bool) or not (math.isfinite(s) and s >= 0):
            return f"{k!r} must be a duration, got {s!r}"
    return None


def _describe(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return _BAD


_BAD = object()


class LBRLog:
    """An open LBR log: the pairs already done (:attr:`done`, pair index -> record), and
    :meth:`write` to append a finished pair (flushed at once). Holds an exclusive lock on the file
    while open, so two runs cannot write one log."""

    def __init__(self, path: Path, fh: IO[bytes], done: dict[int, dict]):
        self.path = path
        self._fh = fh
        self.done = done

    def write(self, rec: dict) -> None:
        self._fh.write((json.dumps(rec) + "\n").encode())
        self._fh.flush()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()  # closing the file releases the lock

    def __enter__(self) -> LBRLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_log(
    path: str | os.PathLike, header: dict[str, Any], pairs: int, warn: Callable[[str], None]
) -> LBRLog:
    """Open (or start) the log at ``path`` of the run described by ``header`` (``pairs`` pairs):
    the pairs it has done, and the file ready to append to. See the module docstring for what is
    refused and what is repaired."""
    path = Path(path)
    header = canonical({"lbr_log": FORMAT, **header})
    if path.is_dir():
        raise LBRLogError(f"the LBR log {path} is a directory")
    try:
        fh = open(path, "a+b")  # noqa: SIM115 (handed to LBRLog, which closes it)
    except OSError as exc:
        raise LBRLogError(f"cannot open the LBR log {path}: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise LBRLogError(f"the LBR log {path} is being written by another run") from None
        try:
            fh.seek(0)
            data = fh.read()
        except OSError as exc:
            raise LBRLogError(f"cannot read the LBR log {path}: {exc.strerror or exc}") from None
        done, keep = _read(path, data, header, pairs, warn)
        if keep < len(data):
            fh.truncate(keep)
        fh.seek(0, os.SEEK_END)
        if keep == 0:
            fh.write((json.dumps(header) + "\n").encode())
        elif not data[:keep].endswith(b"\n"):
            fh.write(b"\n")  # a complete last line whose newline was cut off
        fh.flush()
    except BaseException:
        fh.close()
        raise
    return LBRLog(path, fh, done)


def _read(
    path: Path, data: bytes, header: dict[str, Any], pairs: int, warn: Callable[[str], None]
) -> tuple[dict[int, dict], int]:
    """The pairs done in the log's bytes ``data``, and how many of its bytes to keep (a damaged
    last line cut off)."""
    lines = data.split(b"\n")
    ends = []  # the byte offset where each line starts
    pos = 0
    for raw in lines:
        ends.append(pos)
        pos += len(raw) + 1
    if lines and lines[-1] == b"":  # the text after the last newline
        lines.pop()
        ends.pop()
    if not lines:
        return {}, 0
    last = len(lines) - 1

    done: dict[int, dict] = {}

    def dropped(i: int, why: str) -> tuple[dict[int, dict], int]:
        warn(
            f"{path}: line {i + 1} (the last) is cut short or corrupt ({why}); dropped, "
            + ("its pair is played again" if i else "the header is written again")
        )
        return done, ends[i]

    head = _parse(lines[0])
    if not isinstance(head, dict) or "lbr_log" not in head:
        if last == 0:
            return dropped(0, "not an LBR log header")
        raise LBRLogError(f"{path} is not an LBR log: line 1 is not its header")
    if head.get("lbr_log") != FORMAT:
        raise LBRLogError(f"{path}: LBR log format {head.get('lbr_log')!r}, this version reads {FORMAT}")
    for key, want in header.items():
        got = head.get(key, "(missing)")
        if got != want:
            raise LBRLogError(
                f"{path} is the log of another LBR run: its {key} is {_describe(got)}, this run's is "
                f"{_describe(want)} (start a new log, or run with the log's settings)"
            )
    extra = sorted(set(head) - set(header))
    if extra:
        raise LBRLogError(f"{path} is the log of another LBR run: it has {extra[0]!r}, this run has not")
    for i in range(1, len(lines)):
        rec = _parse(lines[i])
        why = "not JSON" if rec is _BAD else _check_pair(rec, pairs)
        if why is None and rec["pair"] in done:
            why = f"pair {rec['pair']} is already on an earlier line"
        if why is not None:
            if i == last:
                return dropped(i, why)
            raise LBRLogError(f"{path}, line {i + 1}: {why}")
        done[rec["pair"]] = rec
    return done, len(data)


__all__ = ["COUNTERS", "FORMAT", "LBRLog", "LBRLogError", "canonical", "open_log", "pair_record"]
