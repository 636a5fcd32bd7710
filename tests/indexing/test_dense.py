from pathlib import Path

import numpy as np
import pytest

from indexing.dense import DenseIndex, DenseSettings


def random_unit_vectors(rows: int, dimension: int = 32, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_round_trip_and_exact_neighbours(tmp_path: Path, kind: str) -> None:
    vectors = random_unit_vectors(200)
    settings = DenseSettings(faiss_index=kind)
    DenseIndex.build(vectors, settings).save(tmp_path)
    index = DenseIndex.load(tmp_path, settings)
    assert len(index) == 200 and index.dimension == 32
    expected = np.argsort(-(vectors @ vectors[7]))[:5]
    results = index.search(vectors[7], 5)
    assert [row for row, _ in results] == list(expected)
    assert results[0] == (7, pytest.approx(1.0, abs=1e-5))


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_allowed_mask_returns_top_n_allowed_rows(kind: str) -> None:
    vectors = random_unit_vectors(300, seed=1)
    index = DenseIndex.build(vectors, DenseSettings(faiss_index=kind))
    query = vectors[0]
    scores = vectors @ query
    # Allow only the 20 rows *least* similar to the query: a post-filter of a top-k cut would find none.
    allowed = np.zeros(300, dtype=bool)
    allowed[np.argsort(scores)[:20]] = True
    results = index.search(query, 10, allowed)
    assert len(results) == 10
    assert all(allowed[row] for row, _ in results)
    expected = [int(row) for row in np.flatnonzero(allowed)[np.argsort(-scores[allowed], kind="stable")][:10]]
    assert [row for row, _ in results] == expected
    assert len(index.search(query, 50, allowed)) == 20  # fewer allowed rows than asked for


def test_settings_and_inputs_are_validated() -> None:
    with pytest.raises(ValueError, match="'flat' or 'hnsw'"):
        DenseSettings(faiss_index="ivf")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty"):
        DenseIndex.build(np.zeros((0, 8), dtype=np.float32), DenseSettings())
