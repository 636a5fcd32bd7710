"""Choose the judge gate's three bars on the development set's calibration half and store them in the decision's
model file (answering/answerability.py, "thresholds" -> "judge").

Under the gate the passage judge (retrieval/judge.py) decides whether a question is answered: its best passage's
P_judge >= judge_from; the decision's own model picks the other papers (P >= also_from, and within also_within of
the best P). judge_from and also_from are chosen on a grid of 0.02, also_within among a few widths (1.0: none), by
the rule training.answerability uses for its own: the best sum of answerable questions answered with a relevant
paper, unanswerable ones declined, topical recall and topical precision (ties: the higher bars, the narrower
width). The question-level ROC AUC of the judge's best P and of the decision's best P are printed beside it.

    python -m training.judge_gate [--judge models/weights/judge models/weights/judge-reworded]
                                  [--model models/weights/answerability.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from answering.answerability import (
    DEFAULT_MODEL_PATH,
    AnswerabilityModel,
    JudgeGate,
    select_with_judge,
    sigmoid,
)
from answering.answerer import AnsweringSettings
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from retrieval.hybrid import HybridSettings
from retrieval.judge import DEFAULT_JUDGE_DIRS, JudgeSettings, PassageJudge
from retrieval.reranker import RerankerSettings
from retrieval.search import build_search, load_reranker
from training.answerability import cited_figures, roc_auc
from training.corpus import REPO_ROOT
from training.evaluation.dev_questions import DevQuestion, load_dev_questions

log = logging.getLogger("training.judge_gate")
WITHIN = (0.1, 0.2, 0.3, 0.4, 0.5, 1.0)  # the widths also_within is chosen among


@dataclass(frozen=True)
class GatedQuestion:
    question: DevQuestion
    relevant: frozenset[str]
    doc_ids: list[str]
    probabilities: list[float]  # the decision's P(answers), per passage
    judged: list[float]  # the judge's P(answers), per passage


def figures(items: list[GatedQuestion], gate: JudgeGate, max_papers: int) -> dict[str, float]:
    """The question-level figures if the passages the gate selects are cited."""
    return cited_figures(
        (item.question, item.relevant,
         {item.doc_ids[i] for i in select_with_judge(item.judged, item.probabilities, item.doc_ids, gate, max_papers)})
        for item in items
    )  # fmt: skip


def choose_gate(items: list[GatedQuestion], max_papers: int) -> tuple[JudgeGate, dict[str, float]]:
    grid = [round(0.02 * i, 2) for i in range(1, 50)]
    scored = [(round(sum(figures(items, JudgeGate(a, b, w), max_papers).values()), 6), a, b, -w)
              for a in grid for b in grid for w in WITHIN]  # fmt: skip
    _, judge_from, also_from, narrowest = max(scored)
    gate = JudgeGate(judge_from, also_from, -narrowest)
    return gate, {key: round(value, 3) for key, value in figures(items, gate, max_papers).items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.judge_gate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--judge", type=Path, nargs="+", default=list(DEFAULT_JUDGE_DIRS),
                        help="the judge's models (their logits averaged, as the service does)")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_PATH, help="the decision's file (rewritten)")
    parser.add_argument("--aer-index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    settings = AnsweringSettings()
    judge = PassageJudge.load(JudgeSettings(model_dirs=tuple(args.judge)), "cpu")
    if judge is None:
        raise SystemExit(f"No passage judge at {args.judge} (train one: python -m training.judge).")
    model = AnswerabilityModel.load(args.model)
    reranker_settings = RerankerSettings()
    index = PublishedIndex.load(args.aer_index, device="cpu")
    search = build_search(LocalIndexBackend(index), index.embedder, HybridSettings(),
                          load_reranker(reranker_settings, "cpu"), reranker_settings.top_m)  # fmt: skip
    doc_of_doi = {d.doi: d.doc_id for d in index.documents.values() if d.doi}
    halves: dict[str, list[GatedQuestion]] = {}
    for half in ("calibration", "report"):
        halves[half] = []
        for question in load_dev_questions(halves=(half,)):
            outcome = search.run(question.question, settings.evidence_k)
            dense = search.dense_similarities(outcome.query, outcome.hits)
            probabilities = [j.probability for j in model.probabilities(question.question, outcome.hits, dense,
                                                                          outcome.pool)]  # fmt: skip
            judged = [sigmoid(logit) for logit in judge.score(question.question, outcome.hits)]
            relevant = frozenset(doc_of_doi[doi] for doi in question.relevant if doi in doc_of_doi)
            halves[half].append(GatedQuestion(question, relevant, [h.chunk.doc_id for h in outcome.hits],
                                              probabilities, judged))  # fmt: skip
    gate, calibration = choose_gate(halves["calibration"], settings.top_k)
    aucs = {}
    for half, items in halves.items():
        answerable = [int(item.question.answerable) for item in items]
        aucs[half] = {"judge": roc_auc([max(i.judged) for i in items], answerable),
                      "decision": roc_auc([max(i.probabilities) for i in items], answerable)}  # fmt: skip
    log.info("question-level ROC AUC (answerable against unanswerable), best passage's P: %s", aucs)
    data = json.loads(args.model.read_text())
    command = " ".join(["python -m training.judge_gate", *(sys.argv[1:] if argv is None else argv)])
    data["thresholds"]["judge"] = {"judge_from": gate.judge_from, "also_from": gate.also_from,
                                   "also_within": gate.also_within, "judge": judge.name,
                                   "calibration_half": calibration, "question_auc": aucs, "command": command}
    args.model.write_text(json.dumps(data, indent=2) + "\n")
    log.info("wrote the gate %s to %s; calibration half %s", gate, args.model, calibration)


if __name__ == "__main__":
    main()
