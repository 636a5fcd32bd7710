"""Publish one ingested build into PostgreSQL, atomically.

Everything happens in ONE transaction: create the build's schema (aer_build_<build id>), bulk-load its tables
with binary COPY FREEZE (tables created in the same transaction: no WAL with wal_level=minimal, and the rows
are written frozen and all-visible, so index-only scans work at once), build the keys, the postings' indexes
and the HNSW index, ANALYZE, and update the one row of aer_rag.current_build. Readers see the old build or
the new one, never half of one; a job killed at any point leaves nothing behind. After the commit, builds
older than the previous one are dropped (a reader that resolved the previous build a moment ago still finds
it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from indexing.postgres import copy_binary as wire
from indexing.postgres.schema import (
    BUILD_SCHEMA_PREFIX,
    INGEST_LOCK_KEY,
    POINTER_DDL,
    POINTER_SCHEMA,
    HnswSettings,
    key_index_ddl,
    schema_name,
    table_ddl,
    vector_index_ddl,
)
from indexing.targets import BuildContent, timed


class PostgresPublishError(RuntimeError):
    """The build cannot be published into the database (unreachable, locked by another job, refused)."""


@dataclass(frozen=True)
class LiveBuild:
    build_id: str
    schema_name: str
    fingerprint: str
    manifest: dict[str, Any]


@dataclass
class PublishResult:
    schema_name: str
    timings: dict[str, float] = field(default_factory=dict)  # step -> seconds: copy, keys, hnsw, analyze, commit


class PostgresWriter:
    def __init__(self, dsn: str, hnsw: HnswSettings | None = None, keep_previous: int = 1,
                 maintenance_work_mem: str | None = None, parallel_workers: int = 2) -> None:  # fmt: skip
        self.dsn = dsn
        self.hnsw = hnsw or HnswSettings()
        self.keep_previous = keep_previous
        self.maintenance_work_mem = maintenance_work_mem  # None: the server's setting
        self.parallel_workers = parallel_workers

    def connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self.dsn, connect_timeout=10)
        except psycopg.OperationalError as error:
            raise PostgresPublishError(f"Cannot connect to {safe_dsn(self.dsn)}: {error}".strip()) from None

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Held for a whole ingestion job (a session advisory lock), so two jobs never interleave."""
        with self.connect() as connection:
            connection.autocommit = True
            if not connection.execute("SELECT pg_try_advisory_lock(%s)", (INGEST_LOCK_KEY,)).fetchone()[0]:
                raise PostgresPublishError(f"Another ingestion job is publishing into {safe_dsn(self.dsn)}; wait.")
            try:
                yield
            finally:
                connection.execute("SELECT pg_advisory_unlock(%s)", (INGEST_LOCK_KEY,))

    def live(self) -> LiveBuild | None:
        """The published build, or None when nothing is published yet."""
        with self.connect() as connection:
            self._ensure_pointer(connection)
            found = connection.execute(
                sql.SQL("SELECT build_id, schema_name, fingerprint, manifest FROM {}.current_build").format(
                    sql.Identifier(POINTER_SCHEMA)
                )
            ).fetchone()
        return LiveBuild(*found) if found else None

    def publish(self, content: BuildContent, build_id: str, fingerprint: str, manifest: dict[str, Any]
                ) -> PublishResult:  # fmt: skip
        schema = schema_name(build_id)
        result = PublishResult(schema)
        dimension = int(content.vectors.shape[1])
        with self.connect() as connection:
            self._ensure_pointer(connection)
            with connection.transaction():
                if self.maintenance_work_mem:
                    connection.execute("SELECT set_config('maintenance_work_mem', %s, true)",
                                       (self.maintenance_work_mem,))  # fmt: skip
                connection.execute("SELECT set_config('max_parallel_maintenance_workers', %s, true)",
                                   (str(self.parallel_workers),))  # fmt: skip
                for statement in table_ddl(schema, dimension):
                    connection.execute(statement)
                with timed(result.timings, "copy"):
                    self._copy(connection, schema, content)
                with timed(result.timings, "keys"):
                    for statement in key_index_ddl(schema):
                        connection.execute(statement)
                with timed(result.timings, "hnsw"):
                    connection.execute(vector_index_ddl(schema, self.hnsw))
                with timed(result.timings, "analyze"):
                    for table in ("documents", "chunks", "terms", "postings"):
                        connection.execute(sql.SQL("ANALYZE {}.{}").format(sql.Identifier(schema),
                                                                           sql.Identifier(table)))  # fmt: skip
                self._point_to(connection, build_id, schema, fingerprint, manifest)
            with timed(result.timings, "drop_old"):
                self.drop_old_builds(connection, keep=schema)
        return result

    def drop_old_builds(self, connection: psycopg.Connection[Any], keep: str) -> list[str]:
        """Drop every build schema but the live one and the `keep_previous` newest before it."""
        names = [row[0] for row in connection.execute(
            "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, %s) ORDER BY nspname",
            (BUILD_SCHEMA_PREFIX,),
        )]  # fmt: skip
        older = [name for name in names if name != keep]  # build ids start with a UTC timestamp: name order is age
        stale = older[: max(0, len(older) - self.keep_previous)]
        for name in stale:
            with connection.transaction():
                connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))
        return stale

    def _ensure_pointer(self, connection: psycopg.Connection[Any]) -> None:
        with connection.transaction():
            exists = connection.execute("SELECT to_regclass(%s)", (f"{POINTER_SCHEMA}.current_build",)).fetchone()
            if exists is None or exists[0] is None:
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (INGEST_LOCK_KEY + 1,))
                for statement in POINTER_DDL:
                    connection.execute(statement)  # type: ignore[arg-type]

    def _point_to(self, connection: psycopg.Connection[Any], build_id: str, schema: str, fingerprint: str,
                  manifest: dict[str, Any]) -> None:  # fmt: skip
        connection.execute(
            sql.SQL(
                "INSERT INTO {}.current_build (singleton, build_id, schema_name, fingerprint, manifest) "
                "VALUES (true, %s, %s, %s, %s) ON CONFLICT (singleton) DO UPDATE SET build_id = excluded.build_id, "
                "schema_name = excluded.schema_name, fingerprint = excluded.fingerprint, "
                "manifest = excluded.manifest, published_at = now()"
            ).format(sql.Identifier(POINTER_SCHEMA)),
            (build_id, schema, fingerprint, Jsonb(manifest)),
        )

    def _copy(self, connection: psycopg.Connection[Any], schema: str, content: BuildContent) -> None:
        cursor = connection.cursor()
        doc_no = {document.doc_id: number for number, document in enumerate(content.documents)}
        with cursor.copy(_copy_sql(schema, "documents", "doc_no, doc_id, record")) as copy:
            wire.send(copy, (wire.row(wire.int4(number), wire.text(document.doc_id), wire.jsonb(vars(document)))
                             for number, document in enumerate(content.documents)))  # fmt: skip
        years = {document.doc_id: document.year for document in content.documents}
        jel = {document.doc_id: wire.text_array([code.upper() for code in document.jel_codes])
               for document in content.documents}  # fmt: skip
        vectors = np.ascontiguousarray(content.vectors, dtype=">f4")
        columns = "chunk_no, chunk_id, doc_no, year, jel_codes, record, embedding"
        with cursor.copy(_copy_sql(schema, "chunks", columns)) as copy:
            wire.send(copy, (wire.row(
                wire.int4(number), wire.text(chunk.chunk_id), wire.int4(doc_no[chunk.doc_id]),
                wire.int4(years[chunk.doc_id]), jel[chunk.doc_id], wire.jsonb(vars(chunk)),
                wire.vector(vectors[number]),
            ) for number, chunk in enumerate(content.chunks)))  # fmt: skip
        terms, weights = content.bm25.weight_matrix()
        weights = weights.tocsr()
        weights.sort_indices()
        df = np.diff(weights.indptr)
        maxima = np.maximum.reduceat(weights.data, weights.indptr[:-1]) if weights.nnz else np.zeros(0)
        minima = np.minimum.reduceat(weights.data, weights.indptr[:-1]) if weights.nnz else np.zeros(0)
        with cursor.copy(_copy_sql(schema, "terms", "term_id, term, df, max_weight, min_weight")) as copy:
            wire.send(copy, (wire.row(wire.int4(term_id), wire.text(term), wire.int4(int(df[term_id])),
                                      wire.float8(float(maxima[term_id])), wire.float8(float(minima[term_id])))
                             for term_id, term in enumerate(terms)))  # fmt: skip
        term_ids = np.repeat(np.arange(len(terms), dtype=np.int32), df)
        chunk_nos = weights.indices.astype(np.int32)
        order = np.lexsort((chunk_nos, -weights.data, term_ids))  # the postings_by_weight index's order
        with cursor.copy(_copy_sql(schema, "postings", "term_id, chunk_no, weight")) as copy:
            wire.send(copy, wire.postings_rows(term_ids[order], chunk_nos[order], weights.data[order]))


def _copy_sql(schema: str, table: str, columns: str) -> sql.Composed:
    return sql.SQL("COPY {}.{} ({}) FROM STDIN (FORMAT BINARY, FREEZE)").format(
        sql.Identifier(schema), sql.Identifier(table), sql.SQL(columns)
    )


def safe_dsn(dsn: str) -> str:
    """The DSN without a password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "the database"
    return f"postgresql://{info.get('user', '')}@{info.get('host', '')}:{info.get('port', '')}/{info.get('dbname', '')}"
