"""The record the retrieval stages pass along: a chunk with each stage's score and rank."""

from __future__ import annotations

from dataclasses import dataclass, field

from corpus.documents import Chunk, Document


@dataclass
class RetrievedChunk:
    """One candidate passage with the score and 1-based rank each stage gave it (None: stage not run).

    `scores` and `ranks` hold the first-stage retrievers' by name ("bm25", "dense"); a retriever that did not
    return the passage has no entry."""

    chunk: Chunk
    document: Document
    scores: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)
    fused_score: float | None = None
    fused_rank: int | None = None
    rerank_score: float | None = None
    rerank_rank: int | None = None
    answer_logit: float | None = None  # the reranker's answer head: does this passage answer the question?
    judge_logit: float | None = None  # the passage judge's (retrieval/judge.py): the same question, read closely
