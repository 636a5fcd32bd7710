"""Composing an answer from per-paper findings as they arrive (answering/compose.py)."""

from __future__ import annotations

from answering.citations import is_service_sentence
from answering.compose import AnswerComposer, FindingStream
from answering.prompt import PARTIAL_ANSWER_PREFACE, opening_line


def test_a_finding_is_renumbered_and_cut_after_its_sentences() -> None:
    finding = FindingStream(passage=4, max_sentences=2)
    finding.feed("Minimum wages cut teen jobs [1]. The effect is small [1, 1].")
    assert finding.text == "Minimum wages cut teen jobs [4]. The effect is small [4]." and not finding.complete
    finding.feed(" A third sentence")
    assert finding.text == "Minimum wages cut teen jobs [4]. The effect is small [4]." and finding.complete
    finding.feed(" is ignored.")
    assert "ignored" not in finding.text


def test_a_half_written_marker_is_held_back_and_an_uncited_finding_gets_its_number() -> None:
    finding = FindingStream(passage=3)
    finding.feed("Trade raised wages [")
    assert finding.text == "Trade raised wages "
    finding.feed("1].")
    assert finding.text == "Trade raised wages [3]."
    uncited = FindingStream(passage=2)
    uncited.feed("Prices fell.")
    assert uncited.text == "Prices fell."
    uncited.finished = True
    assert uncited.text == "Prices fell. [2]"  # appended, so what was already shown stays


def test_findings_come_out_in_order_whatever_order_they_are_generated_in() -> None:
    composer = AnswerComposer(opening_line(2), [2, 5])
    shown = composer.start()
    shown += composer.feed(1, "Trade raised wages [1].")  # the second paper first: held back
    assert shown == "Two papers in the indexed abstracts address this."
    shown += composer.feed(0, "Minimum wages ")
    shown += composer.feed(0, "cut teen jobs [1].")
    shown += composer.finish(0)
    assert not composer.done
    shown += composer.finish(1)
    assert composer.done
    expected = ("Two papers in the indexed abstracts address this. Minimum wages cut teen jobs [2]. "
                "Trade raised wages [5].")  # fmt: skip
    assert shown == composer.text and " ".join(shown.split()) == expected
    assert composer.finding_texts() == ["Minimum wages cut teen jobs [2].", "Trade raised wages [5]."]


def test_a_complete_finding_stops_wanting_tokens() -> None:
    composer = AnswerComposer(opening_line(1), [1])
    composer.start()
    composer.feed(0, "Wages rose sharply [1].")
    assert composer.wants_more(0)  # another sentence might still belong to it
    composer.feed(0, " Employment fell")
    assert not composer.wants_more(0) and composer.finding_texts() == ["Wages rose sharply [1]."]


def test_openings_are_the_services_own_sentences() -> None:
    assert opening_line(1) == "One paper in the indexed abstracts addresses this."
    assert opening_line(12) == "12 papers in the indexed abstracts address this."
    for papers in (1, 3, 12):
        assert is_service_sentence(opening_line(papers))
    assert is_service_sentence(PARTIAL_ANSWER_PREFACE)
    assert not is_service_sentence("Three papers find that wages rose.")
