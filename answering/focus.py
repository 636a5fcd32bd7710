"""Put the sentences that answer the question first: each prompt passage keeps its sentences closest to the
question (bi-encoder cosine), best first, and drops the rest.

A 135M generator copies what it reads first; an abstract's finding is usually its last sentences, after the
motivation and the method. Shorter passages also make a shorter prompt, so the first token comes sooner.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from answering.prompt import Passage
from corpus.sentences import split_sentences

Encoder = Callable[[Sequence[str]], np.ndarray]  # texts -> (n, d) L2-normalised float32


class FocusSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    max_sentences: int = Field(3, ge=1, le=20, description="Sentences kept per passage, the closest first.")


class SentenceFocus:
    """Entry point: `apply(question, passages)` -> the passages, each cut to its most relevant sentences."""

    def __init__(self, encode: Encoder, max_sentences: int) -> None:
        if max_sentences < 1:
            raise ValueError(f"max_sentences must be at least 1, not {max_sentences}.")
        self.encode = encode
        self.max_sentences = max_sentences

    def apply(self, question: str, passages: Sequence[Passage]) -> list[Passage]:
        sentences = [[p.text[start:end] for start, end in split_sentences(p.text)] or [p.text] for p in passages]
        flat = [sentence for group in sentences for sentence in group]
        if not flat:
            return list(passages)
        vectors = self.encode([question, *flat])
        similarity = vectors[1:] @ vectors[0]
        focused, offset = [], 0
        for passage, group in zip(passages, sentences, strict=True):
            scores = similarity[offset : offset + len(group)]
            offset += len(group)
            best = np.argsort(-scores, kind="stable")[: self.max_sentences]
            focused.append(replace(passage, text=" ".join(group[i] for i in best)))
        return focused
