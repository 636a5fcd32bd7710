"""The storage port: what retrieval and the service ask of wherever the index lives.

In the spirit of Haystack's document stores: a backend answers keyword and vector searches with filters applied
before the cut, scores given chunks against a query vector, and looks chunks and documents up by id. Results are
keyed by chunk id, never by a row number, so a backend keeps its layout to itself. Two implement it:
`indexing.local_backend.LocalIndexBackend` (the published directory, in memory) and
`indexing.postgres.backend.PostgresBackend` (PostgreSQL + pgvector, shared by replicas).

The query vector is the caller's: retrieval embeds a query once per request with the model named in
`BackendInfo.embedding_model` and passes the vector to every call that needs it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from corpus.documents import Chunk, Document
from corpus.filters import SearchFilters


def encoder_mismatch(index: str, built_model: str, built_weights_sha256: str, model_name: str,
                     weights_sha256: str) -> str | None:  # fmt: skip
    """Why queries encoded by (model_name, weights) cannot search `index`, built with (built_model, built weights),
    or None: they must be the very weights its chunks were encoded with."""
    if (model_name, weights_sha256) == (built_model, built_weights_sha256):
        return None
    return (f"{index} was built with {built_model} (weights {built_weights_sha256[:12]}), but queries would be "
            f"encoded with {model_name} (weights {weights_sha256[:12]}). Rebuild the index.")


class BackendUnavailable(RuntimeError):
    """The backend cannot answer now (its database is down, say); the service answers 503 and retries later."""


@dataclass(frozen=True)
class ScoredChunk:
    """One search result: a chunk id and the backend's score for it (BM25, or cosine similarity)."""

    chunk_id: str
    score: float


@dataclass(frozen=True)
class StoredChunk:
    """A chunk with the document it belongs to, as look-ups return them."""

    chunk: Chunk
    document: Document


@dataclass(frozen=True)
class CorpusStats:
    """The served papers by publication year (None: no year known), and how many of them carry no JEL codes: what
    a year window holds, and what a filter on missing metadata leaves out."""

    papers_by_year: dict[int | None, int]
    without_jel_by_year: dict[int | None, int]

    @classmethod
    def of(cls, documents: Iterable[Document]) -> CorpusStats:
        papers: dict[int | None, int] = {}
        without_jel: dict[int | None, int] = {}
        for document in documents:
            papers[document.year] = papers.get(document.year, 0) + 1
            if not document.jel_codes:
                without_jel[document.year] = without_jel.get(document.year, 0) + 1
        return cls(papers, without_jel)

    @property
    def latest_year(self) -> int | None:
        return max((year for year in self.papers_by_year if year is not None), default=None)

    def papers(self, year_min: int | None = None, year_max: int | None = None) -> int:
        """Papers in the window (both bounds None: every paper, those without a year too)."""
        return _in_window(self.papers_by_year, year_min, year_max)

    def without_jel(self, year_min: int | None = None, year_max: int | None = None) -> int:
        """Papers in the window that carry no JEL codes."""
        return _in_window(self.without_jel_by_year, year_min, year_max)


def _in_window(counts: dict[int | None, int], year_min: int | None, year_max: int | None) -> int:
    if year_min is None and year_max is None:
        return sum(counts.values())
    return sum(count for year, count in counts.items() if year is not None and (year_min is None or year >= year_min)
               and (year_max is None or year <= year_max))  # fmt: skip


@dataclass(frozen=True)
class BackendInfo:
    """What the service reports and checks about the index a backend serves."""

    kind: str  # "local" | "postgres"
    chunks: int
    documents: int
    embedding_model: str  # queries must be encoded by this model ...
    embedding_weights_sha256: str  # ... with exactly these weights
    embedding_dimension: int
    manifest: dict[str, Any] = field(default_factory=dict)  # the build's manifest (build id, counts, settings)
    stats: CorpusStats | None = None  # papers by year and without JEL codes (None: the backend does not know)


def newest_first(documents: Iterable[Document]) -> list[Document]:
    """Documents by year, newest first (those without a year last), then by id: `papers_by_authors`' order."""
    return sorted(documents, key=lambda document: (-(document.year or 0), document.doc_id))


@runtime_checkable
class SearchBackend(Protocol):
    """Keyword and vector search over chunks, and look-ups by id. Every method may raise BackendUnavailable."""

    def info(self) -> BackendInfo:
        """The served build: counts, embedding model, manifest. Cheap; the service calls it per request."""
        ...

    def keyword_search(self, query: str, top_n: int, filters: SearchFilters | None = None) -> list[ScoredChunk]:
        """BM25 (rank-bm25's Okapi, the index's tokenizer), best first; only chunks matching a query term.
        Filters restrict the corpus before the cut, so up to top_n matching chunks come back."""
        ...

    def vector_search(self, vector: np.ndarray, top_n: int, filters: SearchFilters | None = None
                      ) -> list[ScoredChunk]:  # fmt: skip
        """Cosine similarity to a unit query vector, best first; filters before the cut."""
        ...

    def similarities(self, vector: np.ndarray, chunk_ids: Sequence[str]) -> dict[str, float]:
        """Cosine similarity of the query vector to each given chunk, from the stored vectors."""
        ...

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored unit embeddings (float32) of the chunks given; unknown ids are left out."""
        ...

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        """The chunks (with their documents) of the ids given; unknown ids are left out."""
        ...

    def document(self, doc_id: str) -> tuple[Document, list[str]] | None:
        """A document and the ids of its chunks in order, or None when no document has that id."""
        ...

    def papers_by_authors(self, surnames: Sequence[str], year: int | None, limit: int) -> list[Document]:
        """The documents with an author of every surname given (plain: corpus.authors.plain), of `year` when one
        is given; newest first, at most `limit`."""
        ...

    def check(self) -> None:
        """Raise BackendUnavailable when the backend cannot answer searches now (readiness)."""
        ...

    def close(self) -> None:
        """Release connections; the backend is not used after."""
        ...
