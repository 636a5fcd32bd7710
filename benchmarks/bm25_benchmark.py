"""BM25 scoring, side by side: rank-bm25's get_scores() against the index's sparse-matrix scoring.

Both score the same tokenised queries over the same published index (default: var/index, the AER
corpus; also try var/eval/scifact/index). Checks that the scores agree, then times each.

    python -m benchmarks.bm25_benchmark [--index var/index] [--repeat 20]

Prints a table and writes benchmarks/results/bm25.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from benchmarks.common import REPO_ROOT as REPO
from benchmarks.common import relative
from indexing.bm25 import Bm25Index

RESULTS = REPO / "benchmarks" / "results" / "bm25.json"
QUERIES = (
    "Does raising the minimum wage reduce employment?",
    "How do firms form their inflation expectations?",
    "What happened to local labor markets exposed to Chinese import competition?",
    "school vouchers and student achievement",
    "Why is income inequality associated with slower economic growth?",
    "auction design for spectrum licenses",
    "effects of monetary policy shocks on long-term interest rates",
    "present bias and retirement saving",
)


def time_per_query_ms(score: Callable[[list[str]], np.ndarray], queries: list[list[str]], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        for terms in queries:
            started = time.perf_counter()
            score(terms)
            times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=REPO / "var" / "index")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    index = Bm25Index.load(args.index)
    settings = index.settings
    okapi = BM25Okapi(index.corpus_tokens, k1=settings.k1, b=settings.b, epsilon=settings.epsilon)
    queries = [index.tokenizer.tokenize(query) for query in QUERIES]
    for terms in queries:
        np.testing.assert_allclose(index.term_scores(terms), okapi.get_scores(terms), rtol=1e-9, atol=1e-9)

    rows = {}
    scorers = {"rank-bm25 get_scores()": okapi.get_scores, "sparse term weights (ours)": index.term_scores}
    for name, score in scorers.items():
        times = sorted(time_per_query_ms(score, queries, args.repeat))
        rows[name] = {
            "mean_ms": round(statistics.fmean(times), 3),
            "p50_ms": round(times[len(times) // 2], 3),
            "p95_ms": round(times[int(len(times) * 0.95)], 3),
        }
    print(f"BM25 scoring of {len(QUERIES)} queries x {args.repeat} over {len(index)} rows ({args.index})")
    print("| scorer | mean ms | p50 ms | p95 ms |\n|---|---:|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['mean_ms']} | {row['p50_ms']} | {row['p95_ms']} |")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    payload = {"index": relative(args.index), "rows": len(index), "queries": len(QUERIES), "repeat": args.repeat,
               "platform": platform.platform(), "scores_agree": True, "results": rows}  # fmt: skip
    RESULTS.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
