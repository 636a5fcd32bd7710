"""Sentence-level evidence: each paper's answering sentences first, and the decision's sentence bars."""

from __future__ import annotations

from collections.abc import Sequence

from answering.answerability import AnswerabilityVerdict, SentenceBars
from answering.evidence import PaperSentences, SentenceEvidence, sharpened
from answering.prompt import Passage


class WordScorer:
    """A sentence scorer that calls a sentence answering when it states a result ("find", "show") on the query's
    last word: enough to drive the stage's logic through its port."""

    name = "words"

    def score(self, query: str, title: str, sentences: Sequence[str]) -> list[float]:
        topic = query.rstrip("?").split()[-1].lower()
        return [4.0 if topic in s.lower() and ("find" in s or "show" in s) else -4.0 for s in sentences]


def test_focus_puts_the_sentence_stating_the_result_first_not_the_one_restating_the_topic() -> None:
    text = "We study wages in Ohio. We use payroll data. We find that wages fell by 4.5 percent."
    passage = Passage(1, "d", "d#0", "Wages", 2001, text)
    evidence = SentenceEvidence(WordScorer(), max_sentences=2)
    (sentences,) = evidence.weigh_texts("What happened to wages?", [("Wages", text)])
    assert sentences.best == "We find that wages fell by 4.5 percent."
    focused = evidence.focused(passage, sentences).text
    assert focused == "We find that wages fell by 4.5 percent. We use payroll data."  # the opening sentence last


def test_an_abstracts_opening_sentence_gives_way_to_a_later_one_the_judge_rates_alike() -> None:
    # Openings state the question or setting far more often than the result (answering/result_cues.py).
    sentences = ("Wages in Ohio fell.", "Payrolls were merged with tax records.", "Hours in Ohio fell.")
    weighed = PaperSentences(sentences, (0.9, 0.1, 0.9))
    assert weighed.best == "Hours in Ohio fell."
    assert PaperSentences(sentences[::2], (0.9, 0.9)).best == "Wages in Ohio fell."  # two sentences: no opening


def test_a_finding_may_be_written_only_from_the_best_sentence_not_every_one_the_judge_passes() -> None:
    # The method sentence passes the judge too (P 0.7); a finding written from it would state the method.
    sentences = PaperSentences(("We use payroll data from Ohio.", "We find that wages fell by 4.5 percent."),
                               (0.7, 0.9))  # fmt: skip
    assert sentences.answering() == ("We find that wages fell by 4.5 percent.",)


def test_a_second_sentence_is_offered_only_when_the_judge_is_as_sure_of_it() -> None:
    sentences = ("We use payroll data from Ohio.", "We find that wages fell by 4.5 percent.",
                 "Hours fell by 2 percent.", "Did prices fall?")  # fmt: skip
    assert PaperSentences(sentences, (0.3, 0.9, 0.85, 0.1)).second(0.8) == "Hours fell by 2 percent."
    assert PaperSentences(sentences, (0.3, 0.9, 0.3, 0.1)).second(0.8) is None  # not sure enough of it
    assert PaperSentences(sentences, (0.3, 0.9, 0.85, 0.1)).second(None) is None  # the setting is off
    # the abstract's own question states no finding, however the judge rates it
    assert PaperSentences(sentences, (0.3, 0.9, 0.1, 0.95)).second(0.8) is None
    assert PaperSentences(sentences[1:2], (0.9,)).second(0.0) is None  # one sentence: no second
    # a sentence that reads as the method needs the judge far surer of it than one that reads as a result
    method = ("Wages fell by 4.5 percent in Ohio.", "We study how wages respond to a minimum wage.")
    assert PaperSentences(method, (0.9, 0.85)).second(0.8) is None
    assert PaperSentences(method, (0.9, 0.97)).second(0.8) == method[1]


def sentences_with(best: float) -> PaperSentences:
    return PaperSentences(("a", "b"), (best, 0.01))


def test_the_sentence_bars_drop_papers_without_an_answering_sentence_and_resolve_a_hedge() -> None:
    covered = AnswerabilityVerdict("covered", 0.9, "judged", answering=(0, 3))
    weighed = {0: sentences_with(0.9), 3: sentences_with(0.2)}
    assert sharpened(covered, weighed, SentenceBars(sentence_from=0.5)).answering == (0,)
    assert sharpened(covered, weighed, SentenceBars()).answering == (0, 3)  # no bar: as decided
    declined = sharpened(covered, weighed, SentenceBars(sentence_from=0.95))
    assert declined.coverage == "not_covered" and not declined.answering
    hedge = AnswerabilityVerdict("partial", 0.5, "in between", answering=(3,))
    assert sharpened(hedge, weighed, SentenceBars(rescue_from=0.1)).coverage == "covered"
    assert sharpened(hedge, weighed, SentenceBars(rescue_from=0.5)).coverage == "not_covered"
    assert sharpened(hedge, weighed, SentenceBars()).coverage == "partial"  # no bar: the hedge stays
