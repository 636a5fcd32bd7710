import pytest

from indexing.index import PublishedIndex
from retrieval.hybrid import HybridRetriever, HybridSettings
from corpus.filters import SearchFilters

QUERY = "minimum wage employment"


def test_fused_scores_are_weighted_reciprocal_ranks_in_order(tiny_index: PublishedIndex) -> None:
    settings = HybridSettings(rrf_k=10, bm25_weight=2.0, dense_weight=0.5)
    hits = HybridRetriever(tiny_index, settings).retrieve(QUERY, top_n=8)

    bm25_rank = {row: rank for rank, (row, _) in enumerate(tiny_index.search_bm25(QUERY, 100), start=1)}
    dense_rank = {row: rank for rank, (row, _) in enumerate(tiny_index.search_dense(QUERY, 100), start=1)}
    assert len(hits) == 8
    for hit in hits:
        row = tiny_index.chunks.index(hit.chunk)
        assert hit.bm25_rank == bm25_rank.get(row) and hit.dense_rank == dense_rank.get(row)
        expected = 2.0 / (10 + bm25_rank[row]) + (0.5 / (10 + dense_rank[row]) if row in dense_rank else 0.0)
        assert hit.fused_score == pytest.approx(expected)
    fused = [hit.fused_score for hit in hits]
    assert fused == sorted(fused, reverse=True)
    assert [hit.fused_rank for hit in hits] == list(range(1, 9))


def test_weights_decide_which_retriever_leads(tiny_index: PublishedIndex) -> None:
    bm25_top = HybridRetriever(tiny_index, HybridSettings(bm25_weight=1.0, dense_weight=0.0)).retrieve(QUERY, 8)
    dense_top = HybridRetriever(tiny_index, HybridSettings(bm25_weight=0.0, dense_weight=1.0)).retrieve(QUERY, 8)
    assert [hit.chunk.chunk_id for hit in bm25_top] == [
        tiny_index.chunks[row].chunk_id for row, _ in tiny_index.search_bm25(QUERY, 8)
    ]
    assert [hit.chunk.chunk_id for hit in dense_top] == [
        tiny_index.chunks[row].chunk_id for row, _ in tiny_index.search_dense(QUERY, 8)
    ]


def test_single_retriever_modes_fill_only_their_own_scores(tiny_index: PublishedIndex) -> None:
    retriever = HybridRetriever(tiny_index)
    bm25_hits = retriever.retrieve(QUERY, 3, mode="bm25")
    assert all(hit.dense_rank is None and hit.bm25_rank == hit.fused_rank for hit in bm25_hits)
    dense_hits = retriever.retrieve(QUERY, 3, mode="dense")
    assert all(hit.bm25_rank is None and hit.dense_rank == hit.fused_rank for hit in dense_hits)


def test_filters_apply_before_the_cut(tiny_index: PublishedIndex) -> None:
    # Only 3 candidates per retriever: unfiltered, the best hits are the pre-2010 minimum-wage papers,
    # so filtering after the cut would leave fewer than top_n.
    retriever = HybridRetriever(tiny_index, HybridSettings(candidates=3))
    unfiltered = retriever.retrieve(QUERY, 3)
    assert any(hit.document.year < 2010 for hit in unfiltered)

    hits = retriever.retrieve(QUERY, 3, filters=SearchFilters(year_min=2010))
    assert len(hits) == 3
    assert all(hit.document.year >= 2010 for hit in hits)


def test_year_range_and_jel_prefix(tiny_index: PublishedIndex) -> None:
    retriever = HybridRetriever(tiny_index)
    years = {hit.document.year for hit in retriever.retrieve(QUERY, 8, SearchFilters(year_min=2001, year_max=2012))}
    assert years == {2001, 2003, 2011, 2012}  # bounds inclusive; the undated paper is left out
    jel = {hit.document.doc_id for hit in retriever.retrieve(QUERY, 8, SearchFilters(jel_prefix="d8"))}
    assert jel == {"old-2", "new-1", "new-2"}  # D83, D81, D83 — not D18
    assert retriever.retrieve(QUERY, 8, SearchFilters(jel_prefix="Q5")) == []


def test_invalid_settings_and_requests_are_rejected(tiny_index: PublishedIndex) -> None:
    with pytest.raises(ValueError, match="candidates"):
        HybridSettings(candidates=0)
    with pytest.raises(ValueError, match="mode"):
        HybridSettings(mode="sparse")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive"):
        HybridSettings(bm25_weight=0.0, dense_weight=0.0)
    with pytest.raises(ValueError, match="year_min"):
        SearchFilters(year_min=2015, year_max=2010)
    retriever = HybridRetriever(tiny_index)
    with pytest.raises(ValueError, match="Unknown retrieval mode"):
        retriever.retrieve(QUERY, 3, mode="colbert")
    with pytest.raises(ValueError, match="empty"):
        retriever.retrieve("", 3)
    assert retriever.retrieve("\x1c", 3, mode="bm25") == []  # no term to match; the API refuses blank text
