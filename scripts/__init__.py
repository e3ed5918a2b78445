"""Scripts that run from the repository root against the installed package (not part of the
wheel): ``benchmarks/`` (one per BENCHMARKS.md section), ``experiments/`` (studies and paper
reproductions) and ``tools/`` (fuzzing, the OpenSpiel differential test, drills, soak runs). Tests
import them as ``scripts.<folder>.<name>``."""
