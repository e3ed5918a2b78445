"""The test session is an entry point: it sets the process's numba settings (the cache directory
keyed by the source, the import hook) before any test module imports a kernel, as the ``mccfr``
command does; pytest-xdist's workers load this file too, and the processes the tests start inherit
``NUMBA_CACHE_DIR`` or configure themselves."""

from mccfr_util import numba_cache

numba_cache.configure()
