"""Embeddings of earlier runs, keyed by sha256 of the embedded text, one file per model weights.

Stored as .npz of plain arrays (loaded with allow_pickle=False) beside the index, e.g.
var/index.cache/embeddings-<weights sha256[:16]>.npz, so a changed corpus re-embeds only new text.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np


class EmbeddingCache:
    def __init__(self, cache_dir: Path, weights_sha256: str, dimension: int) -> None:
        self.path = Path(cache_dir) / f"embeddings-{weights_sha256[:16]}.npz"
        self.dimension = dimension
        self._vectors: dict[str, np.ndarray] = {}
        if self.path.is_file():
            self._read()

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, key: str) -> np.ndarray | None:
        return self._vectors.get(key)

    def save(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Replace the cache with exactly these entries (the current build's), atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp.npz")
        np.savez(temporary, keys=np.asarray(keys, dtype="<U64"), vectors=vectors.astype(np.float32))
        os.replace(temporary, self.path)
        self._vectors = dict(zip(keys, vectors, strict=True))

    def _read(self) -> None:
        try:
            with np.load(self.path, allow_pickle=False) as data:
                keys, vectors = data["keys"], data["vectors"]
        except (OSError, ValueError, KeyError):
            return  # an unreadable cache only costs a re-embed
        if vectors.ndim == 2 and vectors.shape == (len(keys), self.dimension):
            self._vectors = {str(key): vector for key, vector in zip(keys, vectors, strict=True)}
