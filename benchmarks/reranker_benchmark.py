"""Which rerank settings fit the 300 ms budget without losing the right paper? Side by side on the
development questions, through the service's own search stage (build_search, hybrid then rerank):

  top-1      answerable questions whose first hit is from a relevant abstract (per half)
  MRR@10     reciprocal rank of the first relevant abstract in the top 10 (per half)
  rerank ms  the rerank stage's wall time per question (p50, p95), as the service's timings report it

Rows: the hybrid order alone, then the shipped reranker at each precision × pair length × depth. The default
settings are marked; they were chosen on the calibration half (the best top-1 within the budget).

    python -m benchmarks.reranker_benchmark [--index var/index] [--reranker models/weights/reranker]

Prints a table and writes benchmarks/results/reranker.json. The cores are shared: run on an idle machine.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import REPO_ROOT, git_commit, machine, relative, write_results
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from retrieval.hybrid import HybridSettings
from retrieval.reranker import DEFAULT_RERANKER_DIR, RerankerSettings
from retrieval.search import RerankState, build_search, load_reranker
from training.evaluation.dev_questions import HALVES, load_dev_questions

BUDGET_MS = 300.0
PRECISIONS = ("float32", "int8")
PAIR_LENGTHS = (256, 192)
DEPTHS = (30, 20)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--reranker", type=Path, default=DEFAULT_RERANKER_DIR)
    parser.add_argument("--threads", type=int, default=2)
    return parser.parse_args()


def evaluate(index: PublishedIndex, rerank: RerankState, top_m: int) -> dict:
    """top-1, MRR@10 per half and rerank latency over the answerable development questions."""
    search = build_search(LocalIndexBackend(index), index.embedder, HybridSettings(), rerank, top_m)
    doc_of_doi = {document.doi: doc_id for doc_id, document in index.documents.items() if document.doi}
    reciprocal_ranks: dict[str, list[float]] = {half: [] for half in HALVES}
    rerank_ms = []
    for question in load_dev_questions():
        if not question.answerable:
            continue
        relevant = {doc_of_doi[doi] for doi in question.relevant if doi in doc_of_doi}
        outcome = search.run(question.question, 10, rerank=rerank.available)
        hits = outcome.hits
        rerank_ms.append(outcome.timings_ms.get("rerank", 0.0))
        ranks = [rank for rank, hit in enumerate(hits, start=1) if hit.chunk.doc_id in relevant]
        reciprocal_ranks[question.half].append(1.0 / ranks[0] if ranks else 0.0)
    row: dict = {}
    for half, values in reciprocal_ranks.items():
        row[f"top1_{half}"] = round(float(np.mean(np.array(values) == 1.0)), 3)
        row[f"mrr10_{half}"] = round(float(np.mean(values)), 3)
    row["questions"] = {half: len(values) for half, values in reciprocal_ranks.items()}
    if rerank.available:
        row["rerank_ms_p50"] = round(float(np.percentile(rerank_ms, 50)), 1)
        row["rerank_ms_p95"] = round(float(np.percentile(rerank_ms, 95)), 1)
    return row


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    index = PublishedIndex.load(args.index, device="cpu")
    default = RerankerSettings()
    rows = [{"ranking": "hybrid, no rerank", **evaluate(index, RerankState(None, "off"), default.top_m)}]
    for precision, max_length, top_m in itertools.product(PRECISIONS, PAIR_LENGTHS, DEPTHS):
        settings = RerankerSettings(model_dir=args.reranker, precision=precision, max_length=max_length, top_m=top_m)
        rerank = load_reranker(settings, "cpu")
        rerank.reranker.score("warm-up", ["first-call allocations"])  # type: ignore[union-attr]
        chosen = (precision, max_length, top_m) == ("int8", default.max_length, default.top_m)
        label = f"{precision}, {max_length} tokens, top {top_m}" + (" (default)" if chosen else "")
        rows.append({"ranking": label, "precision": precision, "max_length": max_length, "top_m": top_m,
                     **evaluate(index, rerank, top_m)})  # fmt: skip
        print(f"{label}: {rows[-1]}", flush=True)

    header = ("| ranking | top-1 cal | top-1 report | MRR@10 cal | MRR@10 report | rerank ms p50 | p95 |\n"
              "|---|---:|---:|---:|---:|---:|---:|")  # fmt: skip
    lines = [f"| {r['ranking']} | {r['top1_calibration']:.3f} | {r['top1_report']:.3f} | {r['mrr10_calibration']:.3f}"
             f" | {r['mrr10_report']:.3f} | {r.get('rerank_ms_p50', '-')} | {r.get('rerank_ms_p95', '-')} |"
             for r in rows]  # fmt: skip
    table = "\n".join([f"Development questions, answerable ({rows[0]['questions']}), {args.threads} threads, "
                       f"budget {BUDGET_MS:.0f} ms", "", header, *lines])  # fmt: skip
    print(table)
    path = write_results("reranker", {
        "reranker": relative(args.reranker), "index": relative(args.index), "budget_ms": BUDGET_MS,
        "rows": rows, "machine": machine(), "commit": git_commit(), "table_markdown": table,
    })  # fmt: skip
    print(f"wrote {relative(path)}")


if __name__ == "__main__":
    main()
