"""A tiny in-memory PublishedIndex (real BM25 and FAISS code, a hashing stand-in for the embedder), served through
the SearchBackend port."""

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from corpus.documents import Chunk, Document
from corpus.search_backend import SearchBackend
from indexing.bm25 import Bm25Index, Bm25Settings
from indexing.dense import DenseIndex, DenseSettings
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from indexing.postgres.backend import PostgresBackend
from indexing.postgres.writer import PostgresWriter
from indexing.targets import BuildContent

DIMENSION = 64


class HashingEmbedder:
    """Bag of words with a fixed pseudo-random vector per word: similar wording, similar vectors."""

    def encode(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        vectors = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                seed = int(hashlib.sha256(word.strip(".,").encode()).hexdigest()[:8], 16)
                vectors[row] += np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)


# (doc_id, year, JEL codes, abstract). Every abstract mentions wages, so BM25 matches them all.
ROWS = [
    ("old-1", 1999, ["J31"], "Minimum wage increases and teen employment in fast food restaurants."),
    ("old-2", 2001, ["J23", "D83"], "Minimum wage laws, employment and search frictions in labor markets."),
    ("old-3", 2003, ["E24"], "Wage rigidity and unemployment over the business cycle."),
    ("new-1", 2011, ["D81"], "Risk, wages and occupational choice under uncertainty."),
    ("new-2", 2012, ["J31", "D83"], "Minimum wage spillovers to higher wages: evidence from payroll data."),
    ("new-3", 2014, ["F16"], "Trade shocks, local labor markets and wages."),
    ("new-4", 2022, ["D18"], "Consumer protection and wage garnishment."),
    ("no-year", None, [], "Wage bargaining with incomplete information."),
]


def make_document(doc_id: str, year: int | None, jel_codes: list[str], abstract: str) -> Document:
    return Document(
        doc_id=doc_id, doi="", title="", abstract=abstract, abstract_original=abstract,
        date="" if year is None else str(year), year=year, jel_codes=jel_codes,
    )  # fmt: skip


@pytest.fixture
def tiny_index(tmp_path: Path) -> PublishedIndex:
    documents = {row[0]: make_document(*row) for row in ROWS}
    chunks = [
        Chunk(chunk_id=f"{doc_id}#0", doc_id=doc_id, position=0, text=document.abstract, char_start=0,
              char_end=len(document.abstract), title="")
        for doc_id, document in documents.items()
    ]  # fmt: skip
    embedder = HashingEmbedder()
    bm25 = Bm25Index.build([chunk.indexed_text for chunk in chunks], Bm25Settings())
    dense = DenseIndex.build(embedder.encode([chunk.indexed_text for chunk in chunks]), DenseSettings())
    manifest = {"embedding": {"model_name": "hashing-test-embedder", "weights_sha256": "0" * 64}}
    return PublishedIndex(tmp_path, manifest, documents, chunks, bm25, dense, embedder)  # type: ignore[arg-type]


@pytest.fixture
def encoder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture(params=["local", "postgres"])
def backend(request: pytest.FixtureRequest, tiny_index: PublishedIndex) -> Iterator[SearchBackend]:
    """The tiny index behind the port, as retrieval sees it: the published directory in memory, or the same
    build written to a fresh PostgreSQL database (every retrieval test runs on both)."""
    if request.param == "local":
        yield LocalIndexBackend(tiny_index)
        return
    dsn = request.getfixturevalue("new_database")()
    content = BuildContent(list(tiny_index.documents.values()), tiny_index.chunks, tiny_index.bm25,
                           tiny_index.dense.vectors)  # fmt: skip
    manifest = {
        **tiny_index.manifest,
        "build_id": "tiny",
        "counts": {"documents": len(tiny_index.documents), "chunks": len(tiny_index.chunks)},
        "bm25": tiny_index.bm25.settings.to_json(),
    }
    manifest["embedding"] = {**manifest["embedding"], "dimension": DIMENSION}
    PostgresWriter(dsn).publish(content, "20260101T000000000000Z-tiny", "tiny", manifest)
    backend = PostgresBackend(dsn, pool_size=2)
    yield backend
    backend.close()
