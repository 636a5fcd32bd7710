"""parse_time_window: windows typed in questions become inclusive year bounds; topic years never do."""

from __future__ import annotations

import pytest

from answering.time_window import parse_time_window, without_topic_periods

LATEST = 2025

WINDOWS = [
    ("Since 2015, what do we know about carbon taxes?", 2015, None),
    ("What has been published on tariffs since 2022?", 2022, None),
    ("From 2022, which papers study remote work?", 2022, None),
    ("Evidence on minimum wages, 2022 or later", 2022, None),
    ("In 2022 or later, what has research found about the Great Migration?", 2022, None),
    ("Research from 2018 onwards on bank runs", 2018, None),
    ("Is there newer work, from 2022 on, on job loss?", 2022, None),
    ("What did papers after 2020 find about school vouchers?", 2021, None),
    ("What did papers after 2047 find about leases?", 2048, None),  # asked of papers: declined, no paper is
    ("What new ways of matching students to schools have theory papers proposed since 2022?", 2022, None),
    ("Anything more recent than 2020 on unemployment insurance?", 2021, None),
    ("Before 2016, what did studies find about adverse selection?", None, 2015),
    ("What was known before 2000 about trade and wages?", None, 1999),
    ("Prior to 2010, did studies show microcredit helps?", None, 2009),
    ("Evidence up to 2009 on teacher incentives", None, 2009),
    ("What did economists find until 2009 about housing?", None, 2009),
    ("Studies through 2012 on health insurance mandates", None, 2012),
    ("Papers from 2010 or earlier on inflation targeting", None, 2010),
    ("What did research in the 2000s find about outsourcing?", 2000, 2009),
    ("Any studies in the 2020s on minimum wages?", 2020, 2029),
    ("What did work in the 1990s and 2000s say about trade?", 1990, 2009),
    ("What did studies in the '90s find about welfare reform?", 1990, 1999),
    ("Papers between 2005 and 2010 on bank lending", 2005, 2010),
    ("What was published from 2003 to 2008 on auctions?", 2003, 2008),
    ("What was found in 2019 about tariffs?", 2019, 2019),
    ("Since the 1990s, how have economists measured inequality?", 1990, None),
    ("Since 2010 but before 2020, what about credit booms?", 2010, 2019),
    ("Recent work (2020 or later): how much of the 2000s US housing boom came from easier lending?", 2020, None),
]


@pytest.mark.parametrize(("question", "year_min", "year_max"), WINDOWS)
def test_windows_become_inclusive_bounds(question: str, year_min: int | None, year_max: int | None) -> None:
    window = parse_time_window(question, LATEST)
    assert window is not None
    assert (window.year_min, window.year_max) == (year_min, year_max)
    assert all(part.lower() in question.lower() for part in window.phrase.split(" … "))


TOPIC_YEARS = [
    "What caused the 2008 financial crisis?",
    "How much of the 2000s US housing boom came from easier lending?",
    "Did the 2010 health reform change coverage?",
    "Using data from 2010, do firms pay women less?",
    "What did the tax reform in 2006 do to investment?",
    "How did banks behave during the 2008 crisis?",
    "How did employment change during 2009?",
    "Did the pre-2008 credit boom raise house prices?",
    "What happened after the 2008 crisis to small firms?",
    "Which of those is most recent?",
    "How does monetary policy affect bank lending?",
    # no paper can be published after this year or before the journal's first volume: the year is the topic's
    "How much do buyers discount homes whose leases may not be renewed after 2047?",
    "Do big cities have higher death rates than the countryside, as industrial cities did in the 1800s?",
    # a window after a word of the topic is the topic's period
    "How did racial segregation in US cities evolve between 1890 and 1990?",
    "Did large US banks use the freedom to branch across states after 1994?",
    "What let American mothers both hold jobs and have more babies from 1930 to 1960?",
    "Why has income inequality risen since 1980?",
    "What caused the large fall in US business-cycle volatility over the past two decades?",
    "Evidence from Argentina, 1988-1997, on how often stores change prices",
    # "recent" of the topic, not of the research
    "How much of recent American growth comes from rising schooling?",
    "How has inequality changed in recent decades?",
]


@pytest.mark.parametrize("question", TOPIC_YEARS)
def test_topic_years_and_orderings_are_not_windows(question: str) -> None:
    assert parse_time_window(question, LATEST) is None


@pytest.mark.parametrize(
    ("question", "year_min", "years"),
    [
        ("Recent evidence on remote work", 2016, 10),
        ("What does recent empirical work find on tariffs?", 2016, 10),
        ("What have economists recently found about AI?", 2016, 10),
        ("Over the last decade, what do we know about carbon taxes?", 2016, 10),
        ("What do papers from the last five years say about AI?", 2021, 5),
        ("Studies in the past 3 years on inflation", 2023, 3),
    ],
)
def test_relative_words_count_back_from_the_corpus_latest_year(question: str, year_min: int, years: int) -> None:
    window = parse_time_window(question, LATEST)
    assert window is not None
    assert (window.year_min, window.year_max) == (year_min, None)
    assert f"last {years} years" in window.meaning and str(year_min) in window.meaning


def test_relative_words_do_not_depend_on_the_clock() -> None:
    assert parse_time_window("recent studies of tariffs", 2015).year_min == 2006  # type: ignore[union-attr]


def test_an_explicit_year_beats_a_relative_word() -> None:
    window = parse_time_window("Recent work (2020 or later) on lending standards", LATEST)
    assert window is not None and (window.year_min, window.phrase) == (2020, "2020 or later")


def test_question_without_window_is_a_sensible_query() -> None:
    cases = {
        "Since 2022, what evidence is there that employers hold wage-setting power?":
            "What evidence is there that employers hold wage-setting power?",
        "Is there anything published after 2020 on housing vouchers?":
            "Is there anything published on housing vouchers?",
        "Recent work (2020 or later): how much of the 2000s US housing boom came from easier lending?":
            "How much of the 2000s US housing boom came from easier lending?",  # "Recent work:" labels the window
        "Papers between 2005 and 2010 on bank runs": "Papers on bank runs",
    }  # fmt: skip
    for question, expected in cases.items():
        window = parse_time_window(question, LATEST)
        assert window is not None and window.question_without_window == expected


def test_nothing_sensible_left_keeps_the_question() -> None:
    window = parse_time_window("after 2020", LATEST)
    assert window is not None and window.question_without_window == "after 2020"


def test_meaning_states_the_window() -> None:
    assert parse_time_window("before 2016, tariffs", LATEST).meaning == "before 2016: papers from 2015 or earlier."  # type: ignore[union-attr]
    assert "papers published in 2019" in parse_time_window("papers in 2019 on tariffs?", LATEST).meaning  # type: ignore[union-attr]
    assert "papers from 2000 to 2009" in parse_time_window("research in the 2000s on trade?", LATEST).meaning  # type: ignore[union-attr]


def test_window_is_frozen() -> None:
    window = parse_time_window("since 2015, tariffs", LATEST)
    assert window is not None
    with pytest.raises(AttributeError):
        window.year_min = 2000  # type: ignore[misc]


@pytest.mark.parametrize(("question", "judged"), [
    ("How did racial segregation in US cities evolve between 1890 and 1990?",
     "How did racial segregation in US cities evolve?"),
    ("Did forecasters underestimate the cost of austerity in advanced economies after 2008?",
     "Did forecasters underestimate the cost of austerity in advanced economies?"),
    ("Why has income inequality risen since 1980?", "Why has income inequality risen?"),
    # a point in time names the event; a publication window is no topic period; a year modifying a word stays
    ("What happened to inflation in Turkey after its central bank cut rates in 2021?",
     "What happened to inflation in Turkey after its central bank cut rates in 2021?"),
    ("Do big cities have higher death rates, as industrial cities did in the 1800s?",
     "Do big cities have higher death rates, as industrial cities did in the 1800s?"),
    ("What did papers since 2015 find about tariffs?", "What did papers since 2015 find about tariffs?"),
    ("Did the pre-2008 credit boom raise house prices?", "Did the pre-2008 credit boom raise house prices?"),
])  # fmt: skip
def test_the_judges_read_the_question_less_its_bounded_topic_periods(question: str, judged: str) -> None:
    assert without_topic_periods(question) == judged
