"""Which sentence of a relevant paper a finding is written from, against what a reader judged
(../shared/eval/aer_dev/findings.jsonl): for every (development question, relevant abstract) pair, the abstract's
sentences are weighed by the served sentence judge and ordered as answering orders them
(answering.evidence.PaperSentences.ranked: the judge's logit + CUE_WEIGHT x the result cue - OPENING_WEIGHT for
an abstract's first sentence); counted per half: the top sentence is a finding sentence, the best one, a
method/setting sentence. Rows for several cue and opening weights (0 and 0: the judge alone), so the weights are
chosen on the calibration half and reported on both.

"Second sentence" rows, at the shipped weights, for each bar of AnsweringSettings.second_finding_from: the share
of pairs whose second sentence is shown (PaperSentences.second), how often that sentence is a finding / a method
sentence, and over all pairs how often the best sentence is shown (first or second) and a method sentence is.

    python -m benchmarks.sentence_choice [--weights 0 0.5 1 1.5 2 3] [--opening 0 1 1.5 2 2.5 3] \
        [--second 0.6 0.7 0.8 0.85 0.9]

Writes benchmarks/results/sentence_choice.json.
"""

from __future__ import annotations

import argparse
import csv
import json
from unittest import mock

from answering import evidence
from answering.answerer import AnsweringSettings
from answering.evidence import PaperSentences
from answering.logits import sigmoid
from benchmarks.common import SHARED, git_commit, machine, write_results
from benchmarks.finding_figures import FINDINGS
from retrieval.sentence_judge import SentenceJudge, SentenceJudgeSettings
from training.evaluation.dev_questions import DEV_QUESTIONS, MORE_QUESTIONS, half_of


def question_texts() -> dict[str, str]:
    """Each question as asked alone; a follow-up as its resolved, self-contained form."""
    texts = {}
    for path in (DEV_QUESTIONS, MORE_QUESTIONS):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                texts[row["id"]] = row.get("resolved") or row.get("question") or row["turns"][-1]
    return texts


def weighed_pairs() -> list[tuple[dict, PaperSentences]]:
    with (SHARED / "data" / "aer_abstracts.csv").open(newline="") as handle:
        titles = {row["doi"]: row.get("title") or "" for row in csv.DictReader(handle) if row.get("doi")}
    questions = question_texts()
    judge = SentenceJudge.load(SentenceJudgeSettings(), "cpu")
    if judge is None:
        raise SystemExit("No sentence judge is installed (models/weights/sentence-judge).")
    rows = [json.loads(line) for line in FINDINGS.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = []
    for row in rows:
        logits = judge.score(questions[row["qid"]], titles.get(row["doi"], ""), row["sentences"])
        pairs.append((row, PaperSentences(tuple(row["sentences"]), tuple(sigmoid(x) for x in logits))))
    return pairs


def figures(pairs: list[tuple[dict, PaperSentences]], cue_weight: float, opening_weight: float
            ) -> dict[str, dict[str, float]]:  # fmt: skip
    out = {}
    with mock.patch.object(evidence, "CUE_WEIGHT", cue_weight), \
            mock.patch.object(evidence, "OPENING_WEIGHT", opening_weight):  # fmt: skip
        for half in ("calibration", "report"):
            tops = [(row, sentences.ranked[0]) for row, sentences in pairs if half_of(row["qid"]) == half]
            out[half] = {
                "pairs": len(tops),
                "finding": round(sum(top in row["finding"] for row, top in tops) / len(tops), 3),
                "best": round(sum(top == row["best"] for row, top in tops) / len(tops), 3),
                "method": round(sum(top in row["method"] for row, top in tops) / len(tops), 3),
            }
    return out


def second_figures(pairs: list[tuple[dict, PaperSentences]], bar: float) -> dict[str, dict[str, float]]:
    out = {}
    for half in ("calibration", "report"):
        rows = [(row, sentences) for row, sentences in pairs if half_of(row["qid"]) == half]
        shown = [(row, sentences.ranked[0], _index(sentences, sentences.second(bar))) for row, sentences in rows]
        seconds = [(row, second) for row, _, second in shown if second is not None]
        out[half] = {
            "pairs": len(rows),
            "second_shown": round(len(seconds) / len(rows), 3),
            "second_is_finding": round(sum(s in row["finding"] for row, s in seconds) / max(1, len(seconds)), 3),
            "second_is_method": round(sum(s in row["method"] for row, s in seconds) / max(1, len(seconds)), 3),
            "best_shown": round(sum(row["best"] in (top, second) for row, top, second in shown) / len(rows), 3),
            "method_shown": round(sum(top in row["method"] or second in row["method"] for row, top, second in shown)
                                  / len(rows), 3),
        }
    return out


def _index(sentences: PaperSentences, sentence: str | None) -> int | None:
    return None if sentence is None else sentences.sentences.index(sentence)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.5, 1.0, 1.5, 2.0, 3.0])
    parser.add_argument("--opening", type=float, nargs="+", default=[0.0, 1.0, 1.5, 2.0, 2.5, 3.0])
    parser.add_argument("--second", type=float, nargs="+", default=[0.6, 0.7, 0.8, 0.85, 0.9])
    args = parser.parse_args()
    pairs = weighed_pairs()
    rows = []
    for weight in args.weights:
        for opening in args.opening:
            shipped = weight == evidence.CUE_WEIGHT and opening == evidence.OPENING_WEIGHT
            row = {"cue_weight": weight, "opening_weight": opening, "shipped": shipped,
                   **figures(pairs, weight, opening)}  # fmt: skip
            print(row)
            rows.append(row)
    shipped_second = AnsweringSettings().second_finding_from
    seconds = []
    for bar in args.second:
        row = {"second_finding_from": bar, "shipped": bar == shipped_second, **second_figures(pairs, bar)}
        print(row)
        seconds.append(row)
    write_results("sentence_choice", {"machine": machine(), "commit": git_commit(), "rows": rows,
                                      "second_sentence_rows": seconds})  # fmt: skip


if __name__ == "__main__":
    main()
