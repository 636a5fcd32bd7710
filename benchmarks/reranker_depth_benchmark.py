"""How deep a cross-encoder can the 300 ms rerank budget afford? Rerank-30 latency by encoder depth.

    .venv/bin/python -m benchmarks.reranker_depth_benchmark [--queries 60] [--depths 3 4 6]

Each depth is the shipped reranker's architecture cut or grown from all-MiniLM-L6-v2 (untrained heads:
latency does not depend on the weights). Every depth scores the same candidates: the hybrid top 30 of
SciFact test queries from the evaluation index (var/eval/scifact), as the service would, and the
shipped reranker runs beside them as the reference. Prints a table and writes
benchmarks/results/reranker_depth.json. Run on an idle machine: the cores are shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.common import REPO_ROOT
from indexing.embedding import default_model_dir
from retrieval.hybrid import HybridRetriever
from retrieval.reranker import DEFAULT_RERANKER_DIR, CrossEncoderReranker, passage_text
from training.evaluation.beir import BeirDataset
from training.evaluation.harness import ingest_beir, latency_summary
from training.reranker.trainer import RerankerTrainer, TrainingSettings

BUDGET_MS = 300.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=REPO_ROOT.parent / "shared" / "eval" / "beir" / "scifact")
    parser.add_argument("--work-dir", type=Path, default=REPO_ROOT / "var" / "eval")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--depths", type=int, nargs="+", default=[3, 4, 6])
    parser.add_argument("--top-m", type=int, default=30)
    return parser.parse_args()


def time_reranker(name: str, reranker: CrossEncoderReranker, workload: list[tuple[str, list[str]]]) -> dict:
    """One row: the reranker's depth and its per-query latency (as retrieval_eval's rerank column reports it)."""
    reranker.score(*workload[0])  # warm-up: first-call allocations
    timings = []
    for query, passages in workload:
        started = time.perf_counter()
        reranker.score(query, passages)
        timings.append((time.perf_counter() - started) * 1000)
    summary = latency_summary(timings)
    return {"model": name, "layers": reranker.model.config.num_hidden_layers,
            "mean_ms": summary["mean"], "p95_ms": summary["p95"]}  # fmt: skip


def main() -> None:
    args = parse_args()
    dataset = BeirDataset.load(args.dataset, split="test")
    retriever = HybridRetriever(ingest_beir(dataset, args.work_dir / dataset.name))
    workload = []
    for query in list(dataset.queries.values())[: args.queries]:
        hits = retriever.retrieve(query, top_n=args.top_m)
        workload.append((query, [passage_text(hit.chunk.title, hit.chunk.text) for hit in hits]))

    rows = [time_reranker("shipped reranker", CrossEncoderReranker(DEFAULT_RERANKER_DIR), workload)]
    with tempfile.TemporaryDirectory() as scratch:
        for depth in args.depths:
            model_dir = Path(scratch) / f"L{depth}"
            RerankerTrainer(default_model_dir(), TrainingSettings(steps=0, num_layers=depth)).save(
                model_dir, {"name": f"untrained-L{depth}"}
            )
            rows.append(time_reranker(f"{depth} layers", CrossEncoderReranker(model_dir), workload))

    lines = [
        f"Rerank of the hybrid top {args.top_m}, {len(workload)} SciFact test queries, "
        f"{torch.get_num_threads()} CPU threads (budget {BUDGET_MS:.0f} ms)",
        "",
        "| model | layers | mean ms | p95 ms | within budget |",
        "|---|---:|---:|---:|---|",
        *[f"| {row['model']} | {row['layers']} | {row['mean_ms']:.0f} | {row['p95_ms']:.0f} | "
          f"{'yes' if row['mean_ms'] <= BUDGET_MS else 'no'} |" for row in rows],
    ]  # fmt: skip
    table = "\n".join(lines)
    print(table)
    out = REPO_ROOT / "benchmarks" / "results" / "reranker_depth.json"
    out.write_text(json.dumps({
        "queries": len(workload), "top_m": args.top_m, "budget_ms": BUDGET_MS, "rows": rows,
        "machine": {"cpu_threads": torch.get_num_threads(), "platform": platform.platform(),
                    "load_average_at_end": os.getloadavg()},
        "table_markdown": table,
    }, indent=2) + "\n")  # fmt: skip
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
