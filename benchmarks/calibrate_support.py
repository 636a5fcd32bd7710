"""Calibrate the citation checker's support threshold on non-AER economics abstracts (never the AER corpus).

The support threshold is the cosine similarity between an answer sentence and the closest passage sentence above
which the sentence counts as supported (answering/citations.py). Claims are paper titles: a title is supported by
its own abstract (positive) and not by the most similar *other* abstract (a hard negative). The threshold
maximises balanced accuracy. (The answerability decision is fitted by `python -m training.answerability`.)

    python -m benchmarks.calibrate_support [--claims 400]

Prints the figures and writes benchmarks/results/calibration.json; copy the threshold into answering/answerer.py.
"""

from __future__ import annotations

import argparse
import random

import numpy as np

from answering.citations import SupportChecker
from answering.prompt import Passage
from benchmarks.common import relative, write_results
from indexing.embedding import Embedder
from training.corpus import load_training_corpus


def best_threshold(positives: np.ndarray, negatives: np.ndarray) -> tuple[float, float]:
    """The cut maximising balanced accuracy (mean of true-positive and true-negative rates)."""
    candidates = np.unique(np.concatenate([positives, negatives]))
    scores = [((positives >= t).mean() + (negatives < t).mean()) / 2 for t in candidates]
    best = int(np.argmax(scores))
    return float(candidates[best]), float(scores[best])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.calibrate_support", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--claims", type=int, default=400)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    documents = [d for d in load_training_corpus().values() if d.title]
    sample = random.Random(args.seed).sample(documents, args.claims)
    embedder = Embedder(device="cpu")
    vectors = embedder.encode([d.abstract for d in sample])
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, -1)
    checker = SupportChecker(embedder.encode, threshold=0.0)

    def closeness(claim: str, text: str) -> float | None:
        report = checker.check(claim, [Passage(1, "d", "d#0", "", None, text)])
        claims = [s for s in report.sentences if s.is_claim]
        return max(s.similarity for s in claims) if claims else None  # type: ignore[type-var]

    positives, negatives = [], []
    for i, document in enumerate(sample):
        own = closeness(document.title, document.abstract)
        other = closeness(document.title, sample[int(similarity[i].argmax())].abstract)
        if own is not None and other is not None:
            positives.append(own)
            negatives.append(other)
    pos, neg = np.array(positives), np.array(negatives)
    threshold, balanced = best_threshold(pos, neg)
    support = {
        "pairs": len(pos), "threshold": round(threshold, 3), "balanced_accuracy": round(balanced, 3),
        "supported_rate_own_abstract": round(float((pos >= threshold).mean()), 3),
        "supported_rate_nearest_other_abstract": round(float((neg >= threshold).mean()), 3),
    }  # fmt: skip
    print("| pairs | threshold | balanced acc. | own abstract supported | nearest other supported |")
    print("|---:|---:|---:|---:|---:|")
    print(f"| {support['pairs']} | {support['threshold']} | {support['balanced_accuracy']} | "
          f"{support['supported_rate_own_abstract']} | {support['supported_rate_nearest_other_abstract']} |")
    print(f"wrote {relative(write_results('calibration', {'support': support, 'claims': args.claims}))}")


if __name__ == "__main__":
    main()
