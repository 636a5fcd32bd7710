"""The ingestion job's PostgreSQL target: a BuildTarget (indexing.targets) over PostgresWriter.

A re-run whose fingerprint equals the one in aer_rag.current_build (and whose build schema is still there)
is "unchanged" and writes nothing.
"""

from __future__ import annotations

import uuid
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from psycopg import sql

from indexing.postgres.schema import HnswSettings
from indexing.postgres.writer import PostgresPublishError, PostgresWriter, safe_dsn
from indexing.storage import file_sha256
from indexing.targets import BuildContent, Describe, timed


class PostgresTarget:
    def __init__(self, dsn: str, hnsw: HnswSettings | None = None, maintenance_work_mem: str | None = None) -> None:
        self.writer = PostgresWriter(dsn, hnsw, maintenance_work_mem=maintenance_work_mem)

    def describe(self) -> str:
        return safe_dsn(self.writer.dsn)

    def fingerprint_inputs(self) -> dict[str, Any]:
        return {"dense": self.writer.hnsw.to_json()}

    def lock(self) -> AbstractContextManager[None]:
        return self.writer.lock()

    def up_to_date(self, fingerprint: str) -> str | None:
        live = self.writer.live()
        if live is None or live.fingerprint != fingerprint or not self._schema_exists(live.schema_name):
            return None
        return f"{self.describe()}#{live.schema_name}"

    def publish(self, content: BuildContent, fingerprint: str, describe: Describe, timings: dict[str, float]) -> str:
        with timed(timings, "publish"):
            build_id = f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}-{uuid.uuid4().hex[:4]}"  # name order = age
            manifest = describe(build_id) | {"dense": self.writer.hnsw.to_json(), "backend": "postgres"}
            result = self.writer.publish(content, build_id, fingerprint, manifest)
        timings.update({f"publish.{step}": seconds for step, seconds in result.timings.items()})
        return f"{self.describe()}#{result.schema_name}"

    def check(self, fingerprint: str, corpus: Path) -> list[str]:
        try:
            live = self.writer.live()
        except PostgresPublishError as error:
            return [str(error)]
        if live is None:
            return [f"no build is published in {self.describe()}"]
        if not self._schema_exists(live.schema_name):
            return [f"the live build's schema {live.schema_name} is missing"]
        if not corpus.is_file():
            return [f"the corpus {corpus} does not exist"]
        if file_sha256(corpus) != live.manifest["corpus"]["sha256"]:
            built_from = live.manifest["corpus"]["path"]
            return [f"stale: {corpus} differs from the corpus the build was made from ({built_from})"]
        if live.fingerprint != fingerprint:
            return ["stale: the embedding model or the build settings changed since the build was published"]
        return []

    def live_document_ids(self) -> set[str] | None:
        live = self.writer.live()
        if live is None or not self._schema_exists(live.schema_name):
            return None
        with self.writer.connect() as connection:
            rows = connection.execute(
                sql.SQL("SELECT doc_id FROM {}.documents").format(sql.Identifier(live.schema_name))).fetchall()
        return {row[0] for row in rows}

    def _schema_exists(self, schema: str) -> bool:
        with self.writer.connect() as connection:
            found = connection.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
        return found is not None
