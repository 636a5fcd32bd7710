"""Composing an answer from per-paper findings as they arrive (answering/compose.py)."""

from __future__ import annotations

from answering.citations import is_service_sentence
from answering.compose import HOLD_WORDS, AnswerComposer, FindingStream, lead_sentence, marked, third_person
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


def test_a_finding_with_a_fallback_is_held_for_its_first_words_then_streams() -> None:
    finding = FindingStream(passage=2, fallback="Wages rose.")
    words = [f"w{i}" for i in range(HOLD_WORDS)]
    finding.feed(" ".join(words))
    assert finding.text == "" and not finding.declined  # it may still decline
    finding.feed(" more")
    assert finding.text == " ".join([*words, "more"])  # known not to decline: shown as generated
    short = FindingStream(passage=2, fallback="Wages rose.")
    short.feed("Prices fell [1].")
    assert short.text == ""
    short.finished = True
    assert short.text == "Prices fell [2]."


def test_a_finding_that_declines_in_its_first_words_shows_its_fallback_and_stops() -> None:
    composer = AnswerComposer(opening_line(2), [1, 3], ["Wages rose.", "Prices fell in the treated towns."])
    shown = composer.start()
    shown += composer.feed(0, "Wages rose [1].")
    shown += composer.finish(0)
    shown += composer.feed(1, "The authors show that the index")
    assert composer.wants_more(1)
    shown += composer.feed(1, "ed abstracts do not answer")
    assert not composer.wants_more(1) and composer.findings[1].declined  # its generation may stop
    shown += composer.feed(1, " this question.")
    shown += composer.finish(1)
    assert shown == composer.text and "indexed abstracts do not" not in shown.split(".", 1)[1]
    assert composer.finding_texts() == ["Wages rose [1].", "Prices fell in the treated towns. [3]"]
    # Without a fallback a decline stays (the answerer drops it).
    plain = FindingStream(passage=1)
    plain.feed("The indexed abstracts do not answer this question.")
    assert not plain.declined and "do not answer" in plain.text


def test_fallbacks_are_the_closest_sentence_in_the_third_person() -> None:
    assert third_person("We find that our estimates let us reject it, as we show.") == (
        "The authors find that their estimates let them reject it, as the authors show.")
    assert third_person("I find no Type I errors.") == "The authors find no Type I errors."
    assert third_person("While I also find little impact on my sample's mortality, costs fell after World War I.") == (
        "While the author also finds little impact on the author's sample's mortality, costs fell after World War I.")
    assert third_person("Here I study and I identify what I show.") == (
        "Here the author studies and the author identifies what the author shows.")
    assert third_person("Our results hold. Weights and usury are unchanged.") == (
        "Their results hold. Weights and usury are unchanged.")
    assert lead_sentence("We show wages rose. Then prices fell.") == "The authors show wages rose."


def test_a_finding_with_a_finisher_is_shown_only_once_complete_and_as_the_finisher_says() -> None:
    seen: list[str] = []

    def finisher(text: str) -> str:
        seen.append(text)
        return "Smith (2001) finds that wages fell." if text else "Smith (2001) finds the fallback."

    composer = AnswerComposer("One paper in the indexed abstracts addresses this.", [2], finishers=[finisher])
    shown = composer.start()
    shown += composer.feed(0, "Wages fell by")
    assert shown == "One paper in the indexed abstracts addresses this."  # nothing unchecked is shown
    shown += composer.feed(0, " 4.7 percent [1]. Later")
    assert seen == ["Wages fell by 4.7 percent [2]."] and not composer.wants_more(0)
    shown += composer.finish(0)
    assert shown == composer.text == ("One paper in the indexed abstracts addresses this. Smith (2001) finds that "
                                      "wages fell [2].")  # fmt: skip


def test_every_sentence_of_a_finished_finding_carries_its_marker() -> None:
    def finisher(text: str) -> str:
        return "Eeckhout (2004) notes that city sizes are lognormal. This justifies proportionate growth."

    composer = AnswerComposer("One paper in the indexed abstracts addresses this.", [3], finishers=[finisher])
    composer.start()
    composer.feed(0, "This justifies proportionate growth [1]. More")
    composer.finish(0)
    assert composer.finding_texts() == [
        "Eeckhout (2004) notes that city sizes are lognormal [3]. This justifies proportionate growth [3]."]
    assert marked("Lee et al. (2020) find that wages rose 3.5 percent in the U.S. economy.", 1) == (
        "Lee et al. (2020) find that wages rose 3.5 percent in the U.S. economy [1].")
