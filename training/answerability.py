"""Fit the answerability model (answering/answerability.py) and choose its thresholds.

1. Features come from the service's own search stage (hybrid, then the reranker) over the training corpus, for
   the written questions the reranker never trained on: the held-out split of the paraphrase questions
   (answerable) and every verified unanswerable question.
2. Two logistic models are fitted (class-balanced, L2): one on all features (reranked searches), one on the
   dense and BM25 signals alone (searches without the reranker).
3. The thresholds are chosen on the development set's calibration half, through the same search over the AER
   index: answer_from is (just under) the highest probability that wrongly declines (outright or with the
   hedge) at most `--max-false-decline` of the answerable questions (0.08: under the 0.10 target, with room);
   decline_below splits the rest into hedged answers and bare refusals, by the same rule with
   `--max-outright-decline` (0.05): clearly unrelated questions get a plain refusal, not a hedged answer.
   `--thresholds-only` keeps the fitted models of the existing file and chooses the thresholds again.

    python -m training.answerability [--reranker models/weights/reranker] [--out models/weights/answerability.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np

from answering.answerability import DEFAULT_MODEL_PATH, DENSE_FEATURES, FEATURES, LogisticModel, retrieval_signals
from answering.answerer import AnsweringSettings
from indexing.index import PublishedIndex
from retrieval.hybrid import HybridSettings
from retrieval.reranker import DEFAULT_RERANKER_DIR, RerankerSettings, read_reranker_info
from retrieval.search import SearchPipeline, build_search, load_reranker
from training.corpus import REPO_ROOT, training_index
from training.evaluation.dev_questions import load_dev_questions
from training.questions.dataset import load_paraphrases, load_unanswerables

log = logging.getLogger("training.answerability")


def signals_of(search: SearchPipeline, question: str, evidence_k: int, rerank: bool) -> dict[str, float]:
    """The decision's features as the service computes them: over the top evidence_k passages."""
    outcome = search.run(question, evidence_k, rerank=rerank)
    return retrieval_signals(question, outcome.hits, search.dense_similarities(question, outcome.hits), outcome.pool)


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


def roc_auc(scores: list[float], labels: list[int]) -> float:
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return round(wins / (len(positives) * len(negatives)), 4)


def _cut_below(answerable: list[float], candidates: list[float], share: float) -> float:
    """The highest cut that puts at most `share` of the answerable probabilities below it, moved down to halfway
    between that cut and the next candidate below it, so that neither side's nearest question sits on it."""
    allowed = [t for t in candidates if np.mean([p < t for p in answerable]) <= share]
    highest = max(allowed)
    below = [t for t in candidates if t < highest]
    return (highest + max(below)) / 2 if below else highest


def choose_thresholds(answerable: list[float], unanswerable: list[float], max_false_decline: float,
                      max_outright_decline: float) -> dict:  # fmt: skip
    """answer_from: answerable questions below it are declined (outright or with the hedge), at most
    max_false_decline of them; decline_below: a bare refusal below it, for at most max_outright_decline."""
    candidates = sorted(set(answerable) | set(unanswerable) | {0.0})
    answer_from = _cut_below(answerable, candidates, max_false_decline)
    decline_below = min(_cut_below(answerable, candidates, max_outright_decline), answer_from)
    return {
        "answer_from": round(float(answer_from), 4),
        "decline_below": round(float(decline_below), 4),
        "calibration_wrongly_declined": round(float(np.mean([p < answer_from for p in answerable])), 3),
        "calibration_declined_outright": round(float(np.mean([p < decline_below for p in answerable])), 3),
        "calibration_unanswerable_declined": round(float(np.mean([p < answer_from for p in unanswerable])), 3),
    }


def fit_models(search: SearchPipeline, evidence_k: int) -> tuple[LogisticModel, LogisticModel, dict]:
    """Both models, fitted on the training corpus's held-out paraphrases and verified unanswerables."""
    questions = [(q.question, 1) for q in load_paraphrases() if q.is_validation]
    questions += [(q.question, 0) for q in load_unanswerables()]
    log.info("features of %d training questions", len(questions))
    labels = np.array([label for _, label in questions])
    reranked_rows = [signals_of(search, question, evidence_k, True) for question, _ in questions]
    dense_rows = [signals_of(search, question, evidence_k, False) for question, _ in questions]
    reranked = fitted_model(reranked_rows, labels, FEATURES)
    dense_only = fitted_model(dense_rows, labels, DENSE_FEATURES)
    record = {
        "fitted_on": {"answerable": int(labels.sum()), "unanswerable": int(len(labels) - labels.sum()),
                      "source": "training/data/questions (held-out paraphrases, verified unanswerables)"},
        "training_auc": {
            "reranked": roc_auc([reranked.probability(r) for r in reranked_rows], labels.tolist()),
            "dense_only": roc_auc([dense_only.probability(r) for r in dense_rows], labels.tolist()),
        },
    }  # fmt: skip
    return reranked, dense_only, record


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.answerability", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--reranker", type=Path, default=DEFAULT_RERANKER_DIR)
    parser.add_argument("--aer-index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--out", type=Path, default=DEFAULT_MODEL_PATH)
    parser.add_argument("--max-false-decline", type=float, default=0.08,
                        help="share of calibration-half answerable questions the threshold may decline")  # fmt: skip
    parser.add_argument("--max-outright-decline", type=float, default=0.05,
                        help="share of them that may get a bare refusal rather than the hedged answer")  # fmt: skip
    parser.add_argument("--thresholds-only", action="store_true", help="keep the models in --out, re-choose cuts")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    retrieval, reranker_settings = HybridSettings(), RerankerSettings(model_dir=args.reranker)
    # The passages the service's decision weighs (not the prompt's, which may be fewer).
    evidence_k = AnsweringSettings().evidence_k
    rerank = load_reranker(reranker_settings, "cpu")
    if not rerank.available:
        raise SystemExit(f"No reranker at {args.reranker}.")

    # 1. The models, fitted on the training corpus (or kept from the existing file).
    if args.thresholds_only:
        payload = json.loads(args.out.read_text())
        reranked = LogisticModel.from_json(payload["reranked"])
        dense_only = LogisticModel.from_json(payload["dense_only"])
    else:
        search = build_search(training_index(), retrieval, rerank, reranker_settings.top_m)
        reranked, dense_only, record = fit_models(search, evidence_k)
        info = read_reranker_info(args.reranker)
        payload = {"reranker": info.get("name", args.reranker.name), "features": list(FEATURES),
                   "reranked": reranked.to_json(), "dense_only": dense_only.to_json(), **record}  # fmt: skip

    # 2. Thresholds on the development set's calibration half, searched exactly as the service searches.
    aer = PublishedIndex.load(args.aer_index, device="cpu")
    aer_search = build_search(aer, retrieval, rerank, reranker_settings.top_m)
    dev = load_dev_questions(halves=("calibration",))
    probabilities = {q.question_id: reranked.probability(signals_of(aer_search, q.question, evidence_k, True))
                     for q in dev}  # fmt: skip
    answerable = [probabilities[q.question_id] for q in dev if q.answerable]
    unanswerable = [probabilities[q.question_id] for q in dev if not q.answerable]
    thresholds = choose_thresholds(answerable, unanswerable, args.max_false_decline, args.max_outright_decline)
    payload["thresholds"] = {key: thresholds[key] for key in ("decline_below", "answer_from")}
    payload["calibration_half"] = {
        "auc": roc_auc(answerable + unanswerable, [1] * len(answerable) + [0] * len(unanswerable)),
        **{key.removeprefix("calibration_"): value for key, value in thresholds.items() if key.startswith("calib")},
    }
    command = " ".join(["python -m training.answerability", *(sys.argv[1:] if argv is None else argv)])
    payload["thresholds_command" if args.thresholds_only else "command"] = command
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    log.info("wrote %s: %s", args.out, json.dumps({k: payload[k] for k in ("thresholds", "training_auc",
                                                                          "calibration_half")}))  # fmt: skip


if __name__ == "__main__":
    main()
