"""A paper as a reference manager reads it: BibTeX (@article) and RIS (TY - JOUR), with a stable citation key.

Authors come from the corpus's `authors` list, in either of its two forms: "Autor, David H." (one entry per
author, or several run together as "Faccio, Mara Lang, Larry H. P. Young, Leslie" where the source did not
separate them) or "Hunt Allcott". A paper without a title is cited by the first words of its abstract in
brackets ("[We study …]"), never as "Untitled".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from corpus.authors import people
from corpus.documents import Document

JOURNAL = "American Economic Review"
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_STOPWORDS = {"a", "an", "the", "on", "of", "in", "and", "for", "to", "do", "does", "is", "are", "we", "this",
              "how", "what", "why", "when", "who", "with", "at", "by", "from", "as", "our"}  # fmt: skip
_BIBTEX_SPECIALS = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "%": r"\%",
                    "#": r"\#", "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}  # fmt: skip
PREVIEW_WORDS = 8


def abstract_preview(document: Document, words: int = PREVIEW_WORDS) -> str:
    """The first words of the abstract, as "We study how … " (an ellipsis when cut)."""
    text = (document.abstract or document.abstract_original).split()
    if not text:
        return "No title or abstract"
    shown = " ".join(text[:words]).rstrip(",;:.")
    return f"{shown} …" if len(text) > words else shown


def display_title(document: Document) -> str:
    """The title, or the abstract's first words in brackets for a paper without one."""
    return document.title.strip() or f"[{abstract_preview(document)}]"


def _ascii_word(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", folded.lower())


def citation_key(document: Document) -> str:
    """First author's last name, year and first significant title word: "autor2013china". Stable: it depends on
    the paper alone. Without authors "aer"; without a year "nd"; without a title the abstract's words."""
    authors = people(document.authors)
    name = _ascii_word(authors[0].last.split()[-1]) if authors else ""
    words = [_ascii_word(word) for word in (document.title or document.abstract).split()]
    word = next((w for w in words if w and w not in _STOPWORDS), next((w for w in words if w), ""))
    return f"{name or 'aer'}{document.year or 'nd'}{word[:20]}"


def _month(document: Document) -> int | None:
    match = re.match(r"^\d{4}-(\d{2})", document.date)
    month = int(match.group(1)) if match else 0
    return month if 1 <= month <= 12 else None


def _url(document: Document) -> str:
    return document.url or (f"https://doi.org/{document.doi}" if document.doi else "")


def bibtex_escape(text: str) -> str:
    """Text with BibTeX's (LaTeX's) special characters escaped, and no line breaks."""
    return "".join(_BIBTEX_SPECIALS.get(char, char) for char in " ".join(text.split()))


def bibtex(document: Document, key: str | None = None) -> str:
    """One @article entry. The title is braced twice, so styles keep its capitals."""
    fields: list[tuple[str, str]] = []
    authors = people(document.authors)
    if authors:
        fields.append(("author", "{" + " and ".join(bibtex_escape(person.inverted) for person in authors) + "}"))
    fields.append(("title", "{{" + bibtex_escape(display_title(document)) + "}}"))
    fields.append(("journal", "{" + bibtex_escape(document.journal or JOURNAL) + "}"))
    if document.year:
        fields.append(("year", "{" + str(document.year) + "}"))
    month = _month(document)
    if month:
        fields.append(("month", MONTHS[month - 1]))
    if document.doi:
        fields.append(("doi", "{" + bibtex_escape(document.doi) + "}"))
    if _url(document):
        # url fields are read verbatim (the url package): only braces and spaces would break them.
        fields.append(("url", "{" + re.sub(r"[{}\s]", "", _url(document)) + "}"))
    if document.jel_codes:
        fields.append(("keywords", "{" + bibtex_escape(", ".join(document.jel_codes)) + "}"))
    body = ",\n".join(f"  {name} = {value}" for name, value in fields)
    return f"@article{{{key or citation_key(document)},\n{body}\n}}\n"


def _ris_text(text: str) -> str:
    return " ".join(text.split())


def ris(document: Document) -> str:
    """One RIS record (TY - JOUR … ER - )."""
    lines = [("TY", "JOUR")]
    for person in people(document.authors):  # RIS puts a suffix last: "Lucas, Robert E., Jr."
        name = f"{person.last}, {person.given}, {person.suffix}" if person.suffix else person.inverted
        lines.append(("AU", _ris_text(name)))
    lines.append(("TI", _ris_text(display_title(document))))
    lines.append(("JO", _ris_text(document.journal or JOURNAL)))
    if document.year:
        month = _month(document)
        lines.append(("PY", str(document.year)))
        lines.append(("DA", f"{document.year}/{month:02d}//" if month else f"{document.year}///"))
    if document.doi:
        lines.append(("DO", _ris_text(document.doi)))
    if _url(document):
        lines.append(("UR", _ris_text(_url(document))))
    lines += [("KW", code) for code in document.jel_codes]
    lines.append(("ID", citation_key(document)))
    lines.append(("ER", ""))
    return "".join(f"{tag}  - {value}\n" for tag, value in lines)  # "ER  - " keeps its space, as RIS has it


def bibtex_file(documents: Iterable[Document]) -> str:
    """Entries separated by a blank line; keys that collide within the file get a, b, … appended."""
    seen: dict[str, int] = {}
    entries = []
    for document in documents:
        key = citation_key(document)
        count = seen.get(key, 0)
        seen[key] = count + 1
        entries.append(bibtex(document, key if count == 0 else f"{key}{_suffix(count)}"))
    return "\n".join(entries)


def _suffix(count: int) -> str:
    letters = ""
    while count > 0:
        count, rest = divmod(count - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return letters


def ris_file(documents: Iterable[Document]) -> str:
    return "\n".join(ris(document) for document in documents)


FORMATS = {
    "bibtex": ("application/x-bibtex", "bib", bibtex, bibtex_file),
    "ris": ("application/x-research-info-systems", "ris", ris, ris_file),
}
