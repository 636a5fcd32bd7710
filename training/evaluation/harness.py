"""Runs retrieval configurations over a BEIR dataset through the service's own index and retrievers.

The dataset's corpus is converted to the ingestion CSV and built by IngestionPipeline (cached: the
pipeline itself skips the build when corpus and settings are unchanged); queries go through
HybridRetriever and, optionally, CrossEncoderReranker, exactly as in the service.
"""

from __future__ import annotations

import logging
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from indexing.embedding import file_sha256
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from indexing.manifest import IndexLoadError
from indexing.pipeline import IngestionPipeline, IngestionSettings
from retrieval.hybrid import HybridRetriever, HybridSettings
from retrieval.reranker import CrossEncoderReranker, RerankerSettings
from retrieval.types import RetrievedChunk
from training.evaluation.beir import BeirCorpusConverter, BeirDataset, corpus_id_of
from training.evaluation.metrics import STANDARD_METRICS, evaluate, per_query_scores

log = logging.getLogger(__name__)


def ingest_csv(corpus_csv: Path, index_dir: Path, device: str = "auto", rebuild: bool = False) -> PublishedIndex:
    """Load the cached index of an ingestion CSV, building it with IngestionPipeline when needed.

    A cached index is reused when it loads cleanly and was built from this exact CSV (same sha256),
    even if the ingestion code's settings fingerprint moved on since: an evaluation cache should not
    re-embed thousands of passages for an unrelated change. Pass rebuild=True to force the pipeline.
    """
    if not rebuild and index_dir.exists():
        try:
            index = PublishedIndex.load(index_dir)
        except IndexLoadError as error:
            log.info("cached index unusable (%s); rebuilding", error)
        else:
            if index.manifest.get("corpus", {}).get("sha256") == file_sha256(corpus_csv):
                log.info("reusing cached index %s", index.directory)
                return index
    summary = IngestionPipeline(
        IngestionSettings(corpus=corpus_csv, out_dir=index_dir, device=device, force=rebuild)
    ).run()
    log.info("index %s: %s", summary.status, summary.index_dir)
    return PublishedIndex.load(index_dir)


def ingest_beir(dataset: BeirDataset, work_dir: Path, device: str = "auto", rebuild: bool = False) -> PublishedIndex:
    """Convert the BEIR corpus to <work_dir>/corpus.csv and build (or reuse) <work_dir>/index from it."""
    corpus_csv = work_dir / "corpus.csv"
    BeirCorpusConverter(dataset).write_csv(corpus_csv)
    return ingest_csv(corpus_csv, work_dir / "index", device, rebuild)


@dataclass(frozen=True)
class EvalConfig:
    """One row of the evaluation table: the service's own component settings, and how deep to rank."""

    name: str
    retrieval: HybridSettings = field(default_factory=HybridSettings)
    reranker: RerankerSettings | None = None  # None: no rerank stage
    depth: int = 100  # documents ranked per query (Recall@100 needs 100)

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError(f"depth must be at least 1, not {self.depth}.")
        if self.reranker is not None and self.reranker.model_dir is None:
            raise ValueError("A rerank row needs the reranker's model_dir.")

    def hybrid_settings(self) -> HybridSettings:
        # Each retriever must reach deep enough for `depth` distinct documents after fusion.
        return self.retrieval.model_copy(update={"candidates": max(self.retrieval.candidates, self.depth)})


@dataclass
class EvalResult:
    config: EvalConfig
    metrics: dict[str, float]
    latency_ms: dict[str, float]  # per query: retrieval and rerank, mean / p50 / p95
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_json(self) -> dict:
        reranker = self.config.reranker
        config = {
            "name": self.config.name,
            "depth": self.config.depth,
            "retrieval": self.config.retrieval.model_dump(mode="json"),
            "reranker": None if reranker is None else reranker.model_dump(mode="json", exclude={"model_dir"}),
        }
        return {"config": config, "metrics": self.metrics, "latency_ms": self.latency_ms}


class RetrievalEvaluator:
    """Evaluates configurations on one dataset and index; rerankers are loaded once per directory."""

    def __init__(self, dataset: BeirDataset, index: PublishedIndex, device: str = "cpu") -> None:
        self.dataset = dataset
        self.index = index
        self.backend = LocalIndexBackend(index)
        self.device = device
        self._rerankers: dict[RerankerSettings, CrossEncoderReranker] = {}
        # Rerank rows share the candidates of the hybrid row with the same settings: (hits, ms) per query.
        self._retrieved: dict[tuple[HybridSettings, str], tuple[list[RetrievedChunk], float]] = {}
        self.corpus_id_by_doc = {doc_id: corpus_id_of(document) for doc_id, document in index.documents.items()}
        unmapped = [doc_id for doc_id, corpus_id in self.corpus_id_by_doc.items() if corpus_id is None]
        if unmapped:
            raise ValueError(f"{len(unmapped)} indexed documents carry no BEIR id; is this the converted corpus?")

    def run(self, config: EvalConfig) -> EvalResult:
        retriever = HybridRetriever(self.backend, self.index.embedder, config.hybrid_settings())
        reranker = self._reranker(config.reranker) if config.reranker else None
        run: dict[str, list[str]] = {}
        retrieve_ms: list[float] = []
        rerank_ms: list[float] = []
        for query_id, text in self.dataset.queries.items():
            hits, milliseconds = self._retrieve(retriever, query_id, text)
            retrieve_ms.append(milliseconds)
            if reranker is not None and config.reranker is not None:
                started = time.perf_counter()
                top_m = config.reranker.top_m
                # The reranked head replaces the fused head; the fused tail keeps Recall@100 comparable.
                cosines = self._cosines(text, hits[:top_m]) if reranker.bi_encoder_weight else None
                head = reranker.rerank(text, hits, top_m, cosines=cosines)
                hits = head + hits[top_m:]
                rerank_ms.append((time.perf_counter() - started) * 1000)
            run[query_id] = self.document_ranking(hits)[: config.depth]
        latency = {f"retrieve_{key}": value for key, value in latency_summary(retrieve_ms).items()}
        if rerank_ms:
            latency.update({f"rerank_{key}": value for key, value in latency_summary(rerank_ms).items()})
        return EvalResult(
            config,
            evaluate(run, self.dataset.qrels, STANDARD_METRICS),
            latency,
            per_query_scores(run, self.dataset.qrels, STANDARD_METRICS),
        )

    def _retrieve(self, retriever: HybridRetriever, query_id: str, text: str) -> tuple[list[RetrievedChunk], float]:
        """Fresh copies of the (cached) candidates, so a rerank never alters another row's hits."""
        key = (retriever.settings, query_id)
        if key not in self._retrieved:
            started = time.perf_counter()
            hits = retriever.retrieve(text, retriever.settings.candidates)
            self._retrieved[key] = (hits, (time.perf_counter() - started) * 1000)
        hits, milliseconds = self._retrieved[key]
        return [replace(hit) for hit in hits], milliseconds

    def _cosines(self, text: str, hits: list[RetrievedChunk]) -> list[float]:
        """The query's cosine to each hit, from the stored vectors (as the service's search computes them)."""
        if all("dense" in hit.scores for hit in hits):
            return [hit.scores["dense"] for hit in hits]
        found = self.backend.similarities(self.index.encode_query(text), [hit.chunk.chunk_id for hit in hits])
        return [found[hit.chunk.chunk_id] for hit in hits]

    def document_ranking(self, hits: list[RetrievedChunk]) -> list[str]:
        """BEIR corpus ids, each document at the rank of its best chunk."""
        ranked: dict[str, None] = {}
        for hit in hits:
            ranked.setdefault(self.corpus_id_by_doc[hit.chunk.doc_id] or "", None)
        return list(ranked)

    def _reranker(self, settings: RerankerSettings) -> CrossEncoderReranker:
        if settings not in self._rerankers:
            self._rerankers[settings] = CrossEncoderReranker.from_settings(settings, self.device)
        return self._rerankers[settings]


def latency_summary(values_ms: list[float]) -> dict[str, float]:
    """Mean, median and 95th percentile (nearest rank) of per-query milliseconds."""
    ordered = sorted(values_ms)
    return {
        "mean": round(statistics.fmean(ordered), 2),
        "p50": round(ordered[len(ordered) // 2], 2),
        "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
    }
