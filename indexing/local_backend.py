"""The published index directory as a SearchBackend: everything in memory, rows and masks kept inside.

The default for one machine: a search is a sparse product (BM25) and one matrix-vector product (dense) over
the loaded build, with filters as boolean masks over the rows applied before any cut.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from corpus.authors import people, surname_words
from corpus.documents import Document
from corpus.filters import SearchFilters
from corpus.search_backend import BackendInfo, CorpusStats, ScoredChunk, StoredChunk, newest_first
from indexing.index import PublishedIndex


class LocalIndexBackend:
    """Implements corpus.search_backend.SearchBackend over one loaded PublishedIndex."""

    def __init__(self, index: PublishedIndex) -> None:
        self._index = index
        self._row_of = {chunk.chunk_id: row for row, chunk in enumerate(index.chunks)}
        self._chunk_ids = [chunk.chunk_id for chunk in index.chunks]
        self._chunk_ids_of: dict[str, list[str]] = {}
        for chunk in index.chunks:
            self._chunk_ids_of.setdefault(chunk.doc_id, []).append(chunk.chunk_id)
        # Per-chunk years, so a year filter is one vectorised comparison (-1: no year known).
        self._years = np.array([_year_or_missing(index.documents[chunk.doc_id].year) for chunk in index.chunks],
                               dtype=np.int64)  # fmt: skip
        self._papers_by_surname: dict[str, set[str]] = {}
        for document in index.documents.values():
            for person in people(document.authors):
                for word in surname_words(person):
                    self._papers_by_surname.setdefault(word, set()).add(document.doc_id)
        embedding = index.manifest["embedding"]
        self._info = BackendInfo(
            kind="local",
            chunks=len(index.chunks),
            documents=len(index.documents),
            embedding_model=embedding["model_name"],
            embedding_weights_sha256=embedding["weights_sha256"],
            embedding_dimension=index.dense.dimension,
            manifest=index.manifest,
            stats=CorpusStats.of(index.documents.values()),
        )

    def info(self) -> BackendInfo:
        return self._info

    def keyword_search(self, query: str, top_n: int, filters: SearchFilters | None = None) -> list[ScoredChunk]:
        allowed = self._allowed(filters)
        if allowed is not None and not allowed.any():
            return []
        return self._scored(self._index.bm25.search(query, top_n, allowed))

    def vector_search(self, vector: np.ndarray, top_n: int, filters: SearchFilters | None = None
                      ) -> list[ScoredChunk]:  # fmt: skip
        allowed = self._allowed(filters)
        if allowed is not None and not allowed.any():
            return []
        return self._scored(self._index.dense.search(vector, top_n, allowed))

    def similarities(self, vector: np.ndarray, chunk_ids: Sequence[str]) -> dict[str, float]:
        known = [chunk_id for chunk_id in chunk_ids if chunk_id in self._row_of]
        rows = [self._row_of[chunk_id] for chunk_id in known]
        cosines = self._index.dense.vectors[rows] @ np.asarray(vector, dtype=np.float32)
        return {chunk_id: float(cosine) for chunk_id, cosine in zip(known, cosines, strict=True)}

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        return {chunk_id: np.array(self._index.dense.vectors[self._row_of[chunk_id]], dtype=np.float32)
                for chunk_id in chunk_ids if chunk_id in self._row_of}  # fmt: skip

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        found: dict[str, StoredChunk] = {}
        for chunk_id in chunk_ids:
            row = self._row_of.get(chunk_id)
            if row is not None:
                chunk = self._index.chunks[row]
                found[chunk_id] = StoredChunk(chunk, self._index.documents[chunk.doc_id])
        return found

    def document(self, doc_id: str) -> tuple[Document, list[str]] | None:
        document = self._index.documents.get(doc_id)
        return None if document is None else (document, list(self._chunk_ids_of.get(doc_id, [])))

    def papers_by_authors(self, surnames: Sequence[str], year: int | None, limit: int) -> list[Document]:
        if not surnames:
            return []
        doc_ids = set.intersection(*(self._papers_by_surname.get(surname, set()) for surname in surnames))
        found = [self._index.documents[doc_id] for doc_id in doc_ids]
        found = [document for document in found if year is None or document.year == year]
        return newest_first(found)[:limit]

    def check(self) -> None:
        """Always ready: the build was validated and loaded whole at start."""

    def close(self) -> None:
        """Nothing to release."""

    def _scored(self, rows: list[tuple[int, float]]) -> list[ScoredChunk]:
        return [ScoredChunk(self._chunk_ids[row], float(score)) for row, score in rows]

    def _allowed(self, filters: SearchFilters | None) -> np.ndarray | None:
        """Bool mask over the rows that pass the filters; None when there is nothing to filter."""
        if filters is None or filters.is_empty:
            return None
        allowed = np.ones(len(self._chunk_ids), dtype=bool)
        if filters.year_min is not None:
            allowed &= self._years >= filters.year_min
        if filters.year_max is not None:
            allowed &= (self._years <= filters.year_max) & (self._years >= 0)
        if filters.jel_prefix is not None:
            jel_only = SearchFilters(jel_prefix=filters.jel_prefix)
            matching = {doc_id for doc_id, document in self._index.documents.items() if jel_only.matches(document)}
            allowed &= np.array([chunk.doc_id in matching for chunk in self._index.chunks], dtype=bool)
        return allowed


def _year_or_missing(year: int | None) -> int:
    return -1 if year is None else year
