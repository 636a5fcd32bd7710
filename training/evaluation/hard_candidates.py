"""Reranking the hardest way: the abstract that answers a question against the nine abstracts BM25 ranks highest
for that question (and that do not answer it). A document scores as its best chunk.

Used by benchmarks/aer_dev.py on the development questions and by reranker validation on held-out training
questions, so the reranker is chosen on the figure it is reported on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from indexing.index import PublishedIndex

CANDIDATES = 10
BM25_DEPTH = 300  # chunks searched for the nine lexical neighbours


@dataclass(frozen=True)
class CandidateSet:
    query: str
    answer_doc_id: str
    doc_ids: list[str]  # the answering document first
    rows: list[int]  # chunk rows of those documents
    owners: list[int]  # owners[i]: index into doc_ids of rows[i]


def candidate_set(index: PublishedIndex, query: str, answer_doc_id: str, relevant: Sequence[str],
                  rows_of: dict[str, list[int]]) -> CandidateSet:  # fmt: skip
    neighbours: list[str] = []
    for row, _ in index.search_bm25(query, BM25_DEPTH):
        doc_id = index.chunks[row].doc_id
        if doc_id not in relevant and doc_id not in neighbours:
            neighbours.append(doc_id)
        if len(neighbours) == CANDIDATES - 1:
            break
    doc_ids = [answer_doc_id, *neighbours]
    rows = [row for doc_id in doc_ids for row in rows_of[doc_id]]
    owners = [position for position, doc_id in enumerate(doc_ids) for _ in rows_of[doc_id]]
    return CandidateSet(query, answer_doc_id, doc_ids, rows, owners)


def rows_by_document(index: PublishedIndex) -> dict[str, list[int]]:
    rows: dict[str, list[int]] = {}
    for row, chunk in enumerate(index.chunks):
        rows.setdefault(chunk.doc_id, []).append(row)
    return rows


def ranks_first(candidates: CandidateSet, chunk_scores: np.ndarray) -> bool:
    """Whether the answering document's best chunk outscores every other candidate's best chunk."""
    best = np.full(len(candidates.doc_ids), -np.inf)
    np.maximum.at(best, np.asarray(candidates.owners), np.asarray(chunk_scores, dtype=np.float64))
    return bool(best[0] > best[1:].max()) if len(best) > 1 else True


Scorer = Callable[[CandidateSet], np.ndarray]  # one score per candidate chunk (candidates.rows order)


def bi_encoder_scorer(index: PublishedIndex) -> Scorer:
    """Cosine of the query to each chunk's stored vector: the dense retriever's own score."""
    return lambda candidates: index.dense.vectors[candidates.rows] @ index.encode_query(candidates.query)
