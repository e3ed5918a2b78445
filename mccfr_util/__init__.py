"""Helpers that every layer of the project uses and that know nothing of poker's rules: files
written atomically and hostile files read within bounds (:mod:`mccfr_util.files`), lazy package
exports (:mod:`mccfr_util.lazy`), how results are reported (mbb, 95% intervals:
:mod:`mccfr_util.reporting`), progress bars and plain progress lines (:mod:`mccfr_util.progress`),
and the process-wide numba settings that entry points apply (:mod:`mccfr_util.numba_cache`).

It is the lowest layer: every package may import it, and it imports no other package of the
project. Importing it, or any of its modules, changes nothing in the process; the numba settings
take effect only when an entry point calls :func:`mccfr_util.numba_cache.configure`.
"""

__all__: list[str] = []
