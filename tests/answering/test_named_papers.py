"""A paper the question names by its authors: read only in the forms that cite a paper, answered when found."""

from __future__ import annotations

from dataclasses import replace

import pytest

from answering.answerability import AnswerabilityVerdict
from answering.answerer import Question
from answering.domain import DEFAULT_DOMAIN_PATH
from answering.named_papers import (
    Citation,
    NamedPapers,
    answered_by_named,
    citations_in,
    is_about,
    judged_question,
    named_papers,
    named_positions,
    topic_words,
    without_citations,
)
from corpus.documents import Chunk, Document
from retrieval.types import RetrievedChunk


def paper(doc_id: str, authors: list[str], year: int) -> Document:
    return Document(doc_id, doc_id, "A title", "An abstract.", "An abstract.", str(year), year, authors)


CHINA = paper("10.1/china", ["David H Autor", "David Dorn", "Gordon H Hanson"], 2013)
GEOGRAPHY = paper("10.1/geo", ["Autor, David H.", "Dorn, David", "Hanson, Gordon H."], 2013)  # "Last, First"
TRANSFERS = paper("10.1/cash", ["Angelucci, Manuela De Giorgi, Giacomo"], 2009)  # two authors in one string
WAGES = paper("10.1/wages", ["Kevin Lang"], 2011)
POLARIZATION = paper("10.1/polar", ["David H Autor", "David Dorn"], 2013)


@pytest.mark.parametrize(("question", "citations"), [
    ("What did Autor, Dorn and Hanson find about import competition?", [Citation(("autor", "dorn", "hanson"))]),
    ("What did Autor, Dorn, and Hanson (2013) find?", [Citation(("autor", "dorn", "hanson"), 2013)]),
    ("Is Chetty et al. right about teachers?", [Citation(("chetty",), form="et al.")]),
    ("What does Poterba's (2014) lecture say?", [Citation(("poterba",), 2014, "alone")]),
    ("What did Angelucci and De Giorgi find?", [Citation(("angelucci", "de"))]),
    ("What did Antràs and Helpman find?", [Citation(("antras", "helpman"))]),  # compared without accents
    ("What did O'Brien and Postel-Vinay find?", [Citation(("o'brien", "postel-vinay"))]),
    # one surname alone, as the subject of a reporting verb, a paper's owner or a source
    ("What did Chetty find about risk aversion?", [Citation(("chetty",), form="any")]),
    ("Does Piketty argue that r exceeds g?", [Citation(("piketty",), form="any")]),
    ("What does Goldin's recent paper say about pay?", [Citation(("goldin",), form="any")]),
    ("According to Heckman, does preschool pay?", [Citation(("heckman",), form="any")]),
    ("What did Raj Chetty find about taxes?", [Citation(("chetty",), form="any")]),  # the surname, not "Raj"
    ("How does TV show advertising help viewers?", []),  # an acronym is no surname
    # any other lone capitalised word is no name
    ("Do Black workers earn less than White workers?", []),
    ("Did Black workers find jobs after 1965?", []),
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


def test_papers_whose_authors_are_exactly_the_cited_ones_come_first() -> None:
    found = [CHINA, POLARIZATION, WAGES]
    assert named_positions("What did Autor and Dorn find about jobs?", found) == [1, 0]  # two authors: theirs first
    assert named_positions("What did Autor et al. find about jobs?", found) == [0, 1]  # three or more first
    assert named_positions("What did Lang (2011) find about wages?", found) == [2]
    assert named_positions("What did Dorn find about jobs?", found) == [0, 1]  # one of the authors: either paper
    assert named_positions("What did Autor find about jobs?", [WAGES, *found]) == [1, 2]  # the first author's


def test_a_named_paper_ranked_past_the_evidence_answers_only_when_the_question_is_about_it() -> None:
    found = [WAGES, TRANSFERS, CHINA]
    assert named_positions("What did Autor, Dorn and Hanson find about central banks?", found, within=2) == []
    assert named_positions("What did Autor, Dorn and Hanson find?", found, 2, on_topic=["10.1/china"]) == [2]


@pytest.mark.parametrize(("question", "topic"), [
    ("What did Herbst and Hendren find?", []),
    ("Summarize what Herbst and Hendren found.", []),
    ("What are the key findings of Dell (2015)?", []),
    ("What did Jensen and Miller find about rice?", ["rice"]),
    ("What did Card et al. find about unemployment benefits?", ["unemployment", "benefits"]),
    ("What is the central finding of Chetty et al.?", []),
    ("What did Thaler find about central bank independence?", ["central", "bank", "independence"]),  # a topic's word
])  # fmt: skip
def test_the_topic_is_what_the_question_asks_besides_its_citations(question: str, topic: list[str]) -> None:
    assert topic_words(question) == topic


def test_a_paper_is_about_the_topic_when_it_holds_half_its_words() -> None:
    giffen = Document("g", "g", "Giffen Behavior and Subsistence Consumption", "We find Giffen behavior for rice in "
                      "Hunan among résumés of productivity.", "", "2008", 2008, ["Robert T. Jensen", "Nolan Miller"])
    assert is_about([], giffen)  # a question about nothing else
    assert is_about(["rice"], giffen) and is_about(["Rice", "prices"], giffen)
    assert is_about(["resumes", "productive", "workers"], giffen)  # accents, five-letter stems: 2 of 3
    assert not is_about(["dolphin", "migration", "routes"], giffen)
    assert not is_about(["price", "crude", "oil", "futures"], giffen)


def test_the_cited_papers_are_looked_up_by_their_surnames_and_year_exact_authors_first() -> None:
    papers = [CHINA, POLARIZATION, GEOGRAPHY, WAGES]
    asked: list[tuple] = []

    def lookup(surnames, year, limit):
        asked.append((surnames, year, limit))
        return [p for p in papers if Citation(surnames, year).names(p)][:limit]

    everything = ("10.1/polar", "10.1/china", "10.1/geo")
    assert named_papers("What did Autor and Dorn (2013) find?", lookup) == NamedPapers(everything, everything,
                                                                                       title="A title", untopical=True)
    assert asked == [(("autor", "dorn"), 2013, 8)]
    assert named_papers("What did Autor and Dorn (2013) find about dolphins?", lookup) == NamedPapers(everything)
    unindexed = named_papers("What did Kahneman and Tversky find?", lookup)
    assert unindexed == NamedPapers(missing=("Kahneman and Tversky",), untopical=True)
    assert unindexed.about_economics  # whatever the domain gate would read in "What did … find?"
    assert named_papers("What did Kahneman and Tversky (1979) find about risk?", lookup).missing == (
        "Kahneman and Tversky (1979)",)
    assert named_papers("Do Japan and Korea vote for smaller welfare states?", lookup) == NamedPapers()  # no authors
    assert named_papers("What about Japan and Korea?", lookup) == NamedPapers(untopical=True)  # no one is cited
    assert not named_papers("What about Japan and Korea?", lookup).about_economics
    assert named_papers("What do minimum wages do?", lookup) == NamedPapers()
    assert named_papers("What did Congress find?", lookup) == NamedPapers(untopical=True)  # no author: no note


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
    assert without_citations("What does Goldin's paper say about pay?") == "What does the authors' paper say about pay?"
    hits = [RetrievedChunk(Chunk("w#0", "w", 0, "An abstract.", 0, 12, "", False), WAGES),
            RetrievedChunk(Chunk("c#0", "c", 0, "An abstract.", 0, 12, "", False),
                           replace(CHINA, title="The China Syndrome."))]  # fmt: skip
    asked = "What did Autor, Dorn and Hanson find about import competition?"
    assert judged_question(asked, [1], hits) == "What did the authors find about import competition?"
    assert judged_question(asked, [], hits) == asked  # no named paper found: the question as asked
    # a question about nothing but the paper is read as one about its title
    assert judged_question("What did Autor, Dorn and Hanson find?", [1], hits) == (
        "What did the authors find about The China Syndrome?")


def test_a_question_naming_a_papers_authors_is_answered_from_that_paper(make_services) -> None:
    answerer = make_services().answerer
    prepared = answerer.prepare(Question(query="What did Doe and Roe find about import competition from China?"))
    assert prepared.coverage == "covered" and prepared.verdict is not None
    assert "names the paper by its authors" in prepared.verdict.reason
    cited = [prepared.hits[finding.passage - 1].chunk.doc_id for finding in prepared.findings]
    assert cited == ["10.1257/test.3"]  # the authors' paper on the question's topic, not all their papers


def test_a_question_about_nothing_but_a_named_paper_is_answered_from_it(make_services) -> None:
    answerer = make_services().answerer
    prepared = answerer.prepare(Question(query="What did Doe and Roe (2012) find?"))
    assert prepared.coverage == "covered"
    cited = [prepared.hits[finding.passage - 1].chunk.doc_id for finding in prepared.findings]
    assert cited == ["10.1257/test.3"]  # their 2012 paper, though the words name no topic
    missing = answerer.prepare(Question(query="What did Doe and Roe (2030) find?"))
    assert "No indexed paper is by Doe and Roe (2030)." in missing.notes and not missing.findings


def test_a_question_about_nothing_but_an_unindexed_paper_says_so_and_not_that_it_is_outside_economics(
        make_services) -> None:  # fmt: skip
    answerer = make_services(answerability={"domain_path": DEFAULT_DOMAIN_PATH}).answerer
    prepared = answerer.prepare(Question(query="What did Card and Krueger (1994) find?"))
    assert "No indexed paper is by Card and Krueger (1994)." in prepared.notes
    assert "domain" not in prepared.timings_ms  # the gate is not asked: the question cites economists' paper
    assert prepared.verdict is None or "about economics" not in prepared.verdict.reason
