"""The specifics a question names (places, programmes, firms, years) and whether the passages mention them.

Near-miss questions are the hard part of answerability: the corpus has a paper on minimum wages, but not on
Seattle's; on rent control, but not San Francisco's; on stimulus payments, but not the 2020 ones. The reranker
and the bi-encoder score such passages high, because the topic matches. What they miss is a named specific of
the question that no passage mentions, so that share is a feature of the answerability model.

Specifics are capitalised words past the first (proper nouns, acronyms) and years or decades. A specific
counts as mentioned when a passage contains its stem (adjective forms: "Ghanaian" matches "Ghana"), and an
acronym also when a passage spells it out ("RD" by "regression-discontinuity", "EITC" by "earned income tax
credit"): abstracts often write out what questions abbreviate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from answering.acronyms import MAX_EXTRA_WORDS, initials_match

_TOKEN = re.compile(r"[A-Za-z][\w'&.-]*|\b\d{4}s?\b")
_YEAR = re.compile(r"\d{4}s?")
# Capitalised words that name no specific: question openers and sentence-initial forms.
_NOT_SPECIFIC = frozenset((
    "a", "an", "and", "are", "as", "at", "by", "can", "could", "did", "do", "does", "evidence", "for", "from", "has",
    "have", "how", "i", "if", "in", "is", "it", "its", "may", "might", "must", "of", "on", "or", "should", "so",
    "that", "the", "there", "these", "this", "those", "to", "was", "were", "what", "when", "whether", "which", "who",
    "why", "will", "with", "would", "yes", "no",
    # The United States is the default setting of most abstracts, which name it in many ways or not at all.
    "us", "u.s", "usa", "america", "american", "americans", "united", "states",
))
_MIN_STEM = 5
_ACRONYM = re.compile(r"[A-Z][A-Z&]{1,5}")  # "RD", "EITC", "R&D": two to six capitals
_WORDS = re.compile(r"[A-Za-z][A-Za-z'’-]*")
MIN_SPELLED = 4  # letters of the first and last word that spell out an acronym
_NAMED_YEAR = re.compile(r"(?<![\d$.,])(1[6-9]\d\d|20\d\d)(?:s|['’]s)?(?![\d,]|\.\d)")


def question_specifics(question: str) -> list[str]:
    """The question's named specifics, lower-cased, possessives dropped, in order of appearance."""
    found: list[str] = []
    for position, token in enumerate(_TOKEN.findall(question)):
        word = token.strip(".-'")
        word = word[:-2] if word.endswith("'s") else word
        if not word:
            continue
        if _YEAR.fullmatch(word):
            found.append(word.removesuffix("s"))
        elif position > 0 and word[0].isupper() and word.lower() not in _NOT_SPECIFIC:
            found.append(word.lower())
    return list(dict.fromkeys(found))


def _pattern(specific: str) -> re.Pattern[str]:
    """Acronyms, numbers and short names must appear as whole words; longer names by a stem that keeps
    adjective forms matching ("ghanaian" -> "ghana", "southerners" -> "southern")."""
    if len(specific) <= _MIN_STEM or specific.isdigit():
        return re.compile(rf"(?<![a-z0-9]){re.escape(specific)}(?![a-z0-9])")
    return re.compile(rf"(?<![a-z0-9]){re.escape(specific[: max(_MIN_STEM, len(specific) - 3)])}")


def unmatched_specifics(question: str, passages: Sequence[str]) -> float:
    """Share of the question's specifics that no passage mentions (0 when it names none)."""
    specifics = question_specifics(question)
    if not specifics:
        return 0.0
    joined = " ".join(passages)
    text = joined.lower()
    tokens = (re.sub(r"['’]s$", "", token.strip(".-'")) for token in _TOKEN.findall(question))  # "EITC's": EITC
    acronyms = {token.lower(): token for token in tokens if _ACRONYM.fullmatch(token)}
    missing = [s for s in specifics if not _pattern(s).search(text)
               and not (s in acronyms and _spelled_out(acronyms[s], _WORDS.findall(joined)))]  # fmt: skip
    return len(missing) / len(specifics)


def _spelled_out(acronym: str, words: list[str]) -> bool:
    """Whether some run of consecutive words has the acronym's letters as its initials ("RD":
    "regression-discontinuity"; a few small words may sit between them, as acronyms.initials_match allows). The
    run opens and closes on words of four letters or more, so that "UI" is not "under its"."""
    first = acronym[0].lower()
    return any(initials_match(acronym, run)
               for start, word in enumerate(words) if word[0].lower() == first and len(word) >= MIN_SPELLED
               for run in (words[start:start + count] for count in range(1, len(acronym) + MAX_EXTRA_WORDS + 1))
               if len(run[-1]) >= MIN_SPELLED)  # fmt: skip


def earliest_named_year(question: str) -> int | None:
    """The earliest year (or decade: "the 1990s" -> 1990) the question names, None when it names none. Read it from
    the question less its time-window words: "since 2015" asks about publication, not about an event."""
    years = [int(match.group(1)) for match in _NAMED_YEAR.finditer(question)]
    return min(years, default=None)
