"""The specifics a question names (places, programmes, firms, years) and whether the passages mention them.

Near-miss questions are the hard part of answerability: the corpus has a paper on minimum wages, but not on
Seattle's; on rent control, but not San Francisco's; on stimulus payments, but not the 2020 ones. The reranker
and the bi-encoder score such passages high, because the topic matches. What they miss is a named specific of
the question that no passage mentions, so that share is a feature of the answerability model.

Specifics are capitalised words past the first (proper nouns, acronyms) and years or decades. A specific
counts as mentioned when a passage contains its stem (adjective forms: "Ghanaian" matches "Ghana").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

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
    text = " ".join(passages).lower()
    missing = [s for s in specifics if not _pattern(s).search(text)]
    return len(missing) / len(specifics)


def earliest_named_year(question: str) -> int | None:
    """The earliest year (or decade: "the 1990s" -> 1990) the question names, None when it names none. Read it from
    the question less its time-window words: "since 2015" asks about publication, not about an event."""
    years = [int(match.group(1)) for match in _NAMED_YEAR.finditer(question)]
    return min(years, default=None)
