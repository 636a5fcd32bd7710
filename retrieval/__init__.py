"""Query time: find the passages for a question, through the SearchBackend port (corpus/); never imports indexing.

    types.py          RetrievedChunk (a passage with each retriever's and stage's score and rank), SearchOutcome
    timing.py         StageTimer: per-stage wall times
    query.py          Query: the text and its vector, encoded once per request
    fusion.py         reciprocal rank fusion, the one way rankings are merged
    hybrid.py         HybridRetriever: named retrievers (BM25, dense) over a SearchBackend, fused
    cross_encoder.py  the reranker network;  reranker.py  CrossEncoderReranker and pair scoring
    judge.py          PassageJudge: does this passage answer the question? (its logit per passage)
    search.py         SearchPipeline: hybrid, then rerank (what the service and the benchmarks run)
"""

from retrieval.types import RetrievedChunk

__all__ = ["RetrievedChunk"]
