"""Fit the domain gate (answering/domain.py): P(a question is about economics) from its all-MiniLM-L6-v2 vector.

1. Questions: every written economics question of the project (training/data/questions/: paraphrases, reworded
   paraphrases, near misses, absent topics, topical questions, all over non-AER abstracts, and 600 short casual
   ones in the words of students and the public, economics_casual/) against the written off-domain questions
   (offdomain/), each checked first (`offdomain_problems`, `casual_problems`: length, duplicates, no economics
   word in an off-domain question outside the one it uses in another sense; none a near copy of a development
   question). Any problem stops the fit.
2. The model: a class-balanced L2 logistic regression on the unit vectors (training.answerability.fit_head,
   standardization folded into the weights); 5-fold cross-validated ROC AUC and accuracy reported.
3. The bar: on the development questions' calibration half only (single-turn questions as the service encodes
   them, a dated question less its window words), the middle in logit of the gap between the lowest P of an
   economics question (paraphrase, topical, unanswerable, dated, after-the-corpus) and the highest P of an
   off-domain question below it, capped at 0.5 and at the P that declines 0.2% of the economics training
   questions (cross-validated); the report half is only counted.

    python -m training.domain [--out models/weights/domain.json]
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import numpy as np

from answering.time_window import parse_time_window
from indexing.embedding import Embedder
from training.answerability import fit_head, roc_auc
from training.evaluation.dev_questions import DEV_QUESTIONS, MORE_QUESTIONS, half_of

QUESTIONS = Path(__file__).resolve().parent / "data" / "questions"
ECONOMICS_SETS = ("answerable", "reworded", "contrast", "unanswerable", "topical", "economics_casual")
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "models" / "weights" / "domain.json"
ECONOMICS_KINDS = ("paraphrase", "topical", "unanswerable", "dated", "aftercorpus")
# Words no off-domain question may use except as its declared trap (an economics word in another sense).
_ECONOMICS_WORDS = re.compile(
    r"\b(econom\w*|prices?|pricing|costs?|wages?|salar\w+|tax\w*|money|dollars?|incomes?|profits?|gdp|"
    r"unemploy\w*|employ\w*|business\w*|financ\w*|invest\w*|markets?|inflation|banks?|trade|tariffs?|"
    r"poverty|inequality|policy|policies|subsid\w+|welfare|budgets?|loans?|debt|interest rates?)\b", re.IGNORECASE)
FOLDS = 5
NEAR_COPY = 0.85  # cosine to a development question at which a written question counts as a copy
MAX_ECONOMICS_DECLINED = 0.002  # the bar declines at most this share of the economics questions (cross-validated)


def read_jsonl(paths: list[Path]) -> list[dict]:
    return [json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]  # fmt: skip


def economics_questions() -> list[str]:
    paths = sorted(p for name in ECONOMICS_SETS for p in (QUESTIONS / name).glob("batch_*.jsonl"))
    return list(dict.fromkeys(row["question"] for row in read_jsonl(paths)))


def offdomain_problems(records: list[dict]) -> list[str]:
    """Each problem in a line: the checks every written off-domain question passes before a fit."""
    problems, seen = [], set()
    for row in records:
        question, rid, trap = row.get("question", ""), row.get("id", "?"), row.get("trap")
        words = len(question.split())
        if row.get("kind") != "off_domain" or not re.fullmatch(r"qo-\d\d-\d{3}", rid):
            problems.append(f"{rid}: kind or id malformed")
        if not 6 <= words <= 25:
            problems.append(f"{rid}: {words} words (6-25)")
        if question.lower() in seen:
            problems.append(f"{rid}: duplicate question")
        seen.add(question.lower())
        for match in _ECONOMICS_WORDS.finditer(question):
            word, declared = match.group(0).lower(), (trap or "").lower()
            if not declared or not (word in declared or declared in word):  # "banks" is the trap "bank"
                problems.append(f"{rid}: economics word {match.group(0)!r} outside its trap ({trap})")
    return problems


def casual_problems(records: list[dict]) -> list[str]:
    """The checks of the casual economics questions (training/data/questions/economics_casual/)."""
    problems, seen = [], set()
    for row in records:
        question, rid = row.get("question", ""), row.get("id", "?")
        if row.get("kind") != "economics_casual" or not re.fullmatch(r"qe-\d\d-\d{3}", rid):
            problems.append(f"{rid}: kind or id malformed")
        if not 3 <= len(question.split()) <= 20:
            problems.append(f"{rid}: {len(question.split())} words (3-20)")
        if question.lower() in seen:
            problems.append(f"{rid}: duplicate question")
        seen.add(question.lower())
    return problems


def dev_questions() -> list[tuple[str, str, str]]:
    """(id, kind, text as the service encodes it) for every single-turn development question."""
    rows = read_jsonl([DEV_QUESTIONS, MORE_QUESTIONS])
    out = []
    for row in rows:
        if row["kind"] == "followup" or not row.get("question"):
            continue
        window = parse_time_window(row["question"], latest_year=2025)
        out.append((row["id"], row["kind"], window.question_without_window if window else row["question"]))
    return out


def cross_validated(x: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    """Each question's logit from a model fitted without its fold."""
    folds = np.arange(len(y)) % FOLDS
    scores = np.zeros(len(y))
    for fold in range(FOLDS):
        weights, bias = fit_head(x[folds != fold], y[folds != fold], l2)
        scores[folds == fold] = x[folds == fold] @ weights + bias
    return scores


def choose_bar(probabilities: dict[str, float], kinds: dict[str, str], economics_cv: np.ndarray | None = None
               ) -> float:  # fmt: skip
    """On the calibration half: the middle (in logit) of the gap under the lowest economics question, capped at
    0.5 and at the P under which MAX_ECONOMICS_DECLINED of the economics training questions fall
    (`economics_cv`: their cross-validated probabilities), yet above every calibration off-domain question under
    the gap: declining a question that the abstracts might answer costs more than passing an off-domain one to
    the judges, which decline most of them anyway."""
    calibration = [qid for qid in probabilities if half_of(qid) == "calibration"]
    lowest = min(probabilities[q] for q in calibration if kinds[q] in ECONOMICS_KINDS)
    below = [probabilities[q] for q in calibration if kinds[q] == "offdomain" and probabilities[q] < lowest]
    if not below:
        return 0.0
    logit = lambda p: math.log(max(p, 1e-9) / max(1 - p, 1e-9))  # noqa: E731
    middle = 1 / (1 + math.exp(-(logit(max(below)) + logit(lowest)) / 2))
    cap = 0.5 if economics_cv is None else float(np.quantile(economics_cv, MAX_ECONOMICS_DECLINED))
    return round(max(min(middle, cap, 0.5), max(below) + 1e-4), 4)


def figures(probabilities: dict[str, float], kinds: dict[str, str], bar: float) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for half in ("calibration", "report"):
        ids = [q for q in probabilities if half_of(q) == half]
        for kind in sorted({kinds[q] for q in ids}):
            of_kind = [probabilities[q] < bar for q in ids if kinds[q] == kind]
            out.setdefault(half, {})[f"{kind}_declined"] = round(sum(of_kind) / len(of_kind), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--l2", type=float, default=10.0)
    args = parser.parse_args()
    offdomain = read_jsonl(sorted((QUESTIONS / "offdomain").glob("batch_*.jsonl")))
    casual = read_jsonl(sorted((QUESTIONS / "economics_casual").glob("batch_*.jsonl")))
    problems = offdomain_problems(offdomain) + casual_problems(casual)
    embedder = Embedder(device="cpu")
    dev = dev_questions()
    dev_vectors = embedder.encode([text for _, _, text in dev])
    written = offdomain + casual
    copies = np.argwhere(embedder.encode([row["question"] for row in written]) @ dev_vectors.T >= NEAR_COPY)
    problems += [f"{written[i]['id']}: a near copy of development question {dev[j][0]}" for i, j in copies]
    if problems:
        raise SystemExit("Written questions with problems:\n" + "\n".join(problems))
    economics = economics_questions()
    x = np.vstack([embedder.encode(economics), embedder.encode([row["question"] for row in offdomain])])
    x = x.astype(np.float64)
    y = np.concatenate([np.ones(len(economics)), np.zeros(len(offdomain))])
    held_out = cross_validated(x, y, args.l2)
    validation = {"roc_auc": roc_auc(held_out.tolist(), y.tolist()),
                  "accuracy": round(float(((held_out > 0) == y).mean()), 4)}  # fmt: skip
    weights, bias = fit_head(x, y, args.l2)
    probabilities = {qid: float(1 / (1 + np.exp(-(vector @ weights + bias))))
                     for (qid, _, _), vector in zip(dev, dev_vectors.astype(np.float64), strict=True)}  # fmt: skip
    kinds = {qid: kind for qid, kind, _ in dev}
    economics_cv = 1 / (1 + np.exp(-held_out[y == 1]))
    bar = choose_bar(probabilities, kinds, economics_cv)
    validation["economics_declined"] = round(float((economics_cv < bar).mean()), 4)
    validation["offdomain_declined"] = round(float((1 / (1 + np.exp(-held_out[y == 0])) < bar).mean()), 4)
    summary = {"economics_questions": len(economics), "of_them_casual": len(casual),
               "offdomain_questions": len(offdomain), "l2": args.l2, "cross_validated": validation,
               "development": figures(probabilities, kinds, bar)}  # fmt: skip
    args.out.write_text(json.dumps({"encoder": embedder.model_name, "weights": [round(float(w), 6) for w in weights],
                                    "bias": bias, "decline_from": bar, "fit": summary}) + "\n")  # fmt: skip
    print(json.dumps({"decline_from": bar, **summary}, indent=1))
    lowest = sorted(probabilities.items(), key=lambda item: item[1])[:16]
    print("lowest P(economics):", [(qid, kinds[qid], round(p, 3)) for qid, p in lowest])


if __name__ == "__main__":
    main()
