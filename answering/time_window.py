"""Time windows typed in a question ("since 2015", "before 2000", "in the 2000s", "recent") as year filters.

    window = parse_time_window("Since 2022, what do we know about monopsony?", latest_year=2025)
    window.year_min, window.year_max          # 2022, None (inclusive bounds, None = open)
    window.meaning                            # "since 2022: papers from 2022 or later."
    window.question_without_window            # "What do we know about monopsony?" (what retrieval searches)

Relative words ("recent", "the last decade") count back from `latest_year`, the corpus's latest year, so that the
same question means the same window whatever the clock says. An explicit year beats a relative word ("Recent work
(2020 or later)" means 2020 or later). A year that names the topic is not a window: one after "the" or used as a
modifier ("the 2008 financial crisis", "the 2000s housing boom"), one after a data or event noun ("data from
2010", "the reform in 2006"), one after "during" (a period studied, not one published in: no pattern has it), and
one no paper can have been published in: before the journal's first volume ("as industrial cities did in the
1800s"), or after this year following a word of the topic ("leases that may not be renewed after 2047"; "papers
after 2030" asks for papers, and is declined for it). "Recent" is a window when it qualifies the research ("recent
work", "recently found"), not when it qualifies the topic ("recent American growth"). Explicit filters given with
the request win over the words; that is for the caller to apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


YEAR = r"(1[89]\d\d|20\d\d)"
DECADE = r"(?:the\s+)?(?:(1[89]\d0|20\d0)s|['’]?(\d0)s)"  # "the 2000s", "the '90s", "90s"
ON = r"on(?=\s*(?:[,.;:?!)]|and\b|$))"  # "from 2022 on, ..." but not "from 2022 on this topic"
NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "fifteen": 15, "twenty": 20, "few": 5, "several": 5}  # fmt: skip
RECENT_YEARS = 10  # "recent": the corpus's last ten years
FIRST_VOLUME = 1911  # the American Economic Review's first year: no window of its papers ends before it
# Words that ask rather than name: skipped when looking for what a window inside a question qualifies.
FUNCTION_WORDS = _words("""a an and or but nor so yet the this that these those what which who whom whose how why
when where whether if is are was were be been being do does did has have had can could would should will may might
must on about in of for to with from by at as than then there it its they their we our you i any some all only
also else since after before until till through between up prior starting""")
PUBLISHED = _words("published publish written released appeared")  # anywhere before a window: it is of papers
_OF_RESEARCH = _words("""work works research studies study papers paper evidence literature findings results
articles article publications contributions estimates aer""")
# A window qualifies the research when the nearest word before it (past function words) is one of these.
PUBLICATION_WORDS = _OF_RESEARCH | _words("""economists researchers authors published publish written released
appeared find finds found show shows shown say says said known learned learnt anything something nothing newer new
recent later earlier proposed developed studied examined estimated documented argued suggested reported concluded
discovered established measured tested analyzed analysed explored investigated conducted done""")
# What "recent" qualifies when it means the research, not the topic ("recent evidence", not "recent growth").
RESEARCH_NOUNS = _OF_RESEARCH | {"economics"}

# Words that may follow a window without making its year a modifier of a topic noun ("since 2015, studies ...",
# "in 2019?" or "before 2010 did ..."). Any other word right after the year means the year names the topic.
FOLLOWERS = _words("""a an and or but nor so yet the this that these those what which who whom whose how why
when where whether if is are was were be been do does did has have had can could would should will may might must
on about in of for to with from by at as than then there it its they their we our you i studies study papers paper
research work works evidence articles article literature economists researchers authors findings results aer
published publications show shown find found say said suggest""")
# Nouns after which a year is the time of the data or of an event, not of publication ("data from 2010").
EVENT_NOUNS = _words("""data survey surveys census sample samples records panel cohort cohorts wave waves
election elections reform reforms law laws act crisis recession war wars policy policies program programs
programme programmes shock shocks boom bust pandemic earthquake hurricane flood drought famine strike strikes
tax taxes cut cuts increase increases change changes expansion merger mergers auction auctions""")

# (regex, bounds) in priority order; bounds maps the match's groups to (year_min, year_max).
_PATTERNS: list[tuple[str, str]] = [
    (rf"\bbetween\s+{YEAR}\s+and\s+{YEAR}\b", "range"),
    (rf"\bfrom\s+{YEAR}\s+(?:to|until|through|till)\s+{YEAR}\b", "range"),
    (rf"\b{YEAR}\s*(?:-|–|—|to|through)\s*{YEAR}\b", "range"),
    (rf"\b(?:in|from|over)\s+{DECADE}\s+(?:and|or|to|through)\s+{DECADE}", "decades"),
    (rf"\b(?:in\s+|from\s+)?{YEAR}\s+(?:or|and)\s+(?:later|after|since|onwards?|beyond|newer)\b", "min"),
    (rf"\b(?:in\s+)?{YEAR}\s+(?:or|and)\s+(?:earlier|before|prior)\b", "max"),
    (rf"\b(?:since|starting(?:\s+in|\s+from)?|as\s+of|from)\s+{YEAR}(?:\s+(?:onwards?|forward|{ON}))?\b", "min"),
    (rf"\b(?:after|later\s+than|more\s+recent\s+than|newer\s+than|post-?)\s*{YEAR}\b", "after"),
    (rf"\b(?:before|prior\s+to|earlier\s+than|older\s+than|pre-?)\s*{YEAR}\b", "before"),
    (rf"\b(?:up\s+to|until|till|through|no\s+later\s+than|not\s+after)\s+{YEAR}\b", "max"),
    (rf"\bsince\s+{DECADE}(?:\s+(?:onwards?|{ON}))?", "decade_min"),
    (rf"\bfrom\s+{DECADE}\s+(?:onwards?|{ON})", "decade_min"),
    (rf"\b(?:after)\s+{DECADE}", "decade_after"),
    (rf"\b(?:before|prior\s+to)\s+{DECADE}", "decade_before"),
    (rf"\b(?:in|from)\s+{DECADE}", "decade"),
    (rf"\b(?:in|published\s+in)\s+{YEAR}\b", "year"),
]
_POINTS = frozenset(("year", "decade"))  # kinds of _PATTERNS that name a point in time, not a bounded period
_RELATIVE = re.compile(
    r"\b(?:(?:in|over|during|within|from)\s+)?(?:the\s+)?(?:last|past|previous)\s+"
    r"(?:(\d{1,2}|[a-z]+)\s+)?(years?|decades?)\b"
)
_RECENT = re.compile(r"\b(?:most\s+)?(?:recent(?:ly)?|lately)\b(?:\s+([a-z]+))?(?:\s+([a-z]+))?")


@dataclass(frozen=True)
class TimeWindow:
    year_min: int | None  # inclusive; None: open
    year_max: int | None  # inclusive; None: open
    phrase: str  # the words matched, as typed
    meaning: str  # one sentence for users
    question_without_window: str  # the question with the window words removed, for retrieval


def parse_time_window(question: str, latest_year: int) -> TimeWindow | None:
    """The question's publication-year window, or None when it names none (topic years are not windows)."""
    text = question.lower()
    found, _ = _scan(text)
    relative = False
    if not found:  # an explicit year beats a relative word
        found, relative = _relative(text, latest_year), True
    if not found:
        return None
    found.sort()
    year_min, year_max = _intersect(found)
    spans = [(start, end) for start, end, *_ in found]
    phrase = " … ".join(question[start:end].strip() for start, end in spans)
    return TimeWindow(year_min, year_max, phrase, _meaning(phrase, year_min, year_max, relative, latest_year),
                      _without(question, spans))  # fmt: skip


def without_topic_periods(question: str) -> str:
    """The question less the periods of its topic that a bound marks ("austerity in advanced economies after
    2008", "segregation evolved between 1890 and 1990"), for the judges: they read a year as a name the passage
    must write, and a paper on the years after 2008 writes "during the crisis". A point in time ("in 2021", "in
    the 1800s") stays: it names the event. Publication windows are parse_time_window's."""
    _, periods = _scan(question.lower())
    return _without(question, periods) if periods else question


def _scan(text: str) -> tuple[list[tuple[int, int, int | None, int | None]], list[tuple[int, int]]]:
    """The windows of publication in the lower-cased question, (start, end, year_min, year_max) each, and the spans
    of the topic's bounded periods."""
    found: list[tuple[int, int, int | None, int | None]] = []
    periods: list[tuple[int, int]] = []
    taken: list[tuple[int, int]] = []
    for pattern, kind in _PATTERNS:
        for match in re.finditer(pattern, text):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            if _names_topic(text, match.start(), match.end()):
                continue
            bounds = _bounds(kind, [g for g in match.groups()])
            if bounds is None:
                continue
            if _impossible_of_the_topic(bounds[1]) or _qualifies_the_topic(text, match.start(), match.group(0)):
                if kind not in _POINTS:
                    periods.append((match.start(), match.end()))
                    taken.append((match.start(), match.end()))
                continue
            found.append((match.start(), match.end(), *bounds))
            taken.append((match.start(), match.end()))
    return found, periods


def _bounds(kind: str, groups: list[str | None]) -> tuple[int | None, int | None] | None:
    years = [int(g) for g in groups if g is not None and len(g) == 4]
    decades = [_decade(a, b) for a, b in zip(groups[::2], groups[1::2], strict=False) if a or b]
    if kind == "range":
        low, high = sorted(years)
        return low, high
    if kind == "decades":
        return min(decades), max(decades) + 9
    if kind in ("min", "max", "after", "before", "year"):
        year = years[0]
        return {"min": (year, None), "max": (None, year), "after": (year + 1, None), "before": (None, year - 1),
                "year": (year, year)}[kind]  # fmt: skip
    decade = decades[0]
    return {"decade_min": (decade, None), "decade_after": (decade + 10, None), "decade_before": (None, decade - 1),
            "decade": (decade, decade + 9)}[kind]  # fmt: skip


def _decade(full: str | None, short: str | None) -> int:
    if full is not None:
        return int(full)
    two = int(short or "0")
    return 1900 + two if two >= 30 else 2000 + two  # "the 90s" is 1990, "the 10s" 2010


def _impossible_of_the_topic(year_max: int | None) -> bool:
    """A window ending before the journal's first volume holds no paper: its year is the topic's ("as industrial
    cities did in the 1800s"). One starting after this year is the topic's when a word of the topic precedes it
    ("renewed after 2047", _qualifies_the_topic); "papers after 2030" asks for papers, and is declined for it."""
    return year_max is not None and year_max < FIRST_VOLUME


# Windows that can only be about publication: "2022 or later", "more recent than 2020".
_OF_PUBLICATION = re.compile(r"\b(?:or|and)\s+(?:later|after|since|onwards?|beyond|newer|earlier|before|prior)\b|"
                             r"\b(?:more\s+recent|newer|later|earlier|older)\s+than\b")


def _qualifies_the_topic(text: str, start: int, phrase: str) -> bool:
    """A window inside the question that follows a word of the topic describes the topic's period ("racial
    segregation evolved between 1890 and 1990", "banks branched across states after 1994", "in the 1960s"): the
    nearest word before it, past function words, is not one of research or publication ("papers since 2015",
    "evidence up to 2009", "what was known before 2000"; "published" anywhere before). A window opening the question
    ("Since 2015, …", "What about after 2030?") or worded only of publication ("2022 or later") is one."""
    if _OF_PUBLICATION.search(phrase):
        return False
    content = [word for word in re.findall(r"[a-z][a-z'’-]*", text[:start]) if word not in FUNCTION_WORDS]
    return bool(content) and content[-1] not in PUBLICATION_WORDS and not PUBLISHED & set(content)


def _names_topic(text: str, start: int, end: int) -> bool:
    """True when the matched year describes the topic: a modifier of the next word, or after an event noun."""
    if not re.search(r"(?:\d|\ds)$", text[start:end]):
        return False  # "2022 or later explaining ...": the window ends in its own word, not in the year
    following = re.match(r"\s*([a-z][a-z'’-]*)", text[end:])
    if following and following.group(1) not in FOLLOWERS:
        return True  # "the 2000s housing boom", "before 2008 crisis losses"
    before = re.findall(r"[a-z]+", text[max(0, start - 40) : start])
    return bool(before) and before[-1] in EVENT_NOUNS  # "data from 2010", "the reform in 2006"


def _relative(text: str, latest_year: int) -> list[tuple[int, int, int | None, int | None]]:
    match = _RELATIVE.search(text)
    if match and not _qualifies_the_topic(text, match.start(), match.group(0)):
        count_text, unit = match.group(1), match.group(2)
        count = 1 if count_text is None else int(count_text) if count_text.isdigit() else NUMBER_WORDS.get(count_text)
        if count is not None and 0 < count <= 50:
            years = count * (10 if unit.startswith("decade") else 1)
            return [(match.start(), match.end(), latest_year - years + 1, None)]
    for match in _RECENT.finditer(text):
        if match.group(0).startswith("most"):
            continue  # "which is most recent" orders the papers; it is no window
        word = re.match(r"[a-z]+", match.group(0)).group(0)  # type: ignore[union-attr]
        if word == "recent" and not {match.group(1), match.group(2)} & RESEARCH_NOUNS:
            continue  # "recent American growth", "in recent decades": the topic's time ("recent empirical work" is)
        end = match.start() + len(word)
        return [(match.start(), end, latest_year - RECENT_YEARS + 1, None)]
    return []


def _intersect(found: list[tuple[int, int, int | None, int | None]]) -> tuple[int | None, int | None]:
    """Several windows narrow each other ("since 2010 but before 2020"); a contradiction keeps the first."""
    year_min, year_max = found[0][2], found[0][3]
    for _, _, low, high in found[1:]:
        new_min = low if year_min is None else year_min if low is None else max(year_min, low)
        new_max = high if year_max is None else year_max if high is None else min(year_max, high)
        if new_min is not None and new_max is not None and new_min > new_max:
            continue
        year_min, year_max = new_min, new_max
    return year_min, year_max


def _meaning(phrase: str, year_min: int | None, year_max: int | None, relative: bool, latest_year: int) -> str:
    if year_min is not None and year_max is not None:
        span = f"papers published in {year_min}" if year_min == year_max else f"papers from {year_min} to {year_max}"
    elif year_min is not None:
        span = f"papers from {year_min} or later"
    else:
        span = f"papers from {year_max} or earlier"
    if relative and year_min is not None:
        years = latest_year - year_min + 1
        return f"{phrase}: {span}, the corpus's last {years} years (its latest papers are from {latest_year})."
    return f"{phrase}: {span}."


def _without(question: str, spans: list[tuple[int, int]]) -> str:
    """The question less the window words, tidied; the question itself when too little would be left."""
    text = question
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + " " + text[end:]
    text = re.sub(r"\(\s*\)|\[\s*\]", " ", text)  # "Recent work (2020 or later)" leaves "()"
    text = re.sub(r"^(?:[\s,;:.\-–—]|(?:but|and|or)\b)+", "", text, flags=re.I)
    text = re.sub(r"\s+([,;:?.!])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()
    text = re.sub(r"([,;:])\s*([,;:?.!])", r"\2", text)
    # "Recent work (2020 or later): how much …" leaves "Recent work:", a label of the window, not the question
    label = r"^(?:(?:more\s+)?(?:recent|newer|new|latest|later|earlier|older)\s+)?"
    text = re.sub(label + r"(?:published|papers|studies|research|work|evidence)?\s*[,:;]\s*", "", text, flags=re.I)
    text = text.strip()
    if len(re.findall(r"[A-Za-z]{3,}", text)) < 2:
        return question.strip()
    return text[:1].upper() + text[1:]
