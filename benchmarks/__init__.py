"""Benchmarks: each compares things side by side in one run and writes benchmarks/results/*.json."""

import runtime  # noqa: F401  (first: it sets OpenMP's waiting policy before torch loads)
