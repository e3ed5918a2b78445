"""This process's memory, as the training session's metrics and the Ray job's workers report it:
:func:`rss_bytes` (resident) and :func:`memory_bytes` (resident, proportional and private)."""

from __future__ import annotations

import os
import resource
import sys

__all__ = ["memory_bytes", "rss_bytes"]


def rss_bytes() -> int:
    """Resident memory of this process (peak RSS where /proc is unavailable)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def memory_bytes() -> dict[str, int]:
    """This process's memory: ``rss`` (resident, shared pages counted in full), ``pss`` (shared
    pages divided among the processes mapping them: what a node's processes add up to) and ``uss``
    (private pages only), from /proc/self/smaps_rollup; pss and uss equal rss where it is missing."""
    rss = rss_bytes()
    out = {"rss": rss, "pss": rss, "uss": rss}
    try:
        with open("/proc/self/smaps_rollup") as f:
            kb = {}
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                    kb[parts[0][:-1]] = int(parts[1])
        out["pss"] = kb.get("Pss", rss // 1024) * 1024
        out["uss"] = (kb.get("Private_Clean", 0) + kb.get("Private_Dirty", 0)) * 1024 or rss
    except OSError:
        pass
    return out
