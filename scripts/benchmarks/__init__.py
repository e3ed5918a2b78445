"""One benchmark script per BENCHMARKS.md section, run from the source tree against the installed
package (``python scripts/benchmarks/bench_mccfr.py``; not part of the installed wheel); ``harness.py``
holds what they share."""
