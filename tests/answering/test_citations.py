import pytest

from answering.citations import SupportChecker, is_refusal, parse_markers, strip_markers
from answering.prompt import NOT_COVERED_ANSWER, Passage

PASSAGES = [
    Passage(1, "d1", "d1#0", "Minimum wages", 1999,
            "We study minimum wage increases in New Jersey. Employment in fast food restaurants did not fall."),
    Passage(2, "d2", "d2#0", "Bank lending", 2004,
            "Banks cut lending when the central bank raises interest rates. Small banks respond most."),
]  # fmt: skip


@pytest.fixture(scope="module")
def checker(tiny_index) -> SupportChecker:
    # The real embedding model (the index's), with the service's default threshold.
    from answering.answerer import AnsweringSettings

    return SupportChecker(tiny_index.embedder.encode, AnsweringSettings().support_threshold)


def test_markers_are_parsed_and_stripped() -> None:
    assert parse_markers("Jobs did not fall [1], [2]. Also [1,3].") == [1, 2, 3]
    assert strip_markers("Jobs did not fall [1]. ") == "Jobs did not fall ."


def test_supported_sentences_get_the_right_passage_and_sentence(checker: SupportChecker) -> None:
    answer = (
        "Employment at fast food restaurants did not decline after the minimum wage rose [1]. "
        "When interest rates go up, banks reduce their lending [1]."
    )
    report = checker.check(answer, PASSAGES)
    first, second = report.sentences
    assert first.supported_by[0] == 1 and first.markers == [1] and first.correct_markers == [1]
    assert second.supported_by[0] == 2 and second.correct_markers == []  # the model cited the wrong passage
    assert report.marker_precision == 0.5 and report.supported_share == 1.0
    citation = next(c for c in report.citations if c.answer_sentence == 1 and c.passage == 2)
    assert citation.supporting_sentence == "Banks cut lending when the central bank raises interest rates."


def test_unrelated_sentences_are_flagged(checker: SupportChecker) -> None:
    report = checker.check("The Roman empire collapsed because of lead pipes in its aqueducts.", PASSAGES)
    assert report.unsupported == [0] and report.citations == []


def test_the_not_covered_answer_and_fragments_are_not_claims(checker: SupportChecker) -> None:
    report = checker.check(f"{NOT_COVERED_ANSWER} Sorry.", PASSAGES)
    assert [s.is_claim for s in report.sentences] == [False, False] and report.unsupported == []


def test_threshold_is_validated(tiny_index) -> None:
    with pytest.raises(ValueError):
        SupportChecker(tiny_index.embedder.encode, threshold=1.5)


def test_a_wrapped_not_covered_sentence_is_a_refusal() -> None:
    assert is_refusal(NOT_COVERED_ANSWER) and is_refusal("The indexed abstracts do not answer this question [2].")
    assert is_refusal("The authors show that the indexed abstracts do not\nanswer this question.")
    assert not is_refusal("The authors find that minimum wages did not reduce employment [1].")


def test_a_checker_for_one_answer_embeds_each_text_once_and_reports_the_same(tiny_index) -> None:
    embedded: list[str] = []

    def encode(texts):
        embedded.extend(texts)
        return tiny_index.embedder.encode(texts)

    plain = SupportChecker(tiny_index.embedder.encode, 0.56)
    once = SupportChecker(encode, 0.56).for_one_answer()
    finding = "Employment at fast food restaurants did not decline after the minimum wage rose [1]."
    answer = f"{finding} When interest rates go up, banks reduce their lending [2]."
    for text, passages in ((answer, PASSAGES), (finding, PASSAGES[:1])):  # the answer, then one finding's check
        expected, report = plain.check(text, passages), once.check(text, passages)
        assert [s.supported_by for s in report.sentences] == [s.supported_by for s in expected.sentences]
        assert [(c.passage, c.supporting_sentence) for c in report.citations] == [
            (c.passage, c.supporting_sentence) for c in expected.citations]
    assert len(embedded) == len(set(embedded)) == 6  # two claims and four passage sentences, each once
