"""A published index directory, loaded and validated: its documents, chunks, BM25 and dense parts by row.

The service reads it through `indexing.local_backend.LocalIndexBackend` (the SearchBackend port, rows kept
inside); offline jobs (training, evaluation) may use the rows directly."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from corpus.documents import Chunk, Document
from corpus.search_backend import encoder_mismatch
from indexing.bm25 import Bm25Index
from indexing.dense import DenseIndex, DenseSettings
from indexing.embedding import Embedder, EmbeddingModelFiles, EmbeddingModelMissing
from indexing.manifest import IndexLoadError, read_manifest, verify_files
from indexing.storage import read_jsonl

__all__ = ["IndexLoadError", "PublishedIndex"]

DOCUMENTS_FILE = "documents.jsonl"
CHUNKS_FILE = "chunks.jsonl"


class PublishedIndex:
    """One published build, read from a single resolved directory (never a mix of two builds)."""

    def __init__(
        self,
        directory: Path,
        manifest: dict[str, Any],
        documents: dict[str, Document],
        chunks: list[Chunk],
        bm25: Bm25Index,
        dense: DenseIndex,
        embedder: Embedder | None = None,
        device: str = "auto",
    ) -> None:
        self.directory = directory
        self.manifest = manifest
        self.documents = documents
        self.chunks = chunks
        self.bm25 = bm25
        self.dense = dense
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self.device = device  # where the query encoder runs

    @classmethod
    def load(
        cls,
        index_dir: Path,
        embedder: Embedder | None = None,
        expected_embedding_model: str | None = None,
        device: str = "auto",
    ) -> PublishedIndex:
        """Load and validate: manifest present and current, every file's sha256 as recorded, and the
        embedding model (the one passed, or the installed one) the index was built with. `device`: where
        the query encoder runs when none is passed."""
        index_dir = Path(index_dir)
        if not index_dir.exists():
            raise IndexLoadError(f"No index at {index_dir}. Build one with `python -m indexing --out {index_dir}`.")
        directory = index_dir.resolve()  # once: a concurrent publish swaps the link, not these files
        manifest = read_manifest(directory)
        problems = verify_files(directory, manifest)
        if problems:
            raise IndexLoadError(f"{index_dir} is corrupt: {'; '.join(problems)}. Rebuild it with --force.")
        model = manifest["embedding"]
        if expected_embedding_model is not None and model["model_name"] != expected_embedding_model:
            raise IndexLoadError(
                f"{index_dir} was built with embedding model {model['model_name']!r}, not {expected_embedding_model!r}."
            )
        _check_embedding_model(index_dir, model, embedder)
        try:
            with _naming(DOCUMENTS_FILE):
                documents = {
                    record["doc_id"]: Document.from_json(record) for record in read_jsonl(directory / DOCUMENTS_FILE)
                }
            with _naming(CHUNKS_FILE):
                chunks = [Chunk.from_json(record) for record in read_jsonl(directory / CHUNKS_FILE)]
            bm25 = Bm25Index.load(directory)
            dense = DenseIndex.load(directory, DenseSettings(**manifest["dense"]))
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as error:
            raise IndexLoadError(f"{index_dir} cannot be read: {error}") from None
        if not len(chunks) == len(bm25) == len(dense) == manifest["counts"]["chunks"]:
            raise IndexLoadError(
                f"{index_dir} is inconsistent: {len(chunks)} chunks, {len(bm25)} BM25 rows, "
                f"{len(dense)} vectors (manifest: {manifest['counts']['chunks']})."
            )
        return cls(directory, manifest, documents, chunks, bm25, dense, embedder, device)

    @property
    def embedder(self) -> Embedder:
        """The query encoder; loaded on first use so that BM25-only callers never pay for torch."""
        with self._embedder_lock:  # a service may ask from several threads at once
            if self._embedder is None:
                self._embedder = Embedder(device=self.device)
            return self._embedder

    def encode_query(self, query: str) -> np.ndarray:
        """The query's unit vector."""
        return self.embedder.encode([query])[0]

    def search_bm25(self, query: str, top_n: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """(chunk row, BM25 score), best first; rows matching no query term are not returned."""
        return self.bm25.search(query, top_n, allowed)

    def search_dense(self, query: str, top_n: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """(chunk row, cosine similarity), best first; with `allowed`, filtered before the cut."""
        return self.dense.search(self.encode_query(query), top_n, allowed)

    def document_of(self, row: int) -> Document:
        return self.documents[self.chunks[row].doc_id]


def _check_embedding_model(index_dir: Path, built_with: dict[str, Any], embedder: Embedder | None) -> None:
    """Queries must be encoded by the very weights the chunks were encoded with."""
    if embedder is not None:
        name, weights = embedder.model_name, embedder.weights_sha256
    else:
        try:
            files = EmbeddingModelFiles.locate()
        except EmbeddingModelMissing as error:
            raise IndexLoadError(str(error)) from None
        name, weights = files.model_name, files.weights_sha256
    problem = encoder_mismatch(str(index_dir), built_with["model_name"], built_with["weights_sha256"], name, weights)
    if problem is not None:
        raise IndexLoadError(problem)


@contextmanager
def _naming(name: str) -> Iterator[None]:
    """Errors while reading a file of the index name it (a record missing a field says only the field)."""
    try:
        yield
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{name} has a malformed record ({type(error).__name__}: {error})") from None
    except ValueError as error:
        raise ValueError(f"{name}: {error}" if name not in str(error) else str(error)) from None
