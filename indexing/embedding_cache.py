"""Embeddings of earlier runs, keyed by sha256 of the embedded text, one file per model weights.

Stored as .npz of plain arrays (loaded with allow_pickle=False) beside the index, e.g.
var/index.cache/embeddings-<weights sha256[:16]>.npz, so a changed corpus re-embeds only new text.
"""

from __future__ import annotations

import logging
import os
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from indexing.storage import fsync_dir

log = logging.getLogger(__name__)


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
        with temporary.open("wb") as handle:
            np.savez(handle, keys=np.asarray(keys, dtype="<U64"), vectors=vectors.astype(np.float32))
            handle.flush()
            os.fsync(handle.fileno())  # on disk before it replaces the old cache: a crash leaves one whole file
        os.replace(temporary, self.path)
        fsync_dir(self.path.parent)
        self._vectors = dict(zip(keys, vectors, strict=True))

    def _read(self) -> None:
        try:
            with np.load(self.path, allow_pickle=False) as data:
                keys, vectors = data["keys"], data["vectors"]
        # Truncated or corrupt (a crash mid-write, a full disk): zipfile and numpy raise any of these.
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
            log.warning("embedding cache %s is unreadable (%s: %s); its texts are embedded again",
                        self.path.name, type(error).__name__, error)  # fmt: skip
            return  # an unreadable cache only costs a re-embed
        if vectors.ndim == 2 and vectors.shape == (len(keys), self.dimension):
            self._vectors = {str(key): vector for key, vector in zip(keys, vectors, strict=True)}
