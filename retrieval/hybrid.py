"""Hybrid retrieval: BM25 and dense candidates fused with weighted reciprocal rank fusion (RRF)."""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from indexing.index import PublishedIndex
from retrieval.fusion import DEFAULT_RRF_K, rrf_scores
from corpus.filters import SearchFilters
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


class HybridRetriever:
    """Ranks the chunks of a PublishedIndex for a query; filters restrict the index before cutting."""

    def __init__(self, index: PublishedIndex, settings: HybridSettings | None = None) -> None:
        self.index = index
        self.settings = settings or HybridSettings()
        # Per-chunk years, so a year filter is one vectorised comparison (-1: no year known).
        self._chunk_years = np.array(
            [_year_or_missing(index.documents[chunk.doc_id].year) for chunk in index.chunks], dtype=np.int64
        )

    def retrieve(
        self, query: str, top_n: int, filters: SearchFilters | None = None, mode: str | None = None
    ) -> list[RetrievedChunk]:
        """The top_n chunks for the query, best first, with each stage's score and rank filled in."""
        mode = mode or self.settings.mode
        if mode not in RETRIEVAL_MODES:
            raise ValueError(f"Unknown retrieval mode {mode!r}; use one of {', '.join(RETRIEVAL_MODES)}.")
        if top_n < 1:
            raise ValueError(f"top_n must be at least 1, not {top_n}.")
        if not query:  # the API trims and refuses blank text; anything else is searched as it is
            raise ValueError("The query is empty.")
        allowed = self.allowed_mask(filters)
        if allowed is not None and not allowed.any():
            return []

        depth = max(self.settings.candidates, top_n)
        hits: dict[int, RetrievedChunk] = {}
        if mode in ("hybrid", "bm25"):
            for rank, (row, score) in enumerate(self.index.search_bm25(query, depth, allowed=allowed), start=1):
                hit = self._hit(hits, row)
                hit.bm25_score, hit.bm25_rank = float(score), rank
        if mode in ("hybrid", "dense"):
            for rank, (row, score) in enumerate(self.index.search_dense(query, depth, allowed=allowed), start=1):
                hit = self._hit(hits, row)
                hit.dense_score, hit.dense_rank = float(score), rank
        return self._fuse(list(hits.values()), mode)[:top_n]

    def allowed_mask(self, filters: SearchFilters | None) -> np.ndarray | None:
        """Bool mask over the index rows that pass the filters; None when there is nothing to filter."""
        if filters is None or filters.is_empty:
            return None
        allowed = np.ones(len(self.index.chunks), dtype=bool)
        if filters.year_min is not None:
            allowed &= self._chunk_years >= filters.year_min
        if filters.year_max is not None:
            allowed &= (self._chunk_years <= filters.year_max) & (self._chunk_years >= 0)
        if filters.jel_prefix is not None:
            jel_only = SearchFilters(jel_prefix=filters.jel_prefix)
            matching_docs = {
                doc_id for doc_id, document in self.index.documents.items() if jel_only.matches(document)
            }
            allowed &= np.array([chunk.doc_id in matching_docs for chunk in self.index.chunks], dtype=bool)
        return allowed

    def _hit(self, hits: dict[int, RetrievedChunk], row: int) -> RetrievedChunk:
        if row not in hits:
            chunk = self.index.chunks[row]
            hits[row] = RetrievedChunk(chunk=chunk, document=self.index.documents[chunk.doc_id])
        return hits[row]

    def _fuse(self, hits: list[RetrievedChunk], mode: str) -> list[RetrievedChunk]:
        """Weighted RRF: score = sum over retrievers of weight / (rrf_k + rank)."""
        settings = self.settings
        # In a single-retriever mode the other retriever's ranks are absent, and its own weight is irrelevant.
        weights = (settings.bm25_weight, settings.dense_weight) if mode == "hybrid" else (1.0, 1.0)
        bm25_ranks = np.array([(hit.bm25_rank or 0) if mode != "dense" else 0 for hit in hits])
        dense_ranks = np.array([(hit.dense_rank or 0) if mode != "bm25" else 0 for hit in hits])
        for hit, score in zip(hits, rrf_scores([bm25_ranks, dense_ranks], weights, settings.rrf_k), strict=True):
            hit.fused_score = float(score)
        # Ties (e.g. rank 3 in one list vs rank 3 in the other) go to the better single rank, then
        # to the chunk id, so results are deterministic.
        hits.sort(key=lambda hit: (-(hit.fused_score or 0.0), _best_rank(hit), hit.chunk.chunk_id))
        for rank, hit in enumerate(hits, start=1):
            hit.fused_rank = rank
        return hits


def _best_rank(hit: RetrievedChunk) -> int:
    ranks = [rank for rank in (hit.bm25_rank, hit.dense_rank) if rank is not None]
    return min(ranks) if ranks else 1 << 30


def _year_or_missing(year: int | None) -> int:
    return -1 if year is None else year
