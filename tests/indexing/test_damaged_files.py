"""Damaged files the ingestion job and the loader meet: a truncated embedding cache is re-embedded (not a
traceback), and a broken documents.jsonl or chunks.jsonl is refused by name."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from indexing.embedding_cache import EmbeddingCache
from indexing.index import IndexLoadError, PublishedIndex
from indexing.manifest import read_manifest
from indexing.pipeline import IngestionSummary
from indexing.storage import file_sha256

Build = Callable[..., IngestionSummary]


@pytest.mark.parametrize("keep", [0, 10, 200, -20])  # empty, cut in the zip header, in the data, near its end
def test_a_truncated_embedding_cache_is_ignored_and_rewritten(tmp_path: Path, keep: int) -> None:
    cache = EmbeddingCache(tmp_path, "ab" * 32, dimension=4)
    cache.save(["k1", "k2"], np.ones((2, 4), dtype=np.float32))
    assert len(EmbeddingCache(tmp_path, "ab" * 32, dimension=4)) == 2
    data = cache.path.read_bytes()
    cache.path.write_bytes(data[:keep])
    reopened = EmbeddingCache(tmp_path, "ab" * 32, dimension=4)  # no EOFError / BadZipFile
    assert len(reopened) == 0
    reopened.save(["k3"], np.zeros((1, 4), dtype=np.float32))
    assert len(EmbeddingCache(tmp_path, "ab" * 32, dimension=4)) == 1
    assert not list(tmp_path.glob("*.tmp.npz"))


def test_ingestion_re_embeds_when_its_cache_is_truncated(tmp_path: Path, sample_corpus: Path, build: Build) -> None:
    first = build(sample_corpus, tmp_path / "index")
    (cache_file,) = (tmp_path / "index.cache").glob("embeddings-*.npz")
    cache_file.write_bytes(cache_file.read_bytes()[:100])
    summary = build(sample_corpus, tmp_path / "index", faiss_index="hnsw")  # a settings change: a rebuild
    assert summary.status == "built" and summary.embedded == first.chunks and summary.reused_embeddings == 0


@pytest.mark.parametrize("name", ["documents.jsonl", "chunks.jsonl"])
@pytest.mark.parametrize("damage", ["not json", "missing field"])
def test_a_broken_records_file_is_refused_by_name(tmp_path: Path, sample_corpus: Path, build: Build, name: str,
                                                  damage: str) -> None:  # fmt: skip
    build(sample_corpus, tmp_path / "index")
    directory = (tmp_path / "index").resolve()
    path = directory / name
    lines = path.read_text().splitlines()
    lines[1] = '{"half a record' if damage == "not json" else json.dumps({"unexpected": 1})
    path.write_text("\n".join(lines) + "\n")
    # The manifest made to agree, as a writer that got the records wrong would have made it.
    manifest = read_manifest(directory)
    manifest["files"][name] = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexLoadError, match=name.replace(".", r"\.")):
        PublishedIndex.load(tmp_path / "index")
