"""The service's search stage: hybrid candidates, then the reranker with its bi-encoder term."""

from pathlib import Path

import numpy as np
import pytest

from indexing.index import PublishedIndex
from retrieval.hybrid import HybridSettings
from retrieval.reranker import CrossEncoderReranker
from retrieval.search import RerankNotAvailableError, RerankState, build_search


def test_the_rerank_stage_passes_the_bi_encoder_cosines(tiny_index: PublishedIndex, tiny_reranker_dir: Path) -> None:
    reranker = CrossEncoderReranker(tiny_reranker_dir, precision="float32", bi_encoder_weight=1e4)
    search = build_search(tiny_index, HybridSettings(), RerankState(reranker, "tiny"), rerank_top_m=8)
    query = "minimum wage and employment"
    outcome = search.run(query, top_k=8)
    assert outcome.reranked and len(outcome.hits) == 8
    cosines = tiny_index.query_similarities(query, [hit.chunk.chunk_id for hit in outcome.hits])
    # With the cosine term dominant, the reranked order is the bi-encoder's.
    assert np.all(np.diff(cosines) <= 1e-6)
    assert [hit.rerank_rank for hit in outcome.hits] == list(range(1, 9))
    assert set(outcome.timings_ms) == {"retrieve", "rerank"}


def test_rerank_on_request_without_a_reranker_is_refused(tiny_index: PublishedIndex) -> None:
    search = build_search(tiny_index, HybridSettings(), RerankState(None, "none configured"), rerank_top_m=8)
    assert not search.run("wage", top_k=3).reranked
    with pytest.raises(RerankNotAvailableError, match="none configured"):
        search.run("wage", top_k=3, rerank=True)


def test_query_vectors_are_encoded_once_and_read_only(tiny_index: PublishedIndex) -> None:
    first = tiny_index.encode_query("wage rigidity")
    assert tiny_index.encode_query("wage rigidity") is first
    assert not first.flags.writeable
    assert tiny_index.search_dense("wage rigidity", 3)  # FAISS accepts the shared, read-only vector
