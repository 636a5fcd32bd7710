"""resolve_followup: follow-ups carry the earlier topic and point at cited papers; standalone questions pass."""

from __future__ import annotations

import pytest

from answering.conversation import (
    CitedPaper,
    ResolvedQuestion,
    Turn,
    content_words,
    idf_weights,
    plain_question,
    resolve_followup,
)
from answering.time_window import parse_time_window

CITED = (
    CitedPaper("d1", "Monetary Policy and the Bank Lending Channel", 2012),
    CitedPaper("d2", "Interest Rates and Lending to Small Firms", 2024),
    CitedPaper("d3", "Reserve Requirements and Credit Supply", 2005),
)
MONETARY = [Turn("How does monetary policy affect bank lending?", "Three papers find …", CITED)]
TEACHERS = [Turn("Do teachers who raise test scores also improve their students' earnings and college going?")]


def resolve(question: str, history: list[Turn] = MONETARY) -> ResolvedQuestion:
    return resolve_followup(question, history)


@pytest.mark.parametrize(
    "question",
    [
        "What about developing countries?",
        "How about small banks?",
        "And does it hold for mortgages?",
        "Is there anything published after 2020 on this question?",
        "Is there any evidence on this from Europe?",
        "Do they also cut lending to small firms?",
        "Why do those effects persist?",
        "Does that hold in recessions too?",
        "Which of those is most recent?",
        "What does the second paper find?",
        "Any others?",
    ],
)
def test_followups_carry_the_earlier_topic(question: str) -> None:
    resolved = resolve(question)
    assert resolved.is_followup
    assert "lending" in resolved.query or "lending" in question
    assert "monetary" in resolved.carried_topic and "monetary policy" in resolved.query
    assert resolved.query.startswith(question.rstrip()) or resolved.query.startswith(question[:10])
    assert resolved.note.startswith("Read as a follow-up to: “How does monetary policy affect bank lending?”")


@pytest.mark.parametrize(
    "question",
    [
        "Does the minimum wage reduce teen employment?",
        "Is there evidence that minimum wages reduce employment?",
        "Do people save more when they expect to retire early?",
        "Do those who lose jobs in mass layoffs recover their earnings?",
        "How do tariffs affect consumer prices in the United States?",
    ],
)
def test_self_contained_questions_pass_through(question: str) -> None:
    resolved = resolve(question)
    assert resolved == ResolvedQuestion(question, False)


def test_no_history_is_never_a_followup() -> None:
    assert resolve_followup("What about developing countries?", []) == ResolvedQuestion(
        "What about developing countries?", False
    )


def test_plural_reference_points_at_every_cited_paper() -> None:
    resolved = resolve("Did any of those papers look at small banks?")
    assert resolved.refers_to_cited == ("d1", "d2", "d3")
    assert "3 papers" in resolved.note


def test_which_of_those_is_most_recent_orders_newest_first() -> None:
    resolved = resolve("Which of those is most recent, and what about developing countries?")
    assert resolved.refers_to_cited == ("d2", "d1", "d3")
    assert parse_time_window(resolved.query, 2025) is None  # "most recent" orders; it filters nothing


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What does the second paper find?", ("d2",)),
        ("Is the first study credible?", ("d1",)),
        ("How was [3] identified?", ("d3",)),
        ("What data does the last paper use?", ("d3",)),
        ("Tell me more about the oldest one.", ("d3",)),
        ("What does the fifth paper say?", ()),  # there is no fifth
    ],
)
def test_single_paper_references(question: str, expected: tuple[str, ...]) -> None:
    resolved = resolve(question)
    assert resolved.is_followup and resolved.refers_to_cited == expected
    if expected:
        assert "about the paper it cited" in resolved.note


def test_that_paper_after_one_citation() -> None:
    history = [Turn("Do smokers inhale harder when cigarette taxes rise?", "One paper …", (CITED[0],))]
    assert resolve("Has that paper been replicated?", history).refers_to_cited == ("d1",)


def test_replaced_terms_are_not_carried() -> None:
    resolved = resolve("What about counselors or advisers rather than classroom teachers?", TEACHERS)
    assert resolved.is_followup
    assert "teacher" not in resolved.query.lower()
    assert "counselors" in resolved.query
    for kept in ("earnings", "college", "test", "scores"):
        assert kept in resolved.carried_topic


def test_a_new_place_replaces_the_old_one() -> None:
    history = [Turn("What explains the rise in American women's labor force participation?")]
    resolved = resolve("And in developing countries?", history)
    assert "American" not in resolved.query
    assert "labor force participation" in resolved.carried_topic and "women" in resolved.carried_topic


def test_a_time_window_in_the_followup_stays_for_the_window_parser() -> None:
    resolved = resolve("Is there anything published after 2020 on this question?")
    window = parse_time_window(resolved.query, 2025)
    assert window is not None and window.year_min == 2021
    assert "monetary policy" in window.question_without_window


def test_the_earlier_window_holds_unless_the_followup_names_its_own() -> None:
    history = [Turn("Since 2015, how does monetary policy affect bank lending?")]
    carried = parse_time_window(resolve("What about developing countries?", history).query, 2025)
    assert carried is not None and carried.year_min == 2015
    own = parse_time_window(resolve("What about before 2000?", history).query, 2025)
    assert own is not None and (own.year_min, own.year_max) == (None, 1999)
    assert "2015" not in resolve("What about developing countries?", history).carried_topic


def test_chains_of_followups_keep_the_first_topic() -> None:
    history = [*MONETARY, Turn("What about developing countries?")]
    resolved = resolve("And small banks?", history)
    assert "monetary policy" in resolved.query and "developing" in resolved.query


def test_term_weight_keeps_the_most_specific_carried_terms() -> None:
    weight = idf_weights(["lead and work policy", "lead work", "EITC and children's scores", "work parents"])
    history = [Turn("Does the EITC lead low-income parents to work more?")]
    resolved = resolve_followup("And their kids' test scores?", history, weight, max_carried=2)
    assert resolved.carried_topic.split() == ["EITC", "low-income"]


def test_content_words_skip_scaffolding() -> None:
    assert content_words("What does research say about housing vouchers?") == ["housing", "vouchers"]


@pytest.mark.parametrize(
    ("question", "plain"),
    [
        ("What evidence has the AER published that US employers hold wage-setting power?",
         "Whether US employers hold wage-setting power?"),
        ("Have studies found that small loans help poor entrepreneurs expand their businesses?",
         "Whether small loans help poor entrepreneurs expand their businesses?"),
        ("What did randomized evaluations show about whether the Job Corps raised youths' earnings?",
         "Whether the Job Corps raised youths' earnings?"),
        ("What has AER research found about how the Great Migration affected Black Americans?",
         "How the Great Migration affected Black Americans?"),
        ("Did any of those papers find that enrollees got better at choosing plans?",
         "Whether enrollees got better at choosing plans?"),
        ("Was there evidence that cash bonuses for teachers raise exam results?",
         "Whether cash bonuses for teachers raise exam results?"),
        ("What new ways of assigning students to schools have AER theory papers proposed?",
         "What new ways of assigning students to schools have theory papers proposed?"),
    ],
)  # fmt: skip
def test_plain_question_drops_the_literature_frame(question: str, plain: str) -> None:
    assert plain_question(question) == plain


@pytest.mark.parametrize(
    "question",
    [
        "What did studies of Massachusetts's health reform find about adverse selection?",  # the frame names a topic
        "What does research say about housing vouchers?",  # no clause to keep: a question about a topic
        "Do minimum wages reduce employment?",
        "Have studies found that it works?",  # too little left to judge
        "What has the AER published on trade?",
    ],
)
def test_plain_question_keeps_other_questions(question: str) -> None:
    assert plain_question(question) == question


def test_a_standalone_question_has_no_wording() -> None:
    assert resolve("Does the minimum wage reduce teen employment?").wording == ""


def test_a_window_only_followup_is_judged_as_the_earlier_question() -> None:
    for question in ("Is there anything published after 2020 on this question?", "Anything after 2020 on that?",
                     "Is there any evidence on this from studies in the 2020s?"):  # fmt: skip
        assert resolve(question).wording == "How does monetary policy affect bank lending?"


def test_a_short_followup_is_judged_beside_the_earlier_question() -> None:
    resolved = resolve("Is there any evidence on this from Europe?")
    earlier = "How does monetary policy affect bank lending?"
    assert resolved.wording == f"{earlier} Is there any evidence on this from Europe?"
    framed = resolve("Did any of those papers find that small banks cut lending?")
    assert framed.wording == "How does monetary policy affect bank lending? Whether small banks cut lending?"


def test_a_followup_naming_its_own_topic_is_judged_alone() -> None:
    history = [Turn("Does the EITC lead low-income parents to work more?")]
    resolved = resolve("And does the extra money improve their kids' math and reading scores?", history)
    assert resolved.is_followup and "EITC" in resolved.query
    assert resolved.wording == "Does the extra money improve their kids' math and reading scores?"


def test_the_wording_has_no_window_words_and_chains_keep_the_first_question() -> None:
    history = [Turn("Since 2015, how does monetary policy affect bank lending?")]
    assert resolve("What about developing countries?", history).wording == (
        "How does monetary policy affect bank lending? What about developing countries?")  # fmt: skip
    chain = [*MONETARY, Turn("What about developing countries?")]
    assert resolve("And after 2020?", chain).wording == (
        "How does monetary policy affect bank lending? What about developing countries?")  # fmt: skip
