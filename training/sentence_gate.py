"""Does the sentence judge make the answerability decision sharper? Measured, and its bars chosen, on the
development set's calibration half (reported on both halves).

Today's decision (answering/answerability.py) passes a paper when the passage judge's P is high enough and the
decision's own model agrees; a question whose judge P falls short but whose decision P is middling gets a hedged
"partial" answer from its closest paper. With the sentence judge a paper also needs a sentence that states a result
answering the question: its best sentence's P_sentence >= `sentence_from`; and the hedge is resolved either way: the
closest paper answers plainly when its best sentence reaches `rescue_from`, else the question is declined.

For every single-turn development question (paraphrase, topical, unanswerable, off-domain, after-the-corpus) the
service's retrieval, decision and judges run as served; the bars are chosen on a grid by the rule the other gates
use (the best sum of answerable questions answered with a relevant paper, unanswerable ones declined, topical recall
and topical precision; off-domain and after-the-corpus questions count as unanswerable).

    python -m training.sentence_gate [--write]   # --write: store the bars in the decision's model file
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from answering.answerability import DEFAULT_MODEL_PATH, AnswerabilityModel, select_with_judge
from answering.answerer import AnsweringSettings
from answering.evidence import passage_sentences
from answering.logits import sigmoid
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from retrieval.hybrid import HybridSettings
from retrieval.judge import JudgeSettings, PassageJudge
from retrieval.reranker import RerankerSettings
from retrieval.search import build_search, load_reranker
from retrieval.sentence_judge import SentenceJudge, SentenceJudgeSettings
from training.answerability import cited_figures
from training.corpus import REPO_ROOT
from training.evaluation.dev_questions import MORE_QUESTIONS, DevQuestion, load_dev_questions

log = logging.getLogger("training.sentence_gate")
SINGLE_TURN = ("paraphrase", "topical", "unanswerable", "offdomain", "aftercorpus")


@dataclass(frozen=True)
class Evidence:
    question: DevQuestion
    relevant: frozenset[str]
    doc_ids: list[str]
    probabilities: list[float]  # the decision's P(answers), per passage
    judged: list[float]  # the passage judge's P
    sentence_best: list[float]  # the sentence judge's best P among each passage's sentences
    decline_below: float  # the decision's bar under which no paper is even considered


def selected(item: Evidence, model: AnswerabilityModel, max_papers: int, sentence_from: float | None,
             rescue_from: float | None) -> set[str]:  # fmt: skip
    """The papers cited under the bars (None: that rule off, today's decision)."""
    gate = model.judge_gate
    assert gate is not None
    chosen = select_with_judge(item.judged, item.probabilities, item.doc_ids, gate, max_papers)
    if not chosen:
        # Today a middling decision P gets a hedged answer, which the service reports as not covered (counted as
        # declined here too); with rescue_from the closest paper answers plainly when a sentence of it does.
        best = max(range(len(item.probabilities)), key=item.probabilities.__getitem__)
        rescued = rescue_from is not None and item.sentence_best[best] >= rescue_from
        chosen = [best] if rescued and item.probabilities[best] >= item.decline_below else []
    elif sentence_from is not None:
        chosen = [i for i in chosen if item.sentence_best[i] >= sentence_from]
    return {item.doc_ids[i] for i in chosen}


def figures(items: list[Evidence], model: AnswerabilityModel, max_papers: int, sentence_from: float | None,
            rescue_from: float | None) -> dict[str, float]:  # fmt: skip
    return cited_figures((item.question, item.relevant, selected(item, model, max_papers, sentence_from, rescue_from))
                         for item in items)  # fmt: skip


def gather(questions: list[DevQuestion], index: PublishedIndex, model: AnswerabilityModel,
           sentence_judge: SentenceJudge) -> list[Evidence]:  # fmt: skip
    settings = AnsweringSettings()
    reranker_settings = RerankerSettings()
    judge = PassageJudge.load(JudgeSettings(), "cpu")
    assert judge is not None
    search = build_search(LocalIndexBackend(index), index.embedder, HybridSettings(),
                          load_reranker(reranker_settings, "cpu"), reranker_settings.top_m)  # fmt: skip
    doc_of_doi = {d.doi: d.doc_id for d in index.documents.values() if d.doi}
    items = []
    for question in questions:
        outcome = search.run(question.question, settings.evidence_k)
        dense = search.dense_similarities(outcome.query, outcome.hits)
        probabilities = [j.probability for j in model.probabilities(question.question, outcome.hits, dense,
                                                                      outcome.pool)]  # fmt: skip
        judged = [sigmoid(logit) for logit in judge.score(question.question, outcome.hits)]
        best = [max(sigmoid(x) for x in sentence_judge.score(question.question, hit.chunk.title,
                                                              passage_sentences(hit.chunk.text)))
                for hit in outcome.hits]  # fmt: skip
        relevant = frozenset(doc_of_doi[doi] for doi in question.relevant if doi in doc_of_doi)
        items.append(Evidence(question, relevant, [h.chunk.doc_id for h in outcome.hits], probabilities, judged,
                              best, model.decline_below))  # fmt: skip
    return items


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.sentence_gate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--aer-index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--sentence-judge", type=Path, default=SentenceJudgeSettings().model_dir,
                        help="the sentence judge's model directory")
    parser.add_argument("--write", action="store_true", help="store the chosen bars in the model file")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    model = AnswerabilityModel.load(args.model)
    sentence_judge = SentenceJudge.load(SentenceJudgeSettings(model_dir=args.sentence_judge), "cpu")
    if sentence_judge is None:
        raise SystemExit("No sentence judge (train one: python -m training.sentence_judge).")
    index = PublishedIndex.load(args.aer_index, device="cpu")
    questions = [q for q in load_dev_questions() + load_dev_questions(MORE_QUESTIONS) if q.kind in SINGLE_TURN]
    items = gather(questions, index, model, sentence_judge)
    halves = {half: [i for i in items if i.question.half == half] for half in ("calibration", "report")}
    max_papers = AnsweringSettings().top_k
    grid = [None, *(round(0.05 * i, 2) for i in range(1, 20))]
    scored = [(round(sum(figures(halves["calibration"], model, max_papers, s, r).values()), 6),
               -1 if s is None else s, -1 if r is None else r) for s in grid for r in grid]  # fmt: skip
    _, sentence_from, rescue_from = max(scored)
    chosen = {"sentence_from": None if sentence_from < 0 else sentence_from,
              "rescue_from": None if rescue_from < 0 else rescue_from}  # fmt: skip
    report = {half: {"today": figures(members, model, max_papers, None, None),
                     "with_sentences": figures(members, model, max_papers, chosen["sentence_from"],
                                               chosen["rescue_from"])}
              for half, members in halves.items()}  # fmt: skip
    print(json.dumps({"bars": chosen, "figures": report}, indent=1))
    if args.write:
        data = json.loads(args.model.read_text())
        command = " ".join(["python -m training.sentence_gate", *(sys.argv[1:] if argv is None else argv)])
        data["thresholds"]["sentence"] = {**chosen, "sentence_judge": sentence_judge.name, "figures": report,
                                          "command": command}  # fmt: skip
        args.model.write_text(json.dumps(data, indent=2) + "\n")
        log.info("wrote the sentence bars %s to %s", chosen, args.model)


if __name__ == "__main__":
    main()
