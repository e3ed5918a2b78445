"""What a solving responder takes from the machine, and the operating-system calls it needs:
the cores it may solve on, a lower CPU priority for its solver threads and processes, the memory
budget of its subgames (:func:`parse_bytes` reads one from the command line), and
:func:`malloc_trim`, which gives freed memory back to the system."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from typing import Any


def default_solver_threads() -> int:
    """The cores this process may run on: one solve per core at most."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def lower_priority(nice: int) -> None:
    """Lower the calling thread's CPU priority by ``nice`` (Linux: threads have their own nice
    value; elsewhere nothing happens)."""
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError:
        pass


_LIBC: Any = None  # the C library (ctypes), False where it has no malloc_trim


def malloc_trim() -> bool:
    """Give the C allocator's free memory back to the system (glibc ``malloc_trim(0)``, which also
    releases free pages inside its arenas): evicted subgames free many arrays of many sizes, and
    without it the freed pages stay resident. False where there is no glibc."""
    global _LIBC
    if _LIBC is None:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC = lib if hasattr(lib, "malloc_trim") else False
        except OSError:
            _LIBC = False
    if not _LIBC:
        return False
    _LIBC.malloc_trim(0)
    return True


def default_memory_budget() -> int:
    """The default memory budget of a solving responder's subgames: a quarter of the machine's
    physical memory (at least 256 MiB; 1 GiB where it cannot be read)."""
    try:
        phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 1 << 30
    return max(256 << 20, int(phys) // 4)


def parse_bytes(text: str | int) -> int:
    """A byte count from ``text``: an integer, optionally with a suffix K, M, G, T (powers of
    1024; also KB/KiB, ..., case-insensitive): ``"512M"``, ``"2G"``, ``"1.5GiB"``. ValueError otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"a byte count must be >= 0, got {text}")
        return text
    s = str(text).strip().upper().replace(" ", "")
    for suffix in ("IB", "B"):
        if s.endswith(suffix) and len(s) > len(suffix) and s[-len(suffix) - 1] in "KMGT":
            s = s[: -len(suffix)]
            break
    mult = 1
    if s and s[-1] in "KMGT":
        mult = 1024 ** ("KMGT".index(s[-1]) + 1)
        s = s[:-1]
    try:
        value = float(s) if "." in s else int(s)
    except ValueError:
        raise ValueError(f"{text!r} is not a byte count: expected e.g. 1073741824, 512M, 2G") from None
    out = int(value * mult)
    if value < 0 or out < 0 or value != value:
        raise ValueError(f"a byte count must be >= 0, got {text!r}")
    return out


__all__ = ["default_memory_budget", "default_solver_threads", "lower_priority", "malloc_trim", "parse_bytes"]
