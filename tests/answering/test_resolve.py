"""The resolve stage: follow-ups, time windows from the words, the request's filters winning, empty windows."""

import pytest

from answering.conversation import CitedPaper, Turn
from answering.resolve import resolve_question
from corpus.documents import Document
from corpus.filters import SearchFilters
from corpus.search_backend import CorpusStats

# Ten papers: 1999-2024, four of them without JEL codes.
STATS = CorpusStats({1999: 1, 2004: 2, 2012: 1, 2013: 1, 2022: 2, 2023: 1, 2024: 2}, {1999: 1, 2004: 2, 2024: 1})
TITLES = {"a": ("Carbon Taxes and Emissions", 2022), "b": ("Fuel Taxes and Driving", 2013)}
HISTORY = (Turn("Do carbon taxes reduce emissions?", "Two papers answer. ...",
                (CitedPaper("a", "", None), CitedPaper("b", "", None))),)  # fmt: skip


def resolve(question, history=(), filters=None):
    return resolve_question(question, history, filters, STATS, TITLES.get)


def test_a_standalone_question_passes_through_unfiltered() -> None:
    resolved = resolve("Do minimum wages reduce teenage employment?", HISTORY)
    assert resolved.query == resolved.retrieval_query == "Do minimum wages reduce teenage employment?"
    assert not resolved.is_followup and resolved.filters is None and resolved.notes == () and resolved.decline is None
    assert resolved.applied.sources == {}


def test_a_window_in_the_words_becomes_the_year_filter_and_leaves_the_searched_text() -> None:
    resolved = resolve("Since 2022, what do we know about carbon taxes?")
    assert resolved.filters == SearchFilters(year_min=2022)
    assert resolved.retrieval_query == resolved.judge_query == "What do we know about carbon taxes?"
    assert resolved.applied.sources == {"year_min": "question words"}
    assert resolved.applied.meaning == "Since 2022: papers from 2022 or later."
    assert any("Read a time window in the question: Since 2022" in note for note in resolved.notes)


def test_relative_words_count_back_from_the_index_latest_year() -> None:
    resolved = resolve("What does recent research say about carbon taxes?")
    assert resolved.filters == SearchFilters(year_min=2015)  # the last ten years of a corpus ending in 2024


def test_the_request_filters_win_and_the_words_fill_only_what_they_left_open() -> None:
    won = resolve("Since 2022, what do we know about carbon taxes?", filters=SearchFilters(year_min=2010))
    assert won.filters == SearchFilters(year_min=2010) and won.applied.sources == {"year_min": "request"}
    assert won.applied.meaning is None and any("request's year filter wins" in note for note in won.notes)
    filled = resolve("What did papers before 2020 find about carbon taxes?", filters=SearchFilters(year_min=2010,
                                                                                                   jel_prefix="Q5"))
    assert filled.filters == SearchFilters(year_min=2010, year_max=2019, jel_prefix="Q5")
    assert filled.applied.sources == {"year_min": "request", "jel_prefix": "request", "year_max": "question words"}


def test_a_followup_is_resolved_and_its_referred_papers_named() -> None:
    resolved = resolve("Which of those is most recent?", HISTORY)
    assert resolved.is_followup and resolved.query.startswith("Which of those is most recent? (")
    assert "carbon" in resolved.query and resolved.referred == ("a", "b")  # newest first, titles looked up
    assert resolved.notes[0].startswith("Read as a follow-up to: “Do carbon taxes reduce emissions?”")
    second = resolve("What did the second paper find?", HISTORY)
    assert second.referred == ("b",) and "Fuel Taxes and Driving, 2013" in second.notes[0]


def test_unknown_cited_ids_are_left_out() -> None:
    history = (Turn("Do carbon taxes reduce emissions?", "", (CitedPaper("gone", "", None),)),)
    assert resolve("Which of those is most recent?", history).referred == ()


def test_a_window_no_paper_falls_in_is_a_reason_to_decline() -> None:
    resolved = resolve("What about after 2030?", HISTORY)
    assert resolved.is_followup and resolved.filters == SearchFilters(year_min=2031)
    assert resolved.decline is not None and "after 2030" in resolved.decline and "No paper" in resolved.decline
    assert "1999 to 2024" in resolved.decline
    assert resolve("Minimum wages", filters=SearchFilters(year_min=2005, year_max=2011)).decline is not None


def test_a_jel_filter_says_how_many_papers_without_codes_it_leaves_out() -> None:
    everything = resolve("Carbon taxes and emissions", filters=SearchFilters(jel_prefix="q5"))
    assert "The JEL filter Q5 leaves out the 4 papers (40%) that carry no JEL codes." in everything.notes
    recent = resolve("Papers since 2020 on carbon taxes and emissions", filters=SearchFilters(jel_prefix="Q5"))
    assert "The JEL filter Q5 leaves out the 1 paper (20%) that carry no JEL codes." in recent.notes


def test_without_index_stats_no_window_is_read() -> None:
    resolved = resolve_question("Since 2022, what about carbon taxes?", (), None, None)
    assert resolved.filters is None and resolved.retrieval_query == "Since 2022, what about carbon taxes?"


def test_a_dated_question_is_judged_without_its_window_and_literature_frame() -> None:
    resolved = resolve("Before 2010, what did randomized evaluations show about whether the Job Corps raised earnings?")
    assert resolved.query == resolved.question  # answered as asked, the window in `applied`
    assert resolved.filters == SearchFilters(year_max=2009)
    assert resolved.applied.sources == {"year_max": "question words"}
    searched = "What did randomized evaluations show about whether the Job Corps raised earnings?"
    assert resolved.retrieval_query == searched  # retrieval reads the question less its window, as before
    assert resolved.judge_query == "Whether the Job Corps raised earnings?"


@pytest.mark.parametrize("question", [
    "Have studies found that minimum wages reduce employment?",
    "What does research find about carbon taxes and emissions?",
    "Was there evidence that cash bonuses for teachers raise exam results?",
])  # fmt: skip
def test_without_history_or_window_every_text_is_the_question_itself(question: str) -> None:
    for history in ((), HISTORY):  # a standalone question after earlier turns too
        resolved = resolve(question, history)
        assert resolved.query == resolved.retrieval_query == resolved.judge_query == question.strip()
        assert resolved.filters is None and not resolved.is_followup
    without_stats = resolve_question(question, (), None, None)
    assert without_stats.query == without_stats.retrieval_query == without_stats.judge_query == question.strip()


def test_a_topic_period_is_searched_and_filtered_by_published_before_but_not_judged() -> None:
    question = "Did forecasters underestimate the output cost of austerity in advanced economies after 2008?"
    resolved = resolve(question)
    assert resolved.filters is None and resolved.retrieval_query == question  # the topic's period, no window
    assert resolved.judge_query == "Did forecasters underestimate the output cost of austerity in advanced economies?"


def test_the_journal_is_no_topic_for_the_judges_but_is_searched_as_asked() -> None:
    question = "  What new ways of assigning students to schools have AER theory papers proposed?  "
    for resolved in (resolve(question), resolve_question(question, (), None, None)):
        assert resolved.query == resolved.retrieval_query == question.strip()
        assert resolved.judge_query == "What new ways of assigning students to schools have theory papers proposed?"


def test_a_followup_is_searched_with_the_carried_terms_and_judged_as_a_question() -> None:
    resolved = resolve("Is there anything published after 2020 on this question?", HISTORY)
    assert resolved.query.startswith("Is there anything published after 2020 on this question? (")
    assert resolved.retrieval_query.startswith("Is there anything published on this question? (")
    assert resolved.judge_query == "Do carbon taxes reduce emissions?"  # the earlier question, in the new window
    assert resolved.filters == SearchFilters(year_min=2021)
    short = resolve("What about fuel taxes?", HISTORY)
    assert short.judge_query == "Do carbon taxes reduce emissions? What about fuel taxes?"


def test_a_question_python_strips_to_nothing_is_searched_as_asked() -> None:
    resolved = resolve_question("\u0085", (), None, None)
    assert resolved.retrieval_query == "\u0085" and resolved.judge_query == "\u0085"


def test_papers_cited_by_their_authors_are_looked_up_and_reranked_with_the_referred_ones() -> None:
    china = Document("c", "c", "The China Syndrome", "Import competition raised unemployment.", "", "2013", 2013,
                     ["David H Autor", "David Dorn", "Gordon H Hanson"])  # fmt: skip

    def authors(surnames, year, limit):
        return [china] if {"autor", "dorn"} >= set(surnames) and year in (None, 2013) else []

    resolved = resolve_question("What did Autor and Dorn find about import competition?", (), None, STATS,
                                TITLES.get, authors)  # fmt: skip
    assert resolved.named.cited == resolved.named.on_topic == ("c",) and resolved.included == ("c",)
    assert resolved.retrieval_query == "What did Autor and Dorn find about import competition?"
    alone = resolve_question("What did Autor and Dorn find?", (), None, STATS, TITLES.get, authors)
    assert alone.retrieval_query == "What did Autor and Dorn find? (The China Syndrome)"  # searched for by its title
    assert alone.judge_query == "What did Autor and Dorn find?"
    followup = resolve_question("Which of those is about import competition? Autor and Dorn (2013), say?", HISTORY,
                                None, STATS, TITLES.get, authors)  # fmt: skip
    assert followup.included == ("a", "b", "c")  # the earlier answer's papers, then the named one
    missing = resolve_question("What did Autor and Dorn (2015) find?", (), None, STATS, TITLES.get, authors)
    assert missing.included == () and "No indexed paper is by Autor and Dorn (2015)." in missing.notes


def test_the_judges_read_a_plural_possessive_without_its_apostrophe() -> None:
    resolved = resolve("Does providing free school meals raise students' attendance, and the firm's profits?")
    assert resolved.judge_query == "Does providing free school meals raise students attendance, and the firm's profits?"
    assert resolved.retrieval_query == resolved.query  # retrieval searches the words as asked
    assert resolve("Did the 1990s’ reforms work?").judge_query == "Did the 1990s reforms work?"
