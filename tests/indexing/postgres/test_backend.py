"""PostgresBackend against the in-memory reference: rank-bm25's scores, brute-force cosine, filters, look-ups."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from corpus.authors import has_surnames
from corpus.filters import SearchFilters
from corpus.search_backend import SearchBackend, newest_first
from indexing.postgres.backend import PostgresBackend
from indexing.postgres.keyword import KeywordSettings
from indexing.targets import BuildContent

from .conftest import Reference

QUERIES = [
    "effect of policy on the market",  # common words only: long lists, idf at the epsilon floor
    "tax tax carbon",  # a repeated term counts twice
    "market",
    "Monopsony and wages in labor markets",  # rare + common, stemming (markets -> market)
    "Policy evidence on the effect of the market.",  # the duplicated chunks: exact ties
]
FILTERS = [
    None,
    SearchFilters(year_min=2005),
    SearchFilters(year_max=1999),
    SearchFilters(year_min=2000, year_max=2010),
    SearchFilters(jel_prefix="j"),  # case-insensitive
    SearchFilters(jel_prefix="E5", year_min=1995),
    SearchFilters(jel_prefix="z1"),  # a handful of chunks
]
# The threshold algorithm on every query (no full aggregation up front), reading small prefixes.
EAGER_THRESHOLD = KeywordSettings(strategy="threshold", full_aggregation_below=0, first_prefix=4, growth=2)
SQL = KeywordSettings(strategy="sql")
# The arrays strategy with every list long enough to be cached (a second search reads them from memory).
CACHED_ARRAYS = KeywordSettings(strategy="arrays", cache_min_df=1)


@pytest.fixture(scope="module")
def backend(published_dsn: str) -> Iterator[PostgresBackend]:
    backend = PostgresBackend(published_dsn)
    yield backend
    backend.close()


def pairs(results: list) -> list[tuple[str, float]]:
    return [(result.chunk_id, result.score) for result in results]


def assert_same(got: list[tuple[str, float]], expected: list[tuple[str, float]], tolerance: float = 1e-9) -> None:
    assert [chunk_id for chunk_id, _ in got] == [chunk_id for chunk_id, _ in expected]
    np.testing.assert_allclose([score for _, score in got], [score for _, score in expected], rtol=0, atol=tolerance)


def test_it_implements_the_port(backend: PostgresBackend, content: BuildContent) -> None:
    assert isinstance(backend, SearchBackend)
    info = backend.info()
    assert (info.kind, info.chunks, info.documents, info.embedding_dimension) == (
        "postgres", len(content.chunks), len(content.documents), 64)  # fmt: skip
    backend.check()


@pytest.mark.parametrize("query", QUERIES)
def test_bm25_scores_equal_rank_bm25_get_scores(backend: PostgresBackend, content: BuildContent, query: str) -> None:
    okapi = BM25Okapi(content.bm25.corpus_tokens, k1=1.5, b=0.75, epsilon=0.25)
    expected = okapi.get_scores(content.bm25.tokenizer.tokenize(query))
    got = pairs(backend.keyword_search(query, top_n=len(content.chunks)))
    row_of = {chunk.chunk_id: row for row, chunk in enumerate(content.chunks)}
    assert {row_of[chunk_id] for chunk_id, _ in got} == set(np.flatnonzero(expected > 0))  # only matching chunks
    np.testing.assert_allclose([score for _, score in got], [expected[row_of[chunk_id]] for chunk_id, _ in got],
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    assert [score for _, score in got] == sorted((score for _, score in got), reverse=True)


@pytest.mark.parametrize("filters", FILTERS)
@pytest.mark.parametrize("query", QUERIES)
def test_keyword_search_equals_the_local_index(backend: PostgresBackend, reference: Reference, query: str,
                                               filters: SearchFilters | None) -> None:  # fmt: skip
    assert_same(pairs(backend.keyword_search(query, 10, filters)), reference.keyword(query, 10, filters))


@pytest.fixture(scope="module")
def strategies(published_dsn: str) -> Iterator[dict[str, PostgresBackend]]:
    backends = {name: PostgresBackend(published_dsn, keyword=settings) for name, settings in
                [("threshold", EAGER_THRESHOLD), ("sql", SQL), ("arrays", CACHED_ARRAYS)]}  # fmt: skip
    yield backends
    for backend in backends.values():
        backend.close()


@pytest.mark.parametrize("filters", FILTERS)
@pytest.mark.parametrize("query", QUERIES)
def test_every_keyword_strategy_gives_the_same_exact_top_n(strategies: dict[str, PostgresBackend],
                                                            reference: Reference, query: str,
                                                            filters: SearchFilters | None) -> None:  # fmt: skip
    """The threshold algorithm, SQL aggregation and numpy over (cached) posting arrays: the same ids and scores."""
    methods = {"threshold": "threshold", "sql": "full", "arrays": "arrays"}
    for top_n in (1, 5, 20):
        expected = reference.keyword(query, top_n, filters)
        for name, backend in strategies.items():
            for _ in range(2):  # the second time from the arrays strategy's cache
                assert_same(pairs(backend.keyword_search(query, top_n, filters)), expected)
                assert backend.last_keyword_stats.method == methods[name]


def test_a_very_selective_filter_hands_the_arrays_over_to_sql(published_dsn: str, reference: Reference) -> None:
    capped = PostgresBackend(published_dsn, keyword=KeywordSettings(filter_batch=8, max_filter_checks=1))
    try:
        rare = SearchFilters(jel_prefix="z1")
        query = "effect model market price evidence policy firm"
        assert_same(pairs(capped.keyword_search(query, 5, rare)), reference.keyword(query, 5, rare))
        assert capped.last_keyword_stats.method == "arrays->full"
    finally:
        capped.close()


def test_the_threshold_algorithm_stops_early_on_common_words(published_dsn: str, backend: PostgresBackend,
                                                             content: BuildContent) -> None:  # fmt: skip
    eager = PostgresBackend(published_dsn, keyword=EAGER_THRESHOLD)
    try:
        eager.keyword_search("tax carbon auction", 3)
        stats = eager.last_keyword_stats
        assert stats.method == "threshold" and stats.candidates < len(content.chunks)
    finally:
        eager.close()


def test_the_threshold_algorithm_falls_back_to_full_aggregation_past_its_budget(
    published_dsn: str, backend: PostgresBackend, reference: Reference
) -> None:
    capped = PostgresBackend(published_dsn, keyword=KeywordSettings(strategy="threshold", full_aggregation_below=0,
                                                                   first_prefix=2, growth=2, max_read=10))  # fmt: skip
    try:
        got = pairs(capped.keyword_search("effect of policy on the market", 10))
        assert capped.last_keyword_stats.method == "threshold->full"
        assert_same(got, reference.keyword("effect of policy on the market", 10))
    finally:
        capped.close()


def test_warming_reads_the_longest_lists_into_memory(published_dsn: str, content: BuildContent,
                                                    reference: Reference) -> None:  # fmt: skip
    lengths = sorted((row.nnz for row in content.bm25.weight_matrix()[1]), reverse=True)
    # A budget whose half holds the ten longest lists: those are read, longest first.
    budget = 2 * 12 * sum(lengths[:10])
    backend = PostgresBackend(published_dsn, keyword=KeywordSettings(cache_bytes=budget), prewarm=False)
    whole = PostgresBackend(published_dsn, prewarm=False)  # a small build fits the default budget whole
    try:
        assert backend.warm() == 10
        assert whole.warm() == len(lengths)
        for searcher in (backend, whole):
            found = searcher.keyword_search("effect of policy", 10)
            assert_same(pairs(found), reference.keyword("effect of policy", 10))
    finally:
        backend.close()
        whole.close()


def test_keyword_search_without_a_known_word_finds_nothing(backend: PostgresBackend) -> None:
    assert backend.keyword_search("the of and", 5) == [] and backend.keyword_search("zzzqqq", 5) == []
    assert backend.keyword_search("market", 0) == []


@pytest.mark.parametrize("filters", FILTERS)
def test_vector_search_equals_brute_force(backend: PostgresBackend, content: BuildContent, reference: Reference,
                                          filters: SearchFilters | None) -> None:  # fmt: skip
    for row in (0, 17, 123):
        vector = content.vectors[row]
        assert_same(pairs(backend.vector_search(vector, 10, filters)), reference.vector(vector, 10, filters), 1e-5)


@pytest.mark.parametrize("filters", FILTERS)
def test_hnsw_search_with_filters_returns_every_match_it_should(
    published_dsn: str, backend: PostgresBackend, content: BuildContent, reference: Reference,
    filters: SearchFilters | None,
) -> None:  # fmt: skip
    """Through the HNSW index (iterative scan; the exact fallback when a filter leaves too few rows): on a corpus
    this small the graph search is exact, so ids and scores equal brute force, and a filter matching a handful
    of chunks still returns all of them."""
    hnsw = PostgresBackend(published_dsn, exact_vector_below=0)
    try:
        for row in (3, 77):
            vector = content.vectors[row]
            expected = reference.vector(vector, 10, filters)
            assert_same(pairs(hnsw.vector_search(vector, 10, filters)), expected, 1e-5)
        if filters == SearchFilters(jel_prefix="z1"):
            assert 0 < len(expected) < 10
    finally:
        hnsw.close()


def test_similarities_and_look_ups(backend: PostgresBackend, content: BuildContent) -> None:
    vector = content.vectors[5]
    ids = [content.chunks[5].chunk_id, content.chunks[9].chunk_id, "missing#0"]
    similarities = backend.similarities(vector, ids)
    assert list(similarities) == ids[:2]
    np.testing.assert_allclose(list(similarities.values()), content.vectors[[5, 9]] @ vector, atol=1e-5)

    stored = backend.chunks([ids[1], "missing#0", ids[0]])
    assert list(stored) == [ids[1], ids[0]]
    assert stored[ids[0]].chunk == content.chunks[5]
    assert stored[ids[0]].document == next(d for d in content.documents if d.doc_id == content.chunks[5].doc_id)

    document, chunk_ids = backend.document(content.documents[2].doc_id)
    assert document == content.documents[2]
    assert chunk_ids == [chunk.chunk_id for chunk in content.chunks if chunk.doc_id == document.doc_id]
    assert backend.document("no-such-doc") is None



@pytest.mark.parametrize("surnames", [
    ("autor", "dorn"), ("autor", "dorn", "hanson"), ("antras",),  # "Antràs" asked for unaccented
    ("de",), ("giorgi", "angelucci"), ("robinson",),
])  # fmt: skip
def test_papers_by_authors_are_every_paper_with_each_surname_newest_first(
    backend: PostgresBackend, content: BuildContent, surnames: tuple[str, ...]
) -> None:
    expected = newest_first(d for d in content.documents if has_surnames(d.authors, surnames))
    assert len(expected) > 10
    assert backend.papers_by_authors(surnames, None, 10) == expected[:10]
    year = expected[3].year
    assert backend.papers_by_authors(surnames, year, 50) == [d for d in expected if d.year == year]
    assert backend.papers_by_authors((*surnames, "hendren"), None, 10) == []  # no paper of theirs has him
    assert backend.papers_by_authors((), None, 10) == []
