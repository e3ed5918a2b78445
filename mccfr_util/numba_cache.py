"""Process-wide numba settings, applied by the entry points (the ``mccfr`` command, ``python -m
mccfr``, the tests' conftest, the scripts, and every process the project starts that runs kernels),
never on import: :func:`configure`, once, before the first kernel compiles.

It points numba's on-disk cache at a directory keyed by the project's source, and loads numba
without its probes of scipy (:class:`_SkipScipyProbes`).

numba invalidates a cached function only when its own file changes, not when a function it calls
in another module does; a stale cache then runs old machine code against new data layouts. Keying
the cache directory by a hash of every source file of the project's packages (found beside this
one's) makes any edit or upgrade start from a clean cache. ``$MCCFR_CACHE`` (default
``~/.cache/mccfr``) is the root; ``NUMBA_CACHE_DIR``, when set by the user, wins.

Inside that directory a kernel's files are found by :class:`ProjectCacheLocator`: by the source
file's path relative to the project and its content, not numba's default of the absolute path and
the modification time. Another clone, checkout or install of the same source (a CI run's fresh
clone, a second worktree) then loads the kernels compiled by the first instead of compiling them
again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.abc
import importlib.machinery
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator

# where numba kernels live, and what they call (tests/mccfr_util/test_numba_cache.py checks the list)
_PACKAGES = ("holdem", "abstraction", "blueprint", "subgame", "mccfr", "cluster", "mccfr_util")
_ROOT = Path(__file__).resolve().parent.parent  # the directory that holds the packages
# a source tree's tests and scripts: their kernels are cached as the packages' are (each stamped by
# its own file; what they call is in the packages, whose hash keys the whole directory)
_BESIDE = ("tests", "scripts")


def _source_hash() -> str:
    h = hashlib.blake2b(digest_size=8)
    for pkg in _PACKAGES:
        for f in sorted((_ROOT / pkg).glob("**/*.py")):
            h.update(str(f.relative_to(_ROOT)).encode())
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


class _SkipScipyProbes(importlib.abc.MetaPathFinder):
    """Loads numba without its probes of scipy.

    numba imports scipy in two places that every process running a kernel goes through: ``import
    numba`` to check its version, and ``numba.np.arraymath`` to choose how ``np.dot`` of two vectors
    compiles (without BLAS, a plain loop). Together about a third of a second, most of
    ``mccfr train --game leduc``'s start-up besides numba itself. No kernel of this project calls
    ``np.dot``; numba's linear-algebra functions import scipy themselves when they compile. A
    process that imported scipy first is left alone."""

    PROBES = {"numba": "scipy", "numba.np.arraymath": "scipy.linalg.cython_blas"}

    def __init__(self) -> None:
        self.pending = dict(self.PROBES)

    def find_spec(self, name, path=None, target=None):
        blocked = self.pending.pop(name, None)
        if blocked is None:
            return None
        if not self.pending:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            with _without(blocked):
                run(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def skip_scipy_probes() -> None:
    """Install :class:`_SkipScipyProbes` (once, and only before numba is imported)."""
    if "numba" not in sys.modules and not any(isinstance(f, _SkipScipyProbes) for f in sys.meta_path):
        sys.meta_path.insert(0, _SkipScipyProbes())


@functools.lru_cache(maxsize=None)
def _file_stamp(path: str) -> str:
    return hashlib.blake2b(Path(path).read_bytes(), digest_size=16).hexdigest()


class ProjectCacheLocator:
    """numba cache locator (``NUMBA_CACHE_LOCATOR_CLASSES``) for the kernels of the project's
    packages (and of a source tree's tests and scripts): ``<cache dir>/<path relative to the
    project>``, stamped by the source file's content. Functions elsewhere fall through to numba's
    locators. numba imports this class only when it caches a kernel, so this module must not import
    numba at the top; the base class is numba's, looked up then."""

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> Any:
        return _project_locator(py_func, py_file)


def _numba_cache_dir(config: Any) -> str:
    return str(config.CACHE_DIR)


@functools.lru_cache(maxsize=1)
def _locator_class() -> type:
    from numba.core import caching, config

    class _Locator(caching._CacheLocator):  # numba's abstract locator
        def __init__(self, py_func: Any, py_file: str, rel: Path) -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(_numba_cache_dir(config), *rel.parent.parts)

        def get_cache_path(self) -> str:
            return self._cache_path

        def get_source_stamp(self) -> str:
            return _file_stamp(self._py_file)

        def get_disambiguator(self) -> str:
            return str(self._lineno)

    return _Locator


def _project_locator(py_func: Any, py_file: str) -> Any:
    from numba.core import config

    if not _numba_cache_dir(config):
        return None
    try:
        rel = Path(py_file).resolve().relative_to(_ROOT)
    except (ValueError, OSError):
        return None
    if rel.parts[0] not in _PACKAGES + _BESIDE or not Path(py_file).is_file():
        return None
    locator = _locator_class()(py_func, py_file, rel)
    try:
        locator.ensure_cache_path()
    except OSError:
        return None
    return locator


#: numba's locators, ours first: ``NUMBA_CACHE_LOCATOR_CLASSES`` (a numba that does not read it
#: keys by absolute path and modification time: no sharing between clones, nothing worse)
LOCATORS = ",".join(
    [
        f"{__name__}.ProjectCacheLocator",
        "UserProvidedCacheLocator",
        "InTreeCacheLocator",
        "UserWideCacheLocator",
        "IPythonCacheLocator",
        "ZipCacheLocator",
    ]
)


def cache_dir() -> Path:
    """This source version's numba cache directory: ``$MCCFR_CACHE/numba/<hash of the source>``
    (``$MCCFR_CACHE`` defaults to ``~/.cache/mccfr``)."""
    base = Path(os.environ.get("MCCFR_CACHE", Path.home() / ".cache" / "mccfr"))
    return base / "numba" / _source_hash()


def configure() -> None:
    """Point numba's cache at :func:`cache_dir` (``NUMBA_CACHE_DIR``, which processes started later
    inherit), unless the user set ``NUMBA_CACHE_DIR``, and install the import hook of
    :func:`skip_scipy_probes`. Idempotent.

    Call it once at a process's start, before importing the project's packages: numba picks a
    kernel's cache directory when the kernel's module is imported, so kernels imported earlier
    keep numba's default (a ``__pycache__`` beside their source, which numba does not invalidate
    when a kernel that they call changes). It does not import numba."""
    skip_scipy_probes()
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    path = cache_dir()
    if not path.exists():  # a new source version: drop caches of old versions beyond the newest few
        _prune(path.parent, path)
    os.environ["NUMBA_CACHE_DIR"] = str(path)
    locators = os.environ.setdefault("NUMBA_CACHE_LOCATOR_CLASSES", LOCATORS)
    cfg = sys.modules.get("numba.core.config")
    if cfg is not None:  # numba read its settings already: kernels imported from now on use them
        cfg.CACHE_DIR = str(path)  # type: ignore[attr-defined]
        cfg.CACHE_LOCATOR_CLASSES = locators  # type: ignore[attr-defined]


#: What Ray runs in each worker process it starts, before the worker loads an actor or a task
#: (``runtime_env["worker_process_setup_hook"]``): the same settings, computed on the worker's node.
RAY_SETUP_HOOK = "mccfr_util.numba_cache.configure"


def ray_runtime_env(runtime_env: dict[str, Any] | None = None) -> dict[str, Any]:
    """``runtime_env`` for ``ray.init``, with :data:`RAY_SETUP_HOOK` as its worker setup hook
    unless it names one already (a copy; ``None``: only the hook)."""
    env = dict(runtime_env or {})
    env.setdefault("worker_process_setup_hook", RAY_SETUP_HOOK)
    return env
