"""Does averaging the passage judges help on questions none of them saw? Question-level ROC AUC of the best
passage's judge logit (answerable against unanswerable), each judge alone and their mean, side by side.

The questions are the project's written training questions that no judge trained on (training/judge.py uses only
the reranker's training split of the paraphrases, and no topical or unanswerable question): the held-out
paraphrases, the topical questions and the verified unanswerable ones (near misses and absent topics), over the
non-AER training corpus, each judged on its dense top 8 passages (the shape of the service's evidence, without the
reranker, to keep the run short). The development questions are `python -m training.judge_gate`'s.

    python -m benchmarks.judge_heldout [--judge models/weights/judge models/weights/judge-reworded]

Prints a table and writes benchmarks/results/judge_heldout.json (about 6 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import git_commit, machine, relative, write_results
from retrieval.judge import DEFAULT_JUDGE_DIRS, JudgeSettings, PassageJudge
from retrieval.reranker import passage_text
from training.answerability import roc_auc
from training.corpus import training_index
from training.questions.dataset import load_paraphrases, load_topicals, load_unanswerables

PASSAGES = 8
SUBSETS = {  # which questions each AUC compares
    "all": ("paraphrase", "topical", "near_miss", "absent_topic"),
    "paraphrase vs unanswerable": ("paraphrase", "near_miss", "absent_topic"),
    "answerable vs near misses": ("paraphrase", "topical", "near_miss"),
}


def unseen_questions() -> list[tuple[str, int, str]]:
    """(question, answerable, kind) for every written training question no judge trained on."""
    questions = [(q.question, 1, "paraphrase") for q in load_paraphrases() if q.is_validation]
    questions += [(q.question, 1, "topical") for q in load_topicals()]
    return questions + [(q.question, 0, q.kind) for q in load_unanswerables()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", type=Path, nargs="+", default=list(DEFAULT_JUDGE_DIRS))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    judges = [PassageJudge.load(JudgeSettings(model_dirs=(directory,)), "cpu") for directory in args.judge]
    if any(judge is None for judge in judges):
        raise SystemExit(f"No judge in one of {[str(d) for d in args.judge]}.")
    index = training_index()
    questions = unseen_questions()
    best: list[list[float]] = []  # per question: each judge's best logit, then the mean's
    for text, _, _ in questions:
        passages = [passage_text(index.chunks[row].title, index.chunks[row].text)
                    for row, _ in index.search_dense(text, PASSAGES)]  # fmt: skip
        logits = np.array([judge.logits(text, passages) for judge in judges])
        best.append([*logits.max(axis=1), logits.mean(axis=0).max()])
    names = [judge.name for judge in judges] + ["mean of the logits"]
    table = {}
    for subset, kinds in SUBSETS.items():
        rows = [i for i, (_, _, kind) in enumerate(questions) if kind in kinds]
        labels = [questions[i][1] for i in rows]
        table[subset] = {name: round(roc_auc([best[i][column] for i in rows], labels), 4)
                         for column, name in enumerate(names)}  # fmt: skip
    print(f"| questions | {' | '.join(names)} |\n|---|{'---:|' * len(names)}")
    for subset, aucs in table.items():
        print(f"| {subset} | {' | '.join(str(aucs[name]) for name in names)} |")
    counts = {kind: sum(q[2] == kind for q in questions) for kind in SUBSETS["all"]}
    path = write_results("judge_heldout", {
        "judges": [relative(d) for d in args.judge], "questions": counts, "passages": PASSAGES,
        "question_auc": table, "commit": git_commit(), "machine": machine(),
    })  # fmt: skip
    print(f"wrote {relative(path)}")


if __name__ == "__main__":
    main()
