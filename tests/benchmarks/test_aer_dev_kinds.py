"""benchmarks.aer_dev --kinds: a subset of the question kinds, recorded so that it never replaces a full run."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.aer_dev import KINDS, parse_kinds, run_name, table, with_resolved_forms
from training.evaluation.dev_questions import MORE_QUESTIONS, load_dev_questions


def test_kinds_are_parsed_in_the_benchmarks_order() -> None:
    assert parse_kinds("dated,followup") == ("followup", "dated")
    assert parse_kinds(" dated , dated ") == ("dated",)
    assert parse_kinds(",".join(KINDS)) == KINDS


@pytest.mark.parametrize("value", ["datd", "", ","])
def test_unknown_or_no_kinds_are_refused(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_kinds(value)


def test_a_subset_run_is_recorded_under_a_name_of_its_own() -> None:
    assert run_name("after", KINDS) == "after"
    assert run_name("dated36", ("followup", "dated")) == "dated36@followup+dated"
    assert run_name("x", ("dated",)) != "x"


def test_the_table_shows_only_the_kinds_run() -> None:
    summary = {"dated": {"calibration": {"citation_hit": 0.6}, "report": {"citation_hit": 0.8}}}
    text = table({"x@dated": {"summary": summary}}, ("dated",))
    assert "| dated | citation hit | 0.6 | 0.8 |" in text
    assert "paraphrase" not in text
    assert "| paraphrase |" in table({"x": {"summary": summary}})


def test_each_followup_is_asked_again_alone_in_its_resolved_form() -> None:
    questions = load_dev_questions(MORE_QUESTIONS)
    followups = [q for q in questions if q.kind == "followup"]
    forms = [q for q in with_resolved_forms(questions) if q.kind == "resolved"]
    assert followups and [q.question_id for q in forms] == [q.question_id for q in followups]
    for followup, form in zip(followups, forms, strict=True):
        assert form.question == followup.resolved != followup.question
        assert form.relevant == followup.relevant and form.turns == () and form.half == followup.half
