"""Retrieval quality on a BEIR dataset (default SciFact test): bm25, dense, hybrid, hybrid + rerank.

    .venv/bin/python -m benchmarks.retrieval_eval [--update-model-card]

The corpus goes through the real ingestion pipeline (cached under var/eval/<dataset>/, so reruns
skip the embedding) and queries through the service's HybridRetriever and CrossEncoderReranker.
Prints one table and writes benchmarks/results/retrieval_<dataset>.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
from pathlib import Path

import torch

from benchmarks.common import REPO_ROOT, relative
from indexing.embedding import file_sha256
from retrieval.cross_encoder import weights_file
from retrieval.hybrid import HybridSettings
from retrieval.reranker import DEFAULT_RERANKER_DIR, RerankerSettings, read_reranker_info
from training.evaluation.beir import BeirDataset
from training.evaluation.harness import EvalConfig, EvalResult, RetrievalEvaluator, ingest_beir
from training.reranker.card import CARD_FILE, replace_evaluation

DEFAULT_RERANKERS: tuple[str, ...] = ()  # the shipped model is always a row; --reranker adds others


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=REPO_ROOT.parent / "shared" / "eval" / "beir" / "scifact")
    parser.add_argument("--work-dir", type=Path, default=REPO_ROOT / "var" / "eval")
    parser.add_argument("--reranker", action="append", default=None, metavar="LABEL=DIR",
                        help="a reranker row (repeatable); default: the zero-shot and in-domain models under "
                             "var/reranker/, plus the shipped model")  # fmt: skip
    parser.add_argument("--rerank-top-m", type=int, default=30)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--update-model-card", action="store_true",
                        help=f"write the table into {DEFAULT_RERANKER_DIR / CARD_FILE}")  # fmt: skip
    return parser.parse_args()


def reranker_rows(specs: list[str], top_m: int) -> list[EvalConfig]:
    """One row per distinct model (by weights hash): the shipped model gets a row only if it is not
    already one of the listed models, which are marked *shipped* instead. A model that keeps a say for
    the hybrid order (first_stage_weight in reranker.json) gets a second row with its own order alone."""
    rows: list[EvalConfig] = []
    seen: set[str] = set()
    for spec in [*specs, f"shipped={DEFAULT_RERANKER_DIR}"]:
        label, _, directory = spec.partition("=")
        path = Path(directory).resolve()
        if not (path / "config.json").is_file():
            print(f"(skipping reranker {label}: no model at {path})")
            continue
        weights = file_sha256(weights_file(path))
        if weights in seen:
            continue
        seen.add(weights)
        first_stage_weight = read_reranker_info(path).get("first_stage_weight", 0.0)
        reranker = RerankerSettings(model_dir=path, top_m=top_m)
        if first_stage_weight:
            order_only = reranker.model_copy(update={"first_stage_weight": 0.0})
            rows.append(EvalConfig(f"hybrid+rerank ({label}), model order only", reranker=order_only))
        fusion = f", first-stage weight {first_stage_weight:g}" if first_stage_weight else ""
        rows.append(EvalConfig(f"hybrid+rerank ({label}){fusion}", reranker=reranker))
    return rows


def shipped_label(result: EvalResult) -> str:
    reranker = result.config.reranker
    if reranker is None or reranker.model_dir is None or reranker.first_stage_weight is not None:
        return ""  # not as the service runs it
    try:
        weights, shipped = weights_file(reranker.model_dir), weights_file(DEFAULT_RERANKER_DIR)
    except FileNotFoundError:
        return ""
    same = file_sha256(weights) == file_sha256(shipped)
    return " *shipped*" if same else ""


def markdown_table(results: list[EvalResult], dataset: str, queries: int) -> str:
    lines = [
        f"{dataset} test, {queries} queries; CPU: {torch.get_num_threads()} threads. Latency per query (ms, mean).",
        "",
        "| configuration | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | retrieve ms | rerank ms (top-30) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for result in results:
        m, latency = result.metrics, result.latency_ms
        rerank = "–"
        if "rerank_mean" in latency:
            rerank = f"{latency['rerank_mean']:.0f} (p95 {latency['rerank_p95']:.0f})"
        lines.append(
            f"| {result.config.name}{shipped_label(result)} | {m['ndcg@10']:.4f} | {m['recall@10']:.4f} | "
            f"{m['recall@100']:.4f} | {m['mrr@10']:.4f} | {latency['retrieve_mean']:.0f} | {rerank} |"
        )
    return "\n".join(lines)


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.WARNING)
    dataset = BeirDataset.load(args.dataset, split="test")
    index = ingest_beir(dataset, args.work_dir / dataset.name, args.device)
    evaluator = RetrievalEvaluator(dataset, index, args.device)
    configs = [EvalConfig(mode, HybridSettings(mode=mode)) for mode in ("bm25", "dense", "hybrid")]
    configs += reranker_rows(args.reranker or list(DEFAULT_RERANKERS), args.rerank_top_m)
    results = []
    for config in configs:
        print(f"running {config.name} …", flush=True)
        results.append(evaluator.run(config))
    table = markdown_table(results, dataset.name, len(dataset.queries))
    print(table)

    out_path = REPO_ROOT / "benchmarks" / "results" / f"retrieval_{dataset.name}.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "dataset": dataset.name,
        "split": "test",
        "queries": len(dataset.queries),
        "documents_indexed": len(index.documents),
        "chunks_indexed": len(index.chunks),
        "machine": {
            "cpu_threads": torch.get_num_threads(),
            "platform": platform.platform(),
            "device": args.device,
            # Latencies are only comparable at similar load: this machine's cores are shared.
            "load_average_at_end": os.getloadavg(),
        },
        "results": [{**result.to_json(), "shipped": bool(shipped_label(result))} for result in results],
        "table_markdown": table,
    }
    out_path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {relative(out_path)}")
    if args.update_model_card:
        reproduce = "Reproduce: `.venv/bin/python -m benchmarks.retrieval_eval --update-model-card`"
        replace_evaluation(DEFAULT_RERANKER_DIR / CARD_FILE, f"{table}\n\n{reproduce}")
        print(f"updated {DEFAULT_RERANKER_DIR / CARD_FILE}")


if __name__ == "__main__":
    main()
