"""Acronyms a shown finding uses but its abstract spells out elsewhere: "parents value SVA" is shown as "parents
value SVA (school value added)", in the abstract's own words.

A finding is one sentence of its abstract; the abstract often defines an acronym in an earlier sentence ("measures
of school quality (school value added, or SVA)"), and a reader who sees only the finding cannot know what it stands
for. The definition is found the way Schwartz and Hearst (2003) find one: a parenthesised acronym whose letters are
the initials, in order, of the words just before it ("school value added (SVA)"), or "(school value added, or
SVA)"; the first use in the finding gets the spelled-out words in parentheses, unless the finding spells it out
already. Acronyms the abstract does not define (US, GDP) are left as they are.
"""

from __future__ import annotations

import re

_ACRONYM = r"[A-Z][A-Za-z]{0,2}[A-Z]{1,6}s?"
# "long form (ACR)": the acronym alone in parentheses after the words it abbreviates.
_AFTER_WORDS = re.compile(r"(?P<before>[^()]{1,200}?)\s*\((?P<acronym>" + _ACRONYM + r")\)")
# "(long form, or ACR)" and "(long form; ACR)": both inside the parentheses.
_INSIDE = re.compile(r"\((?P<long>[^();]{3,80}?)(?:,? or|;|,)\s+(?P<acronym>" + _ACRONYM + r")\)")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
MAX_EXTRA_WORDS = 2  # words of a long form whose initials the acronym skips ("of", "and", "the")


def definitions(abstract: str) -> dict[str, str]:
    """Each acronym the abstract defines, with the words it stands for (as the abstract writes them)."""
    found: dict[str, str] = {}
    for match in _INSIDE.finditer(abstract):
        long_form = _clean(match.group("long"))
        if initials_match(match.group("acronym"), _WORD.findall(long_form)):
            found.setdefault(_singular(match.group("acronym")), long_form)
    for match in _AFTER_WORDS.finditer(abstract):
        acronym = _singular(match.group("acronym"))
        words = _WORD.findall(match.group("before"))
        for count in range(1, len(acronym) + MAX_EXTRA_WORDS + 1):  # the fewest words that fit
            tail = words[-count:]
            if len(tail) == count and initials_match(acronym, tail):
                found.setdefault(acronym, _clean(_span(match.group("before"), tail)))
                break
    return found


def spelled_out(finding: str, abstract: str) -> str:
    """The finding with the first use of each acronym its abstract defines (and it does not) spelled out after it."""
    for acronym, long_form in definitions(abstract).items():
        if long_form.lower() in finding.lower():
            continue
        use = re.search(rf"\b{re.escape(acronym)}s?\b(?!\s*\()", finding)
        if use is not None:
            finding = f"{finding[: use.end()]} ({long_form}){finding[use.end():]}"
    return finding


def initials_match(acronym: str, words: list[str]) -> bool:
    """Whether the acronym's capitals are the initials of the words, in order, the first and last words included,
    skipping at most MAX_EXTRA_WORDS small words ("Survey of Income and Program Participation (SIPP)")."""
    letters = [c.lower() for c in _singular(acronym) if c.isupper()]
    if not words or len(letters) < 2 or words[0][0].lower() != letters[0]:
        return False
    initials = [part[0].lower() for word in words for part in word.split("-") if part]  # learning-by-doing: LBD
    position = 0
    skipped = 0
    for initial in initials:
        if position < len(letters) and initial == letters[position]:
            position += 1
        else:
            skipped += 1
    return position == len(letters) and skipped <= MAX_EXTRA_WORDS and initials[-1] == letters[-1]


def _span(text: str, words: list[str]) -> str:
    """The abstract's text from the first of `words` (the last such run in `text`) to its end."""
    start = text.rfind(words[0], 0, len(text) - len(" ".join(words[1:])))
    return text[start:].strip().rstrip(",")


def _clean(long_form: str) -> str:
    return " ".join(long_form.split()).strip(" ,\"'“”‘’")


def _singular(acronym: str) -> str:
    return acronym[:-1] if acronym.endswith("s") and acronym[:-1].isupper() else acronym
