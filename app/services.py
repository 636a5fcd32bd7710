"""The service's components, loaded once at startup, and the search pipeline built from them."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.config import Settings
from app.metrics import ServiceMetrics
from app.retrieval.hybrid import HybridRetriever, HybridSettings
from app.retrieval.types import RetrievedChunk, SearchFilters
from indexing.embedding import resolve_device
from indexing.index import PublishedIndex

if TYPE_CHECKING:
    from app.answering.answerer import Answerer
    from app.retrieval.rerank import CrossEncoderReranker

log = logging.getLogger(__name__)


class RerankNotAvailableError(RuntimeError):
    """Reranking was asked for but no reranker model is loaded."""


class StageTimer:
    """Collects per-stage wall times in milliseconds, in the order the stages ran."""

    def __init__(self) -> None:
        self.timings_ms: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings_ms[name] = round(self.timings_ms.get(name, 0.0) + (time.perf_counter() - started) * 1000, 3)


@dataclass
class RerankState:
    reranker: CrossEncoderReranker | None
    reason: str  # why it is off, or the model it uses

    @property
    def available(self) -> bool:
        return self.reranker is not None


@dataclass
class SearchOutcome:
    hits: list[RetrievedChunk]
    reranked: bool
    timings_ms: dict[str, float] = field(default_factory=dict)


class SearchPipeline:
    """Hybrid candidates (filters applied before cutting), then an optional cross-encoder rerank."""

    def __init__(self, index: PublishedIndex, retriever: HybridRetriever, rerank: RerankState, rerank_top_m: int):
        self.index = index
        self.retriever = retriever
        self.rerank = rerank
        self.rerank_top_m = rerank_top_m
        self._row_of = {chunk.chunk_id: row for row, chunk in enumerate(index.chunks)}

    def run(
        self,
        query: str,
        top_k: int,
        mode: str = "hybrid",
        filters: SearchFilters | None = None,
        rerank: bool | None = None,
        timer: StageTimer | None = None,
    ) -> SearchOutcome:
        timer = timer or StageTimer()
        if rerank and not self.rerank.available:
            raise RerankNotAvailableError(
                f"Reranking was requested but is off on this server ({self.rerank.reason}). "
                "Send rerank: false or omit it."
            )
        use_rerank = self.rerank.available if rerank is None else rerank
        # The reranker sees more candidates than are returned, so it can promote lower-ranked ones.
        depth = max(top_k, self.rerank_top_m) if use_rerank else top_k
        with timer.stage("retrieve"):
            hits = self.retriever.retrieve(query, depth, filters=filters, mode=mode)
        if use_rerank and hits:
            assert self.rerank.reranker is not None
            with timer.stage("rerank"):
                hits = self.rerank.reranker.rerank(query, hits, top_m=self.rerank_top_m)
        return SearchOutcome(hits[:top_k], use_rerank, timer.timings_ms)

    def dense_similarities(self, query: str, hits: list[RetrievedChunk]) -> list[float]:
        """Cosine similarity of the query to each hit, as the dense retriever scores it: from the stored
        chunk vectors, so hits outside the dense top N (or from BM25 mode) are never re-embedded."""
        if all(hit.dense_score is not None for hit in hits):
            return [float(hit.dense_score) for hit in hits]  # type: ignore[arg-type]
        rows = [self._row_of[hit.chunk.chunk_id] for hit in hits]
        return (self.index.dense.vectors[rows] @ self.index.encode_query(query)).astype(np.float64).tolist()


def load_reranker(settings: Settings, device: str) -> RerankState:
    model_dir: Path | None = settings.reranker_dir
    if model_dir is None:
        return RerankState(None, "no reranker configured (AER_RAG_RERANKER_DIR is empty)")
    if not (model_dir / "config.json").is_file():
        return RerankState(None, f"no reranker model at {model_dir}")
    from app.retrieval.rerank import CrossEncoderReranker

    reranker = CrossEncoderReranker(model_dir, device=device, first_stage_weight=settings.rerank_first_stage_weight)
    return RerankState(reranker, reranker.name)


@dataclass
class Services:
    """Everything a request handler needs; built once by `load_services` (or by tests, with tiny parts)."""

    settings: Settings
    metrics: ServiceMetrics
    index: PublishedIndex
    search: SearchPipeline
    answerer: Answerer
    device: str

    def close(self) -> None:
        self.answerer.queue.shutdown()


def load_services(settings: Settings, metrics: ServiceMetrics | None = None) -> Services:
    """Load the index, reranker and generator; raise IndexLoadError etc. with a clear message."""
    from models import Generator

    metrics = metrics or ServiceMetrics()
    device = resolve_device(settings.device)
    log.info("loading index from %s", settings.index_dir)
    index = PublishedIndex.load(settings.index_dir, expected_embedding_model=settings.embedding_model)
    rerank = load_reranker(settings, device)
    log.info("reranker: %s", rerank.reason)
    adapter = settings.generator_adapter
    if adapter is not None and not adapter.is_dir():
        raise FileNotFoundError(f"No generator adapter at {adapter} (AER_RAG_GENERATOR_ADAPTER).")
    dtype = None if settings.generator_dtype == "auto" else settings.generator_dtype
    generator = Generator.from_pretrained(settings.generator_path, device=device, dtype=dtype, adapter=adapter)
    return build_services(settings, metrics, index, rerank, generator, device)


def build_search(settings: Settings, index: PublishedIndex, rerank: RerankState) -> SearchPipeline:
    """The service's search stage from its settings (benchmarks use it to retrieve exactly as the service does)."""
    retriever = HybridRetriever(
        index,
        HybridSettings(
            candidates=settings.retrieval_candidates,
            rrf_k=settings.rrf_k,
            bm25_weight=settings.bm25_weight,
            dense_weight=settings.dense_weight,
        ),
    )
    return SearchPipeline(index, retriever, rerank, settings.rerank_top_m)


def build_services(
    settings: Settings,
    metrics: ServiceMetrics,
    index: PublishedIndex,
    rerank: RerankState,
    generator: object,
    device: str,
) -> Services:
    from app.answering.answerer import build_answerer

    search = build_search(settings, index, rerank)
    answerer = build_answerer(settings, metrics, search, generator)
    return Services(settings, metrics, index, search, answerer, device)
