"""PostgreSQL + pgvector as a SearchBackend (corpus.search_backend): one database shared by every replica.

Every call is one transaction that first reads aer_rag.current_build, so a new ingest is served by the next
call, without a restart, and a call never mixes two builds (a publish drops only builds older than the previous
one). Keyword search sums the stored BM25 weights (indexing.postgres.keyword: the threshold algorithm over
weight-ordered postings, or full aggregation); the query is tokenised here by the build's own Bm25Tokenizer.
Vector search uses the HNSW index (hnsw.ef_search = max(100, n), iterative scan for filters), re-ranks the rows
by their exact inner product with the query, and falls back to an exact scan when a filter leaves the index
fewer than n rows; small builds (under `exact_vector_below` chunks) are always scanned exactly.

Any database error is raised as BackendUnavailable; the pool reconnects on the next call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg import sql

from corpus.authors import has_surnames, plain
from corpus.documents import Chunk, Document
from corpus.filters import SearchFilters
from corpus.search_backend import (
    BackendInfo,
    BackendUnavailable,
    CorpusStats,
    ScoredChunk,
    StoredChunk,
    newest_first,
)
from indexing.bm25 import Bm25Settings, Bm25Tokenizer
from indexing.postgres.keyword import KeywordSettings, KeywordStats, PostingCache, QueryTerm, top_chunks, warm
from indexing.postgres.pool import ConnectionPool, PoolExhausted
from indexing.postgres.schema import POINTER_SCHEMA
from indexing.postgres.writer import safe_dsn

T = TypeVar("T")
log = logging.getLogger(__name__)
HNSW_MAX_EF_SEARCH = 1000  # pgvector's limit


# Accented letters and the plain ones corpus.authors.plain makes of them, for SQL's translate().
_ACCENTED = "àáâãäåāăąçćčèéêëēėęěìíîïīįñńňòóôõöōőùúûüūůűųýÿšśşžźżğ"
_UNACCENTED = "".join(plain(letter) for letter in _ACCENTED)
assert len(_UNACCENTED) == len(_ACCENTED)


@dataclass(frozen=True)
class _Build:
    build_id: str
    schema: str
    info: BackendInfo
    tokenizer: Bm25Tokenizer


class PostgresBackend:
    """Implements corpus.search_backend.SearchBackend over the build aer_rag.current_build points to."""

    def __init__(self, dsn: str, pool_size: int = 8, timeout: float = 10.0, exact_vector_below: int = 10_000,
                 ef_search: int = 100, keyword: KeywordSettings | None = None, prewarm: bool = True
                 ) -> None:  # fmt: skip
        self.dsn = dsn
        self.exact_vector_below = exact_vector_below
        self.ef_search = ef_search
        self.keyword_settings = keyword or KeywordSettings()
        self._postings = PostingCache(self.keyword_settings.cache_bytes)
        self.last_keyword_stats = KeywordStats()  # the last keyword search's method (tests, benchmarks)
        self._pool = ConnectionPool(dsn, max_size=pool_size, timeout=timeout, read_only=True)
        self._builds: dict[str, _Build] = {}
        self._builds_lock = threading.Lock()
        self.prewarm = prewarm
        self.info_ttl_s = 1.0
        self._info_cache: tuple[float, BackendInfo] | None = None

    # --- SearchBackend ---------------------------------------------------------------------------------------

    def info(self) -> BackendInfo:
        """The live build's info, read at most once a second (the service asks per request)."""
        cached = self._info_cache
        if cached is not None and time.monotonic() - cached[0] < self.info_ttl_s:
            return cached[1]
        info = self._call(lambda connection, build: build.info)
        self._info_cache = (time.monotonic(), info)
        return info

    def warm(self) -> int:
        """Read the live build's longest posting lists (common words) into memory, up to half the cache budget,
        so the first queries after a new build do not read them; how many lists. Run in the background when a
        backend first sees a build (prewarm=True)."""
        return self._call(lambda connection, build: warm(connection, build.schema, self.keyword_settings,
                                                         self._postings))  # fmt: skip

    def check(self) -> None:
        self._call(lambda connection, build: None)

    def close(self) -> None:
        self._pool.close()

    def keyword_search(self, query: str, top_n: int, filters: SearchFilters | None = None) -> list[ScoredChunk]:
        def search(connection: psycopg.Connection[Any], build: _Build) -> list[ScoredChunk]:
            counts = Counter(build.tokenizer.tokenize(query))
            if not counts or top_n <= 0:
                return []
            rows = connection.execute(
                sql.SQL("SELECT term, term_id, df, max_weight, min_weight FROM {}.terms WHERE term = ANY(%s)")
                .format(sql.Identifier(build.schema)), [list(counts)]).fetchall()  # fmt: skip
            terms = [QueryTerm(term_id, counts[term], df, max_weight, min_weight)
                     for term, term_id, df, max_weight, min_weight in sorted(rows)]  # fmt: skip
            where, params = _filter_sql(filters)
            stats = KeywordStats()
            found = top_chunks(connection, build.schema, build.info.chunks, terms, top_n, where, params,
                               self.keyword_settings, self._postings, stats)  # fmt: skip
            self.last_keyword_stats = stats
            return self._scored(connection, build, found)

        return self._call(search)

    def vector_search(self, vector: np.ndarray, top_n: int, filters: SearchFilters | None = None
                      ) -> list[ScoredChunk]:  # fmt: skip
        text = _vector_text(vector)

        def search(connection: psycopg.Connection[Any], build: _Build) -> list[ScoredChunk]:
            if top_n <= 0:
                return []
            where, params = _filter_sql(filters)
            exact = build.info.chunks < self.exact_vector_below or top_n > HNSW_MAX_EF_SEARCH
            rows = [] if exact else self._hnsw(connection, build, text, top_n, where, params)
            if exact or (len(rows) < top_n and where is not None):
                rows = self._exact(connection, build, text, top_n, where, params)
            rows.sort(key=lambda row: (-row[2], row[1]))  # exact inner product desc, then ingestion order
            return [ScoredChunk(chunk_id, float(score)) for chunk_id, _, score in rows[:top_n]]

        return self._call(search)

    def similarities(self, vector: np.ndarray, chunk_ids: Sequence[str]) -> dict[str, float]:
        text = _vector_text(vector)

        def score(connection: psycopg.Connection[Any], build: _Build) -> dict[str, float]:
            rows = connection.execute(
                sql.SQL("SELECT chunk_id, -(embedding <#> %s::vector) FROM {}.chunks WHERE chunk_id = ANY(%s)")
                .format(sql.Identifier(build.schema)), [text, list(chunk_ids)]).fetchall()  # fmt: skip
            found = dict(rows)
            return {chunk_id: float(found[chunk_id]) for chunk_id in chunk_ids if chunk_id in found}

        return self._call(score)

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        def look_up(connection: psycopg.Connection[Any], build: _Build) -> dict[str, np.ndarray]:
            rows = connection.execute(
                sql.SQL("SELECT chunk_id, embedding::text FROM {}.chunks WHERE chunk_id = ANY(%s)")
                .format(sql.Identifier(build.schema)), [list(chunk_ids)]).fetchall()  # fmt: skip
            found = {chunk_id: _vector_of(text) for chunk_id, text in rows}
            return {chunk_id: found[chunk_id] for chunk_id in chunk_ids if chunk_id in found}

        return self._call(look_up)

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        def look_up(connection: psycopg.Connection[Any], build: _Build) -> dict[str, StoredChunk]:
            rows = connection.execute(
                sql.SQL("SELECT c.chunk_id, c.record, d.record FROM {s}.chunks c "
                        "JOIN {s}.documents d ON d.doc_no = c.doc_no WHERE c.chunk_id = ANY(%s)")
                .format(s=sql.Identifier(build.schema)), [list(chunk_ids)]).fetchall()  # fmt: skip
            found = {chunk_id: StoredChunk(Chunk.from_json(chunk), Document.from_json(document))
                     for chunk_id, chunk, document in rows}  # fmt: skip
            return {chunk_id: found[chunk_id] for chunk_id in chunk_ids if chunk_id in found}

        return self._call(look_up)

    def document(self, doc_id: str) -> tuple[Document, list[str]] | None:
        def look_up(connection: psycopg.Connection[Any], build: _Build) -> tuple[Document, list[str]] | None:
            row = connection.execute(
                sql.SQL("SELECT d.record, array(SELECT c.chunk_id FROM {s}.chunks c WHERE c.doc_no = d.doc_no "
                        "ORDER BY c.chunk_no) FROM {s}.documents d WHERE d.doc_id = %s")
                .format(s=sql.Identifier(build.schema)), [doc_id]).fetchone()  # fmt: skip
            return None if row is None else (Document.from_json(row[0]), list(row[1]))

        return self._call(look_up)

    def papers_by_authors(self, surnames: Sequence[str], year: int | None, limit: int) -> list[Document]:
        if not surnames:
            return []

        def look_up(connection: psycopg.Connection[Any], build: _Build) -> list[Document]:
            # Authors' text (accents dropped as SQL can) holding every surname narrows; the names decide after.
            patterns = ["%" + surname.replace("\\", "").replace("%", "").replace("_", "") + "%" for surname in surnames]
            rows = connection.execute(
                sql.SQL("SELECT d.record FROM {s}.documents d WHERE translate(lower(d.record->>'authors'), %s, %s) "
                        "LIKE ALL(%s) AND (%s::int IS NULL OR (d.record->>'year')::int = %s::int)")
                .format(s=sql.Identifier(build.schema)),
                [_ACCENTED, _UNACCENTED, patterns, year, year]).fetchall()  # fmt: skip
            found = [Document.from_json(row[0]) for row in rows]
            found = [document for document in found if has_surnames(document.authors, surnames)]
            return newest_first(found)[:limit]

        return self._call(look_up)

    # --- inside one call ---------------------------------------------------------------------------------------

    def _hnsw(self, connection: psycopg.Connection[Any], build: _Build, vector: str, top_n: int,
              where: sql.Composable | None, params: list[Any]) -> list[tuple[str, int, float]]:  # fmt: skip
        ef_search = min(HNSW_MAX_EF_SEARCH, max(self.ef_search, top_n))
        connection.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef_search)))
        if where is not None:  # pgvector >= 0.8: keep scanning the graph until enough rows pass the filter
            connection.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        query = sql.SQL(
            "SELECT c.chunk_id, c.chunk_no, -(c.embedding <#> %s::vector) FROM {s}.chunks c WHERE {where} "
            "ORDER BY c.embedding <=> %s::vector LIMIT %s"
        ).format(s=sql.Identifier(build.schema), where=where or sql.SQL("true"))
        return connection.execute(query, [vector, *params, vector, top_n]).fetchall()

    def _exact(self, connection: psycopg.Connection[Any], build: _Build, vector: str, top_n: int,
               where: sql.Composable | None, params: list[Any]) -> list[tuple[str, int, float]]:  # fmt: skip
        query = sql.SQL(
            "SELECT c.chunk_id, c.chunk_no, -(c.embedding <#> %s::vector) AS score FROM {s}.chunks c "
            "WHERE {where} ORDER BY score DESC, c.chunk_no LIMIT %s"
        ).format(s=sql.Identifier(build.schema), where=where or sql.SQL("true"))
        return connection.execute(query, [vector, *params, top_n]).fetchall()

    def _scored(self, connection: psycopg.Connection[Any], build: _Build, found: list[tuple[int, float]]
                ) -> list[ScoredChunk]:  # fmt: skip
        if not found:
            return []
        rows = connection.execute(
            sql.SQL("SELECT chunk_no, chunk_id FROM {}.chunks WHERE chunk_no = ANY(%s)")
            .format(sql.Identifier(build.schema)), [[chunk_no for chunk_no, _ in found]]).fetchall()  # fmt: skip
        ids = dict(rows)
        return [ScoredChunk(ids[chunk_no], score) for chunk_no, score in found]

    def _call(self, work: Callable[[psycopg.Connection[Any], _Build], T]) -> T:
        """Run `work` in one read-only transaction on the live build; BackendUnavailable on any database error.
        A failure on a reused connection (the server restarted since it was opened) is retried once."""
        for attempt in (1, 2):
            try:
                connection, reused = self._pool.take()
            except PoolExhausted as error:
                raise BackendUnavailable(f"PostgreSQL backend busy: {error}") from None
            except psycopg.Error as error:
                raise BackendUnavailable(f"PostgreSQL at {safe_dsn(self.dsn)} is unavailable: {_reason(error)}"
                                         ) from None  # fmt: skip
            try:
                with connection.transaction():  # BEGIN READ ONLY (the pool's connections are read-only)
                    result = work(connection, self._live_build(connection))
            except psycopg.OperationalError as error:
                self._pool.give(connection, broken=True)
                if reused and attempt == 1:
                    self._pool.clear()  # its idle neighbours are as stale
                    continue
                raise BackendUnavailable(f"PostgreSQL at {safe_dsn(self.dsn)} is unavailable: {_reason(error)}"
                                         ) from None  # fmt: skip
            except psycopg.Error as error:
                self._pool.give(connection, broken=True)
                raise BackendUnavailable(f"PostgreSQL query failed: {_reason(error)}") from None
            except BackendUnavailable:
                self._pool.give(connection)
                raise
            except BaseException:
                self._pool.give(connection, broken=True)
                raise
            self._pool.give(connection)
            return result
        raise AssertionError("unreachable")

    def _live_build(self, connection: psycopg.Connection[Any]) -> _Build:
        row = connection.execute(
            sql.SQL("SELECT build_id, schema_name FROM {}.current_build").format(sql.Identifier(POINTER_SCHEMA))
        ).fetchone()
        if row is None:
            raise BackendUnavailable("No build is published in the database yet: run `python -m indexing "
                                     "--backend postgres --dsn …`.")  # fmt: skip
        build_id, schema = row
        with self._builds_lock:
            build = self._builds.get(build_id)
        if build is not None:
            return build
        manifest = connection.execute(
            sql.SQL("SELECT manifest FROM {}.current_build WHERE build_id = %s").format(sql.Identifier(POINTER_SCHEMA)),
            [build_id],
        ).fetchone()[0]
        # Papers by year and without JEL codes, once per build (a chunk carries its paper's year and codes).
        counts = connection.execute(sql.SQL(
            "SELECT year, count(*), count(*) FILTER (WHERE cardinality(jel_codes) = 0) FROM (SELECT DISTINCT ON "
            "(doc_no) year, jel_codes FROM {}.chunks) papers GROUP BY year").format(sql.Identifier(schema))).fetchall()
        stats = CorpusStats({year: n for year, n, _ in counts}, {year: n for year, _, n in counts if n})
        build = _Build(build_id, schema, _info(manifest, stats), Bm25Tokenizer(_bm25_settings(manifest)))
        with self._builds_lock:
            if build_id in self._builds:  # another thread got here first
                return self._builds[build_id]
            self._builds = {build_id: build}  # only the live build is kept
        if self.prewarm:
            threading.Thread(target=self._warm_quietly, name="postgres-prewarm", daemon=True).start()
        return build

    def _warm_quietly(self) -> None:
        try:
            log.info("posting lists read into memory: %d", self.warm())
        except Exception as error:  # a background nicety: the next query reads what it needs
            log.warning("pre-warming the posting lists failed: %s", error)


def _info(manifest: dict[str, Any], stats: CorpusStats | None = None) -> BackendInfo:
    embedding = manifest["embedding"]
    return BackendInfo(
        kind="postgres",
        chunks=manifest["counts"]["chunks"],
        documents=manifest["counts"]["documents"],
        embedding_model=embedding["model_name"],
        embedding_weights_sha256=embedding["weights_sha256"],
        embedding_dimension=embedding["dimension"],
        manifest=manifest,
        stats=stats,
    )


def _bm25_settings(manifest: dict[str, Any]) -> Bm25Settings:
    names = {field.name for field in fields(Bm25Settings)}
    return Bm25Settings(**{name: value for name, value in manifest["bm25"].items() if name in names})


def _filter_sql(filters: SearchFilters | None) -> tuple[sql.Composable | None, list[Any]]:
    """A WHERE clause over chunks (alias c) and its values; (None, []) when nothing is filtered. A chunk without a
    year fails a year filter (NULL comparisons are not true), one without JEL codes a JEL filter."""
    if filters is None or filters.is_empty:
        return None, []
    clauses, params = [], []
    if filters.year_min is not None:
        clauses.append(sql.SQL("c.year >= %s"))
        params.append(filters.year_min)
    if filters.year_max is not None:
        clauses.append(sql.SQL("c.year <= %s"))
        params.append(filters.year_max)
    if filters.jel_prefix is not None:  # the stored codes are upper-cased: a case-insensitive prefix
        clauses.append(sql.SQL("EXISTS (SELECT 1 FROM unnest(c.jel_codes) AS j(code) WHERE starts_with(j.code, %s))"))
        params.append(filters.jel_prefix.strip().upper())
    return sql.SQL(" AND ").join(clauses), params


def _vector_text(vector: np.ndarray) -> str:
    values = np.asarray(vector, dtype=np.float32).ravel()
    return "[" + ",".join(repr(float(value)) for value in values) + "]"


def _vector_of(text: str) -> np.ndarray:
    """pgvector's text form, "[0.1,0.2,...]", as a float32 array."""
    return np.array([float(value) for value in text.strip("[]").split(",")], dtype=np.float32)


def _reason(error: psycopg.Error) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
