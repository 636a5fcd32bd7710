"""Decide whether the retrieved passages can answer a question at all, before generating anything."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.retrieval.types import RetrievedChunk


@dataclass(frozen=True)
class CoverageVerdict:
    covered: bool
    signal: str  # which score decided: "rerank" or "dense"
    score: float | None
    threshold: float

    def explain(self) -> str:
        relation = "at least" if self.covered else "below"
        return (
            f"best {self.signal} score {self.score:.3f} is {relation} the calibrated threshold {self.threshold:.3f}"
            if self.score is not None
            else "no passage matched the question"
        )


@dataclass(frozen=True)
class CoverageGate:
    """Thresholds on the best passage's score (calibrated by benchmarks/calibrate_thresholds.py).

    The cross-encoder's score is the sharper signal, so it decides when reranking ran; otherwise the
    dense cosine similarity between question and passage does. Fused RRF scores are rank-based and
    say nothing about absolute relevance, so they are never used here.
    """

    min_rerank_score: float
    min_dense_score: float

    def assess(self, passages: Sequence[RetrievedChunk], dense_scores: Sequence[float]) -> CoverageVerdict:
        rerank_scores = [p.rerank_score for p in passages if p.rerank_score is not None]
        if rerank_scores:
            best = max(rerank_scores)
            return CoverageVerdict(best >= self.min_rerank_score, "rerank", best, self.min_rerank_score)
        best_dense = max(dense_scores, default=None)
        covered = best_dense is not None and best_dense >= self.min_dense_score
        return CoverageVerdict(covered, "dense", best_dense, self.min_dense_score)
