"""Publishing into PostgreSQL: atomic for readers, nothing left by a failed build, unchanged re-runs write nothing."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import psycopg
import pytest

from corpus.search_backend import BackendUnavailable
from indexing.postgres.backend import PostgresBackend
from indexing.postgres.schema import HnswSettings
from indexing.postgres.target import PostgresTarget
from indexing.postgres.writer import PostgresPublishError, PostgresWriter
from indexing.targets import BuildContent

from .conftest import make_content, manifest_of, publish_build


def build_schemas(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as connection:
        rows = connection.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'aer_build_%' ORDER BY 1")
        return [row[0] for row in rows]


def live_build(dsn: str) -> tuple[str, str]:
    with psycopg.connect(dsn) as connection:
        return connection.execute("SELECT build_id, published_at::text FROM aer_rag.current_build").fetchone()


def test_a_reader_sees_one_whole_build_or_the_other_during_republishing(postgres_dsn: str,
                                                                       content: BuildContent) -> None:  # fmt: skip
    other = make_content(documents_count=60, seed=1)
    expected = {
        frozenset(chunk.chunk_id for chunk, tokens in zip(build.chunks, build.bm25.corpus_tokens, strict=True)
                  if "market" in tokens)
        for build in (content, other)
    }
    sizes = {len(content.chunks), len(other.chunks)}
    publish_build(postgres_dsn, content)
    backend = PostgresBackend(postgres_dsn)
    seen: list[tuple[frozenset[str], int]] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set() or len(seen) < 3:
                matches = frozenset(result.chunk_id for result in backend.keyword_search("market", 10_000))
                everything = len(backend.vector_search(content.vectors[0], 10_000))
                seen.append((matches, everything))
        except BaseException as error:
            errors.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for build in (other, content, other, content, other):
            publish_build(postgres_dsn, build)
    finally:
        done.set()
        reader.join(timeout=60)
    backend.close()
    assert not errors, errors
    assert seen and all(matches in expected for matches, _ in seen)
    assert all(count in sizes for _, count in seen)
    assert len(build_schemas(postgres_dsn)) == 2  # the live build and the previous one


def test_a_failed_build_leaves_the_live_one_and_nothing_else(postgres_dsn: str, content: BuildContent) -> None:
    live_schema = publish_build(postgres_dsn, content)
    before = live_build(postgres_dsn)
    broken = content.vectors.copy()
    broken[7, 3] = np.nan  # pgvector refuses NaN: the COPY fails half-way through the build
    with pytest.raises(psycopg.Error):
        publish_build(postgres_dsn, replace(content, vectors=broken))
    assert live_build(postgres_dsn) == before
    assert build_schemas(postgres_dsn) == [live_schema]
    assert len(PostgresBackend(postgres_dsn).keyword_search("market", 10_000)) > 0


def test_two_jobs_never_publish_at_once(postgres_dsn: str) -> None:
    writer = PostgresWriter(postgres_dsn)
    with writer.lock(), pytest.raises(PostgresPublishError, match="Another ingestion job"), writer.lock():
        pass


def test_the_target_reports_an_unchanged_build_and_publishes_nothing_for_it(postgres_dsn: str,
                                                                           content: BuildContent) -> None:  # fmt: skip
    target = PostgresTarget(postgres_dsn, HnswSettings())
    assert target.up_to_date("fp-1") is None
    assert target.check("fp-1", Path("/nonexistent.csv")) == [f"no build is published in {target.describe()}"]
    timings: dict[str, float] = {}
    location = target.publish(content, "fp-1", lambda build_id: manifest_of(content, build_id, "fp-1"), timings)
    assert location.endswith(build_schemas(postgres_dsn)[0]) and "publish.hnsw" in timings
    assert target.up_to_date("fp-1") == location
    assert target.up_to_date("fp-2") is None
    assert target.fingerprint_inputs() == {"dense": HnswSettings().to_json()}
    assert target.live_document_ids() == {document.doc_id for document in content.documents}


def test_a_database_without_a_build_is_unavailable_with_a_clear_message(postgres_dsn: str) -> None:
    PostgresWriter(postgres_dsn).live()  # creates the pointer table, empty
    backend = PostgresBackend(postgres_dsn)
    with pytest.raises(BackendUnavailable, match="No build is published"):
        backend.check()
