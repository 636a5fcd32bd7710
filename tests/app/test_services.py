import pytest


def test_dense_similarity_of_bm25_hits_matches_the_dense_retrievers_scores(make_services) -> None:
    search = make_services().search
    query = "minimum wage and teenage employment"
    bm25_hits = search.run(query, 5, mode="bm25").hits
    assert bm25_hits and all(hit.dense_score is None for hit in bm25_hits)
    dense_scores = {hit.chunk.chunk_id: hit.dense_score for hit in search.run(query, 8, mode="dense").hits}
    expected = [dense_scores[hit.chunk.chunk_id] for hit in bm25_hits]
    assert search.dense_similarities(query, bm25_hits) == pytest.approx(expected, abs=1e-5)
