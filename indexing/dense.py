"""Stage 5: the FAISS index over normalised chunk embeddings (inner product == cosine similarity)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from indexing.bm25 import check_mask, top_rows

FaissIndexType = Literal["flat", "hnsw"]


@dataclass(frozen=True)
class DenseSettings:
    faiss_index: FaissIndexType = "flat"  # exact search; "hnsw" is approximate, for much larger corpora
    hnsw_neighbors: int = 32  # HNSW graph degree (M)
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 128

    def __post_init__(self) -> None:
        if self.faiss_index not in ("flat", "hnsw"):
            raise ValueError(f"faiss_index must be 'flat' or 'hnsw', not {self.faiss_index!r}.")
        if min(self.hnsw_neighbors, self.hnsw_ef_construction, self.hnsw_ef_search) < 1:
            raise ValueError("HNSW parameters must be positive.")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class DenseIndex:
    """Row i of the FAISS index is chunk i. Masked searches are exact over the allowed rows."""

    FILE_NAME = "dense.faiss"

    def __init__(self, faiss_index: Any, settings: DenseSettings) -> None:
        self.settings = settings
        self._index = faiss_index
        # Kept in memory for masked searches (brute force over the allowed rows, so the filter is
        # applied before the cut for every index type); 2.4k chunks x 384 floats is under 4 MB.
        self.vectors: np.ndarray = faiss_index.reconstruct_n(0, faiss_index.ntotal)

    @classmethod
    def build(cls, vectors: np.ndarray, settings: DenseSettings) -> DenseIndex:
        import faiss

        if vectors.ndim != 2 or vectors.shape[0] == 0:
            raise ValueError(f"Expected a non-empty (n, d) array of embeddings, got shape {vectors.shape}.")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        dimension = vectors.shape[1]
        if settings.faiss_index == "flat":
            index = faiss.IndexFlatIP(dimension)
        else:
            index = faiss.IndexHNSWFlat(dimension, settings.hnsw_neighbors, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = settings.hnsw_ef_construction
            index.hnsw.efSearch = settings.hnsw_ef_search
        index.add(vectors)
        return cls(index, settings)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def dimension(self) -> int:
        return int(self._index.d)

    def save(self, directory: Path) -> Path:
        import faiss

        path = directory / self.FILE_NAME
        faiss.write_index(self._index, str(path))
        return path

    @classmethod
    def load(cls, directory: Path, settings: DenseSettings) -> DenseIndex:
        import faiss

        index = faiss.read_index(str(directory / cls.FILE_NAME))
        if settings.faiss_index == "hnsw":
            index.hnsw.efSearch = settings.hnsw_ef_search  # not stored in the file
        return cls(index, settings)

    def search(
        self, query_vector: np.ndarray, top_n: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """Best rows first by inner product with the (normalised) query vector."""
        query = np.ascontiguousarray(query_vector, dtype=np.float32).reshape(1, -1)
        if top_n <= 0:
            return []
        if allowed is not None:
            rows = np.flatnonzero(check_mask(allowed, len(self)))
            scores = np.zeros(len(self), dtype=np.float32)
            scores[rows] = self.vectors[rows] @ query[0]
            return top_rows(scores, rows, top_n)
        scores, rows = self._index.search(query, min(top_n, len(self)))
        return [(int(row), float(score)) for row, score in zip(rows[0], scores[0], strict=True) if row >= 0]
