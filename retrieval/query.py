"""A question as retrieval sees it: its text, and its embedding computed at most once per request.

The vector travels with the search outcome, so the dense retriever, the reranker's bi-encoder term and the
answerability check all use the one encoding."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from corpus.search_backend import BackendInfo, encoder_mismatch


class QueryEncoder(Protocol):
    """Turns texts into unit vectors (indexing.embedding.Embedder; a stand-in in tests)."""

    def encode(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray: ...


class Query:
    def __init__(self, text: str, encoder: QueryEncoder) -> None:
        self.text = text
        self._encoder = encoder
        self._vector: np.ndarray | None = None
        self._lock = threading.Lock()

    @property
    def vector(self) -> np.ndarray:
        """The text's unit vector, encoded on first use (read-only: every stage shares it)."""
        with self._lock:
            if self._vector is None:
                vector = np.asarray(self._encoder.encode([self.text])[0], dtype=np.float32)
                vector.setflags(write=False)
                self._vector = vector
            return self._vector

    @property
    def encoded(self) -> bool:
        return self._vector is not None


def check_encoder(info: BackendInfo, model_name: str, weights_sha256: str) -> None:
    """Queries must be encoded by the very weights the backend's chunks were encoded with."""
    problem = encoder_mismatch(f"The {info.kind} index", info.embedding_model, info.embedding_weights_sha256,
                               model_name, weights_sha256)  # fmt: skip
    if problem is not None:
        raise ValueError(problem)
