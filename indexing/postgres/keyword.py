"""BM25 top-n over the postings table: exact, and cheap even when the query's words are common.

A query's score for a chunk is sum over its distinct terms of count x weight (the stored weight is the chunk's
BM25 summand for the term, so this is rank-bm25's get_scores()). Two ways to the top n:

* full aggregation: every posting of every query term, summed per chunk in SQL. Used when the lists are short
  (their total length, from terms.df, below `full_aggregation_below`), and as the fallback.
* the threshold algorithm (Fagin et al., its no-random-access reading with exact scoring at the end): read each
  term's postings best first (the postings_by_weight index) in growing prefixes. Every chunk not read yet
  scores at most T = sum of count x (the last weight read from each list), since lists are sorted and weights
  are not negative. Once the n-th best partial score of the chunks read is above T, the top n are among them:
  their exact scores (one primary-key probe per term and candidate) are ranked. Lists with long tails of small
  weights (common words: their idf is floored by rank-bm25's epsilon) are then read only a prefix deep.

Filters restrict every list before it is read (a join to chunks), so both ways are exact under filters too.
Ties: score desc, then chunk_no (ingestion order), as the local index.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql


@dataclass(frozen=True)
class KeywordSettings:
    full_aggregation_below: int = 20_000  # total postings of the query's terms under which we just sum them all
    first_prefix: int = 64  # postings read per term in the first round (at least 2 x top_n)
    growth: int = 4  # each round reads this many times more per term
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

    method: str = ""  # "full" | "threshold" | "threshold->full"
    rounds: int = 0
    postings_read: int = 0
    candidates: int = 0


def top_chunks(connection: psycopg.Connection[Any], schema: str, terms: list[QueryTerm], top_n: int,
               where: sql.Composable | None, params: list[Any], settings: KeywordSettings, stats: KeywordStats
               ) -> list[tuple[int, float]]:  # fmt: skip
    """(chunk_no, score) best first, only chunks with a positive score; `where` (over chunks as c, None: no
    filter) restricts the corpus first, with `params` its values."""
    if top_n <= 0 or not terms:
        return []
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
                        where: sql.Composable | None, params: list[Any], settings: KeywordSettings, stats: KeywordStats
                        ) -> list[tuple[int, float]] | None:  # fmt: skip
    """The exact top n, or None when more than settings.max_read postings would have to be read."""
    read_prefix = sql.SQL(
        "SELECT q.i, r.chunk_no, r.weight FROM unnest(%s::int4[], %s::int4[], %s::int4[], %s::int4[]) "
        "AS q(i, term_id, skip, take) CROSS JOIN LATERAL ("
        "SELECT p.chunk_no, p.weight FROM {s}.postings p {join} "
        "WHERE p.term_id = q.term_id AND {where} ORDER BY p.weight DESC, p.chunk_no OFFSET q.skip LIMIT q.take) r"
    ).format(s=sql.Identifier(schema), join=_join(schema, where), where=where or sql.SQL("true"))
    partial: dict[int, float] = {}
    last = [term.max_weight for term in terms]  # upper bound of each list's unread weights
    offset = [0] * len(terms)
    open_lists = set(range(len(terms)))
    take = max(settings.first_prefix, 2 * top_n)
    while open_lists:
        stats.rounds += 1
        reading = sorted(open_lists)
        rows = connection.execute(read_prefix, [reading, [terms[i].term_id for i in reading],
                                                [offset[i] for i in reading], [take] * len(reading),
                                                *params]).fetchall()  # fmt: skip
        got = dict.fromkeys(reading, 0)
        for i, chunk_no, weight in rows:
            partial[chunk_no] = partial.get(chunk_no, 0.0) + terms[i].count * weight
            last[i] = min(last[i], weight)
            got[i] += 1
        stats.postings_read += len(rows)
        for i in reading:
            offset[i] += got[i]
            if got[i] < take:
                open_lists.discard(i)  # the list is read to its end: nothing unread remains in it
        threshold = sum(terms[i].count * last[i] for i in open_lists)
        best = heapq.nlargest(top_n, partial.values())
        if not open_lists or (len(best) == top_n and best[-1] > threshold):
            break
        if stats.postings_read > settings.max_read:
            return None
        take *= settings.growth
    stats.candidates = len(partial)
    return _exact_scores(connection, schema, terms, sorted(partial), top_n)


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
