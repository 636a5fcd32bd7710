"""BM25 top-n over the postings table: exact, and cheap even when the query's words are common.

A query's score for a chunk is sum over its distinct terms of count x weight (the stored weight is the chunk's
BM25 summand for the term, so this is rank-bm25's get_scores()). Three ways to the top n, all exact:

* arrays (the default): every posting of every query term summed per chunk in numpy, the long lists (common
  words, df >= cache_min_df; every list, when a build's postings fit half the budget) kept in this process's
  memory per build (builds never change), the short ones read per query with one binary COPY. A query of
  common words over 1M chunks sums a few million cached postings in milliseconds, where SQL aggregation or
  reading lists in weight order takes a second. With a filter, the best chunks are checked against it in SQL,
  best first, in growing batches (a very selective filter hands over to SQL aggregation).
* full aggregation in SQL: every posting of every query term, summed per chunk by the database, filters as a
  join to chunks.
* the threshold algorithm (Fagin et al.'s no-random-access variant, NRA, with exact scoring at the end): read
  each term's postings best first (the postings_by_weight index) in growing prefixes. Every chunk not read yet
  scores at most T = sum of count x (the last weight read from each list), since lists are sorted and weights
  are not negative. Once the n-th best partial score of the chunks read is above T, the top n are among the
  chunks read, and only those whose upper bound reaches that n-th partial score need their exact scores (one
  primary-key probe per term and candidate). Long lists (common words) are then read only a prefix deep.

  Measured on synthetic text with independent words (benchmarks.postgres_scale), it read about half of the
  common words' lists and was slower than full aggregation, so it is opt-in (strategy="threshold").

Filters restrict every list before it is read (a join to chunks), so SQL ways are exact under filters too.
Ties: score desc, then chunk_no (ingestion order), as the local index.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from indexing.postgres import copy_binary as wire


@dataclass(frozen=True)
class KeywordSettings:
    strategy: str = "auto"  # "auto" (= "arrays") | "arrays" | "sql" | "threshold"
    cache_min_df: int = 5_000  # posting lists at least this long are kept in memory (arrays strategy)
    cache_bytes: int = 512 << 20  # at most this much memory for them (least recently used lists go first)
    filter_batch: int = 256  # arrays with a filter: best chunks checked in the first batch (8 x top_n at least)
    max_filter_checks: int = 200_000  # arrays with a filter: best chunks checked before SQL aggregation takes over
    full_aggregation_below: int = 20_000  # threshold strategy: total postings under which it just sums them all
    first_prefix: int = 64  # postings read per term in the first round (at least 2 x top_n)
    growth: int = 2  # each round reads this many times more per term
    max_read: int = 400_000  # postings read by the threshold algorithm before it falls back to full aggregation


@dataclass(frozen=True)
class QueryTerm:
    term_id: int
    count: int  # occurrences in the query: a repeated word counts again, as in get_scores()
    df: int
    max_weight: float
    min_weight: float


@dataclass
class KeywordStats:
    """How the last search went (for tests and the benchmark)."""

    method: str = ""  # "arrays" | "full" | "threshold" | "threshold->full"
    rounds: int = 0
    postings_read: int = 0
    candidates: int = 0


def top_chunks(connection: psycopg.Connection[Any], schema: str, chunk_count: int, terms: list[QueryTerm],
               top_n: int, where: sql.Composable | None, params: list[Any], settings: KeywordSettings,
               cache: PostingCache, stats: KeywordStats) -> list[tuple[int, float]]:  # fmt: skip
    """(chunk_no, score) best first, only chunks with a positive score; `where` (over chunks as c, None: no
    filter) restricts the corpus first, with `params` its values."""
    if top_n <= 0 or not terms:
        return []
    strategy = "arrays" if settings.strategy == "auto" else settings.strategy
    if strategy == "arrays":
        stats.method = "arrays"
        found = array_aggregation(connection, schema, chunk_count, terms, top_n, where, params, settings, cache)
        if found is not None:
            return found
        stats.method = "arrays->full"
    if strategy != "threshold":
        stats.method = "arrays->full" if strategy == "arrays" else "full"
        return full_aggregation(connection, schema, terms, top_n, where, params)
    total = sum(term.df for term in terms)
    if total <= settings.full_aggregation_below or any(term.min_weight < 0 for term in terms):
        stats.method = "full"
        return full_aggregation(connection, schema, terms, top_n, where, params)
    found = threshold_algorithm(connection, schema, terms, top_n, where, params, settings, stats)
    if found is None:
        stats.method = "threshold->full"
        return full_aggregation(connection, schema, terms, top_n, where, params)
    stats.method = "threshold"
    return found


class PostingCache:
    """Long posting lists of the live build, (chunk_nos int32, weights float64) per (schema, term_id), LRU."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._lists: OrderedDict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, schema: str, term_id: int) -> tuple[np.ndarray, np.ndarray] | None:
        with self._lock:
            found = self._lists.get((schema, term_id))
            if found is not None:
                self._lists.move_to_end((schema, term_id))
            return found

    def put(self, schema: str, term_id: int, chunks: np.ndarray, weights: np.ndarray) -> None:
        size = chunks.nbytes + weights.nbytes
        with self._lock:
            for key in [key for key in self._lists if key[0] != schema]:  # an older build's lists
                self._bytes -= sum(array.nbytes for array in self._lists.pop(key))
            if (schema, term_id) in self._lists or size > self.max_bytes:
                return
            while self._lists and self._bytes + size > self.max_bytes:
                _, evicted = self._lists.popitem(last=False)
                self._bytes -= sum(array.nbytes for array in evicted)
            self._lists[(schema, term_id)] = (chunks, weights)
            self._bytes += size


def array_aggregation(connection: psycopg.Connection[Any], schema: str, chunk_count: int, terms: list[QueryTerm],
                      top_n: int, where: sql.Composable | None, params: list[Any], settings: KeywordSettings,
                      cache: PostingCache) -> list[tuple[int, float]] | None:  # fmt: skip
    """Sum the lists in numpy. With a filter, the best chunks are checked against it in SQL, best first, in
    growing batches until top_n pass; None when more than settings.max_filter_checks would be checked."""
    lists: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    missing = []
    for term in terms:
        found = cache.get(schema, term.term_id)  # the long lists, or every list of a build small enough
        if found is None:
            missing.append(term.term_id)
        else:
            lists[term.term_id] = found
    if missing:
        for term_id, (chunks, weights) in read_lists(connection, schema, missing).items():
            lists[term_id] = (chunks, weights)
            if len(chunks) >= settings.cache_min_df:
                cache.put(schema, term_id, chunks, weights)
    scores = np.zeros(chunk_count, dtype=np.float64)
    for term in terms:  # in term order, as the SQL ways; chunks are unique within a list
        chunks, weights = lists[term.term_id]
        scores[chunks] += term.count * weights
    positive = np.flatnonzero(scores > 0)
    if where is None:
        return _ranked(*_best(positive, scores, top_n), top_n)
    passing: list[tuple[int, float]] = []
    checked, depth = 0, max(8 * top_n, settings.filter_batch)
    check = sql.SQL("SELECT chunk_no FROM {}.chunks c WHERE c.chunk_no = ANY(%s::int4[]) AND {}").format(
        sql.Identifier(schema), where)
    while True:
        chunks, best = _best(positive, scores, depth)
        order = np.lexsort((chunks, -best))
        batch = chunks[order[checked:]]
        allowed = {row[0] for row in connection.execute(check, [batch.tolist(), *params])}
        passing += [(int(chunk), float(scores[chunk])) for chunk in batch if int(chunk) in allowed]
        checked = len(chunks)
        if len(passing) >= top_n or checked == len(positive):
            return passing[:top_n]
        if checked >= settings.max_filter_checks:
            return None
        depth *= 8


def read_lists(connection: psycopg.Connection[Any], schema: str, term_ids: list[int]
               ) -> dict[int, tuple[np.ndarray, np.ndarray]]:  # fmt: skip
    """The posting lists of these terms, (chunk_nos int32, weights float64) by chunk_no, in one binary COPY."""
    term_ids = sorted(term_ids)
    statement = sql.SQL(
        "COPY (SELECT term_id, chunk_no, weight FROM {}.postings WHERE term_id = ANY({}::int4[]) "
        "ORDER BY term_id, chunk_no) TO STDOUT (FORMAT BINARY)"
    ).format(sql.Identifier(schema), sql.Literal(term_ids))
    rows = _copy_rows(connection, statement, [])
    bounds = np.searchsorted(rows["i"], [*term_ids, np.iinfo(np.int64).max])
    return {term_id: (rows["chunk"][bounds[n]:bounds[n + 1]].astype(np.int32), rows["weight"][bounds[n]:bounds[n + 1]])
            for n, term_id in enumerate(term_ids)}  # fmt: skip


def warm(connection: psycopg.Connection[Any], schema: str, settings: KeywordSettings, cache: PostingCache) -> int:
    """Read the longest posting lists into the cache, up to half its budget; how many lists were read. A build
    whose postings all fit (the 2,381 AER chunks: about 2 MB) is then searched without reading any list: read
    per query, its ~1,000 short postings cost more than the rest of the keyword leg."""
    rows = connection.execute(
        sql.SQL("SELECT term_id, df FROM {}.terms ORDER BY df DESC, term_id").format(sql.Identifier(schema))
    ).fetchall()
    chosen, total = [], 0
    for term_id, df in rows:
        total += df * 12  # int32 chunk_no + float64 weight
        if total > settings.cache_bytes // 2:
            break
        chosen.append(term_id)
    for start in range(0, len(chosen), 16):
        for term_id, (chunks, weights) in read_lists(connection, schema, chosen[start:start + 16]).items():
            cache.put(schema, term_id, chunks, weights)
    return len(chosen)


def _best(candidates: np.ndarray, scores: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The candidates with the `count` best scores, and every candidate tied with the last of them."""
    if len(candidates) > count:
        kth = np.partition(scores[candidates], len(candidates) - count)[len(candidates) - count]
        candidates = candidates[scores[candidates] >= kth]
    return candidates, scores[candidates]


def full_aggregation(connection: psycopg.Connection[Any], schema: str, terms: list[QueryTerm], top_n: int,
                     where: sql.Composable | None, params: list[Any]) -> list[tuple[int, float]]:  # fmt: skip
    query = sql.SQL(
        "SELECT p.chunk_no, sum(p.weight * q.n) AS score "
        "FROM unnest(%s::int4[], %s::float8[]) AS q(term_id, n) "
        "JOIN {s}.postings p ON p.term_id = q.term_id {join} "
        "WHERE {where} GROUP BY p.chunk_no HAVING sum(p.weight * q.n) > 0 ORDER BY score DESC, p.chunk_no LIMIT %s"
    ).format(s=sql.Identifier(schema), join=_join(schema, where), where=where or sql.SQL("true"))
    ids, counts = [term.term_id for term in terms], [float(term.count) for term in terms]
    rows = connection.execute(query, [ids, counts, *params, top_n]).fetchall()
    return [(int(chunk_no), float(score)) for chunk_no, score in rows]


def threshold_algorithm(connection: psycopg.Connection[Any], schema: str, terms: list[QueryTerm], top_n: int,
                        where: sql.Composable | None, params: list[Any], settings: KeywordSettings,
                        stats: KeywordStats) -> list[tuple[int, float]] | None:  # fmt: skip
    """The exact top n, or None when more than settings.max_read postings would have to be read.

    Each round reads the next `take` postings of every list not read to its end (binary COPY into numpy).
    A chunk's lower bound is the sum of what was read of it; its upper bound adds count x last weight of each
    unfinished list it was not seen in; a chunk never seen is bounded by T = the sum over unfinished lists.
    Stop once the n-th best lower bound is above T; then only chunks whose upper bound reaches the n-th best
    lower bound can be in the top n, and those are scored exactly."""
    if len(terms) > 60:
        return None  # seen-sets are bit masks
    read_prefix = sql.SQL(
        "COPY (SELECT q.i, r.chunk_no, r.weight FROM unnest({ids}::int4[], {term_ids}::int4[], {skips}::int4[]) "
        "AS q(i, term_id, skip) CROSS JOIN LATERAL (SELECT p.chunk_no, p.weight FROM {s}.postings p {join} "
        "WHERE p.term_id = q.term_id AND {where} ORDER BY p.weight DESC, p.chunk_no OFFSET q.skip LIMIT {take}) r"
        ") TO STDOUT (FORMAT BINARY)"
    )
    counts = np.array([term.count for term in terms], dtype=np.float64)
    last = np.array([term.max_weight for term in terms], dtype=np.float64)  # bounds the unread weights
    offset = np.zeros(len(terms), dtype=np.int64)
    open_lists = list(range(len(terms)))
    read: list[np.ndarray] = []
    take = max(settings.first_prefix, 2 * top_n)
    while True:
        stats.rounds += 1
        statement = read_prefix.format(
            ids=sql.Literal(open_lists), term_ids=sql.Literal([terms[i].term_id for i in open_lists]),
            skips=sql.Literal([int(offset[i]) for i in open_lists]), s=sql.Identifier(schema),
            join=_join(schema, where), where=where or sql.SQL("true"), take=sql.Literal(take),
        )  # fmt: skip
        rows = _copy_rows(connection, statement, params)
        read.append(rows)
        stats.postings_read += len(rows)
        got = np.bincount(rows["i"], minlength=len(terms))
        for i in open_lists:
            if got[i]:
                last[i] = rows["weight"][rows["i"] == i].min()
        offset += got
        open_lists = [i for i in open_lists if got[i] == take]  # a shorter read reached the list's end
        everything = np.concatenate(read)
        chunks, inverse = np.unique(everything["chunk"], return_inverse=True)
        lower = np.bincount(inverse, weights=counts[everything["i"]] * everything["weight"])
        if not open_lists:  # every list read to its end: the sums are the exact scores
            stats.candidates = len(chunks)
            return _ranked(chunks, lower, top_n)
        threshold = float(counts[open_lists] @ last[open_lists])
        kth = np.partition(lower, len(lower) - top_n)[len(lower) - top_n] if len(lower) >= top_n else -np.inf
        if kth > threshold:
            break
        if stats.postings_read > settings.max_read:
            return None
        take *= settings.growth
    seen = np.bincount(inverse, weights=np.exp2(everything["i"].astype(np.float64))).astype(np.int64)
    upper = lower.copy()
    for i in open_lists:
        upper += np.where((seen >> i) & 1, 0.0, counts[i] * last[i])
    candidates = chunks[upper >= kth]
    stats.candidates = len(candidates)
    return _exact_scores(connection, schema, terms, candidates.tolist(), top_n)


def _copy_rows(connection: psycopg.Connection[Any], statement: sql.Composable, params: list[Any]) -> np.ndarray:
    """(i int4, chunk_no int4, weight float8) rows of a binary COPY TO, as a numpy record array."""
    with connection.cursor().copy(statement, params or None) as copy:
        data = b"".join(bytes(block) for block in copy)
    body = data[len(wire.HEADER):-len(wire.TRAILER)]
    raw = np.frombuffer(body, dtype=wire.POSTING_DTYPE)
    out = np.empty(len(raw), dtype=[("i", np.int64), ("chunk", np.int64), ("weight", np.float64)])
    out["i"], out["chunk"], out["weight"] = raw["term"], raw["chunk"], raw["weight"]
    return out


def _ranked(chunks: np.ndarray, scores: np.ndarray, top_n: int) -> list[tuple[int, float]]:
    """Positive scores, best first, ties to the lower chunk_no (chunks are sorted ascending)."""
    order = np.argsort(-scores, kind="stable")
    return [(int(chunks[row]), float(scores[row])) for row in order[:top_n] if scores[row] > 0]


def _exact_scores(connection: psycopg.Connection[Any], schema: str, terms: list[QueryTerm], candidates: list[int],
                  top_n: int) -> list[tuple[int, float]]:  # fmt: skip
    query = sql.SQL(
        "SELECT p.chunk_no, sum(p.weight * q.n) AS score "
        "FROM unnest(%s::int4[], %s::float8[]) AS q(term_id, n) "
        "JOIN {s}.postings p ON p.term_id = q.term_id AND p.chunk_no = ANY(%s::int4[]) "
        "GROUP BY p.chunk_no HAVING sum(p.weight * q.n) > 0 ORDER BY score DESC, p.chunk_no LIMIT %s"
    ).format(s=sql.Identifier(schema))
    ids, counts = [term.term_id for term in terms], [float(term.count) for term in terms]
    rows = connection.execute(query, [ids, counts, candidates, top_n]).fetchall()
    return [(int(chunk_no), float(score)) for chunk_no, score in rows]


def _join(schema: str, where: sql.Composable | None) -> sql.Composable:
    """The chunks a filter looks at, joined only when there is a filter."""
    if where is None:
        return sql.SQL("")
    return sql.SQL("JOIN {}.chunks c ON c.chunk_no = p.chunk_no").format(sql.Identifier(schema))
