"""Where an ingestion job publishes: the last stage, the only one that differs between backends.

The stages up to a built BM25 and the chunk vectors are shared (indexing.pipeline); a BuildTarget takes the
result from there. Two implement it: DirectoryTarget (the published directory the local backend reads: FAISS
is built here) and indexing.postgres.target.PostgresTarget (one schema per build in PostgreSQL + pgvector).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from corpus.documents import Chunk, Document
from indexing.bm25 import Bm25Index
from indexing.dense import DenseIndex, DenseSettings
from indexing.index import CHUNKS_FILE, DOCUMENTS_FILE
from indexing.manifest import IndexLoadError, read_manifest, verify_files, write_manifest
from indexing.publish import IndexPublisher
from indexing.storage import file_sha256, write_jsonl

Describe = Callable[[str], dict[str, Any]]  # build id -> the build's manifest


@dataclass(frozen=True)
class BuildContent:
    """What a build holds: documents and chunks in ingestion order, their BM25 and one unit vector per chunk."""

    documents: Sequence[Document]
    chunks: Sequence[Chunk]
    bm25: Bm25Index
    vectors: np.ndarray  # (chunks, dimension) float32, unit norm

    def __post_init__(self) -> None:
        if not len(self.chunks) == len(self.bm25) == len(self.vectors):
            raise ValueError(f"{len(self.chunks)} chunks, {len(self.bm25)} BM25 rows, {len(self.vectors)} vectors.")


class BuildTarget(Protocol):
    def describe(self) -> str:
        """Where builds go, for messages."""
        ...

    def fingerprint_inputs(self) -> dict[str, Any]:
        """This target's settings that determine a build's content (added to the pipeline's fingerprint)."""
        ...

    def lock(self) -> AbstractContextManager[None]:
        """Held for a whole job: two jobs never publish into the same place at once."""
        ...

    def up_to_date(self, fingerprint: str) -> Path | str | None:
        """The live build when it is intact and carries this fingerprint (nothing to do), else None."""
        ...

    def publish(self, content: BuildContent, fingerprint: str, describe: Describe, timings: dict[str, float]
                ) -> Path | str:  # fmt: skip
        """Publish the build atomically; returns where it lives. Adds its stages' seconds to `timings`."""
        ...

    def check(self, fingerprint: str, corpus: Path) -> list[str]:
        """Problems with the live build: missing, corrupt, or stale against the corpus and settings."""
        ...

    def live_document_ids(self) -> set[str] | None:
        """The doc_ids of the live build (None when nothing is published), to compare a new build with."""
        ...


class DirectoryTarget:
    """The published directory (indexing.publish: versioned builds behind one atomically swapped symlink)."""

    def __init__(self, out_dir: Path, dense: DenseSettings) -> None:
        self.publisher = IndexPublisher(out_dir)
        self.dense = dense

    def describe(self) -> str:
        return str(self.publisher.out_dir)

    def fingerprint_inputs(self) -> dict[str, Any]:
        return {"dense": self.dense.to_json()}

    def lock(self) -> AbstractContextManager[None]:
        return self.publisher.lock()

    def up_to_date(self, fingerprint: str) -> Path | None:
        live = self.publisher.current_build()
        if live is None:
            return None
        try:
            manifest = read_manifest(live)
        except IndexLoadError:
            return None
        return live if manifest.get("fingerprint") == fingerprint and not verify_files(live, manifest) else None

    def publish(self, content: BuildContent, fingerprint: str, describe: Describe, timings: dict[str, float]) -> Path:
        with timed(timings, "faiss"):
            dense = DenseIndex.build(content.vectors, self.dense)
        with timed(timings, "publish"):
            build_id, build_dir = self.publisher.start_build()
            try:
                write_jsonl(build_dir / DOCUMENTS_FILE, (document.to_json() for document in content.documents))
                write_jsonl(build_dir / CHUNKS_FILE, (chunk.to_json() for chunk in content.chunks))
                content.bm25.save(build_dir)
                dense.save(build_dir)
                write_manifest(build_dir, describe(build_id) | {"dense": self.dense.to_json()})
                return self.publisher.publish(build_id, build_dir)
            except BaseException:
                self.publisher.abandon(build_dir)
                raise

    def live_document_ids(self) -> set[str] | None:
        live = self.publisher.current_build()
        path = live / DOCUMENTS_FILE if live is not None else None
        if path is None or not path.is_file():
            return None
        with path.open(encoding="utf-8") as lines:
            return {json.loads(line)["doc_id"] for line in lines if line.strip()}

    def check(self, fingerprint: str, corpus: Path) -> list[str]:
        live = self.publisher.current_build()
        if live is None:
            return [f"no index is published at {self.publisher.out_dir}"]
        try:
            manifest = read_manifest(live)
        except IndexLoadError as error:
            return [str(error)]
        problems = verify_files(live, manifest)
        if not corpus.is_file():
            problems.append(f"the corpus {corpus} does not exist")
        elif file_sha256(corpus) != manifest["corpus"]["sha256"]:
            problems.append(
                f"stale: {corpus} differs from the corpus the index was built from "
                f"({manifest['corpus']['path']}, sha256 {manifest['corpus']['sha256'][:12]})"
            )
        elif manifest.get("fingerprint") != fingerprint:
            problems.append("stale: the embedding model or the build settings changed since the index was built")
        return problems


@contextmanager
def timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Adds the block's seconds to timings[stage]."""
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - started
