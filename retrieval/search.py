"""The search stage the service runs: hybrid candidates (filters applied before cutting), then an optional
cross-encoder rerank. `build_search` makes it from settings, so benchmarks retrieve exactly as the service does."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from corpus.filters import SearchFilters
from corpus.search_backend import SearchBackend
from retrieval.hybrid import HybridRetriever, HybridSettings
from retrieval.query import Query, QueryEncoder
from retrieval.reranker import CrossEncoderReranker, RerankerSettings
from retrieval.timing import StageTimer
from retrieval.types import RetrievedChunk, SearchOutcome

log = logging.getLogger(__name__)


class RerankNotAvailableError(RuntimeError):
    """Reranking was asked for but no reranker model is loaded."""


@dataclass
class RerankState:
    reranker: CrossEncoderReranker | None
    reason: str  # why it is off, or the model it uses

    @property
    def available(self) -> bool:
        return self.reranker is not None


class SearchPipeline:
    """Entry point: `run(query, top_k, …)` -> SearchOutcome."""

    def __init__(self, retriever: HybridRetriever, rerank: RerankState, rerank_top_m: int):
        self.backend = retriever.backend
        self.retriever = retriever
        self.rerank = rerank
        self.rerank_top_m = rerank_top_m

    def run(
        self,
        query: str,
        top_k: int,
        mode: str = "hybrid",
        filters: SearchFilters | None = None,
        rerank: bool | None = None,
    ) -> SearchOutcome:
        timer = StageTimer()
        if rerank and not self.rerank.available:
            raise RerankNotAvailableError(
                f"Reranking was requested but is off on this server ({self.rerank.reason}). "
                "Send rerank: false or omit it."
            )
        use_rerank = self.rerank.available if rerank is None else rerank
        # The reranker sees more candidates than are returned, so it can promote lower-ranked ones.
        depth = max(top_k, self.rerank_top_m) if use_rerank else top_k
        encoded = Query(query, self.retriever.encoder)
        with timer.stage("retrieve"):
            hits = self.retriever.retrieve(encoded, depth, filters=filters, mode=mode)
        if use_rerank and hits:
            reranker = self.rerank.reranker
            assert reranker is not None
            with timer.stage("rerank"):
                head = hits[: self.rerank_top_m]
                cosines = self.dense_similarities(encoded, head) if reranker.bi_encoder_weight else None
                hits = reranker.rerank(query, head, top_m=self.rerank_top_m, cosines=cosines)
        return SearchOutcome(encoded, hits[:top_k], use_rerank, dict(timer.timings_ms), hits)

    def dense_similarities(self, query: Query, hits: list[RetrievedChunk]) -> list[float]:
        """Cosine similarity of the query to each hit, as the dense retriever scores it: from the stored chunk
        vectors, so hits outside the dense top N (or from BM25 mode) are never re-embedded."""
        if all("dense" in hit.scores for hit in hits):
            return [hit.scores["dense"] for hit in hits]
        cosines = self.backend.similarities(query.vector, [hit.chunk.chunk_id for hit in hits])
        return [hit.scores.get("dense", cosines.get(hit.chunk.chunk_id, 0.0)) for hit in hits]


def load_reranker(settings: RerankerSettings, device: str) -> RerankState:
    """The configured reranker, or the reason reranking is off (no model configured, or none at the path)."""
    if settings.model_dir is None:
        return RerankState(None, "no reranker configured (its model directory is empty)")
    if not (settings.model_dir / "config.json").is_file():
        return RerankState(None, f"no reranker model in {settings.model_dir.name!r}")
    reranker = CrossEncoderReranker.from_settings(settings, device)
    return RerankState(reranker, f"{reranker.name} ({reranker.precision})")


def build_search(backend: SearchBackend, encoder: QueryEncoder, retrieval: HybridSettings, rerank: RerankState,
                 rerank_top_m: int) -> SearchPipeline:  # fmt: skip
    return SearchPipeline(HybridRetriever(backend, encoder, retrieval), rerank, rerank_top_m)
