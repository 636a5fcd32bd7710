"""Authors as people, from the corpus's `authors` list in either of its forms: "Autor, David H." (one entry per
author, or several run together as "Faccio, Mara Lang, Larry H. P. Young, Leslie" where the source did not separate
them) or "Hunt Allcott". Shared by the citation formats (BibTeX, RIS), the findings' attribution and the look-up of
papers by their authors' surnames."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

_PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "di", "da", "du", "la", "le", "ter", "dos", "das"}
_SUFFIXES = {"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"}


@dataclass(frozen=True)
class Person:
    last: str
    given: str = ""
    suffix: str = ""

    @property
    def inverted(self) -> str:
        """"Last, Given" (BibTeX's "Last, Suffix, Given" when there is a suffix)."""
        if not self.given:
            return self.last
        return f"{self.last}, {self.suffix}, {self.given}" if self.suffix else f"{self.last}, {self.given}"


def plain(name: str) -> str:
    """A name as a look-up compares it: lower case, accents dropped ("Antràs" -> "antras")."""
    decomposed = unicodedata.normalize("NFKD", name.lower())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def surname_words(person: Person) -> frozenset[str]:
    """The words a citation may name a person by, plain: the last name whole and each of its words ("De Giorgi":
    "de giorgi", "de", "giorgi")."""
    last = plain(person.last)
    return frozenset({last, *last.split()})


def _split_name(words: list[str]) -> tuple[str, str]:
    """A "Given Last" run of words as (given, last): the last word with any lowercase particles before it."""
    if len(words) == 1:
        return "", words[0]
    start = len(words) - 1
    while start > 1 and words[start - 1].lower() in _PARTICLES:
        start -= 1
    return " ".join(words[:start]), " ".join(words[start:])


def _is_initial(word: str) -> bool:
    return len(word) == 2 and word[0].isupper() and word[1] == "."


def people(authors: Iterable[str]) -> list[Person]:
    """The authors as people, in order, whatever form the corpus gives them in."""
    found: list[Person] = []
    for entry in authors:
        entry = " ".join(entry.split())
        if not entry:
            continue
        if "," not in entry:  # "Hunt Allcott", "Robert E. Lucas Jr."
            words = entry.split()
            suffix = words.pop() if len(words) > 2 and words[-1].lower() in _SUFFIXES else ""
            while len(words) > 1 and _is_initial(words[-1]):  # "Bentley MacLeod W.": the initial moved to the end
                words.insert(0, words.pop())
            given, last = _split_name(words)
            found.append(Person(last, given, suffix))
            continue
        pieces = [piece.strip() for piece in entry.split(",")]
        if len(pieces) == 3 and pieces[1].lower() in _SUFFIXES:  # "Lucas, Jr., Robert E."
            found.append(Person(pieces[0], pieces[2], pieces[1]))
            continue
        # "Last1, Given1 Last2, Given2 ...": every inner piece is one author's given names and the next one's last.
        last = pieces[0]
        words = last.split()
        inner_initial = next((i for i, word in enumerate(words[1:-1], 1) if _is_initial(word)), None)
        if inner_initial is not None:  # "Goeree K. Offerman, Theo": a first author's comma and given name lost
            found.append(Person(" ".join(words[:inner_initial]), words[inner_initial]))
            last = " ".join(words[inner_initial + 1 :])
        for inner in pieces[1:-1]:
            given, next_last = _split_name(inner.split()) if inner else ("", "")
            found.append(Person(last, given))
            last = next_last
        found.append(Person(last, pieces[-1]))
    return [person for person in found if person.last]


def has_surnames(authors: Iterable[str], surnames: Iterable[str]) -> bool:
    """Whether every surname given (plain) is one of the authors' ("autor", "dorn" for Autor, Dorn and Hanson)."""
    named = [surname_words(person) for person in people(authors)]
    return all(any(surname in words for words in named) for surname in surnames)
