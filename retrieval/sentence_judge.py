"""The sentence judge: does this sentence of a passage state a result that answers the question?

The passage judge (retrieval/judge.py) says whether an abstract answers; the sentence closest to the question by
cosine is usually the one that restates its topic (the method), not the one that states the result. This
cross-encoder (python -m training.sentence_judge, trained on written sentence labels over non-AER abstracts) reads
the question and one sentence under its paper's title; its score is the logit of P(the sentence states a result
answering the question). Answering uses it to pick each paper's finding sentences (best first) and to check that a
paper the decision passes has a sentence that answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from retrieval.reranker import CrossEncoderReranker, RerankerUnavailable, passage_text

DEFAULT_SENTENCE_JUDGE_DIR = Path(__file__).resolve().parents[1] / "models" / "weights" / "sentence-judge"


class SentenceJudgeSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model_dir: Path | None = Field(DEFAULT_SENTENCE_JUDGE_DIR, description="The sentence judge's model directory; "
                                   "empty: none (findings fall back to the sentences closest by cosine).")  # fmt: skip
    precision: str = Field("auto", pattern="^(auto|int8|float32|bfloat16|float16)$",
                           description="auto: int8 on CPU, the device's fast float type elsewhere.")  # fmt: skip
    batch_size: int = Field(32, ge=1, le=256)
    max_length: int = Field(128, ge=16, le=512, description="Tokens of (question, title and one sentence).")

    @field_validator("model_dir", mode="before")
    @classmethod
    def _empty_means_off(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value


class SentenceJudge:
    """Entry point: `score(question, title, sentences)` -> each sentence's logit of P(it states a result that
    answers the question)."""

    def __init__(self, model: CrossEncoderReranker) -> None:
        self.model = model
        self.name = model.name

    @classmethod
    def load(cls, settings: SentenceJudgeSettings, device: str) -> SentenceJudge | None:
        if settings.model_dir is None or not (settings.model_dir / "config.json").is_file():
            return None
        try:
            return cls(CrossEncoderReranker(settings.model_dir, device, max_length=settings.max_length,
                                            batch_size=settings.batch_size, precision=settings.precision))
        except RerankerUnavailable as error:
            raise ValueError(f"Cannot load the sentence judge: {error}") from None

    def score(self, question: str, title: str, sentences: Sequence[str]) -> list[float]:
        if not sentences:
            return []
        return [float(x) for x in self.model.score(question, [passage_text(title, s) for s in sentences])]
