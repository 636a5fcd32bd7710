"""Decide, before generating anything, whether the retrieved passages answer the question.

A small logistic model turns retrieval signals into P(a retrieved passage answers the question):

  rerank_best     the cross-encoder's best score over the reranked candidates
  rerank_margin   that best score minus the best score of any other document among them
  dense_best      the best prompt passage's dense (bi-encoder) cosine to the question
  bm25_agreement  1 / log2(1 + BM25 rank) of the top passage (0 when BM25 did not find it)
  specifics_unmatched  share of the question's named specifics (places, programmes, years) that no prompt
                  passage mentions: the mark of a near miss (answering/specifics.py)

It is fitted on the project's written training questions, answerable and verified-unanswerable, over the training
corpus (python -m training.answerability); its two thresholds are chosen on the development set's calibration
half. Three outcomes:
  * covered      P >= answer_from: answer, and the generator may not decline;
  * partial      decline_below <= P < answer_from: answer from the closest papers, saying plainly first that
                 they do not address the question directly;
  * not_covered  P < decline_below: decline without generating.
When the passages were not reranked, a model over the dense and BM25 signals alone decides.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from answering.specifics import unmatched_specifics
from retrieval.types import RetrievedChunk

DEFAULT_MODEL_PATH = Path(__file__).resolve().parents[1] / "models" / "weights" / "answerability.json"
FEATURES = ("rerank_best", "rerank_margin", "dense_best", "bm25_agreement", "specifics_unmatched")
DENSE_FEATURES = ("dense_best", "bm25_agreement", "specifics_unmatched")
Coverage = Literal["covered", "partial", "not_covered"]


class AnswerabilitySettings(BaseModel):
    """The answerability decision: its fitted model and the probability thresholds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    check: bool = Field(True, description="Decide answerability before generating (off: the generator decides).")
    model_path: Path | None = Field(DEFAULT_MODEL_PATH, description="Fitted model (JSON); empty: no decision.")
    decline_below: float | None = Field(None, ge=0.0, le=1.0, description="Default: the model file's.")
    answer_from: float | None = Field(None, ge=0.0, le=1.0, description="Default: the model file's.")

    @field_validator("model_path", mode="before")
    @classmethod
    def _empty_means_off(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _in_order(self) -> AnswerabilitySettings:
        low, high = self.decline_below, self.answer_from
        if low is not None and high is not None and high < low:
            raise ValueError(f"answer_from ({high}) must not be below decline_below ({low}).")
        return self


@dataclass(frozen=True)
class LogisticModel:
    """P = sigmoid(bias + sum_i weight_i * (x_i - mean_i) / scale_i)."""

    features: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def probability(self, values: dict[str, float]) -> float:
        z = self.bias + sum(
            w * (values[name] - m) / s
            for name, m, s, w in zip(self.features, self.means, self.scales, self.weights, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_json(self) -> dict:
        return {"features": list(self.features), "means": list(self.means), "scales": list(self.scales),
                "weights": list(self.weights), "bias": self.bias}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict) -> LogisticModel:
        return cls(tuple(data["features"]), tuple(data["means"]), tuple(data["scales"]), tuple(data["weights"]),
                   float(data["bias"]))  # fmt: skip


@dataclass(frozen=True)
class AnswerabilityVerdict:
    coverage: Coverage
    probability: float
    features: dict[str, float]
    reason: str

    @property
    def covered(self) -> bool:
        return self.coverage == "covered"

    @property
    def answers(self) -> bool:
        """Whether an answer is generated (fully, or from the closest papers)."""
        return self.coverage != "not_covered"


def retrieval_signals(question: str, passages: Sequence[RetrievedChunk], dense_scores: Sequence[float],
                      pool: Sequence[RetrievedChunk]) -> dict[str, float]:  # fmt: skip
    """The features of a search: `passages` are the prompt's passages and dense_scores their cosines to the
    question; `pool` is the last stage's candidates best first (the reranked ones when the reranker ran)."""
    signals = {"dense_best": max(dense_scores, default=0.0)}
    texts = [f"{hit.chunk.title} {hit.chunk.text}" for hit in passages]
    signals["specifics_unmatched"] = unmatched_specifics(question, texts)
    bm25_rank = pool[0].bm25_rank if pool else None
    signals["bm25_agreement"] = 1.0 / math.log2(1 + bm25_rank) if bm25_rank else 0.0
    scores: dict[str, float] = {}  # each document's best cross-encoder score
    for hit in pool:
        if hit.rerank_score is not None:
            scores[hit.chunk.doc_id] = max(scores.get(hit.chunk.doc_id, -math.inf), hit.rerank_score)
    if scores:
        ordered = sorted(scores.values(), reverse=True)
        signals["rerank_best"] = ordered[0]
        signals["rerank_margin"] = ordered[0] - ordered[1] if len(ordered) > 1 else 0.0
    return signals


class AnswerabilityModel:
    """Entry point: `assess(pool, dense_scores)` -> AnswerabilityVerdict."""

    def __init__(self, reranked: LogisticModel, dense_only: LogisticModel, decline_below: float, answer_from: float,
                 source: str = "") -> None:  # fmt: skip
        if not 0.0 <= decline_below <= answer_from <= 1.0:
            raise ValueError(f"Need 0 <= decline_below ({decline_below}) <= answer_from ({answer_from}) <= 1.")
        self.reranked = reranked
        self.dense_only = dense_only
        self.decline_below = decline_below
        self.answer_from = answer_from
        self.source = source

    @classmethod
    def load(cls, path: Path, decline_below: float | None = None, answer_from: float | None = None
             ) -> AnswerabilityModel:  # fmt: skip
        try:
            data = json.loads(Path(path).read_text())
            reranked = LogisticModel.from_json(data["reranked"])
            dense_only = LogisticModel.from_json(data["dense_only"])
            thresholds = data["thresholds"]
        except (OSError, ValueError, KeyError) as error:
            raise ValueError(f"Cannot read the answerability model {path}: {error}") from None
        return cls(
            reranked, dense_only,
            thresholds["decline_below"] if decline_below is None else decline_below,
            thresholds["answer_from"] if answer_from is None else answer_from,
            data.get("reranker", ""),
        )  # fmt: skip

    @classmethod
    def from_settings(cls, settings: AnswerabilitySettings) -> AnswerabilityModel | None:
        if settings.model_path is None:
            return None
        return cls.load(settings.model_path, settings.decline_below, settings.answer_from)

    def assess(self, question: str, passages: Sequence[RetrievedChunk], dense_scores: Sequence[float],
               pool: Sequence[RetrievedChunk]) -> AnswerabilityVerdict:  # fmt: skip
        """As retrieval_signals: the prompt passages with their cosines, and the search's last-stage pool."""
        if not pool:
            return AnswerabilityVerdict("not_covered", 0.0, {}, "no passage matched the question")
        signals = retrieval_signals(question, passages, dense_scores, pool)
        model = self.reranked if "rerank_best" in signals else self.dense_only
        probability = model.probability(signals)
        if probability >= self.answer_from:
            coverage: Coverage = "covered"
            reason = f"P(answered) {probability:.2f} is at least {self.answer_from:.2f}"
        elif probability >= self.decline_below:
            coverage = "partial"
            reason = (f"P(answered) {probability:.2f} is between {self.decline_below:.2f} and {self.answer_from:.2f}: "
                      "related passages that may not answer it directly")  # fmt: skip
        else:
            coverage = "not_covered"
            reason = f"P(answered) {probability:.2f} is below {self.decline_below:.2f}"
        return AnswerabilityVerdict(coverage, probability, signals, reason)
