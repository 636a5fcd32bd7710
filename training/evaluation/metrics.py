"""Ranking metrics as defined by trec_eval / BEIR: nDCG@k, Recall@k and MRR@k.

A run maps each query id to its ranked document ids (best first, no duplicates); qrels map each
query id to {document id: graded relevance}. Grades <= 0 count as not relevant. Queries without any
relevant document are left out of the averages (as pytrec_eval does); queries missing from the run
score 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Run = Mapping[str, Sequence[str]]
Qrels = Mapping[str, Mapping[str, int]]

# The metrics every report carries, in table order.
STANDARD_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")


def ndcg_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """Normalised discounted cumulative gain with linear gains (trec_eval's ndcg_cut)."""
    _check_k(k)
    dcg = sum(
        max(relevance.get(doc_id, 0), 0) / math.log2(position + 2) for position, doc_id in enumerate(ranked[:k])
    )
    ideal_gains = sorted((grade for grade in relevance.values() if grade > 0), reverse=True)[:k]
    ideal = sum(gain / math.log2(position + 2) for position, gain in enumerate(ideal_gains))
    return dcg / ideal if ideal > 0 else 0.0


def recall_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    _check_k(k)
    relevant = {doc_id for doc_id, grade in relevance.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant document within the top k (0 when none)."""
    _check_k(k)
    for position, doc_id in enumerate(ranked[:k], start=1):
        if relevance.get(doc_id, 0) > 0:
            return 1.0 / position
    return 0.0


_METRIC_FUNCTIONS = {"ndcg": ndcg_at_k, "recall": recall_at_k, "mrr": mrr_at_k}


def per_query_scores(run: Run, qrels: Qrels, metrics: Sequence[str] = STANDARD_METRICS) -> dict[str, dict[str, float]]:
    """{metric: {query id: score}} over the queries that have at least one relevant document."""
    parsed = [_parse_metric(metric) for metric in metrics]
    judged = [qid for qid, relevance in qrels.items() if any(grade > 0 for grade in relevance.values())]
    scores: dict[str, dict[str, float]] = {metric: {} for metric in metrics}
    for qid in judged:
        ranked = list(run.get(qid, ()))
        if len(set(ranked)) != len(ranked):
            raise ValueError(f"The ranking for query {qid!r} lists a document more than once.")
        for metric, (function, k) in zip(metrics, parsed, strict=True):
            scores[metric][qid] = function(ranked, qrels[qid], k)
    return scores


def evaluate(run: Run, qrels: Qrels, metrics: Sequence[str] = STANDARD_METRICS) -> dict[str, float]:
    """Mean of each metric over the judged queries."""
    scores = per_query_scores(run, qrels, metrics)
    return {metric: (sum(values.values()) / len(values) if values else 0.0) for metric, values in scores.items()}


def _parse_metric(name: str) -> tuple[object, int]:
    base, _, cutoff = name.partition("@")
    if base not in _METRIC_FUNCTIONS or not cutoff.isdigit():
        known = ", ".join(f"{key}@K" for key in _METRIC_FUNCTIONS)
        raise ValueError(f"Unknown metric {name!r}; use one of {known} (e.g. ndcg@10).")
    return _METRIC_FUNCTIONS[base], int(cutoff)


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"The cutoff k must be at least 1, not {k}.")
