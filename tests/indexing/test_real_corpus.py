"""Slow: ingest the real AER corpus and check that sensible queries find their documents."""

from pathlib import Path

import pytest

from indexing.cli import main
from indexing.embedding import Embedder
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from indexing.pipeline import IngestionPipeline, IngestionSettings, IngestionSummary

pytestmark = pytest.mark.slow

# (query, a phrase that identifies the target abstract). Queries paraphrase; two targets have no title/DOI.
QUERIES = [
    ("bride exchange and women's welfare in rural Pakistan", "Can marriage institutions limit marital inefficiency"),
    ("value of storm warnings on the Great Lakes", "The U.S. government established a national weather organization"),
    ("costs of Clean Air Act regulation of carbon dioxide from power plants", "US climate policy is unfolding"),
    ("banks on corporate boards and the separation of ownership and control", "how equity ownership and corporate"),
]


def test_real_corpus_ingests_with_the_expected_counts(real_index_build: IngestionSummary) -> None:
    assert real_index_build.status == "built"
    assert real_index_build.rows_read == 2369
    assert real_index_build.skipped == {"front matter": 2}
    assert real_index_build.documents == 2367
    build = real_index_build
    assert build.documents <= build.chunks < build.documents * 1.1  # most abstracts: one chunk


@pytest.mark.parametrize(("query", "target_phrase"), QUERIES)
def test_queries_find_their_documents_in_both_indexes(
    real_index_build: IngestionSummary, embedder: Embedder, query: str, target_phrase: str
) -> None:
    index = PublishedIndex.load(real_index_build.index_dir, embedder=embedder)
    [target] = [doc_id for doc_id, document in index.documents.items() if target_phrase in document.abstract]
    for search in (index.search_bm25, index.search_dense):
        top_docs = [index.chunks[row].doc_id for row, _ in search(query, 5)]
        assert target in top_docs, f"{search.__name__}: {query!r} -> {top_docs}"


def test_rerun_is_a_noop_and_check_passes(real_index_build: IngestionSummary, real_corpus: Path) -> None:
    out = real_index_build.index_dir.parent / "index"
    settings = IngestionSettings(corpus=real_corpus, out_dir=out)
    assert IngestionPipeline(settings).run().status == "unchanged"
    assert main(["--corpus", str(real_corpus), "--out", str(out), "--check"]) == 0


@pytest.mark.parametrize(("surnames", "year", "title"), [
    (("autor", "dorn", "hanson"), 2013, "The China Syndrome: Local Labor Market Effects of Import Competition in "
                                        "the United States"),
    (("antras", "helpman"), None, "Contracts and Technology Adoption"),  # "Antràs, Pol", asked for unaccented
    (("jensen", "miller"), None, "Giffen Behavior and Subsistence Consumption"),  # two authors in one string
])  # fmt: skip
def test_papers_are_found_by_their_authors_surnames(real_index_build: IngestionSummary, surnames: tuple[str, ...],
                                                    year: int | None, title: str) -> None:  # fmt: skip
    backend = LocalIndexBackend(PublishedIndex.load(real_index_build.index_dir))
    assert title in [document.title for document in backend.papers_by_authors(surnames, year, 8)]
