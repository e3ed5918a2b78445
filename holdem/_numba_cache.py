"""Point numba's on-disk cache at a directory keyed by this package's source.

numba invalidates a cached function only when its own file changes, not when a function it calls
in another module does; a stale cache then runs old machine code against new data layouts. Keying
the cache directory by a hash of every source file of the project's packages makes any edit or
upgrade start from a clean cache. ``$MCCFR_CACHE`` (default ``~/.cache/mccfr``) is the root;
``NUMBA_CACHE_DIR``, when set by the user, wins.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.abc
import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import Iterator

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


@contextlib.contextmanager
def _without(name: str) -> Iterator[None]:
    """Inside, ``import name`` fails at once (ImportError), unless it is already imported."""
    skip = name not in sys.modules
    if skip:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if skip and name in sys.modules and sys.modules[name] is None:
            del sys.modules[name]


class _SkipBlasProbe(importlib.abc.MetaPathFinder):
    """Loads ``numba.np.arraymath`` without its probe of scipy's BLAS.

    numba imports scipy in two places that every process running a kernel goes through, only to
    check its version (``import numba``) and to choose how ``np.dot`` of two vectors compiles
    (``numba.np.arraymath``: without BLAS, a plain loop). Together about a third of a second,
    most of ``mccfr train --game leduc``'s start-up besides numba itself. No kernel of this project
    calls ``np.dot``; numba's linear-algebra functions import scipy themselves when they compile,
    and a process that imported scipy before is left alone."""

    def find_spec(self, name, path=None, target=None):
        if name != "numba.np.arraymath":
            return None
        sys.meta_path.remove(self)  # once: the real spec, with its module run without the probe
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            with _without("scipy.linalg.cython_blas"):
                run(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _import_numba_without_scipy() -> None:
    if "numba.np.arraymath" not in sys.modules and not any(
        isinstance(f, _SkipBlasProbe) for f in sys.meta_path
    ):
        sys.meta_path.insert(0, _SkipBlasProbe())
    with _without("scipy"):
        try:
            import numba  # noqa: F401
        except ImportError:  # numba not installed yet: nothing to configure
            pass


def configure() -> None:
    _import_numba_without_scipy()
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
