"""End-to-end ingestion on tiny corpora: round trips, no-op re-runs, incremental re-embedding, --check."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from indexing import pipeline as pipeline_module
from indexing.cli import main
from indexing.embedding import Embedder
from indexing.index import IndexLoadError, PublishedIndex
from indexing.pipeline import IngestionPipeline, IngestionSettings, IngestionSummary

Build = Callable[..., IngestionSummary]
Rows = list[dict[str, str]]
WriteCsv = Callable[..., Path]


def forbid_model_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the embedding model was loaded")

    monkeypatch.setattr(pipeline_module, "Embedder", refuse)


def test_build_then_search_both_indexes(tmp_path: Path, sample_corpus: Path, build: Build, embedder: Embedder) -> None:
    summary = build(sample_corpus, tmp_path / "index")
    assert (summary.status, summary.documents, summary.chunks, summary.embedded) == ("built", 5, 5, 5)

    index = PublishedIndex.load(tmp_path / "index", embedder=embedder)
    assert index.directory == summary.index_dir
    assert set(index.documents) >= {"10.1257/test.1", "10.1257/test.2", "10.1257/test.5"}
    assert [chunk.doc_id for chunk in index.chunks] == list(index.documents)

    [(row, score)] = index.search_bm25("storm warnings for ships", 1)
    assert index.chunks[row].doc_id == "10.1257/test.2" and score > 0
    dense = index.search_dense("weather forecasts that protect vessels on lakes", 3)
    assert index.chunks[dense[0][0]].doc_id == "10.1257/test.2"
    assert dense[0][1] > dense[1][1]

    query_vector = index.encode_query("inflation expectations")
    assert query_vector.shape == (384,) and query_vector.dtype == np.float32
    assert np.linalg.norm(query_vector) == pytest.approx(1.0, abs=1e-4)

    allowed = np.array([chunk.doc_id != "10.1257/test.2" for chunk in index.chunks])
    filtered = index.search_dense("weather forecasts that protect vessels on lakes", 4, allowed)
    assert len(filtered) == 4 and all(allowed[row] for row, _ in filtered)


def test_manifest_records_inputs_settings_and_file_hashes(tmp_path: Path, sample_corpus: Path, build: Build) -> None:
    summary = build(sample_corpus, tmp_path / "index")
    manifest = PublishedIndex.load(tmp_path / "index").manifest
    assert manifest["corpus"]["path"] == str(sample_corpus)
    assert len(manifest["corpus"]["sha256"]) == 64
    assert manifest["counts"]["documents"] == 5 and manifest["counts"]["chunks"] == 5
    assert manifest["embedding"]["model_name"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert manifest["chunking"] == {"max_chunk_tokens": 256, "overlap_sentences": 1}
    assert manifest["bm25"]["stemmer"] == "english"
    assert {"numpy", "faiss-cpu", "rank-bm25", "torch"} <= set(manifest["packages"])
    assert set(manifest["files"]) == {"documents.jsonl", "chunks.jsonl", "bm25.json", "dense.faiss"}
    assert manifest["build_id"] in summary.index_dir.name


def test_unchanged_rerun_is_a_noop_that_never_loads_the_model(
    tmp_path: Path, sample_corpus: Path, build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = build(sample_corpus, tmp_path / "index")
    forbid_model_loading(monkeypatch)
    settings = IngestionSettings(corpus=sample_corpus, out_dir=tmp_path / "index", device="cpu")
    again = IngestionPipeline(settings).run()
    assert again.status == "unchanged"
    assert again.index_dir == first.index_dir
    assert "nothing to do" in again.format()


def test_changed_corpus_reembeds_only_changed_chunks(
    tmp_path: Path, write_csv: WriteCsv, sample_rows: Rows, build: Build, embedder: Embedder
) -> None:
    corpus = write_csv(tmp_path / "corpus.csv", sample_rows)
    build(corpus, tmp_path / "index")
    sample_rows[1]["abstract"] += " Insurance premiums fell as well."
    sample_rows.append({"title": "Gravity and Distance", "abstract": "Trade falls with distance.", "doi": "10.1/g"})
    write_csv(corpus, sample_rows)

    summary = build(corpus, tmp_path / "index")
    assert (summary.status, summary.chunks, summary.embedded, summary.reused_embeddings) == ("built", 6, 2, 4)
    index = PublishedIndex.load(tmp_path / "index", embedder=embedder)
    [(row, _)] = index.search_bm25("insurance premiums", 1)  # BM25 was rebuilt with the new text
    assert index.chunks[row].doc_id == "10.1257/test.2"
    # A cached vector matches a freshly computed one (the cache is keyed by exactly the embedded text);
    # bf16 batches differ in the last digits, hence a cosine rather than exact equality.
    fresh = embedder.encode([index.chunks[0].indexed_text])[0]
    assert float(index.dense.vectors[0] @ fresh) > 0.999


def test_a_corpus_that_drops_documents_does_not_replace_the_index_unless_told(
    tmp_path: Path, write_csv: WriteCsv, sample_rows: Rows, build: Build, embedder: Embedder,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    corpus = write_csv(tmp_path / "corpus.csv", sample_rows)
    build(corpus, tmp_path / "index")
    live = (tmp_path / "index").resolve()
    cut = write_csv(tmp_path / "cut.csv", sample_rows[:1])  # a CSV cut at a row boundary
    with pytest.raises(pipeline_module.ShrinkRefused, match=r"would drop \d+ of the \d+ documents.*--allow-shrink"):
        build(cut, tmp_path / "index")
    assert (tmp_path / "index").resolve() == live  # nothing published, nothing lost
    assert main(["--corpus", str(cut), "--out", str(tmp_path / "index"), "--device", "cpu", "--no-progress"]) == 2
    assert "--allow-shrink" in capsys.readouterr().err and (tmp_path / "index").resolve() == live
    # a drop within the allowed share, or one that is meant, is published
    assert build(cut, tmp_path / "index", max_shrink=1.0).status == "built"
    build(corpus, tmp_path / "index")
    summary = build(cut, tmp_path / "index", allow_shrink=True)
    assert summary.status == "built" and summary.documents == 1
    assert len(PublishedIndex.load(tmp_path / "index", embedder=embedder).documents) == 1


def test_settings_change_rebuilds_from_the_cache_without_the_model(
    tmp_path: Path, sample_corpus: Path, build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = build(sample_corpus, tmp_path / "index")
    forbid_model_loading(monkeypatch)
    settings = IngestionSettings(corpus=sample_corpus, out_dir=tmp_path / "index", faiss_index="hnsw")
    summary = IngestionPipeline(settings).run()
    assert (summary.status, summary.embedded, summary.reused_embeddings) == ("built", 0, 5)
    assert summary.index_dir != first.index_dir
    assert PublishedIndex.load(tmp_path / "index").manifest["dense"]["faiss_index"] == "hnsw"


def test_check_detects_a_corrupted_file_and_a_rerun_repairs_it(
    tmp_path: Path, sample_corpus: Path, build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "index"
    build(sample_corpus, out)
    arguments = ["--corpus", str(sample_corpus), "--out", str(out), "--device", "cpu"]
    assert main([*arguments, "--check"]) == 0

    bm25_file = out / "bm25.json"
    data = bytearray(bm25_file.read_bytes())
    data[len(data) // 2] ^= 0x01
    bm25_file.write_bytes(bytes(data))

    assert main([*arguments, "--check"]) == 1
    assert "bm25.json does not match its sha256" in capsys.readouterr().err
    with pytest.raises(IndexLoadError, match="corrupt"):
        PublishedIndex.load(out)
    assert build(sample_corpus, out).status == "built"  # not a no-op: the live index failed verification
    assert main([*arguments, "--check"]) == 0


def test_check_reports_a_stale_index_and_a_missing_one(
    tmp_path: Path, write_csv: WriteCsv, sample_rows: Rows, build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_csv(tmp_path / "corpus.csv", sample_rows)
    assert main(["--corpus", str(corpus), "--out", str(tmp_path / "none"), "--check"]) == 1
    assert "no index is published" in capsys.readouterr().err
    build(corpus, tmp_path / "index")
    write_csv(corpus, sample_rows[:4])
    assert main(["--corpus", str(corpus), "--out", str(tmp_path / "index"), "--check"]) == 1
    assert "stale" in capsys.readouterr().err


def test_load_refuses_a_missing_index_and_the_wrong_model(tmp_path: Path, sample_corpus: Path, build: Build) -> None:
    with pytest.raises(IndexLoadError, match="No index at"):
        PublishedIndex.load(tmp_path / "missing")
    build(sample_corpus, tmp_path / "index")
    with pytest.raises(IndexLoadError, match="built with embedding model"):
        PublishedIndex.load(tmp_path / "index", expected_embedding_model="BAAI/bge-small-en-v1.5")


def test_settings_are_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="device"):
        IngestionSettings(corpus=tmp_path, out_dir=tmp_path, device="tpu")
    with pytest.raises(ValueError, match="batch_size"):
        IngestionSettings(corpus=tmp_path, out_dir=tmp_path, batch_size=0)
    with pytest.raises(ValueError, match="faiss_index"):
        IngestionSettings(corpus=tmp_path, out_dir=tmp_path, faiss_index="ivf")  # type: ignore[arg-type]
