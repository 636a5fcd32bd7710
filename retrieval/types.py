"""The record the retrieval stages pass along: a chunk with each stage's score and rank."""

from __future__ import annotations

from dataclasses import dataclass

from corpus.documents import Chunk, Document
from corpus.filters import SearchFilters


@dataclass
class RetrievedChunk:
    """One candidate passage with the score and 1-based rank each stage gave it (None: stage not run)."""

    chunk: Chunk
    document: Document
    bm25_score: float | None = None
    bm25_rank: int | None = None
    dense_score: float | None = None
    dense_rank: int | None = None
    fused_score: float | None = None
    fused_rank: int | None = None
    rerank_score: float | None = None
    rerank_rank: int | None = None
    answer_logit: float | None = None  # the reranker's answer head: does this passage answer the question?
