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
Half = Literal["calibration", "report"]
HALVES: tuple[Half, ...] = ("calibration", "report")


@dataclass(frozen=True)
class DevQuestion:
    question_id: str
    question: str
    relevant: tuple[str, ...]  # DOIs; the first is the abstract the question was written from
    kind: str  # "paraphrase" or "unanswerable"
    answer_hint: str

    @property
    def answerable(self) -> bool:
        return self.kind != "unanswerable"

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
        question = DevQuestion(row["id"], row["question"], tuple(row["relevant"]), row["kind"], row["answer_hint"])
        if question.half in wanted:
            questions.append(question)
    return questions
