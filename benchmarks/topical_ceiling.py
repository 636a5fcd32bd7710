"""How precise can a topical answer's citations be with today's signals? For every topical development question,
the service's retrieval, decision and judges run as served (training.sentence_gate.gather: the top `evidence_k`
passages), and the papers are ordered by each signal alone; printed per half: the share of the first n papers
that are relevant (precision@n) and the share of the relevant papers among them (recall@n), n = 1 … 5.

The gate (answering/answerability.py) cites a prefix of one such order, so no bar on these signals can cite more
precisely than the best row here: precision@2 bounds what a two-paper answer can reach.

    python -m benchmarks.topical_ceiling

Writes benchmarks/results/topical_ceiling.json.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import torch

from answering.answerability import DEFAULT_MODEL_PATH, AnswerabilityModel
from answering.logits import logit
from benchmarks.common import REPO_ROOT, git_commit, machine, write_results
from indexing.index import PublishedIndex
from retrieval.sentence_judge import SentenceJudge, SentenceJudgeSettings
from training.evaluation.dev_questions import load_dev_questions
from training.sentence_gate import Evidence, gather

DEPTHS = (1, 2, 3, 4, 5)


# Each signal scores passage i of a question's evidence (higher: more likely to answer).
SIGNALS: dict[str, Callable[[Evidence, int], float]] = {
    "search rank": lambda item, i: -i,
    "decision P": lambda item, i: item.probabilities[i],
    "judge P": lambda item, i: item.judged[i],
    "sentence judge P": lambda item, i: item.sentence_best[i],
    "judge + decision logits": lambda item, i: logit(item.judged[i]) + logit(item.probabilities[i]),
}


def papers_by(item: Evidence, signal: Callable[[Evidence, int], float]) -> list[str]:
    """The question's papers, each by its best passage, best first."""
    order = sorted(range(len(item.doc_ids)), key=lambda i: -signal(item, i))
    return list(dict.fromkeys(item.doc_ids[i] for i in order))


def at_depths(items: list[Evidence], signal: Callable[[Evidence, int], float]) -> dict[str, dict[str, float]]:
    rows = {}
    for depth in DEPTHS:
        precision, recall = [], []
        for item in items:
            first = papers_by(item, signal)[:depth]
            hits = len(set(first) & item.relevant)
            precision.append(hits / len(first) if first else 0.0)
            recall.append(hits / len(item.relevant) if item.relevant else 0.0)
        rows[str(depth)] = {"precision": round(float(np.mean(precision)), 3),
                            "recall": round(float(np.mean(recall)), 3)}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--aer-index", default=str(REPO_ROOT / "var" / "index"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sentence_judge = SentenceJudge.load(SentenceJudgeSettings(), "cpu")
    if sentence_judge is None:
        raise SystemExit("No sentence judge is installed (models/weights/sentence-judge).")
    questions = [q for q in load_dev_questions() if q.kind == "topical"]
    items = gather(questions, PublishedIndex.load(args.aer_index, device="cpu"), AnswerabilityModel.load(
        DEFAULT_MODEL_PATH), sentence_judge)  # fmt: skip
    table = {half: {name: at_depths([i for i in items if i.question.half == half], signal)
                    for name, signal in SIGNALS.items()} for half in ("calibration", "report")}  # fmt: skip
    print("| order papers by | " + " | ".join(f"P@{d} / R@{d}" for d in DEPTHS) + " |")
    print("|---|" + "---:|" * len(DEPTHS))
    for name in SIGNALS:
        cells = [" ; ".join(f"{table[h][name][str(d)]['precision']:.2f} / {table[h][name][str(d)]['recall']:.2f}"
                            for h in ("calibration", "report")) for d in DEPTHS]  # fmt: skip
        print(f"| {name} | " + " | ".join(cells) + " |")
    write_results("topical_ceiling", {"machine": machine(), "commit": git_commit(), "questions": len(items),
                                      "depths": table})  # fmt: skip


if __name__ == "__main__":
    main()
