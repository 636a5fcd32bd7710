"""The real corpus through the real ingestion job into PostgreSQL, against the published directory of the same
corpus (slow: the real embedding model and corpus)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from corpus.filters import SearchFilters
from indexing.index import PublishedIndex
from indexing.pipeline import IngestionPipeline, IngestionSettings, IngestionSummary
from indexing.postgres.backend import PostgresBackend
from indexing.postgres.target import PostgresTarget

pytestmark = pytest.mark.slow

QUERIES = [
    "Does raising the minimum wage reduce employment?",
    "bank lending and monetary policy",
    "the effect of the model on the market",  # common words
    "trade trade shocks",
    "evidence",
]
FILTERS = [None, SearchFilters(year_min=2010), SearchFilters(jel_prefix="e5"),
           SearchFilters(year_max=2005, jel_prefix="J")]  # fmt: skip


@pytest.fixture(scope="module")
def postgres_ingest(new_database, real_corpus: Path, real_index_build: IngestionSummary
                    ) -> Iterator[tuple[str, IngestionPipeline, IngestionSummary]]:  # fmt: skip
    """The real corpus ingested into a fresh database, reusing the local build's embedding cache."""
    dsn = new_database()
    local_dir = Path(real_index_build.index_dir).parent / "index"
    settings = IngestionSettings(corpus=real_corpus, out_dir=local_dir, device="cpu",
                                 cache_dir=local_dir.with_name("index.cache"))  # fmt: skip
    pipeline = IngestionPipeline(settings, target=PostgresTarget(dsn))
    yield dsn, pipeline, pipeline.run()


def test_an_unchanged_rerun_publishes_nothing(postgres_ingest: tuple[str, IngestionPipeline, IngestionSummary]
                                              ) -> None:  # fmt: skip
    _, pipeline, first = postgres_ingest
    assert first.status == "built" and first.reused_embeddings == first.chunks
    again = pipeline.run()
    assert again.status == "unchanged" and again.index_dir == first.index_dir
    assert pipeline.check() == []


def test_postgres_answers_as_the_published_directory(postgres_ingest: tuple[str, IngestionPipeline, IngestionSummary],
                                                     real_index_dir: Path) -> None:  # fmt: skip
    dsn, _, _ = postgres_ingest
    local = PublishedIndex.load(real_index_dir)
    backend = PostgresBackend(dsn)
    ids = [chunk.chunk_id for chunk in local.chunks]
    assert backend.info().chunks == len(local.chunks)
    for query in QUERIES:
        vector = local.encode_query(query)
        for filters in FILTERS:
            allowed = None if filters is None else np.array(
                [filters.matches(local.documents[chunk.doc_id]) for chunk in local.chunks])  # fmt: skip
            expected = [(ids[row], score) for row, score in local.search_bm25(query, 10, allowed)]
            got = [(result.chunk_id, result.score) for result in backend.keyword_search(query, 10, filters)]
            assert [chunk_id for chunk_id, _ in got] == [chunk_id for chunk_id, _ in expected]
            np.testing.assert_allclose([s for _, s in got], [s for _, s in expected], atol=1e-9)
            expected = [(ids[row], score) for row, score in local.dense.search(vector, 10, allowed)]
            got = [(result.chunk_id, result.score) for result in backend.vector_search(vector, 10, filters)]
            assert [chunk_id for chunk_id, _ in got] == [chunk_id for chunk_id, _ in expected]
            np.testing.assert_allclose([s for _, s in got], [s for _, s in expected], atol=1e-5)
    backend.close()
