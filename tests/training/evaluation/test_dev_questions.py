"""The development questions' fixed halves, and the hard-candidate top-1 used on them."""

import json
from pathlib import Path

import numpy as np
import pytest

from training.evaluation.dev_questions import DEV_QUESTIONS, half_of, load_dev_questions
from training.evaluation.hard_candidates import CandidateSet, ranks_first


def test_halves_are_fixed_by_id() -> None:
    assert half_of("d0-07") == "calibration" and half_of("du-03") == "calibration"
    assert half_of("d0-08") == "report" and half_of("du-04") == "report"


def test_loading_by_half(tmp_path: Path) -> None:
    rows = [{"id": f"d0-{n:02d}", "question": f"q{n}", "relevant": ["10.1/x"], "kind": "paraphrase",
             "answer_hint": ""} for n in range(1, 5)]  # fmt: skip
    rows.append({"id": "du-01", "question": "q", "relevant": [], "kind": "unanswerable", "answer_hint": ""})
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n")
    calibration = load_dev_questions(path, halves=("calibration",))
    assert [q.question_id for q in calibration] == ["d0-01", "d0-03", "du-01"]
    assert [q.answerable for q in calibration] == [True, True, False]
    assert len(load_dev_questions(path)) == 5
    with pytest.raises(FileNotFoundError, match="shared"):
        load_dev_questions(tmp_path / "missing.jsonl")


def test_the_shared_development_set_splits_into_two_real_halves() -> None:
    questions = load_dev_questions(DEV_QUESTIONS)
    halves = {half: [q for q in questions if q.half == half] for half in ("calibration", "report")}
    for members in halves.values():
        assert sum(q.answerable for q in members) >= 40 and sum(not q.answerable for q in members) >= 10


def test_a_document_scores_as_its_best_chunk() -> None:
    # Documents a (answering, two chunks), b, c; rows in that order.
    candidates = CandidateSet("q", "a", ["a", "b", "c"], rows=[0, 1, 2, 3], owners=[0, 0, 1, 2])
    assert ranks_first(candidates, np.array([0.1, 0.9, 0.8, 0.2]))
    assert not ranks_first(candidates, np.array([0.1, 0.5, 0.8, 0.2]))
    assert not ranks_first(candidates, np.array([0.8, 0.1, 0.8, 0.2]))  # a tie is not first


def test_the_more_questions_keep_their_turns_windows_and_kinds() -> None:
    from training.evaluation.dev_questions import MORE_QUESTIONS

    questions = load_dev_questions(MORE_QUESTIONS)
    kinds = {q.kind for q in questions}
    assert {"followup", "dated", "offdomain", "aftercorpus"} <= kinds
    assert all(len(q.turns) == 2 and q.turns[1] == q.question for q in questions if q.kind == "followup")
    assert all(q.year_min is not None or q.year_max is not None for q in questions if q.kind == "dated")
    assert not any(q.answerable for q in questions if q.kind in ("offdomain", "aftercorpus"))
