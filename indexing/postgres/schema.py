"""The database layout: one schema per build, and one pointer row naming the live one.

    aer_rag.current_build      one row: build_id, schema_name, fingerprint, manifest (jsonb), published_at
    aer_build_<build id>.documents (doc_no, doc_id, record jsonb)
                        .chunks    (chunk_no, chunk_id, doc_no, year, jel_codes text[] upper-cased,
                                    record jsonb, embedding vector(d))       + HNSW (vector_cosine_ops)
                        .terms     (term_id, term, df, max_weight, min_weight)
                        .postings  (term_id, chunk_no, weight)  loaded and indexed in (term_id, weight desc,
                                    chunk_no) order, so a term's best chunks are one short index range

chunk_no is the chunk's place in ingestion order (ties in a ranking go to the lower chunk_no), doc_no the
document's. A posting's weight is the chunk's BM25 summand for the term, computed by indexing.bm25 exactly
as rank-bm25's get_scores() adds it up; a query's score is the sum of count x weight over its terms.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from psycopg import sql

POINTER_SCHEMA = "aer_rag"
BUILD_SCHEMA_PREFIX = "aer_build_"
# Taken by an ingestion job for its whole run (pg_try_advisory_lock): two jobs never interleave.
INGEST_LOCK_KEY = 0x6165725F726167  # "aer_rag"

POINTER_DDL = [
    f"CREATE SCHEMA IF NOT EXISTS {POINTER_SCHEMA}",
    f"""CREATE TABLE IF NOT EXISTS {POINTER_SCHEMA}.current_build (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        build_id text NOT NULL,
        schema_name text NOT NULL,
        fingerprint text NOT NULL,
        manifest jsonb NOT NULL,
        published_at timestamptz NOT NULL DEFAULT now())""",
]


@dataclass(frozen=True)
class HnswSettings:
    """pgvector's HNSW index over the chunk vectors (cosine distance)."""

    m: int = 16
    ef_construction: int = 64

    def __post_init__(self) -> None:
        if not 2 <= self.m <= 100 or self.ef_construction < 2 * self.m:
            raise ValueError(f"HNSW needs 2 <= m <= 100 and ef_construction >= 2m; got {self}.")

    def to_json(self) -> dict[str, Any]:
        return {"backend": "pgvector", "index": "hnsw", "opclass": "vector_cosine_ops", **asdict(self)}


def schema_name(build_id: str) -> str:
    """aer_build_<build id>, lower-case letters, digits and underscores only (a valid unquoted identifier)."""
    return BUILD_SCHEMA_PREFIX + re.sub(r"[^a-z0-9]+", "_", build_id.lower()).strip("_")


def table_ddl(schema: str, dimension: int) -> list[sql.Composed]:
    """The build's tables, without indexes (they are built after the bulk load)."""
    s = sql.Identifier(schema)
    return [
        sql.SQL("CREATE SCHEMA {}").format(s),
        sql.SQL("CREATE TABLE {}.documents (doc_no int4 NOT NULL, doc_id text NOT NULL, record jsonb NOT NULL)")
        .format(s),
        sql.SQL(
            "CREATE TABLE {}.chunks (chunk_no int4 NOT NULL, chunk_id text NOT NULL, doc_no int4 NOT NULL, "
            "year int4, jel_codes text[] NOT NULL, record jsonb NOT NULL, embedding vector({}) NOT NULL)"
        ).format(s, sql.Literal(dimension)),
        # The vector stays in the row: a scan (or HNSW's heap re-check) then reads it without de-TOASTing, which
        # was most of an exact search's time (10 ms of 11 over 2,381 chunks); the JSON record is TOASTed instead.
        sql.SQL("ALTER TABLE {}.chunks ALTER COLUMN embedding SET STORAGE PLAIN").format(s),
        sql.SQL("CREATE TABLE {}.terms (term_id int4 NOT NULL, term text NOT NULL, df int4 NOT NULL, "
                "max_weight float8 NOT NULL, min_weight float8 NOT NULL)").format(s),
        sql.SQL("CREATE TABLE {}.postings (term_id int4 NOT NULL, chunk_no int4 NOT NULL, weight float8 NOT NULL)")
        .format(s),
    ]


def key_index_ddl(schema: str) -> list[sql.Composed]:
    """Primary keys, id look-ups and the postings' two access paths (by weight, by chunk)."""
    s = sql.Identifier(schema)
    return [
        sql.SQL("ALTER TABLE {}.documents ADD PRIMARY KEY (doc_no)").format(s),
        sql.SQL("CREATE UNIQUE INDEX documents_doc_id ON {}.documents (doc_id)").format(s),
        sql.SQL("ALTER TABLE {}.chunks ADD PRIMARY KEY (chunk_no)").format(s),
        sql.SQL("CREATE UNIQUE INDEX chunks_chunk_id ON {}.chunks (chunk_id)").format(s),
        sql.SQL("CREATE INDEX chunks_doc_no ON {}.chunks (doc_no, chunk_no)").format(s),
        sql.SQL("ALTER TABLE {}.terms ADD PRIMARY KEY (term_id)").format(s),
        sql.SQL("CREATE UNIQUE INDEX terms_term ON {}.terms (term)").format(s),
        # Prefix reads of a term's list, best first: an index-only range scan (COPY FREEZE set the visibility map).
        sql.SQL("CREATE INDEX postings_by_weight ON {}.postings (term_id, weight DESC, chunk_no)").format(s),
        # Exact scores of candidate chunks: one probe per (term, chunk).
        sql.SQL("ALTER TABLE {}.postings ADD PRIMARY KEY (term_id, chunk_no) INCLUDE (weight)").format(s),
    ]


def vector_index_ddl(schema: str, hnsw: HnswSettings) -> sql.Composed:
    return sql.SQL(
        "CREATE INDEX chunks_embedding_hnsw ON {}.chunks USING hnsw (embedding vector_cosine_ops) "
        "WITH (m = {}, ef_construction = {})"
    ).format(sql.Identifier(schema), sql.Literal(hnsw.m), sql.Literal(hnsw.ef_construction))
