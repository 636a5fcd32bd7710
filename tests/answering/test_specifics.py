"""Named specifics of a question, and the share the passages never mention."""

from __future__ import annotations

import pytest

from answering.specifics import earliest_named_year, question_specifics, unmatched_specifics


def test_specifics_are_names_acronyms_and_years_not_question_words() -> None:
    question = "Did Seattle's $15 minimum wage cut hours worked in the 2010s, as the CBO predicted for Americans?"
    assert question_specifics(question) == ["seattle", "2010", "cbo"]
    assert question_specifics("How do tariffs affect prices?") == []


@pytest.mark.parametrize(
    ("question", "passage", "unmatched"),
    [
        ("Do Ghanaian farmers copy their neighbours?", "We study farmers in Ghana.", 0.0),  # adjective form
        ("Did Seattle's wage floor cut hours?", "Minimum wages in US cities reduce hours.", 1.0),
        ("Why did the IETF slow down after 2000?", "Standards bodies like the IETF slowed down.", 0.5),
        ("Is the FTC right about noncompetes?", "The FTCA of 1914 is a statute.", 1.0),  # acronyms match whole
        ("How do tariffs affect prices?", "Anything at all.", 0.0),  # nothing named: no signal
        # an acronym the passage spells out is mentioned: abstracts write out what questions abbreviate
        ("Do class-size rules bias RD estimates?", "It biases regression-discontinuity estimates.", 0.0),
        ("Does the EITC's credit raise work?", "The earned income tax credit raises work.", 0.0),
        ("Does R&D raise growth?", "Research and development spending raises growth.", 0.0),
        ("Does UI lengthen spells?", "We use information under its rules.", 1.0),  # no chance initials
    ],
)
def test_unmatched_share(question: str, passage: str, unmatched: float) -> None:
    assert unmatched_specifics(question, [passage]) == unmatched


@pytest.mark.parametrize(("question", "year"), [
    ("How much of the 2020 COVID stimulus checks did US households spend?", 2020),
    ("Did wage inequality rise from 1980 to 2005, and in the 1970s?", 1970),
    ("What happened in the 1920's stock boom?", 1920),
    ("Does a $2000 rebate or 2,000 extra workers or a 1999.5 index change anything?", None),
    ("Does the minimum wage reduce employment?", None),
])  # fmt: skip
def test_the_earliest_year_a_question_names(question: str, year: int | None) -> None:
    assert earliest_named_year(question) == year
