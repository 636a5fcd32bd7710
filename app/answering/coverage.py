"""Decide whether the retrieved passages can answer a question at all, before generating anything."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CoverageVerdict:
    covered: bool
    score: float | None  # the best passage's dense cosine similarity
    threshold: float

    def explain(self) -> str:
        relation = "at least" if self.covered else "below"
        return (
            f"best dense score {self.score:.3f} is {relation} the calibrated threshold {self.threshold:.3f}"
            if self.score is not None
            else "no passage matched the question"
        )


@dataclass(frozen=True)
class CoverageGate:
    """A threshold on the best passage's dense cosine similarity to the question (calibrated by
    benchmarks/calibrate_thresholds.py on non-AER economics abstracts).

    Why dense and not the cross-encoder's score: on the calibration set the dense threshold refuses every
    off-topic question while answering 97.5% of covered ones; the reranker's best score, at the same
    share answered, refuses fewer (benchmarks/results/calibration.json). Fused RRF scores are rank-based
    and say nothing about absolute relevance, so they are never used here.
    """

    min_dense_score: float

    def assess(self, dense_scores: Sequence[float]) -> CoverageVerdict:
        """dense_scores: the question's cosine similarity to each retrieved passage."""
        best_dense = max(dense_scores, default=None)
        covered = best_dense is not None and best_dense >= self.min_dense_score
        return CoverageVerdict(covered, best_dense, self.min_dense_score)
