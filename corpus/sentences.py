"""Sentence splitting for English academic text: chunking packs whole sentences, answering checks them."""

from __future__ import annotations

import re

# A sentence ends at . ! or ? (plus closing quotes/brackets) followed by whitespace and a capital,
# digit or opening quote. Abbreviations and initials are handled in _is_abbreviation.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"“‘(\[]?[A-Z0-9])")
_ABBREVIATION_LIST = """al e.g i.e etc cf vs approx fig figs eq eqs no nos vol jr sr dr mr mrs ms st inc co corp ltd
dept univ u.s u.k e.u p.p"""
_ABBREVIATIONS = frozenset(_ABBREVIATION_LIST.split())
_WORD_BEFORE = re.compile(r"(\S+)$")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of `text`, whitespace excluded."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if _is_abbreviation(text[start : match.start() + 1]):
            continue
        end = match.start() + len(match.group(0).rstrip())
        spans.append((start, end))
        start = match.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


def _is_abbreviation(sentence: str) -> bool:
    """True when the period closing `sentence` belongs to an abbreviation or an initial ("J.", "U.S.")."""
    if not sentence.endswith("."):
        return False
    match = _WORD_BEFORE.search(sentence[:-1])
    word = match.group(1).lstrip("(\"'“") if match else ""
    return word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper())
