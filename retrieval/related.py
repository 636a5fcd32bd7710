"""Papers related to a paper: its nearest neighbours by the stored embeddings of their chunks.

A paper's vector is the normalised mean of its chunks' stored vectors (most abstracts are one chunk); the
backend's vector search then ranks chunks by cosine similarity to it, and each other paper counts once, by its
best chunk. Works on any SearchBackend (the published directory or PostgreSQL), through the port only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from corpus.documents import Document
from corpus.search_backend import SearchBackend


@dataclass(frozen=True)
class RelatedPaper:
    document: Document
    similarity: float  # cosine similarity of its best chunk to the paper's vector


def paper_vector(backend: SearchBackend, chunk_ids: list[str]) -> np.ndarray | None:
    """The normalised mean of the stored chunk vectors; None when none is stored."""
    vectors = list(backend.vectors(chunk_ids).values())
    if not vectors:
        return None
    mean = np.mean(np.stack(vectors), axis=0)
    norm = float(np.linalg.norm(mean))
    return None if norm == 0.0 else (mean / norm).astype(np.float32)


def related_papers(backend: SearchBackend, doc_id: str, chunk_ids: list[str], k: int) -> list[RelatedPaper]:
    """Up to k other papers, most similar first (ties: the backend's order). Asks for more chunks until k
    distinct papers are found or the index has no more."""
    vector = paper_vector(backend, chunk_ids)
    if vector is None or k <= 0:
        return []
    total = backend.info().chunks
    top_n = min(total, max(4 * (k + len(chunk_ids)), 20))
    while True:
        best: dict[str, tuple[str, float]] = {}  # doc id -> its best chunk and that chunk's score
        hits = backend.vector_search(vector, top_n)
        for hit in hits:
            other = hit.chunk_id.rsplit("#", 1)[0]  # chunk ids are f"{doc_id}#{position}"
            if other != doc_id and other not in best:
                best[other] = (hit.chunk_id, hit.score)
        if len(best) >= k or top_n >= total or len(hits) < top_n:
            break
        top_n = min(total, top_n * 4)
    chosen = list(best.values())[:k]
    stored = backend.chunks([chunk_id for chunk_id, _ in chosen])
    return [RelatedPaper(stored[chunk_id].document, score) for chunk_id, score in chosen if chunk_id in stored]
