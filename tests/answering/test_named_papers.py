"""A paper the question names by its authors: read only in the forms that cite a paper, answered when found."""

from __future__ import annotations

import pytest

from answering.answerability import AnswerabilityVerdict
from answering.answerer import Question
from answering.named_papers import Citation, answered_by_named, citations_in, named_positions, without_citations
from corpus.documents import Document


def paper(doc_id: str, authors: list[str], year: int) -> Document:
    return Document(doc_id, doc_id, "A title", "An abstract.", "An abstract.", str(year), year, authors)


CHINA = paper("10.1/china", ["David H Autor", "David Dorn", "Gordon H Hanson"], 2013)
GEOGRAPHY = paper("10.1/geo", ["Autor, David H.", "Dorn, David", "Hanson, Gordon H."], 2013)  # "Last, First"
TRANSFERS = paper("10.1/cash", ["Angelucci, Manuela De Giorgi, Giacomo"], 2009)  # two authors in one string
WAGES = paper("10.1/wages", ["Kevin Lang", "Michael Manove"], 2011)


@pytest.mark.parametrize(("question", "citations"), [
    ("What did Autor, Dorn and Hanson find about import competition?", [Citation(("autor", "dorn", "hanson"))]),
    ("What did Autor, Dorn, and Hanson (2013) find?", [Citation(("autor", "dorn", "hanson"), 2013)]),
    ("Is Chetty et al. right about teachers?", [Citation(("chetty",))]),
    ("What does Poterba's (2014) lecture say?", [Citation(("poterba",), 2014)]),
    ("What did Angelucci and De Giorgi find?", [Citation(("angelucci", "de"))]),
    # a lone capitalised word is no name
    ("Do Black workers earn less than White workers?", []),
    ("How did the 2008 crisis (2008) change lending?", []),
])  # fmt: skip
def test_names_are_read_only_in_the_forms_that_cite_a_paper(question: str, citations: list[Citation]) -> None:
    assert citations_in(question) == citations


def test_a_paper_is_named_when_every_surname_is_its_authors_and_the_year_its() -> None:
    found = [WAGES, CHINA, GEOGRAPHY, TRANSFERS]
    assert named_positions("What did Autor, Dorn and Hanson find?", found) == [1, 2]
    assert named_positions("What did Autor, Dorn and Hanson (2012) find?", found) == []  # not their year
    assert named_positions("What did Autor and Katz find?", found) == []  # Katz is none of theirs
    assert named_positions("What did Angelucci and De Giorgi find about cash transfers?", found) == [3]
    assert named_positions("Do Black and White workers earn the same?", found) == []  # no such authors


def test_the_first_named_paper_answers_with_the_named_papers_the_decision_chose() -> None:
    declined = AnswerabilityVerdict("not_covered", 0.01, "no passage reaches P(answers) 0.36")
    answered = answered_by_named(declined, [4, 6])
    assert answered.covered and answered.answering == (4,)
    assert "names the paper by its authors" in answered.reason
    chosen = AnswerabilityVerdict("covered", 0.9, "judged", (), (1, 6))
    assert answered_by_named(chosen, [4, 6]).answering == (4, 6)  # the unnamed paper 1 gives way
    assert answered_by_named(chosen, []) == chosen


def test_the_sentence_judge_reads_the_authors_as_the_authors() -> None:
    assert without_citations("What did Autor, Dorn and Hanson find about import competition?") == (
        "What did the authors find about import competition?")


def test_a_question_naming_a_papers_authors_is_answered_from_that_paper(make_services) -> None:
    answerer = make_services().answerer
    prepared = answerer.prepare(Question(query="What did Doe and Roe find about import competition from China?"))
    assert prepared.coverage == "covered" and prepared.verdict is not None
    assert "names the paper by its authors" in prepared.verdict.reason
    cited = [prepared.hits[finding.passage - 1].chunk.doc_id for finding in prepared.findings]
    assert cited == ["10.1257/test.3"]  # the authors' paper on the question's topic, not all their papers
