"""The AER development questions (../shared/eval/aer_dev/questions.jsonl), split into two fixed halves.

Written the way users ask (paraphrases, near-miss unanswerables); for choosing models and calibrating
thresholds only, never for training. The split is fixed by id: odd-numbered questions form the calibration
half (what choices may look at), even-numbered ones the report half (what results are reported on).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DEV_QUESTIONS = Path(__file__).resolve().parents[2].parent / "shared" / "eval" / "aer_dev" / "questions.jsonl"
# Follow-ups, dated, off-domain and after-the-corpus questions, same halves (a file of their own).
MORE_QUESTIONS = DEV_QUESTIONS.with_name("questions_more.jsonl")
NOT_ANSWERABLE = ("unanswerable", "offdomain", "aftercorpus")
Half = Literal["calibration", "report"]
HALVES: tuple[Half, ...] = ("calibration", "report")


@dataclass(frozen=True)
class DevQuestion:
    question_id: str
    question: str
    relevant: tuple[str, ...]  # DOIs; the first is the abstract the question was written from
    kind: str  # paraphrase, topical, unanswerable; followup, dated, offdomain, aftercorpus (MORE_QUESTIONS)
    answer_hint: str
    turns: tuple[str, ...] = ()  # a follow-up's conversation: the first question, then the follow-up
    year_min: int | None = None  # a dated question's window, inclusive
    year_max: int | None = None
    out_of_window: tuple[str, ...] = ()  # DOIs that answer a dated question outside its window
    resolved: str = ""  # a follow-up as the self-contained question it means

    @property
    def answerable(self) -> bool:
        return self.kind not in NOT_ANSWERABLE

    @property
    def half(self) -> Half:
        return half_of(self.question_id)


def half_of(question_id: str) -> Half:
    """"d0-07" and "du-03" are calibration questions, "d0-08" and "du-04" report questions."""
    number = int(question_id.rsplit("-", 1)[1])
    return "calibration" if number % 2 else "report"


def load_dev_questions(path: Path = DEV_QUESTIONS, halves: Iterable[Half] = HALVES) -> list[DevQuestion]:
    if not Path(path).is_file():
        raise FileNotFoundError(f"The development questions are expected at {path} (../shared beside the repo).")
    wanted = set(halves)
    questions = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        question = DevQuestion(row["id"], row["question"], tuple(row["relevant"]), row["kind"], row["answer_hint"],
                               tuple(row.get("turns", ())), row.get("year_min"), row.get("year_max"),
                               tuple(row.get("out_of_window", ())), row.get("resolved", ""))  # fmt: skip
        if question.half in wanted:
            questions.append(question)
    return questions
