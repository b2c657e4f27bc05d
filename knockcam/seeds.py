"""The synthetic scenes' seeds set apart: below ``HELD_OUT_LIMIT`` held out for the benchmarks (never for
training), from it up for training. Kept apart from knockcam.bench so that the command line reads them
without loading OpenCV."""

HELD_OUT_FIRST = 1000  # the first held-out scene: bench/results.md is seeds 1000-1499, results-seeds1500.md 1500-1999
HELD_OUT_LIMIT = 100_000  # scene seeds at or above this are for training only
