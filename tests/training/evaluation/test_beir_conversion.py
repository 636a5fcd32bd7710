from pathlib import Path

import pytest

from indexing.loader import CorpusLoader
from training.evaluation.beir import BeirCorpusConverter, BeirDataset, BeirFormatError, corpus_id_of


def test_load_keeps_only_queries_of_the_split(tiny_beir: Path) -> None:
    test = BeirDataset.load(tiny_beir, split="test")
    assert test.name == "tinybeir"
    assert set(test.queries) == {"q1", "q2"}
    assert test.qrels == {"q1": {"d1": 1}, "q2": {"d3": 2, "d1": 0}}
    assert list(test.corpus) == ["d1", "d2", "d3"]
    assert set(BeirDataset.load(tiny_beir, split="train").queries) == {"q3"}


def test_converted_csv_round_trips_through_the_ingestion_loader(tiny_beir: Path, tmp_path: Path) -> None:
    dataset = BeirDataset.load(tiny_beir)
    csv_path = tmp_path / "corpus.csv"
    assert BeirCorpusConverter(dataset).write_csv(csv_path) == 3

    documents = CorpusLoader().load(csv_path).documents
    by_corpus_id = {corpus_id_of(document): document for document in documents}
    assert set(by_corpus_id) == {"d1", "d2", "d3"}
    for corpus_id, original in dataset.corpus.items():
        assert by_corpus_id[corpus_id].title == original.title
        assert by_corpus_id[corpus_id].abstract == original.text
    assert by_corpus_id["d2"].doi == ""  # the BEIR id travels in the url, not as a fake DOI


def test_malformed_files_raise_clear_errors(tiny_beir: Path) -> None:
    (tiny_beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1 d1 1\n")
    with pytest.raises(BeirFormatError, match=r"line 2: expected"):
        BeirDataset.load(tiny_beir)
    (tiny_beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq9\td1\t1\n")
    with pytest.raises(BeirFormatError, match="unknown query ids"):
        BeirDataset.load(tiny_beir)
    with pytest.raises(BeirFormatError, match="not found"):
        BeirDataset.load(tiny_beir / "missing")
