import pytest

from corpus.filters import SearchFilters
from corpus.search_backend import SearchBackend
from retrieval.hybrid import HybridRetriever, HybridSettings
from retrieval.query import Query

QUERY = "minimum wage employment"


def test_fused_scores_are_weighted_reciprocal_ranks_in_order(backend: SearchBackend, encoder) -> None:
    settings = HybridSettings(rrf_k=10, bm25_weight=2.0, dense_weight=0.5)
    hits = HybridRetriever(backend, encoder, settings).retrieve(QUERY, top_n=8)

    bm25_rank = {hit.chunk_id: rank for rank, hit in enumerate(backend.keyword_search(QUERY, 100), start=1)}
    vector = Query(QUERY, encoder).vector
    dense_rank = {hit.chunk_id: rank for rank, hit in enumerate(backend.vector_search(vector, 100), start=1)}
    assert len(hits) == 8
    for hit in hits:
        chunk_id = hit.chunk.chunk_id
        assert hit.ranks.get("bm25") == bm25_rank.get(chunk_id) and hit.ranks.get("dense") == dense_rank.get(chunk_id)
        expected = 2.0 / (10 + bm25_rank[chunk_id]) + (0.5 / (10 + dense_rank[chunk_id]) if chunk_id in dense_rank
                                                      else 0.0)  # fmt: skip
        assert hit.fused_score == pytest.approx(expected)
    fused = [hit.fused_score for hit in hits]
    assert fused == sorted(fused, reverse=True)
    assert [hit.fused_rank for hit in hits] == list(range(1, 9))


def test_weights_decide_which_retriever_leads(backend: SearchBackend, encoder) -> None:
    bm25_top = HybridRetriever(backend, encoder, HybridSettings(bm25_weight=1.0, dense_weight=0.0)).retrieve(QUERY, 8)
    dense_top = HybridRetriever(backend, encoder, HybridSettings(bm25_weight=0.0, dense_weight=1.0)).retrieve(QUERY, 8)
    assert [hit.chunk.chunk_id for hit in bm25_top] == [hit.chunk_id for hit in backend.keyword_search(QUERY, 8)]
    vector = Query(QUERY, encoder).vector
    assert [hit.chunk.chunk_id for hit in dense_top] == [hit.chunk_id for hit in backend.vector_search(vector, 8)]


def test_single_retriever_modes_fill_only_their_own_scores(backend: SearchBackend, encoder) -> None:
    retriever = HybridRetriever(backend, encoder)
    bm25_hits = retriever.retrieve(QUERY, 3, mode="bm25")
    assert all(set(hit.ranks) == {"bm25"} and hit.ranks["bm25"] == hit.fused_rank for hit in bm25_hits)
    dense_hits = retriever.retrieve(QUERY, 3, mode="dense")
    assert all(set(hit.ranks) == {"dense"} and hit.ranks["dense"] == hit.fused_rank for hit in dense_hits)


def test_the_query_is_encoded_once_and_only_when_a_dense_stage_needs_it(backend: SearchBackend, encoder) -> None:
    calls: list[list[str]] = []

    class Counting:
        def encode(self, texts, show_progress=False):
            calls.append(list(texts))
            return encoder.encode(texts)

    retriever = HybridRetriever(backend, Counting())
    query = Query(QUERY, Counting())
    retriever.retrieve(query, 3, mode="bm25")
    assert calls == [] and not query.encoded
    retriever.retrieve(query, 3)
    retriever.retrieve(query, 3, mode="dense")
    assert calls == [[QUERY]] and not query.vector.flags.writeable


def test_filters_apply_before_the_cut(backend: SearchBackend, encoder) -> None:
    # Only 3 candidates per retriever: unfiltered, the best hits are the pre-2010 minimum-wage papers,
    # so filtering after the cut would leave fewer than top_n.
    retriever = HybridRetriever(backend, encoder, HybridSettings(candidates=3))
    unfiltered = retriever.retrieve(QUERY, 3)
    assert any(hit.document.year < 2010 for hit in unfiltered)

    hits = retriever.retrieve(QUERY, 3, filters=SearchFilters(year_min=2010))
    assert len(hits) == 3
    assert all(hit.document.year >= 2010 for hit in hits)


def test_year_range_and_jel_prefix(backend: SearchBackend, encoder) -> None:
    retriever = HybridRetriever(backend, encoder)
    years = {hit.document.year for hit in retriever.retrieve(QUERY, 8, SearchFilters(year_min=2001, year_max=2012))}
    assert years == {2001, 2003, 2011, 2012}  # bounds inclusive; the undated paper is left out
    jel = {hit.document.doc_id for hit in retriever.retrieve(QUERY, 8, SearchFilters(jel_prefix="d8"))}
    assert jel == {"old-2", "new-1", "new-2"}  # D83, D81, D83 — not D18
    assert retriever.retrieve(QUERY, 8, SearchFilters(jel_prefix="Q5")) == []


def test_invalid_settings_and_requests_are_rejected(backend: SearchBackend, encoder) -> None:
    with pytest.raises(ValueError, match="candidates"):
        HybridSettings(candidates=0)
    with pytest.raises(ValueError, match="mode"):
        HybridSettings(mode="sparse")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive"):
        HybridSettings(bm25_weight=0.0, dense_weight=0.0)
    with pytest.raises(ValueError, match="year_min"):
        SearchFilters(year_min=2015, year_max=2010)
    retriever = HybridRetriever(backend, encoder)
    with pytest.raises(ValueError, match="Unknown retrieval mode"):
        retriever.retrieve(QUERY, 3, mode="colbert")
    with pytest.raises(ValueError, match="empty"):
        retriever.retrieve("", 3)
    assert retriever.retrieve("\x1c", 3, mode="bm25") == []  # no term to match; the API refuses blank text
