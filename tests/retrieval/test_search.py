"""The service's search stage: hybrid candidates, then the reranker with its bi-encoder term."""

from pathlib import Path

import numpy as np
import pytest

from corpus.search_backend import SearchBackend
from retrieval.hybrid import HybridSettings
from retrieval.reranker import CrossEncoderReranker
from retrieval.search import RerankNotAvailableError, RerankState, build_search


def test_the_rerank_stage_passes_the_bi_encoder_cosines(backend: SearchBackend, encoder, tiny_reranker_dir: Path
                                                        ) -> None:  # fmt: skip
    reranker = CrossEncoderReranker(tiny_reranker_dir, precision="float32", bi_encoder_weight=1e4)
    search = build_search(backend, encoder, HybridSettings(), RerankState(reranker, "tiny"), rerank_top_m=8)
    query = "minimum wage and employment"
    outcome = search.run(query, top_k=8)
    assert outcome.reranked and len(outcome.hits) == 8
    found = backend.similarities(outcome.query.vector, [hit.chunk.chunk_id for hit in outcome.hits])
    cosines = np.array([found[hit.chunk.chunk_id] for hit in outcome.hits])
    # With the cosine term dominant, the reranked order is the bi-encoder's.
    assert np.all(np.diff(cosines) <= 1e-6)
    assert [hit.rerank_rank for hit in outcome.hits] == list(range(1, 9))
    assert set(outcome.timings_ms) == {"retrieve", "rerank"}


def test_rerank_on_request_without_a_reranker_is_refused(backend: SearchBackend, encoder) -> None:
    search = build_search(backend, encoder, HybridSettings(), RerankState(None, "none configured"), rerank_top_m=8)
    assert not search.run("wage", top_k=3).reranked
    with pytest.raises(RerankNotAvailableError, match="none configured"):
        search.run("wage", top_k=3, rerank=True)


def test_dense_similarities_of_bm25_hits_come_from_the_stored_vectors(backend: SearchBackend, encoder) -> None:
    search = build_search(backend, encoder, HybridSettings(), RerankState(None, "none"), rerank_top_m=8)
    query = "minimum wage and teenage employment"
    outcome = search.run(query, 5, mode="bm25")
    assert outcome.hits and all("dense" not in hit.scores for hit in outcome.hits)
    dense = {hit.chunk.chunk_id: hit.scores["dense"] for hit in search.run(query, 8, mode="dense").hits}
    expected = [dense[hit.chunk.chunk_id] for hit in outcome.hits]
    assert search.dense_similarities(outcome.query, outcome.hits) == pytest.approx(expected, abs=1e-5)
