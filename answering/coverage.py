"""Decide, before generating anything, whether the retrieved passages can answer a question at all.

Two retrieval signals, each with thresholds calibrated by benchmarks/calibrate_thresholds.py on non-AER
economics abstracts (benchmarks/results/calibration.json):

* the best passage's dense cosine similarity separates economics from off-topic questions;
* the cross-encoder's best score separates "a passage answers this" from "related passages, but the
  paper that answers it is not among them" far better than the 135M generator can by reading them
  (benchmarks/grounded_eval.py). Below `min_rerank_score` the service declines without generating; at or
  above `answer_rerank_score` the generator may not decline (its refusal sentence is banned), because a
  small model that answers only on near-verbatim overlap refuses most paraphrased questions. In between,
  the fine-tuned generator reads the passages and decides.

Fused RRF scores are rank-based and say nothing about absolute relevance, so they are never used here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class CoverageSettings(BaseModel):
    """The answerability decision's thresholds (calibrated by benchmarks/calibrate_thresholds.py)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    check: bool = Field(True, description="Refuse to generate when the corpus does not cover the question.")
    min_dense: float = Field(0.389, ge=-1.0, le=1.0)
    # Cross-encoder thresholds for the shipped reranker; recalibrate with a new one.
    min_rerank: float | None = Field(
        4.81, description="Decline without generating when the best reranked passage scores below this (empty: off)."
    )
    answer_min_rerank: float | None = Field(
        5.87, description="From this best reranker score up, the generator may not decline (empty: off)."
    )

    @field_validator("min_rerank", "answer_min_rerank", mode="before")
    @classmethod
    def _empty_means_off(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _in_order(self) -> CoverageSettings:
        low, high = self.min_rerank, self.answer_min_rerank
        if low is not None and high is not None and high < low:
            raise ValueError(f"answer_min_rerank ({high}) must not be below min_rerank ({low}).")
        return self


@dataclass(frozen=True)
class CoverageVerdict:
    covered: bool
    must_answer: bool  # covered, and confidently enough that the generator may not decline
    dense_score: float | None  # the best passage's dense cosine similarity
    rerank_score: float | None  # the best passage's cross-encoder score (None: not reranked)
    reason: str

    def explain(self) -> str:
        return self.reason


@dataclass(frozen=True)
class CoverageGate:
    """Thresholds on the best passage's dense similarity and, when the passages were reranked, on its
    cross-encoder score (None: that check is off)."""

    min_dense_score: float
    min_rerank_score: float | None = None
    answer_rerank_score: float | None = None

    @classmethod
    def from_settings(cls, settings: CoverageSettings) -> CoverageGate:
        return cls(settings.min_dense, settings.min_rerank, settings.answer_min_rerank)

    def __post_init__(self) -> None:
        low, high = self.min_rerank_score, self.answer_rerank_score
        if low is not None and high is not None and high < low:
            raise ValueError(f"answer_rerank_score ({high}) must not be below min_rerank_score ({low}).")

    def assess(self, dense_scores: Sequence[float], rerank_scores: Sequence[float | None] = ()) -> CoverageVerdict:
        """dense_scores: the question's cosine similarity to each passage; rerank_scores: the cross-encoder's
        score for each passage (empty or None entries when reranking did not run)."""
        best_dense = max(dense_scores, default=None)
        known_rerank = [s for s in rerank_scores if s is not None]
        best_rerank = max(known_rerank) if known_rerank and len(known_rerank) == len(rerank_scores) else None
        if best_dense is None:
            return CoverageVerdict(False, False, None, best_rerank, "no passage matched the question")
        if best_dense < self.min_dense_score:
            reason = f"best dense score {best_dense:.3f} is below the calibrated threshold {self.min_dense_score:.3f}"
            return CoverageVerdict(False, False, best_dense, best_rerank, reason)
        reason = f"best dense score {best_dense:.3f} is at least {self.min_dense_score:.3f}"
        if best_rerank is None:
            return CoverageVerdict(True, False, best_dense, None, reason)
        if self.min_rerank_score is not None and best_rerank < self.min_rerank_score:
            reason = (f"best reranker score {best_rerank:.2f} is below the calibrated threshold "
                      f"{self.min_rerank_score:.2f}: related passages, but none that answers it")
            return CoverageVerdict(False, False, best_dense, best_rerank, reason)
        must_answer = self.answer_rerank_score is not None and best_rerank >= self.answer_rerank_score
        reason += f"; best reranker score {best_rerank:.2f}" + (
            f" is at least {self.answer_rerank_score:.2f}, so the generator may not decline" if must_answer else ""
        )
        return CoverageVerdict(True, must_answer, best_dense, best_rerank, reason)
