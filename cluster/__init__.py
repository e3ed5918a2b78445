"""Distribution on Ray (the job, shards, workers) and the ``mccfr`` command line."""

from __future__ import annotations

import os
import resource
import sys


def rss_bytes() -> int:
    """Resident memory of this process (peak RSS where /proc is unavailable)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024
