"""Reciprocal rank fusion (Cormack et al., 2009): the one way this project merges rankings.

Each candidate scores sum_i weight_i / (k + rank_i) over the rankings that contain it (1-based ranks;
a ranking that does not contain the candidate adds nothing). Used by the hybrid retriever (BM25 and dense
ranks) and by the rerank stage (cross-encoder and first-stage ranks).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DEFAULT_RRF_K = 60  # damping: a larger k flattens the difference between rank 1 and rank 10


def rrf_scores(rankings: Sequence[np.ndarray], weights: Sequence[float], k: int = DEFAULT_RRF_K) -> np.ndarray:
    """Fused scores of n candidates. rankings[i][j] is candidate j's 1-based rank in ranking i, or 0 when
    ranking i does not contain it; weights[i] is ranking i's say."""
    if len(rankings) != len(weights):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights.")
    if k < 1:
        raise ValueError(f"The RRF damping k must be at least 1, not {k}.")
    if any(weight < 0 for weight in weights):
        raise ValueError(f"RRF weights must not be negative, got {list(weights)}.")
    if not rankings:
        return np.zeros(0)
    scores = np.zeros(len(rankings[0]), dtype=np.float64)
    for ranks, weight in zip(rankings, weights, strict=True):
        ranks = np.asarray(ranks, dtype=np.float64)
        if ranks.shape != scores.shape:
            raise ValueError("Every ranking must give a rank (or 0) for every candidate.")
        present = ranks > 0
        scores[present] += weight / (k + ranks[present])
    return scores


def ranks_of(order: np.ndarray) -> np.ndarray:
    """1-based rank of each candidate given the candidates' indices best first (the inverse permutation)."""
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(1, len(order) + 1)
    return ranks
