"""The passage judge: does this passage answer (part of) this question?

The reranker ranks passages against each other by relevance: an abstract on the right topic comes first whether
or not it answers what is asked. The judge is a cross-encoder of the reranker's shape, fine-tuned from it on
pairs that contrast what is asked on one abstract (training/judge.py: a written question and the abstract that
answers it, against a near miss written for the same abstract that asks about another outcome, population,
place, period or mechanism). Its score is the logit of P(the passage answers the question); the answerability
decision (answering/answerability.py) asks it whether the question is answered at all (its best passage's P), and
keeps its own model over the retrieval signals to choose which other papers join the answer.

It reads only the passages the decision weighs (the top `evidence_k` after reranking), so one model costs about a
quarter of the reranker's time. The judge may be several such models (the shipped default is two: one trained on
the written paraphrases, one on the reworded ones too); its logit is then the mean of theirs, which ranks
answerable questions above unanswerable ones better than either alone (models/weights/judge*/MODEL_CARD.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import NoDecode

from retrieval.reranker import CrossEncoderReranker, RerankerUnavailable, passage_text
from retrieval.types import RetrievedChunk

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "models" / "weights"
DEFAULT_JUDGE_DIR = WEIGHTS_DIR / "judge"
DEFAULT_JUDGE_DIRS = (DEFAULT_JUDGE_DIR, WEIGHTS_DIR / "judge-reworded")


class JudgeSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model_dirs: Annotated[tuple[Path, ...], NoDecode] = Field(
        DEFAULT_JUDGE_DIRS, description="The judge's models, comma-separated (their logits are averaged); empty: "
        "no judge (the decision then gates on its own model, with its answer_from bar).")  # fmt: skip
    precision: str = Field("auto", pattern="^(auto|int8|float32|bfloat16|float16)$",
                           description="auto: int8 on CPU, the device's fast float type elsewhere.")  # fmt: skip
    batch_size: int = Field(16, ge=1, le=256)
    # 256, not the reranker's 192: question, title and passage exceed 192 tokens for about 5% of the passages, and
    # the cut falls at the abstract's end, where findings are stated (docs/answering.md, the judge gate and its bars).
    max_length: int = Field(256, ge=16, le=512, description="Tokens of (question, title and passage) the judge reads.")

    @field_validator("model_dirs", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        """From the environment: "" (no judge), "dir" or "dir1,dir2"."""
        if isinstance(value, str | Path):
            return tuple(Path(part.strip()) for part in str(value).split(",") if part.strip())
        return value


class PassageJudge:
    """Entry point: `score(question, hits)` -> each hit's logit of P(it answers the question) (answering's
    PassageScorer port)."""

    def __init__(self, models: list[CrossEncoderReranker]) -> None:
        if not models:
            raise ValueError("A passage judge needs at least one model.")
        for model in models:
            if model.bi_encoder_weight or model.first_stage_weight:
                raise ValueError(f"{model.model_dir} adds retrieval scores to its own: it is a reranker, not a "
                                 "judge.")  # fmt: skip
        self.models = models
        self.name = " + ".join(model.name for model in models)
        self.precision = models[0].precision

    @classmethod
    def load(cls, settings: JudgeSettings, device: str) -> PassageJudge | None:
        """The configured judge; None when none is configured or its first directory holds no model (a later one
        that holds none is an error: an ensemble silently missing a member would move every bar)."""
        directories = settings.model_dirs
        if not directories or not (directories[0] / "config.json").is_file():
            return None
        try:
            models = [CrossEncoderReranker(directory, device, max_length=settings.max_length,
                                           batch_size=settings.batch_size, precision=settings.precision)
                      for directory in directories]  # fmt: skip
        except RerankerUnavailable as error:
            raise ValueError(f"Cannot load the passage judge: {error}") from None
        return cls(models)

    def logits(self, question: str, passages: list[str]) -> list[float]:
        """The logit of P(each passage answers the question), the mean of the models'; passages as passage_text
        shows them."""
        if not passages:
            return []
        scores = np.mean([np.asarray(model.score(question, passages), dtype=np.float64) for model in self.models],
                         axis=0)  # fmt: skip
        return [float(x) for x in scores]

    def score(self, question: str, hits: Sequence[RetrievedChunk]) -> list[float]:
        """Each hit's logit, read as the judge reads a passage (title above text)."""
        return self.logits(question, [passage_text(hit.chunk.title, hit.chunk.text) for hit in hits])
