"""Many users at once: concurrent streamed /v1/ask clients against the real service, the old serial queue (one
slot: answers generated one at a time) beside the continuous-batching engine (eight slots), in one run.

Every request generates (the answerability decision is off) with a fixed max_new_tokens; each client asks its
questions one after another. Per concurrency: aggregate generated tokens/s, p50/p95 time to first token and total
latency, and the wall time of the whole round.

    python -m benchmarks.load_benchmark [--index var/index] [--concurrency 1 2 4 8 16] [--max-new-tokens 48]

Then the same eight questions asked one after another and all at once, twice: as above, and with the service's
defaults (the answerability decision on, its default answer length), with the server's CPU seconds for each
round: on 2 cores, asking at once can only help where batching makes the work itself cheaper.
`--eight-only` runs just that comparison on the batching engine (writes load_eight.json), once per `--config
LABEL:AER_RAG_X=V,…` when given (side by side, one run).

Prints a table and writes benchmarks/results/load.json.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import time
from pathlib import Path

import httpx

from benchmarks.common import REPO_ROOT, machine, relative, write_results
from benchmarks.service import ServiceConfig, ask_streamed, cpu_seconds, percentile, served

QUESTIONS = [
    "Does raising the minimum wage reduce employment?", "How do firms form their inflation expectations?",
    "What happened to local labor markets exposed to Chinese import competition?",
    "Do school vouchers raise student achievement?", "How do banks respond to monetary tightening?",
    "Does microcredit raise household consumption?", "What explains the gender gap in earnings?",
    "How does immigration affect the wages of native workers?", "Do carbon taxes reduce emissions?",
    "What drives house prices in booms?", "How do auctions allocate spectrum licenses?",
    "Why do bank runs happen?", "How do tariffs pass through to consumer prices?",
    "Does health insurance coverage improve health?", "What role do social networks play in finding jobs?",
    "How do credit constraints affect small businesses?",
]  # fmt: skip
ENGINES = {"serial (1 slot)": {"AER_RAG_GENERATION__SLOTS": "1"}, "continuous batching (8 slots)": {}}


async def round_of(base: str, clients: int, per_client: int, max_new_tokens: int | None) -> dict:
    """max_new_tokens None: the service's defaults (the decision on, its own answer length)."""
    body = {} if max_new_tokens is None else {"coverage_check": False, "generation": {"max_new_tokens": max_new_tokens}}
    answers = []

    async def client(number: int) -> None:
        async with httpx.AsyncClient(timeout=600) as http:
            for turn in range(per_client):
                question = QUESTIONS[(number * per_client + turn) % len(QUESTIONS)]
                answers.append(await ask_streamed(http, base, {**body, "query": question}))

    started = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    wall = time.perf_counter() - started
    failed = [a for a in answers if a.status != 200 or a.error]
    first = [a.first_token_s for a in answers if a.first_token_s is not None]
    totals = [a.total_s for a in answers]
    tokens = sum(a.done.get("usage", {}).get("generated_tokens", 0) for a in answers)
    return {
        "clients": clients, "requests": len(answers), "failed": len(failed), "wall_s": round(wall, 2),
        "generated_tokens": tokens, "tokens_per_s": round(tokens / wall, 1),
        "first_token_p50_s": round(percentile(first, 0.5), 3) if first else None,
        "first_token_p95_s": round(percentile(first, 0.95), 3) if first else None,
        "total_p50_s": round(percentile(totals, 0.5), 3), "total_p95_s": round(percentile(totals, 0.95), 3),
    }  # fmt: skip


def eight_questions(server: subprocess.Popen, base: str, max_new_tokens: int | None) -> dict:
    """The same eight questions one after another, then all at once: wall and server CPU seconds of each."""
    row: dict = {}
    for name, clients, per_client in (("one_after_another", 1, 8), ("at_once", 8, 1)):
        before = cpu_seconds(server.pid)
        result = asyncio.run(round_of(base, clients, per_client, max_new_tokens))
        after = cpu_seconds(server.pid)
        row[f"{name}_s"] = result["wall_s"]
        row[f"{name}_cpu_s"] = None if before is None or after is None else round(after - before, 1)
    row["ratio"] = round(row["one_after_another_s"] / row["at_once_s"], 2)
    return row


def print_eight(eight: dict[str, dict]) -> None:
    for name, row in eight.items():
        print(f"{name}: 8 questions one after another {row['one_after_another_s']} s "
              f"({row['one_after_another_cpu_s']} CPU s), at once {row['at_once_s']} s ({row['at_once_cpu_s']} CPU s):"
              f" {row['ratio']}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load_benchmark", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--per-client", type=int, default=2, help="questions each client asks in turn")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--eight-only", action="store_true", help="only the eight-questions comparison")
    parser.add_argument("--config", action="append", type=ServiceConfig.parse, default=[],
                        help="with --eight-only: LABEL[:AER_RAG_X=V,…], repeatable")  # fmt: skip
    args = parser.parse_args()
    results: dict[str, list[dict]] = {}
    eight: dict[str, dict] = {}
    engines = ENGINES
    if args.eight_only:
        batching = "continuous batching (8 slots)"
        engines = {f"{batching}, {c.label}": {**ENGINES[batching], **c.env} for c in args.config} or \
            {batching: ENGINES[batching]}  # fmt: skip
    for engine, env in engines.items():
        # Room for every client: admission (429) is not what is measured here.
        env = {**env, "AER_RAG_GENERATION__QUEUE_SIZE": str(max(args.concurrency) * 2)}
        with served(args.index, "cpu", env) as (server, base):
            asyncio.run(round_of(base, 1, 1, 8))  # warm-up
            if not args.eight_only:
                results[engine] = []
                for clients in args.concurrency:
                    row = asyncio.run(round_of(base, clients, args.per_client, args.max_new_tokens))
                    results[engine].append(row)
                    print(f"{engine}, {clients} clients: {row}", flush=True)
            eight[engine] = eight_questions(server, base, args.max_new_tokens)
            eight[f"{engine}, service defaults"] = eight_questions(server, base, None)
    arguments = {k: relative(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "config"}
    arguments["config"] = [{"label": c.label, "env": c.env} for c in args.config]
    if args.eight_only:
        print_eight(eight)
        out = write_results("load_eight", {"machine": machine(), "args": arguments, "eight": eight})
        print(f"wrote {relative(out)}")
        return
    print("\n| engine | clients | requests | tokens/s | first token p50 / p95 s | total p50 / p95 s | wall s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for engine, rows in results.items():
        for r in rows:
            print(f"| {engine} | {r['clients']} | {r['requests']} | {r['tokens_per_s']} | {r['first_token_p50_s']} / "
                  f"{r['first_token_p95_s']} | {r['total_p50_s']} / {r['total_p95_s']} | {r['wall_s']} |")
    serial, batched = (results[name] for name in ENGINES)
    speedups = {str(a["clients"]): round(a["wall_s"] / b["wall_s"], 2) for a, b in zip(serial, batched, strict=True)}
    print(f"\nwall-time speed-up of continuous batching over the serial queue, by clients: {speedups}")
    print_eight(eight)
    payload = {"machine": machine(), "args": arguments, "engines": results, "speedup": speedups, "eight": eight}
    out = write_results("load", payload)
    print(f"wrote {relative(out)}")


if __name__ == "__main__":
    main()
