"""What the retrieval stages hand on: a chunk with each stage's score and rank, and a search's outcome (torch-free,
so answering reads them without loading a model)."""

from __future__ import annotations

from dataclasses import dataclass, field

from corpus.documents import Chunk, Document
from retrieval.query import Query


@dataclass
class RetrievedChunk:
    """One candidate passage with the score and 1-based rank each stage gave it (None: stage not run). A stage
    that scores it returns a new one (dataclasses.replace); none writes into the one it was given.

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


@dataclass(frozen=True)
class SearchOutcome:
    query: Query  # the text and its vector, encoded once for every stage and for answering
    hits: list[RetrievedChunk]  # the top_k asked for
    reranked: bool
    timings_ms: dict[str, float] = field(default_factory=dict)  # this search's own stages, in the order they ran
    pool: list[RetrievedChunk] = field(default_factory=list)  # every candidate of the last stage, best first
