"""The answerer's decisions before generation (answerability, the caveat of a partial answer, passage focus) and
the answer it assembles after."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from answering.answerer import Answer, GenerationOutcome, Question, Usage
from answering.citations import SupportReport
from answering.prompt import NOT_COVERED_ANSWER, PARTIAL_ANSWER_PREFACE

COVERED = "Did the minimum wage increase reduce teenage employment in fast food restaurants?"
OFF_TOPIC = "How long should sourdough bread bake?"


def with_thresholds(decline_below: float, answer_from: float) -> dict:
    return {"answerability": {"decline_below": decline_below, "answer_from": answer_from}}


def test_an_unanswerable_question_is_declined_without_a_prompt(make_services) -> None:
    answerer = make_services().answerer
    prepared = answerer.prepare(Question(query=OFF_TOPIC))
    assert prepared.prompt is None and prepared.coverage == "not_covered"
    assert any("do not appear to cover" in note for note in prepared.notes)
    answer = answerer.finish(prepared, None)
    assert answer.text == NOT_COVERED_ANSWER and not answer.covered and answer.confidence < 0.3


def test_a_covered_question_is_answered_and_may_not_be_declined(make_services) -> None:
    answerer = make_services().answerer
    prepared = answerer.prepare(Question(query=COVERED))
    assert prepared.coverage == "covered" and prepared.preface is None and prepared.prompt is not None
    opening = answerer.prompts.refusal_opening()
    assert prepared.params.banned_openings == (opening,)
    assert answerer.prompts.tokenizer.decode(list(opening)) == "The indexed"


def test_a_partial_answer_says_so_first(make_services) -> None:
    answerer = make_services(**with_thresholds(0.0, 1.0)).answerer  # every question lands in between
    prepared = answerer.prepare(Question(query=COVERED))
    assert prepared.coverage == "partial" and prepared.prompt is not None
    assert prepared.params.banned_openings  # it answers from the closest papers
    generated = "Employment did not fall after the increase [1]."
    answer = answerer.finish(prepared, GenerationOutcome(generated, 100, 12, "stop", 0.5))
    assert answer.text == f"{PARTIAL_ANSWER_PREFACE} {generated}"
    assert answer.coverage == "partial" and not answer.covered
    # The caveat is the service's sentence, not a claim to support; the generated sentence is checked.
    first, second = answer.report.sentences
    assert not first.is_claim and second.is_claim and second.supported_by == [1]


def test_without_the_decision_the_generator_decides(make_services) -> None:
    answerer = make_services().answerer
    prepared = answerer.prepare(Question(query=OFF_TOPIC, coverage_check=False))
    assert prepared.coverage == "unchecked" and prepared.prompt is not None and prepared.params.banned_openings == ()
    off = make_services(answerability={"check": False}).answerer.prepare(Question(query=OFF_TOPIC))
    assert off.coverage == "unchecked" and off.verdict is None


def test_prompt_passages_keep_their_sentences_closest_to_the_question(make_services) -> None:
    answerer = make_services(focus={"max_sentences": 1}).answerer
    prepared = answerer.prepare(Question(query="Did disability claims rise in regions exposed to imports?"))
    assert prepared.prompt is not None
    first = prepared.prompt.passages[0]
    assert first.text == "Wages fell and disability claims rose in the most exposed regions."
    assert "focus" in prepared.timer.timings_ms
    whole = make_services(focus={"enabled": False}).answerer.prepare(
        Question(query="Did disability claims rise in regions exposed to imports?")
    )
    assert whole.prompt is not None and whole.prompt.passages[0].text.startswith("Import competition from China")


def test_the_decision_weighs_the_same_passages_whatever_the_prompt_holds(make_services) -> None:
    answerer = make_services().answerer
    three = answerer.prepare(Question(query=COVERED, top_k=3))
    one = answerer.prepare(Question(query=COVERED, top_k=1))
    assert one.prompt is not None and len(one.prompt.passages) == len(one.hits) == 1
    assert one.hits[0].chunk.chunk_id == three.hits[0].chunk.chunk_id
    assert one.verdict is not None and three.verdict is not None
    assert one.verdict.features == three.verdict.features  # the top 3 passages' signals, both times


@pytest.mark.parametrize(("text", "coverage", "covered"), [
    (NOT_COVERED_ANSWER, "not_covered", False),
    (NOT_COVERED_ANSWER.replace(".", " [1]."), "not_covered", False),
    ("Employment did not fall [1].", "unchecked", True),
])  # fmt: skip
def test_an_unchecked_answer_that_declines_is_not_covered(text: str, coverage: str, covered: bool) -> None:
    """coverage_check false: no decision was made, but the generator's own decline must not read as covered."""
    prepared = SimpleNamespace(coverage="unchecked")
    answer = Answer(text, "stop", SupportReport([], []), prepared, Usage(1, 1, None), [])  # type: ignore[arg-type]
    assert (answer.coverage, answer.covered) == (coverage, covered)
