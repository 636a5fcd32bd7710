"""Query time: find the passages for a question.

    types.py          RetrievedChunk (a passage with each retriever's and stage's score and rank)
    fusion.py         reciprocal rank fusion, the one way rankings are merged
    hybrid.py         HybridRetriever: BM25 + dense candidates, fused
    cross_encoder.py  the reranker network;  reranker.py  CrossEncoderReranker and pair scoring
    search.py         SearchPipeline: hybrid, then rerank (what the service and the benchmarks run)
"""

from retrieval.types import RetrievedChunk

__all__ = ["RetrievedChunk"]
