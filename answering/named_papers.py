"""A paper the question names by its authors: "What did Autor, Dorn and Hanson find about import competition?"

Users ask about a paper they know by its authors. The judges read such a question as none ("What did X find about
Y?" asks for no particular result), and the names are words no abstract writes, so the question was declined
while its paper was among the passages found. A name is read only in the forms that cite a paper: two or more
surnames joined by "and" ("Card and Krueger", "Autor, Dorn, and Hanson"), one before "et al." ("Chetty et al."),
or one before a year in parentheses ("Jones (2002)", "Poterba's (2014)"); a lone capitalised word ("Do Black
workers …") is never a name. A passage's paper is named when every surname of one such citation is a word of
its authors' names (written "First Last" or "Last, First"), and its year is the one cited, if any.

The search's order picks among the authors' papers: the best-ranked named paper answers, with any other named
paper the decision chose anyway. The paper must be among the passages the question's own words found, so "What
did Autor et al. find about dolphins?" is decided as any other question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from answering.answerability import AnswerabilityVerdict
from corpus.documents import Document

_NAME = r"[A-Z][A-Za-z'’-]+"
_YEAR = r"\((1[89]\d\d|20\d\d)\)"
_CITATIONS = (
    re.compile(rf"\b(?P<names>{_NAME}(?:\s*,\s*{_NAME})*\s*,?\s+and\s+{_NAME})(?:['’]s)?(?:\s+{_YEAR})?"),
    re.compile(rf"\b(?P<names>{_NAME})\s+et\s+al\b\.?(?:['’]s)?(?:\s+{_YEAR})?"),
    re.compile(rf"\b(?P<names>{_NAME})(?:['’]s)?\s+{_YEAR}"),
)
_SPLIT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+")


@dataclass(frozen=True)
class Citation:
    surnames: tuple[str, ...]  # lower-cased, as the question writes them
    year: int | None = None

    def names(self, document: Document) -> bool:
        """Whether the document is this citation's paper (every surname among its authors' names, the year its)."""
        words = {word.lower().strip(".,;") for author in document.authors for word in author.split()}
        return set(self.surnames) <= words and (self.year is None or self.year == document.year)


def citations_in(question: str) -> list[Citation]:
    """The citations of papers by their authors in the question, in order."""
    found: list[Citation] = []
    taken: list[tuple[int, int]] = []
    for pattern in _CITATIONS:
        for match in pattern.finditer(question):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            names = re.sub(r"['’]s$", "", match.group("names"))
            surnames = tuple(name.lower() for name in _SPLIT.split(names) if name)
            year = next((int(group) for group in match.groups()[1:] if group), None)
            found.append(Citation(surnames, year))
            taken.append(match.span())
    return found


def without_citations(question: str) -> str:
    """The question with each citation as "the authors", for the sentence judge: "What did Autor, Dorn and Hanson
    find about import competition?" -> "What did the authors find about import competition?"."""
    for pattern in _CITATIONS:
        question = pattern.sub("the authors", question)
    return question


def named_positions(question: str, documents: Sequence[Document]) -> list[int]:
    """Positions of the passages (one per paper, in search order) whose paper a citation in the question names."""
    citations = citations_in(question)
    seen: set[str] = set()
    positions = []
    for position, document in enumerate(documents):
        if document.doc_id not in seen and any(citation.names(document) for citation in citations):
            positions.append(position)
        seen.add(document.doc_id)
    return positions


def answered_by_named(verdict: AnswerabilityVerdict, named: Sequence[int]) -> AnswerabilityVerdict:
    """The decision when the question names papers found at `named` (search order): the first answers, with the
    named papers the decision chose anyway; the judges' verdict otherwise kept (its judgements, for the record)."""
    if not named:
        return verdict
    answering = tuple(sorted({named[0], *(p for p in verdict.answering if p in named)}))
    reason = "the question names the paper by its authors"
    return replace(verdict, coverage="covered", reason=reason, answering=answering)
