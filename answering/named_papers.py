"""A paper the question names by its authors: "What did Autor, Dorn and Hanson find about import competition?"

Users ask about a paper they know by its authors. The judges read such a question as none ("What did X find about
Y?" asks for no particular result), and the names are words no abstract writes, so neither retrieval nor the
decision would find the paper. A name is read only in the forms that cite a paper: two or more surnames joined by
"and" ("Card and Krueger", "Autor, Dorn, and Hanson"), one before "et al." ("Chetty et al."), or one before a year
in parentheses ("Jones (2002)", "Poterba's (2014)"), or one alone as the subject of a reporting verb ("What did Chetty
find …"), the owner of a paper ("Goldin's paper") or after "according to"; any other lone capitalised word ("Do Black
workers …") is never a name.

The resolve stage looks the cited authors' papers up in the index (`named_papers`: every surname one of the
paper's authors', compared without case or accents, the year the cited one if any; papers whose authors are exactly
the cited ones first), and retrieval reranks them with the passages the question's words found. The best-ranked
named paper answers, with any other named paper the decision chose anyway, when the question is about it (it asks
about nothing else, "What did Herbst and Hendren find?", or at least half its topic words are in the paper's title
and abstract, "What did Jensen and Miller find about rice?"; then the domain gate, which reads such a question as
none about economics, is not asked) or when the reranker ranks it among the evidence for the question's words. So
"What did Lochner and Moretti find about central bank independence?" is decided as any other question, and a
citation of a paper the index lacks ("Card and Krueger (1994)") is said in a note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from answering.answerability import AnswerabilityVerdict
from answering.conversation import content_words
from corpus.authors import has_surnames, people, plain, surname_words
from corpus.documents import Document
from retrieval.types import RetrievedChunk

_NAME = r"[A-ZÀ-ÖØ-Þ](?:[^\W\d_]|['’-](?=[^\W\d_]))+"  # "Autor", "O'Brien", "Postel-Vinay", "Antràs"
_YEAR = r"\((1[89]\d\d|20\d\d)\)"
# A lone surname cites a paper only as the subject of a reporting verb or the owner of a paper: "What did (Raj)
# Chetty find …", "Does Piketty argue …", "Goldin's paper", "according to Heckman"; never an acronym ("does TV show").
_LONE = r"[A-ZÀ-ÖØ-Þ](?=[a-zß-öø-ÿ])(?:[^\W\d_]|['’-](?=[^\W\d_]))+"
_REPORTING = r"(?:find|show|argue|conclude|estimate|document|claim|say|report|predict|propose|suggest)"
_OWNED = r"(?:paper|study|work|article|research|findings?|results?|estimates?|evidence|model|theory|argument)"
_CITATIONS = (  # the forms, in the order read: "A, B and C", "A et al.", "A (2002)", "did A find"
    re.compile(rf"\b(?P<names>{_NAME}(?:\s*,\s*{_NAME})*\s*,?\s+and\s+{_NAME})(?:['’]s)?(?:\s+{_YEAR})?"),
    re.compile(rf"\b(?P<names>{_NAME})\s+et\s+al\b\.?(?:['’]s)?(?:\s+{_YEAR})?"),
    re.compile(rf"\b(?P<names>{_NAME})(?:['’]s)?\s+{_YEAR}"),
    re.compile(rf"(?:(?<=\b[Dd]id )|(?<=\b[Dd]oes )|(?<=\b[Dd]o )|(?<=\b[Hh]as )|(?<=\b[Hh]ave ))(?:{_LONE}\s+)?"
               rf"(?P<names>{_LONE})(?=\s+{_REPORTING}\b)|\b(?P<owner>{_LONE})['’]s(?=\s+(?:\w+\s+)?{_OWNED}\b)"
               rf"|(?<=\b[Aa]ccording to )(?:{_LONE}\s+)?(?P<source>{_LONE})\b(?!\s+(?:et\s+al|and)\b)"),
)
_FORMS = ("and", "et al.", "alone", "any")
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_SPLIT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+")
# Words that ask for a paper's result without naming a topic: "What is the main result of Dell (2015)?" ("main",
# "key", "central" only before a result's noun: "central bank independence" names one)
_ASKING = frozenset({"summarize", "summarise", "summary", "argue", "argues", "argued", "claim", "claims", "conclusions",
                     "contribution", "contributions", "learn", "learned", "according"})
_ASKING_ADJECTIVE = re.compile(r"\b(?:main|key|central|core|principal|primary|headline|overall)\s+(?=(?:results?|"
                               r"findings?|contributions?|conclusions?|points?|messages?|arguments?|takeaways?|"
                               r"lessons?|insights?|claims?)\b)", re.IGNORECASE)  # fmt: skip
_REPORTED = re.compile(r"\b(?:find|finds|found|show|shows|showed|shown|argue|argues|argued|conclude|concludes|"
                       r"concluded|claim|claims|results?|findings?|paper|study|say|says|said)\b", re.IGNORECASE)
PAPERS_PER_CITATION = 8  # the most papers of one citation reranked with the passages found ("Chetty et al.")

PaperLookup = Callable[[Sequence[str], "int | None", int], "list[Document]"]


@dataclass(frozen=True)
class Citation:
    surnames: tuple[str, ...]  # plain (lower case, no accents), as the question writes them
    year: int | None = None
    form: str = "and"  # "and": exactly these authors; "et al.": the first of three or more; "alone": the only one;
    # "any": one of them, the first preferred ("What did Chetty find …")
    written: str = field(default="", compare=False)  # as the question writes it: "Autor, Dorn, and Hanson (2013)"

    def names(self, document: Document) -> bool:
        """Whether the document may be this citation's paper (every surname one of its authors', the year its)."""
        return has_surnames(document.authors, self.surnames) and (self.year is None or self.year == document.year)

    def names_exactly(self, document: Document) -> bool:
        """Whether its authors are the ones the form of citation says: "A and B" two, "A et al." A first of three
        or more, "A (2002)" A alone, "did A find" A first."""
        authors = people(document.authors)
        if self.form in ("et al.", "any"):
            first = bool(authors) and self.surnames[0] in surname_words(authors[0])
            return first and (self.form == "any" or len(authors) >= 3)
        return len(authors) == (1 if self.form == "alone" else len(self.surnames)) and self.names(document)


def citations_in(question: str) -> list[Citation]:
    """The citations of papers by their authors in the question, in order."""
    found: list[Citation] = []
    taken: list[tuple[int, int]] = []
    for pattern, form in zip(_CITATIONS, _FORMS, strict=True):
        for match in pattern.finditer(question):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            written = next(name for name in (match.groupdict().get(g) for g in ("names", "owner", "source")) if name)
            names = re.sub(r"['’]s$", "", written)
            surnames = tuple(plain(name) for name in _SPLIT.split(names) if name)
            year = next((int(group) for group in match.groups() if group and group.isdigit()), None)
            found.append(Citation(surnames, year, form, match.group(0).removesuffix("'s").removesuffix("’s")))
            taken.append(match.span())
    return found


def without_citations(question: str) -> str:
    """The question with each citation as "the authors", for the sentence judge: "What did Autor, Dorn and Hanson
    find about import competition?" -> "What did the authors find about import competition?"."""
    for pattern in _CITATIONS:
        question = pattern.sub(lambda m: "the authors'" if m[0].endswith(("'s", "’s")) else "the authors", question)
    return question


def judged_question(question: str, named: Sequence[int], hits: Sequence[RetrievedChunk]) -> str:
    """The question as the sentence judge reads it when it names papers (`named`, positions in `hits`): each
    citation as "the authors"; about the first named paper's title when it asks about nothing else ("What did the
    authors find about Opportunity Unraveled: …?": a question with no topic would have the judge rate sentences
    on no topic at all)."""
    if not named:
        return question
    title = hits[named[0]].document.title
    if not topic_words(question) and title:
        return f"What did the authors find about {title.rstrip('.?')}?"
    return without_citations(question)


def topic_words(question: str) -> list[str]:
    """The words naming what the question asks about the cited papers ([] for "What did Herbst and Hendren
    find?" or "What is the main result of Dell (2015)?")."""
    rest = question
    for pattern in _CITATIONS:
        rest = pattern.sub(" ", rest)
    return [word for word in content_words(_ASKING_ADJECTIVE.sub("", rest)) if word.lower() not in _ASKING]


def _stem(word: str) -> str:
    """A word as the topic test compares it: plain, its first five letters ("productive", "productivity"), a short
    one without a plural s ("jobs", "job")."""
    word = plain(word).removesuffix("'s")
    return word[:5] if len(word) > 5 else word.removesuffix("s") if len(word) > 3 else word


def is_about(topic: Sequence[str], document: Document) -> bool:
    """Whether the paper's title and abstract hold at least half of the question's topic words (every paper, for a
    question about nothing else)."""
    if not topic:
        return True
    held = {_stem(word) for word in _WORD.findall(f"{document.title} {document.abstract}")}
    return 2 * sum(_stem(word) in held for word in topic) >= len(topic)


@dataclass(frozen=True)
class NamedPapers:
    """The papers a question cites by their authors, as the resolve stage found them in the index."""

    cited: tuple[str, ...] = ()  # doc_ids of every paper the citations may name, those named exactly first
    on_topic: tuple[str, ...] = ()  # those the question asks about whatever retrieval finds (`is_about`)
    missing: tuple[str, ...] = ()  # citations no indexed paper matches, as written ("Card and Krueger (1994)")
    title: str = ""  # the first one's, when the question asks about nothing else: what retrieval searches for
    untopical: bool = False  # it asks about nothing but the papers it cites ("What did Card and Krueger find?")

    @property
    def about_economics(self) -> bool:
        """Whether the question is about economics papers whatever the domain gate would read in its words: it asks
        about a cited paper's topic, or about nothing but papers it unmistakably cites (found or not: a missing one
        is said in a note, and "not about economics" beside it would be wrong)."""
        return bool(self.on_topic) or (self.untopical and bool(self.missing))


def named_papers(question: str, lookup: PaperLookup) -> NamedPapers:
    """The papers the question's citations may name, looked up by their surnames and year."""
    topic = topic_words(question)
    cited: list[Document] = []
    missing: list[str] = []
    citations = citations_in(question)
    for citation in citations:
        papers = lookup(citation.surnames, citation.year, PAPERS_PER_CITATION)
        cited += sorted(papers, key=lambda paper: not citation.names_exactly(paper))
        # Two capitalised words joined by "and" are often no authors ("What about Japan and Korea?"): only a
        # citation that cannot be anything else is said to be missing.
        unmistakable = citation.year is not None or citation.form == "et al." or bool(
            citation.form != "any" and not topic and _REPORTED.search(question))  # "What did Congress find?"
        missing += [] if papers or not unmistakable else [citation.written]
    doc_ids = tuple(dict.fromkeys(paper.doc_id for paper in cited))
    on_topic = tuple(dict.fromkeys(paper.doc_id for paper in cited if is_about(topic, paper)))
    title = cited[0].title if cited and not topic else ""
    return NamedPapers(doc_ids, on_topic, tuple(missing), title, untopical=bool(citations) and not topic)


def named_positions(question: str, documents: Sequence[Document], within: int | None = None,
                    on_topic: Sequence[str] = ()) -> list[int]:  # fmt: skip
    """Positions of the passages (one per paper, in search order) whose paper a citation in the question names,
    those named exactly first; a paper ranked at `within` or later is left out unless it is `on_topic`."""
    citations = citations_in(question)
    if not citations:
        return []
    seen: set[str] = set()
    exact, loose = [], []
    for position, document in enumerate(documents):
        ranked = within is None or position < within or document.doc_id in on_topic
        if ranked and document.doc_id not in seen and any(citation.names(document) for citation in citations):
            exactly = any(citation.names_exactly(document) for citation in citations)
            (exact if exactly else loose).append(position)
        seen.add(document.doc_id)
    return exact + loose


def answered_by_named(verdict: AnswerabilityVerdict, named: Sequence[int]) -> AnswerabilityVerdict:
    """The decision when the question names the papers at `named` (named_positions' order): the first answers,
    with the named papers the decision chose anyway; the judges' verdict otherwise kept (its judgements, for the
    record)."""
    if not named:
        return verdict
    answering = tuple(sorted({named[0], *(p for p in verdict.answering if p in named)}))
    reason = "the question names the paper by its authors"
    return replace(verdict, coverage="covered", reason=reason, answering=answering)
