"""The search stage the service runs: hybrid candidates (filters applied before cutting), then an optional
cross-encoder rerank. `build_search` makes it from settings, so benchmarks retrieve exactly as the service does."""

from __future__ import annotations

import logging
from collections.abc import Sequence
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
        include: Sequence[str] = (),
        encoded: Query | None = None,
    ) -> SearchOutcome:
        """include: doc_ids that must be among the hits (a follow-up's papers: "which of those ..."), each by its
        first chunk when retrieval missed it and it passes the filters; reranked with the others, kept past top_k.
        encoded: the query from `encode` when the caller read its vector first (it is encoded once)."""
        timer = StageTimer()
        if rerank and not self.rerank.available:
            raise RerankNotAvailableError(
                f"Reranking was requested but is off on this server ({self.rerank.reason}). "
                "Send rerank: false or omit it."
            )
        use_rerank = self.rerank.available if rerank is None else rerank
        # The reranker sees more candidates than are returned, so it can promote lower-ranked ones.
        depth = max(top_k, self.rerank_top_m) if use_rerank else top_k
        if encoded is None or encoded.text != query:
            encoded = self.encode(query)
        with timer.stage("retrieve"):
            hits = self.retriever.retrieve(encoded, depth, filters=filters, mode=mode)
            missed = self._papers([d for d in include if d not in {hit.chunk.doc_id for hit in hits}], filters)
        if use_rerank and (hits or missed):
            reranker = self.rerank.reranker
            assert reranker is not None
            with timer.stage("rerank"):
                head = hits[: self.rerank_top_m] + missed
                cosines = self.dense_similarities(encoded, head) if reranker.bi_encoder_weight else None
                hits = reranker.rerank(query, head, top_m=len(head), cosines=cosines)
        else:
            hits = hits + missed
        kept = hits[:top_k] + [hit for hit in hits[top_k:] if hit.chunk.doc_id in include]
        return SearchOutcome(encoded, kept, use_rerank, dict(timer.timings_ms), hits)

    def encode(self, query: str) -> Query:
        """The query as retrieval sees it (its vector computed on first use, once)."""
        return Query(query, self.retriever.encoder)

    def _papers(self, doc_ids: Sequence[str], filters: SearchFilters | None) -> list[RetrievedChunk]:
        """Each paper's first chunk, as a hit no retriever ranked; papers unknown or outside the filters are left
        out."""
        first = []
        for doc_id in dict.fromkeys(doc_ids):
            found = self.backend.document(doc_id)
            if found is not None and found[1] and (filters is None or filters.matches(found[0])):
                first.append(found[1][0])
        stored = self.backend.chunks(first)
        return [RetrievedChunk(chunk=s.chunk, document=s.document) for s in (stored.get(c) for c in first) if s]

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
