"""Retrieval stages: hybrid BM25 + dense candidates (RRF) and an optional cross-encoder rerank."""

from app.retrieval.types import RetrievedChunk, SearchFilters

__all__ = ["RetrievedChunk", "SearchFilters"]
