"""Text cleaning: HTML entities and tags, whitespace, and the trailing JEL list of an abstract."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

# Only real inline markup seen in the sources is removed; a bare "<" in text ("r < g") is left alone.
_TAG = re.compile(
    r"</?(?:i|em|b|strong|sub|sup|inf|p|br|span|u|sc|scp|a|div|italic|bold|tt|small)\b[^<>]*>",
    re.IGNORECASE,
)
# A closing tag glued to the next word ("CO<sub>2</sub>from", "Nation:</i>Media") hid a space.
_CLOSING_TAG_BEFORE_WORD = re.compile(r"</(?:i|em|b|strong|sub|sup|inf|u|sc|scp|span)>(?=\w)", re.IGNORECASE)
_OPENING_TAG_AFTER_PUNCT = re.compile(r"(?<=[:;,])<(?:i|em|b|strong)>", re.IGNORECASE)

# Bump when cleaning changes what a text becomes: it is part of an index's fingerprint, so indexes are rebuilt.
CLEANING_VERSION = 2  # 2: cp1252 dashes and quotes

# C1 control characters are cp1252 bytes decoded as Latin-1 in the sources ("concentration\x97a metabolite"):
# shown as nothing, they glued words together; read as cp1252 they are the dashes and quotes meant.
_C1_AS_CP1252 = str.maketrans({chr(code): bytes([code]).decode("cp1252") for code in range(0x80, 0xA0)
                               if code not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)})  # fmt: skip

# The AEA's trailing JEL list, in the forms found in the corpus (whitespace already collapsed):
#   "(JEL D83, G14)"  "(JEL: J24; K42)"  "(JEL, J0, H0)"  "... (JEL F13, F15)."  "JEL: D14, R31"
#   "1JEL D31, H21, H242"  (a scan where the parentheses became "1" and "2")
_JEL_SUFFIX = re.compile(
    r"""\s*(?:
        \(\s*JEL\b[\s:,]*(?P<paren>[^()]*?)\s*\)
      | \b1JEL\s+(?P<garbled>[A-Z0-9][^()]*?)2
      | \bJEL:\s*(?P<bare>[A-Z0-9][A-Z0-9\s,;.]*?)
    )\s*\.?\s*$""",
    re.VERBOSE,
)
# A JEL code is a letter and 1-3 digits; source typos such as "011" for "O11" are kept as found.
_JEL_CODE = re.compile(r"^[A-Z0-9]\d{1,3}$")
_CODE_SEPARATORS = re.compile(r"[\s,;.]+")


@dataclass(frozen=True)
class CleanedAbstract:
    text: str  # the abstract without markup and without its JEL list
    jel_codes: list[str]  # codes from the trailing JEL list, in order


@dataclass(frozen=True)
class CleaningSettings:
    # Titles of rows that are issue front matter rather than research abstracts (compared case-insensitively).
    front_matter_titles: tuple[str, ...] = ("front matter", "back matter", "table of contents", "masthead")

    def __post_init__(self) -> None:
        if any(not title.strip() for title in self.front_matter_titles):
            raise ValueError("front_matter_titles must not contain empty titles.")


class TextCleaner:
    """Turns raw CSV text into display-ready text; pure functions of their input, so re-runs agree."""

    def __init__(self, settings: CleaningSettings | None = None) -> None:
        self.settings = settings or CleaningSettings()
        self._front_matter = {title.casefold() for title in self.settings.front_matter_titles}

    def clean_text(self, raw: str) -> str:
        """Decode entities and stray cp1252 bytes, drop inline tags and collapse all whitespace (newlines included) to
        one space."""
        text = html.unescape(raw)
        if text != raw:  # some OpenAlex text is encoded twice ("&amp;gt;")
            text = html.unescape(text)
        text = text.translate(_C1_AS_CP1252)
        text = _CLOSING_TAG_BEFORE_WORD.sub(" ", text)
        text = _OPENING_TAG_AFTER_PUNCT.sub(" ", text)
        text = _TAG.sub("", text)
        return " ".join(text.split())

    def clean_abstract(self, raw: str) -> CleanedAbstract:
        text = self.clean_text(raw)
        match = _JEL_SUFFIX.search(text)
        if match is None:
            return CleanedAbstract(text=text, jel_codes=[])
        body = match.group("paren") or match.group("garbled") or match.group("bare") or ""
        return CleanedAbstract(text=text[: match.start()].rstrip(), jel_codes=split_jel_codes(body))

    def is_front_matter(self, title: str) -> bool:
        return title.strip().casefold() in self._front_matter


def split_jel_codes(text: str) -> list[str]:
    """Split a JEL list ("D83, G14", "J24; K42", "D81 J22") into codes, dropping anything that is not one."""
    return [code for code in _CODE_SEPARATORS.split(text.strip()) if _JEL_CODE.match(code)]


def merge_codes(*code_lists: list[str]) -> list[str]:
    """Concatenate code lists, keeping the first occurrence of each code."""
    return list(dict.fromkeys(code for codes in code_lists for code in codes))
