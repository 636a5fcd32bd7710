"""Load-test the real service over loopback: search latency and throughput, answer time to first token.

Starts `python -m app` (the real index, reranker and generator) on 127.0.0.1, then drives it with a
bounded number of concurrent clients for a bounded number of requests:

    .venv/bin/python -m benchmarks.service_benchmark [--index var/index] [--requests 64] [--answers 3]

Prints a table and writes benchmarks/results/service_<device>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

import httpx

from benchmarks.common import REPO_ROOT, machine, relative, write_results
from benchmarks.service import ask_streamed, percentile, running_service

SEARCH_QUERIES = [
    "minimum wage effects on employment", "monetary policy and bank lending", "trade shocks local labor markets",
    "inflation expectations of firms", "school vouchers student achievement", "carbon tax emissions",
    "microfinance household investment", "information frictions job search", "household debt and consumption",
    "gender wage gap", "auction design spectrum", "tax evasion enforcement", "health insurance mandates",
    "exchange rate pass-through", "housing prices and credit supply", "peer effects in education",
]  # fmt: skip
ASK_QUESTIONS = [
    "Does raising the minimum wage reduce employment?",
    "How do firms form their inflation expectations?",
    "What happened to local labor markets exposed to Chinese import competition?",
]


def search_query(i: int) -> str:
    """The i-th of up to 256 distinct queries (two topics joined), so that the service's cache of query
    embeddings never answers for the encoder: every request is timed cold."""
    n = len(SEARCH_QUERIES)
    return f"{SEARCH_QUERIES[i % n]} and {SEARCH_QUERIES[(i + i // n + 1) % n]}"


async def search_load(base: str, concurrency: int, requests: int, rerank: bool, first: int = 0) -> dict:
    latencies: list[float] = []
    counter = iter(range(first, first + requests))

    async def client_loop(client: httpx.AsyncClient) -> None:
        for i in counter:
            body = {"query": search_query(i), "top_k": 10, "rerank": rerank}
            started = time.perf_counter()
            response = await client.post(f"{base}/v1/search", json=body)
            response.raise_for_status()
            latencies.append((time.perf_counter() - started) * 1000)

    async with httpx.AsyncClient(timeout=120) as client:
        started = time.perf_counter()
        await asyncio.gather(*(client_loop(client) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return {
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(percentile(latencies, 0.95), 1),
        "throughput_rps": round(len(latencies) / elapsed, 1),
        "requests": len(latencies),
    }


async def ask_timing(base: str, question: str, max_new_tokens: int) -> dict:
    # The default answering path, coverage decision included: these questions are covered.
    body = {"query": question, "generation": {"max_new_tokens": max_new_tokens}}  # the service's default passages
    async with httpx.AsyncClient(timeout=600) as client:
        answer = await ask_streamed(client, base, body)
    usage = answer.done.get("usage", {})
    return {
        "ttft_s": round(answer.first_token_s or answer.total_s, 3),
        "total_s": round(answer.total_s, 3),
        "generated_tokens": usage.get("generated_tokens"),
        "prompt_tokens": usage.get("prompt_tokens"),
        "covered": answer.done.get("covered"),
    }


async def run(base: str, args: argparse.Namespace) -> dict:
    info = httpx.get(f"{base}/v1/info").json()
    rerank_available = info["reranker"]["available"]
    for query in SEARCH_QUERIES[:4]:  # warm-up, on queries no row asks (rows join two topics)
        httpx.post(f"{base}/v1/search", json={"query": query}, timeout=120).raise_for_status()
    search = []
    for rerank in ([False, True] if rerank_available else [False]):
        for concurrency in (1, 16):
            row = await search_load(base, concurrency, args.requests, rerank, first=len(search) * args.requests)
            search.append({"rerank": rerank, "concurrency": concurrency, **row})
    await ask_timing(base, "What do economists know about household saving?", 8)  # warm-up, not a timed prompt
    asks = [await ask_timing(base, q, args.max_new_tokens) for q in ASK_QUESTIONS[: args.answers]]
    return {"device": info["device"], "reranker": info["reranker"]["model"], "search": search, "ask": asks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--requests", type=int, default=64, help="search requests per row")
    parser.add_argument("--answers", type=int, default=3, help="streamed answers to time")
    parser.add_argument("--max-new-tokens", type=int, default=150)
    parser.add_argument("--reranker", type=Path, default=None,
                        help="serve with this reranker instead of the default (models/weights/reranker)")
    args = parser.parse_args()

    env = {"AER_RAG_GENERATION__QUEUE_SIZE": "64"}
    if args.reranker is not None:
        env["AER_RAG_RERANKER__MODEL_DIR"] = str(args.reranker)
    with running_service(args.index, args.device, env) as base:
        result = asyncio.run(run(base, args))

    print(f"\nService on {result['device']} (reranker: {result['reranker']})")
    print("| /v1/search | concurrency | p50 ms | p95 ms | requests/s |")
    print("|---|---:|---:|---:|---:|")
    for row in result["search"]:
        label = "hybrid + rerank" if row["rerank"] else "hybrid"
        print(f"| {label} | {row['concurrency']} | {row['p50_ms']} | {row['p95_ms']} | {row['throughput_rps']} |")
    print("\n| /v1/ask (default settings, streamed) | prompt tokens | generated | first token s | total s |")
    print("|---|---:|---:|---:|---:|")
    for question, row in zip(ASK_QUESTIONS, result["ask"], strict=False):
        counts = f"{row['prompt_tokens']} | {row['generated_tokens']}"
        print(f"| {question} | {counts} | {row['ttft_s']} | {row['total_s']} |")
    arguments = {k: relative(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    out = write_results(f"service_{result['device']}", {**result, "machine": machine(), "args": arguments})
    print(f"\nwrote {relative(out)}")


if __name__ == "__main__":
    main()
