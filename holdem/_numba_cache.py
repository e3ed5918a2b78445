"""Point numba's on-disk cache at a directory keyed by this package's source.

numba invalidates a cached function only when its own file changes, not when a function it calls
in another module does; a stale cache then runs old machine code against new data layouts. Keying
the cache directory by a hash of every source file of the project's packages makes any edit or
upgrade start from a clean cache. ``$MCCFR_CACHE`` (default ``~/.cache/mccfr``) is the root;
``NUMBA_CACHE_DIR``, when set by the user, wins.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

_PACKAGES = ("holdem", "abstraction", "blueprint", "subgame")  # where numba kernels live


def _source_hash() -> str:
    root = Path(__file__).resolve().parent.parent
    h = hashlib.blake2b(digest_size=8)
    for pkg in _PACKAGES:
        for f in sorted((root / pkg).glob("**/*.py")):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


KEEP = 4  # cache directories of other source versions kept (the newest ones)


def _prune(root: Path, current: Path) -> None:
    try:
        others = sorted(
            (p for p in root.iterdir() if p.is_dir() and p != current), key=lambda p: p.stat().st_mtime
        )
    except OSError:
        return
    for old in others[:-KEEP] if len(others) > KEEP else []:
        shutil.rmtree(old, ignore_errors=True)


def configure() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    base = Path(os.environ.get("MCCFR_CACHE", Path.home() / ".cache" / "mccfr"))
    path = base / "numba" / _source_hash()
    if not path.exists():  # a new source version: drop caches of old versions beyond the newest few
        _prune(base / "numba", path)
    os.environ["NUMBA_CACHE_DIR"] = str(path)
    try:
        import numba.core.config as cfg

        cfg.CACHE_DIR = str(path)
    except ImportError:  # numba not installed yet: nothing to configure
        pass
