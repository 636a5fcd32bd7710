"""A real PostgreSQL + pgvector (indexing.postgres.embedded) for the session, a fresh database per test, and a
small realistic build: Zipf-distributed economics words (so some are in most chunks: long posting lists, idf at
rank-bm25's epsilon floor), years and JEL codes with gaps, unit vectors; plus the in-memory reference."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from corpus.documents import Chunk, Document
from indexing.bm25 import Bm25Index, Bm25Settings
from indexing.postgres.writer import PostgresWriter
from indexing.targets import BuildContent

DIMENSION = 64
COMMON = ["effect", "model", "market", "price", "evidence", "policy", "firm", "labor", "wage", "trade"]
RARE = ["auction", "bank", "credit", "school", "tax", "carbon", "inflation", "voucher", "insurance", "migration",
        "monopsony", "tariff", "lottery", "mortgage", "pension", "rainfall", "union", "patent", "cartel", "bond"]

# Authors in the corpus's forms ("Last, Given", "Given Last", several in one string, accents), and none.
AUTHORS = [["Autor, David H.", "Dorn, David"], ["David H Autor", "David Dorn", "Gordon H Hanson"], ["Antràs, Pol"],
           ["Acemoglu, Daron Johnson, Simon Robinson, James A."], ["Angelucci, Manuela De Giorgi, Giacomo"], []]
JEL = ["J31", "J23", "D83", "E52", "G21", "F14", "H23", "Q54", "I21", "O16"]


@pytest.fixture
def postgres_dsn(new_database: Callable[[], str]) -> str:
    """A fresh, empty database for one test."""
    return new_database()


@dataclass
class Reference:
    """A build's content and the in-memory answers: BM25 (indexing.bm25) and brute-force inner products."""

    content: BuildContent

    @property
    def chunk_ids(self) -> list[str]:
        return [chunk.chunk_id for chunk in self.content.chunks]

    def allowed(self, filters: Any) -> np.ndarray | None:
        if filters is None:
            return None
        documents = {document.doc_id: document for document in self.content.documents}
        return np.array([filters.matches(documents[chunk.doc_id]) for chunk in self.content.chunks], dtype=bool)

    def keyword(self, query: str, top_n: int, filters: Any = None) -> list[tuple[str, float]]:
        found = self.content.bm25.search(query, top_n, self.allowed(filters))
        return [(self.chunk_ids[row], score) for row, score in found]

    def vector(self, vector: np.ndarray, top_n: int, filters: Any = None) -> list[tuple[str, float]]:
        scores = self.content.vectors.astype(np.float64) @ vector.astype(np.float64)
        allowed = self.allowed(filters)
        rows = np.flatnonzero(allowed) if allowed is not None else np.arange(len(scores))
        order = rows[np.argsort(-scores[rows], kind="stable")][:top_n]
        return [(self.chunk_ids[row], float(scores[row])) for row in order]


def make_content(documents_count: int = 150, seed: int = 0, chunks_per_document: int = 2) -> BuildContent:
    rng = np.random.default_rng(seed)
    vocabulary = COMMON + RARE
    probabilities = 1.0 / np.arange(1, len(vocabulary) + 1) ** 0.9
    probabilities /= probabilities.sum()
    documents, chunks = [], []
    for number in range(documents_count):
        year = None if number % 17 == 5 else int(1990 + rng.integers(0, 35))
        jel = [] if number % 13 == 3 else sorted({str(code) for code in rng.choice(JEL, size=rng.integers(1, 3))})
        if number % 50 == 7:
            jel = ["Z13"]  # a rare code: a filter that matches a handful of chunks
        texts = [" ".join(rng.choice(vocabulary, size=int(rng.integers(8, 40)), p=probabilities))
                 for _ in range(chunks_per_document)]  # fmt: skip
        if number % 31 == 0:
            texts[0] = "Policy evidence on the effect of the market."  # duplicates: exact score ties
        doc_id = f"10.1257/test.{number}"
        abstract = " ".join(texts)
        documents.append(Document(doc_id=doc_id, doi=doc_id, title=f"Paper {number}", abstract=abstract,
                                  abstract_original=abstract, date="" if year is None else str(year), year=year,
                                  authors=AUTHORS[number % len(AUTHORS)], jel_codes=jel,
                                  row_number=number + 1))  # fmt: skip
        start = 0
        for position, text in enumerate(texts):
            chunk_id = f"{doc_id}#{position}"
            chunks.append(Chunk(chunk_id=chunk_id, doc_id=doc_id, position=position, text=text, char_start=start,
                                char_end=start + len(text), title="", title_indexed=False))  # fmt: skip
            start += len(text) + 1
    vectors = rng.standard_normal((len(chunks), DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    bm25 = Bm25Index.build([chunk.indexed_text for chunk in chunks], Bm25Settings())
    return BuildContent(documents, chunks, bm25, vectors)


def manifest_of(content: BuildContent, build_id: str, fingerprint: str) -> dict[str, Any]:
    return {
        "build_id": build_id,
        "fingerprint": fingerprint,
        "counts": {"documents": len(content.documents), "chunks": len(content.chunks)},
        "embedding": {"model_name": "test-random", "weights_sha256": "0" * 64, "dimension": DIMENSION},
        "bm25": content.bm25.settings.to_json(),
    }


def publish_build(dsn: str, content: BuildContent, build_id: str | None = None, fingerprint: str = "fp") -> str:
    """Write a build with PostgresWriter (build ids in time order, as the ingestion job makes them); its schema."""
    build_id = build_id or f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}-test"
    writer = PostgresWriter(dsn)
    return writer.publish(content, build_id, fingerprint, manifest_of(content, build_id, fingerprint)).schema_name


@pytest.fixture(scope="module")
def published_dsn(new_database: Callable[[], str], content: BuildContent) -> str:
    """A database holding the small realistic build, shared by a test module (read only)."""
    dsn = new_database()
    publish_build(dsn, content)
    return dsn


@pytest.fixture(scope="session")
def content() -> BuildContent:
    return make_content()


@pytest.fixture(scope="session")
def reference(content: BuildContent) -> Reference:
    return Reference(content)
