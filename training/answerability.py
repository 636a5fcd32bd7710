"""Fit the per-passage answerability decision (answering/answerability.py): the reranker's answer head, the
decision's logistic model over each passage's signals, and the decision's two thresholds.

1. Pairs come from the service's own search stage (hybrid, then the reranker) over the training corpus: the top
   `evidence_k` passages of every written question the reranker never trained on (the held-out paraphrases, every
   topical question, every verified unanswerable one). Labels: a paraphrase's source abstract answers it; a topical
   question's relevant abstracts answer it and the other abstracts its writer read do not (the ones nobody read are
   left out); nothing answers an unanswerable question. A paraphrase's other neighbours count as not answering (a
   little noise: some may answer it too).
2. The answer head: a class-balanced, L2 logistic regression on the joint encoding's mean vector (the reranker
   frozen), stored beside the reranker as answer_head.json. Its logits for the decision's fit are cross-fitted
   (each question's from a head fitted without it), so the decision does not learn to trust an overfit head.
3. The decision: a logistic model over the passage signals (FEATURES), and one over the dense and BM25 signals
   alone (DENSE_FEATURES, for searches without the reranker).
4. The thresholds, on the development set's calibration half through the same search over the AER index:
   answer_from maximises (answerable questions answered + unanswerable declined + topical recall + topical
   precision), the citation being of the passages that pass; decline_below gives a bare refusal (instead of an
   answer from the closest paper) to at most `--max-outright-decline` of the answerable questions.

The judge gate's bars (python -m training.judge_gate) are chosen over this model's P: rerun it after a refit.

    python -m training.answerability [--reranker models/weights/reranker] [--out models/weights/answerability.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import pickle
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from scipy.stats import rankdata

from answering.answerability import (
    DEFAULT_MODEL_PATH,
    DENSE_FEATURES,
    FEATURES,
    AnswerabilityModel,
    LogisticModel,
    passage_signals,
    select_answering,
)
from answering.answerer import AnsweringSettings
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from retrieval.answer_head import AnswerHead
from retrieval.cross_encoder import weights_file
from retrieval.hybrid import HybridSettings
from retrieval.reranker import DEFAULT_RERANKER_DIR, RerankerSettings, passage_text, read_reranker_info
from retrieval.search import SearchPipeline, build_search, load_reranker
from training.corpus import REPO_ROOT, training_index
from training.evaluation.dev_questions import DevQuestion, load_dev_questions
from training.questions.dataset import load_paraphrases, load_topicals, load_unanswerables
from training.splits import stable_fraction

log = logging.getLogger("training.answerability")
FOLDS = 5


@dataclass
class Pair:
    question: str
    group: str  # the question's id: folds never split a question
    label: int
    pooled: np.ndarray
    reranked: dict[str, float]  # the passage's signals with the reranker (answer_logit filled in later)
    dense: dict[str, float]  # its signals without the reranker


@dataclass(frozen=True)
class LabelledQuestion:
    question_id: str
    question: str
    answering: frozenset[str]  # doc_ids that answer it
    judged: frozenset[str] | None  # doc_ids whose label is known (None: every retrieved one)


def training_questions(all_paraphrases: bool = False) -> list[LabelledQuestion]:
    """all_paraphrases: also the paraphrases whose abstracts the reranker trained on (by default only the held-out
    ones, whose scores are what the service will see)."""
    questions = [LabelledQuestion(q.question_id, q.question, frozenset([q.doc_id]), None)
                 for q in load_paraphrases() if q.is_validation or all_paraphrases]  # fmt: skip
    questions += [LabelledQuestion(q.question_id, q.question, frozenset(q.relevant), frozenset(q.judged))
                  for q in load_topicals()]  # fmt: skip
    questions += [LabelledQuestion(q.question_id, q.question, frozenset(), None) for q in load_unanswerables()]
    return questions


def passage_rows(search: SearchPipeline, question: str, evidence_k: int, rerank: bool):
    """The judged passages of a search and their signals, as the service computes them."""
    outcome = search.run(question, evidence_k, rerank=rerank)
    dense = search.dense_similarities(outcome.query, outcome.hits)
    return outcome.hits, passage_signals(question, outcome.hits, dense, outcome.pool)


def question_pairs(search: SearchPipeline, labelled: LabelledQuestion, evidence_k: int) -> list[Pair]:
    """One question's labelled pairs: its judged passages, with and without the reranker."""
    reranker = search.rerank.reranker
    assert reranker is not None
    hits, reranked = passage_rows(search, labelled.question, evidence_k, True)
    _, pooled = reranker.encode(labelled.question, [passage_text(h.chunk.title, h.chunk.text) for h in hits])
    dense_hits, dense_rows = passage_rows(search, labelled.question, evidence_k, False)
    dense_by_chunk = {h.chunk.chunk_id: row for h, row in zip(dense_hits, dense_rows, strict=True)}
    pairs: list[Pair] = []
    for hit, row, vector in zip(hits, reranked, pooled, strict=True):
        doc_id = hit.chunk.doc_id
        if labelled.judged is not None and doc_id not in labelled.judged and doc_id not in labelled.answering:
            continue  # nobody read it: its label is unknown
        dense_row = dense_by_chunk.get(hit.chunk.chunk_id)
        if dense_row is None:
            continue
        pairs.append(Pair(labelled.question, labelled.question_id, int(doc_id in labelled.answering), vector,
                          row, dense_row))  # fmt: skip
    return pairs


def read_cache(path: Path, key: dict) -> dict[str, list[Pair]]:
    """Each question's pairs from earlier runs with the same reranker (a var/ file of this machine's)."""
    if not path.is_file():
        return {}
    cached = pickle.loads(path.read_bytes())
    return cached["pairs"] if cached.get("key") == key else {}


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iterations: int = 50) -> tuple[np.ndarray, float]:
    """Class-balanced logistic regression on standardized x by Newton's method; returns (weights, bias)."""
    n, d = x.shape
    sample_weight = np.where(y == 1, n / (2 * y.sum()), n / (2 * (n - y.sum())))
    design = np.hstack([x, np.ones((n, 1))])
    theta = np.zeros(d + 1)
    penalty = np.diag([l2] * d + [0.0])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-design @ theta))
        gradient = design.T @ (sample_weight * (p - y)) + penalty @ theta
        hessian = (design * (sample_weight * p * (1 - p))[:, None]).T @ design + penalty
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.abs(step).max() < 1e-8:
            break
    return theta[:d], float(theta[d])


def fitted_model(rows: list[dict[str, float]], labels: np.ndarray, features: tuple[str, ...]) -> LogisticModel:
    x = np.array([[row[name] for name in features] for row in rows])
    means, scales = x.mean(axis=0), x.std(axis=0) + 1e-9
    weights, bias = fit_logistic((x - means) / scales, labels)
    return LogisticModel(features, tuple(means.tolist()), tuple(scales.tolist()), tuple(weights.tolist()), bias)


def fit_head(pooled: np.ndarray, labels: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """A linear head on the raw pooled vectors (standardization folded into its weights)."""
    means, scales = pooled.mean(axis=0), pooled.std(axis=0) + 1e-6
    weights, bias = fit_logistic((pooled - means) / scales, labels, l2)
    folded = weights / scales
    return folded, float(bias - folded @ means)


def roc_auc(scores: list[float], labels: list[int]) -> float:
    """The Mann-Whitney statistic: ties count half."""
    ranks = rankdata(scores)
    positives = np.array(labels) == 1
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return round(float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)), 4)


def cross_fitted_logits(pairs: list[Pair], l2: float) -> np.ndarray:
    pooled = np.stack([p.pooled for p in pairs])
    labels = np.array([p.label for p in pairs])
    folds = np.array([int(stable_fraction(f"fold:{p.group}") * FOLDS) for p in pairs])
    logits = np.zeros(len(pairs))
    for fold in range(FOLDS):
        held = folds == fold
        weights, bias = fit_head(pooled[~held], labels[~held], l2)
        logits[held] = pooled[held] @ weights + bias
    return logits


# --- thresholds on the development set's calibration half ------------------------------------------------------


@dataclass(frozen=True)
class DevJudgement:
    question: DevQuestion
    relevant: frozenset[str]  # doc_ids
    passages: list[tuple[str, float]]  # (doc_id, P(answers)) in search order


def dev_judgements(search: SearchPipeline, model: AnswerabilityModel, questions: list[DevQuestion],
                   evidence_k: int, doc_of_doi: dict[str, str]) -> list[DevJudgement]:  # fmt: skip
    judged = []
    for question in questions:
        outcome = search.run(question.question, evidence_k)
        dense = search.dense_similarities(outcome.query, outcome.hits)
        probabilities = model.probabilities(question.question, outcome.hits, dense, outcome.pool)
        passages = [(hit.chunk.doc_id, j.probability) for hit, j in zip(outcome.hits, probabilities, strict=True)]
        relevant = frozenset(doc_of_doi[doi] for doi in question.relevant if doi in doc_of_doi)
        judged.append(DevJudgement(question, relevant, passages))
    return judged


def cited_figures(answers: Iterable[tuple[DevQuestion, frozenset[str], set[str]]]) -> dict[str, float]:
    """Question-level figures from each question's relevant and cited doc_ids: answerable questions answered with a
    relevant paper, unanswerable ones declined (nothing cited), topical recall and precision."""
    answered, declined, recall, precision = [], [], [], []
    for question, relevant, cited in answers:
        if not question.answerable:
            declined.append(not cited)
            continue
        answered.append(bool(cited & relevant))
        if question.kind == "topical":
            recall.append(len(cited & relevant) / len(relevant) if relevant else 0.0)
            if cited:
                precision.append(len(cited & relevant) / len(cited))
    mean = lambda values: float(np.mean(values)) if values else 0.0  # noqa: E731
    return {"answered_with_relevant": mean(answered), "unanswerable_declined": mean(declined),
            "topical_recall": mean(recall), "topical_precision": mean(precision)}  # fmt: skip


def outcome_at(judged: list[DevJudgement], answer_from: float, also_from: float, max_papers: int
               ) -> dict[str, float]:  # fmt: skip
    """Question-level figures if the passages the decision selects are cited (a partial answer counts as
    declined, as the service reports it)."""
    answers = []
    for item in judged:
        doc_ids = [doc_id for doc_id, _ in item.passages]
        positions = select_answering([p for _, p in item.passages], doc_ids, answer_from, also_from, max_papers)
        answers.append((item.question, item.relevant, {doc_ids[position] for position in positions}))
    return cited_figures(answers)


def choose_thresholds(judged: list[DevJudgement], max_papers: int, max_outright_decline: float) -> dict:
    """answer_from and also_from on a grid of 0.02 (the best sum of the four figures; ties: the higher bars),
    then decline_below."""
    candidates = sorted({round(p, 4) for item in judged for _, p in item.passages})
    grid = [round(0.02 * i, 2) for i in range(1, 50)]
    scored = [(round(sum(outcome_at(judged, a, b, max_papers).values()), 6), a, b)
              for a in grid for b in grid if b <= a]  # fmt: skip
    _, answer_from, also_from = max(scored)
    # decline_below: the highest cut that gives a bare refusal to at most max_outright_decline of the answerable
    bests = [max((p for _, p in item.passages), default=0.0) for item in judged if item.question.answerable]
    decline_below = max(c for c in [0.0, *candidates]
                        if c <= answer_from and np.mean([b < c for b in bests]) <= max_outright_decline)  # fmt: skip
    figures = outcome_at(judged, answer_from, also_from, max_papers)
    return {"answer_from": answer_from, "also_from": also_from, "decline_below": round(decline_below, 4),
            "calibration_half": {key: round(value, 3) for key, value in figures.items()}}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.answerability", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--reranker", type=Path, default=DEFAULT_RERANKER_DIR)
    parser.add_argument("--aer-index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--out", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--head-l2", type=float, default=30.0, help="L2 penalty of the answer head's fit")
    parser.add_argument("--max-outright-decline", type=float, default=0.05,
                        help="share of calibration-half answerable questions that may get a bare refusal")  # fmt: skip
    parser.add_argument("--pairs-cache", type=Path, default=REPO_ROOT / "var" / "answerability" / "pairs.pkl",
                        help="each question's training pairs, reused while the reranker is unchanged")
    parser.add_argument("--limit", type=int, default=None, help="first N training questions only (a quick look)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (1 on a busy machine)")
    parser.add_argument("--all-paraphrases", action="store_true",
                        help="also the paraphrases of the reranker's own training split")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    settings = AnsweringSettings()
    evidence_k, max_papers = settings.evidence_k, settings.top_k
    reranker_settings = RerankerSettings(model_dir=args.reranker)
    rerank = load_reranker(reranker_settings, "cpu")
    if not rerank.available:
        raise SystemExit(f"No reranker at {args.reranker}.")
    assert rerank.reranker is not None

    # 1. Pairs from the training corpus.
    questions = training_questions(args.all_paraphrases)[: args.limit]
    log.info("%d training questions", len(questions))
    key = {"reranker": str(args.reranker.resolve()), "evidence_k": evidence_k,
           "weights_mtime": weights_file(args.reranker).stat().st_mtime}  # fmt: skip
    cache = read_cache(args.pairs_cache, key)
    missing = [q for q in questions if q.question_id not in cache]
    if missing:
        index = training_index()
        search = build_search(LocalIndexBackend(index), index.embedder, HybridSettings(), rerank,
                              reranker_settings.top_m)  # fmt: skip
        for start in range(0, len(missing), 50):  # saved as it goes: an interrupted run resumes
            for labelled in missing[start : start + 50]:
                cache[labelled.question_id] = question_pairs(search, labelled, evidence_k)
            args.pairs_cache.parent.mkdir(parents=True, exist_ok=True)
            args.pairs_cache.write_bytes(pickle.dumps({"key": key, "pairs": cache}))
            log.info("pairs of %d/%d questions", min(start + 50, len(missing)), len(missing))
    pairs = [pair for q in questions for pair in cache[q.question_id]]
    labels = np.array([p.label for p in pairs])
    log.info("%d pairs, %d answering", len(pairs), labels.sum())

    # 2. The answer head: cross-fitted logits for the decision, then the head on every pair.
    out_of_fold = cross_fitted_logits(pairs, args.head_l2)
    head_auc = roc_auc(out_of_fold.tolist(), labels.tolist())
    weights, bias = fit_head(np.stack([p.pooled for p in pairs]), labels, args.head_l2)
    command = " ".join(["python -m training.answerability", *(sys.argv[1:] if argv is None else argv)])
    head = AnswerHead(weights.astype(np.float32), bias, {
        "fitted_on": {"pairs": len(pairs), "answering": int(labels.sum()), "questions": len(questions)},
        "cross_fitted_auc": head_auc, "l2": args.head_l2, "command": command,
    })  # fmt: skip
    head.save(args.reranker)

    # 3. The decision's models.
    for pair, logit in zip(pairs, out_of_fold, strict=True):
        pair.reranked["answer_logit"] = float(logit)
    reranked = fitted_model([p.reranked for p in pairs], labels, FEATURES)
    dense_only = fitted_model([p.dense for p in pairs], labels, DENSE_FEATURES)
    aucs = {
        "answer_head_alone": head_auc,
        "reranked": roc_auc([reranked.probability(p.reranked) for p in pairs], labels.tolist()),
        "dense_only": roc_auc([dense_only.probability(p.dense) for p in pairs], labels.tolist()),
    }
    log.info("pair-level AUC (training pairs, head cross-fitted): %s", aucs)

    # 4. Thresholds on the calibration half, through the service's search with the new head.
    rerank = load_reranker(reranker_settings, "cpu")  # reloaded: now with its answer head
    aer_index = PublishedIndex.load(args.aer_index, device="cpu")
    aer_search = build_search(LocalIndexBackend(aer_index), aer_index.embedder, HybridSettings(), rerank,
                              reranker_settings.top_m)  # fmt: skip
    doc_of_doi = {d.doi: d.doc_id for d in aer_index.documents.values() if d.doi}
    model = AnswerabilityModel(reranked, dense_only, 0.0, 0.5)
    judged = dev_judgements(aer_search, model, load_dev_questions(halves=("calibration",)), evidence_k, doc_of_doi)
    thresholds = choose_thresholds(judged, max_papers, args.max_outright_decline)
    info = read_reranker_info(args.reranker)
    payload = {
        "reranker": info.get("name", args.reranker.name), "level": "passage", "features": list(FEATURES),
        "reranked": reranked.to_json(), "dense_only": dense_only.to_json(),
        "fitted_on": {"pairs": len(pairs), "answering": int(labels.sum()),
                      "questions": len(questions), "source": "training/data/questions (held-out paraphrases, "
                      "topical, verified unanswerables)"},
        "training_auc": aucs,
        "thresholds": {key: thresholds[key] for key in ("decline_below", "answer_from", "also_from")},
        "calibration_half": thresholds["calibration_half"], "command": command,
    }  # fmt: skip
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    log.info("wrote %s: thresholds %s, calibration half %s", args.out, payload["thresholds"],
             payload["calibration_half"])  # fmt: skip


if __name__ == "__main__":
    main()
