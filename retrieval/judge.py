"""The passage judge: does this passage answer (part of) this question?

The reranker ranks passages against each other by relevance: an abstract on the right topic comes first whether
or not it answers what is asked. The judge is a cross-encoder of the reranker's shape, fine-tuned from it on
pairs that contrast what is asked on one abstract (training/judge.py: a written question and the abstract that
answers it, against a near miss written for the same abstract that asks about another outcome, population,
place, period or mechanism). Its score is the logit of P(the passage answers the question); the answerability
decision (answering/answerability.py) asks it whether the question is answered at all (its best passage's P), and
keeps its own model over the retrieval signals to choose which other papers join the answer.

It reads only the passages the decision weighs (the top `evidence_k` after reranking), so it costs about a
quarter of the reranker's time.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from retrieval.reranker import CrossEncoderReranker, RerankerUnavailable, passage_text
from retrieval.types import RetrievedChunk

DEFAULT_JUDGE_DIR = Path(__file__).resolve().parents[1] / "models" / "weights" / "judge"


class JudgeSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model_dir: Path | None = Field(DEFAULT_JUDGE_DIR, description="The judge's weights; empty: no judge (the "
                                   "decision then gates on its own model, with its answer_from bar).")  # fmt: skip
    precision: str = Field("auto", pattern="^(auto|int8|float32|bfloat16|float16)$",
                           description="auto: int8 on CPU, the device's fast float type elsewhere.")  # fmt: skip
    batch_size: int = Field(16, ge=1, le=256)

    @field_validator("model_dir", mode="before")
    @classmethod
    def _empty_means_off(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value


class PassageJudge:
    """Entry point: `judge(question, hits)` sets each hit's judge_logit."""

    def __init__(self, model: CrossEncoderReranker) -> None:
        if model.bi_encoder_weight or model.first_stage_weight:
            raise ValueError(f"{model.model_dir} adds retrieval scores to its own: it is a reranker, not a judge.")
        self.model = model
        self.name = model.name
        self.precision = model.precision

    @classmethod
    def load(cls, settings: JudgeSettings, device: str) -> PassageJudge | None:
        """The configured judge; None when none is configured or its directory holds no model."""
        if settings.model_dir is None or not (settings.model_dir / "config.json").is_file():
            return None
        try:
            model = CrossEncoderReranker(settings.model_dir, device, batch_size=settings.batch_size,
                                         precision=settings.precision)  # fmt: skip
        except RerankerUnavailable as error:
            raise ValueError(f"Cannot load the passage judge: {error}") from None
        return cls(model)

    def logits(self, question: str, passages: list[str]) -> list[float]:
        """The logit of P(each passage answers the question); passages as passage_text shows them."""
        return [float(x) for x in self.model.score(question, passages)] if passages else []

    def judge(self, question: str, hits: list[RetrievedChunk]) -> None:
        """Set each hit's judge_logit."""
        for hit, logit in zip(hits, self.logits(question, [passage_text(h.chunk.title, h.chunk.text) for h in hits]),
                              strict=True):  # fmt: skip
            hit.judge_logit = logit
