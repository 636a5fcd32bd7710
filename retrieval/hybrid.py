"""Hybrid retrieval: named first-stage retrievers over a SearchBackend, fused with weighted reciprocal rank
fusion (RRF). Adding a retriever is one class with a `name` and a `retrieve`, and its weight."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from corpus.filters import SearchFilters
from corpus.search_backend import ScoredChunk, SearchBackend
from retrieval.fusion import DEFAULT_RRF_K, rrf_scores
from retrieval.query import Query, QueryEncoder
from retrieval.types import RetrievedChunk

RetrievalMode = Literal["hybrid", "bm25", "dense"]
RETRIEVAL_MODES: tuple[str, ...] = get_args(RetrievalMode)


class HybridSettings(BaseModel):
    """How the first stage retrieves: the top `candidates` of BM25 and of dense search, fused by weighted RRF."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: RetrievalMode = "hybrid"
    candidates: int = Field(100, ge=1, le=1000, description="Top N taken from each retriever before fusion.")
    rrf_k: int = Field(DEFAULT_RRF_K, ge=1, le=1000, description="RRF damping.")
    bm25_weight: float = Field(1.0, ge=0.0, le=10.0)
    dense_weight: float = Field(1.0, ge=0.0, le=10.0)

    @model_validator(mode="after")
    def _some_weight(self) -> HybridSettings:
        if self.mode == "hybrid" and self.bm25_weight == 0 and self.dense_weight == 0:
            raise ValueError("hybrid mode needs a positive bm25_weight or dense_weight.")
        return self

    def weights(self) -> dict[str, float]:
        return {"bm25": self.bm25_weight, "dense": self.dense_weight}


class Retriever(Protocol):
    """One first-stage ranking of chunks for a query."""

    name: str

    def retrieve(self, query: Query, top_n: int, filters: SearchFilters | None) -> list[ScoredChunk]: ...


class KeywordRetriever:
    name = "bm25"

    def __init__(self, backend: SearchBackend) -> None:
        self.backend = backend

    def retrieve(self, query: Query, top_n: int, filters: SearchFilters | None) -> list[ScoredChunk]:
        return self.backend.keyword_search(query.text, top_n, filters)


class VectorRetriever:
    name = "dense"

    def __init__(self, backend: SearchBackend) -> None:
        self.backend = backend

    def retrieve(self, query: Query, top_n: int, filters: SearchFilters | None) -> list[ScoredChunk]:
        return self.backend.vector_search(query.vector, top_n, filters)


class HybridRetriever:
    """Entry point: `retrieve(query, top_n, filters, mode)` -> the fused top_n, each stage's score and rank."""

    def __init__(self, backend: SearchBackend, encoder: QueryEncoder, settings: HybridSettings | None = None) -> None:
        self.backend = backend
        self.encoder = encoder
        self.settings = settings or HybridSettings()
        self.retrievers: dict[str, Retriever] = {"bm25": KeywordRetriever(backend), "dense": VectorRetriever(backend)}
        self._modes = {"hybrid": ("bm25", "dense"), "bm25": ("bm25",), "dense": ("dense",)}

    def retrieve(self, query: str | Query, top_n: int, filters: SearchFilters | None = None, mode: str | None = None
                 ) -> list[RetrievedChunk]:  # fmt: skip
        """The top_n chunks for the query, best first, with each retriever's score and rank filled in."""
        mode = mode or self.settings.mode
        if mode not in RETRIEVAL_MODES:
            raise ValueError(f"Unknown retrieval mode {mode!r}; use one of {', '.join(RETRIEVAL_MODES)}.")
        if top_n < 1:
            raise ValueError(f"top_n must be at least 1, not {top_n}.")
        query = query if isinstance(query, Query) else Query(query, self.encoder)
        if not query.text:  # the API trims and refuses blank text; anything else is searched as it is
            raise ValueError("The query is empty.")
        depth = max(self.settings.candidates, top_n)
        rankings = {name: self.retrievers[name].retrieve(query, depth, filters) for name in self._modes[mode]}
        # In a single-retriever mode the other retriever's weight is irrelevant.
        weights = self.settings.weights() if mode == "hybrid" else dict.fromkeys(rankings, 1.0)
        fused = self._fuse(rankings, {name: weights[name] for name in rankings})[:top_n]
        # Only the chunks that make the cut are looked up (a backend on a database reads far fewer records).
        stored = self.backend.chunks([hit.chunk_id for hit in fused])
        hits = []
        for hit in fused:
            found = stored.get(hit.chunk_id)
            if found is None:  # removed by an ingest between the two calls
                continue
            hits.append(RetrievedChunk(chunk=found.chunk, document=found.document, scores=hit.scores,
                                       ranks=hit.ranks, fused_score=hit.score, fused_rank=len(hits) + 1))  # fmt: skip
        return hits

    def _fuse(self, rankings: dict[str, list[ScoredChunk]], weights: dict[str, float]) -> list[_Fused]:
        """Weighted RRF: score = sum over retrievers of weight / (rrf_k + rank), best first."""
        fused: dict[str, _Fused] = {}
        for name, ranking in rankings.items():
            for rank, scored in enumerate(ranking, start=1):
                hit = fused.setdefault(scored.chunk_id, _Fused(scored.chunk_id))
                hit.scores[name], hit.ranks[name] = scored.score, rank
        hits = list(fused.values())
        columns = [np.array([hit.ranks.get(name, 0) for hit in hits]) for name in weights]
        for hit, score in zip(hits, rrf_scores(columns, list(weights.values()), self.settings.rrf_k), strict=True):
            hit.score = float(score)
        # Ties (e.g. rank 3 in one list vs rank 3 in the other) go to the better single rank, then
        # to the chunk id, so results are deterministic.
        hits.sort(key=lambda hit: (-hit.score, min(hit.ranks.values(), default=1 << 30), hit.chunk_id))
        return hits


@dataclass
class _Fused:
    """A candidate before its chunk is looked up: its id, each retriever's score and rank, the fused score."""

    chunk_id: str
    scores: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)
    score: float = 0.0
