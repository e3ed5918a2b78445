"""Fuzzers, differential checks against OpenSpiel, drills and soak runs; scripts run from the source
tree (``python scripts/tools/fuzz_parsers.py``; not part of the installed wheel). Tests import them as
``scripts.tools.<name>``."""
