"""The resolve stage, before retrieval: the question as a self-contained query and the filters it is answered under.

    resolved = resolve_question("What about after 2015?", history, request_filters, stats, paper)
    resolved.query            # the self-contained question ("What about after 2015? (minimum wage employment)")
    resolved.retrieval_query  # what retrieval searches: the query less its time-window words
    resolved.judge_query      # what the judges read: the question as a question, less its window and literature frame
    resolved.filters          # the request's filters, with the window read from the words where they left it open
    resolved.referred         # doc_ids of the earlier answer's papers the question points at ("which of those")
    resolved.named            # the papers it cites by their authors ("What did Card and Krueger find?")

Four steps: a follow-up is resolved against the earlier turns (answering.conversation; the earlier answers'
cited doc_ids get their titles and years from `paper`); a time window is read from the resolved question's words
(answering.time_window, relative words counted back from the index's latest year); the window fills only the year
bounds the request left open (explicit filters win). A window that no paper falls in is a reason to decline
(`decline`), and a filter on metadata some papers lack (JEL codes, years) says how many papers it leaves out; the
papers the question cites by their authors are looked up (answering.named_papers), for retrieval to rerank; a
question about nothing but such a paper searches for its title too.

The passage judges and the sentence judge read `judge_query`: for a question with neither history nor a window in
its words, the question itself less "AER" before a word (the journal is no topic: "What has AER research found
about how the Great Migration affected …" was judged P 0.09, without "AER" 0.41); for a dated question, the
question less its window words and its literature frame ("Before 2010, what did evaluations show about whether X?"
-> "Whether X?": the window words and the frame around them ask about publication, which the year filter answers,
and the judges read them as a near miss); for a follow-up, its `wording` (answering.conversation: a question, not
the carried terms); in every case less the topic's bounded periods ("… in advanced economies after 2008":
answering.time_window.without_topic_periods), which retrieval keeps, and less a plural possessive's apostrophe
("students' scores" -> "students scores").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from answering.conversation import CitedPaper, Turn, plain_question, resolve_followup, without_journal
from answering.named_papers import NamedPapers, named_papers
from answering.named_papers import PaperLookup as AuthorsLookup
from answering.time_window import TimeWindow, parse_time_window, without_topic_periods
from corpus.filters import SearchFilters
from corpus.search_backend import CorpusStats

Source = Literal["request", "question words"]
# The apostrophe of a plural possessive ("students' test scores"): the judges read the question without it (with
# it, "… affected Black Americans' outcomes?" was judged P 0.08 against 0.4 and more without; docs/answering.md).
_PLURAL_POSSESSIVE = re.compile(r"(?<=s)['’](?=\s)")
PaperLookup = Callable[[str], "tuple[str, int | None] | None"]


@dataclass(frozen=True)
class AppliedFilters:
    """The filters a search actually used, each with where it came from."""

    year_min: int | None = None
    year_max: int | None = None
    jel_prefix: str | None = None
    sources: dict[str, Source] = field(default_factory=dict)  # per filter set: "request" | "question words"
    meaning: str | None = None  # the window read from the words, in a sentence (None: none was read or used)


@dataclass(frozen=True)
class ResolvedRequest:
    question: str  # as asked
    query: str  # self-contained (the follow-up resolved); equal to `question` when it is not a follow-up
    retrieval_query: str  # what retrieval searches: `query` less its time-window words
    judge_query: str  # what the decision, the focus and the prompts read (a year in it would count as a specific)
    filters: SearchFilters | None
    applied: AppliedFilters
    referred: tuple[str, ...] = ()  # doc_ids of the earlier answer's papers the question points at
    named: NamedPapers = field(default_factory=NamedPapers)  # the papers it cites by their authors ("Card and Krueger")
    is_followup: bool = False
    notes: tuple[str, ...] = ()  # sentences for the response: how the question was read
    decline: str | None = None  # why no paper can answer (a window no paper falls in), or None

    @property
    def included(self) -> tuple[str, ...]:
        """The papers retrieval reranks whether or not the question's words find them: referred to, or named."""
        return (*self.referred, *self.named.cited)


def resolve_question(question: str, history: Sequence[Turn], filters: SearchFilters | None,
                     stats: CorpusStats | None, paper: PaperLookup | None = None,
                     authors: AuthorsLookup | None = None) -> ResolvedRequest:  # fmt: skip
    """Resolve a follow-up, read a time window, merge it with the request's filters, look up the papers it cites by
    their authors. stats None: no window is read (without the index's latest year, "recent" means nothing) and no
    count is given; authors None: no paper is looked up."""
    turns = tuple(_with_titles(turn, paper) for turn in history)
    followup = resolve_followup(question, turns)
    query = followup.query
    notes = [followup.note] if followup.is_followup and followup.note else []
    latest = stats.latest_year if stats is not None else None
    window = parse_time_window(query, latest) if latest is not None else None
    merged, applied = _merge(filters, window)
    if window is not None and "question words" in applied.sources.values():
        notes.append(f"Read a time window in the question: {window.meaning}")
    elif window is not None:
        notes.append(f"The request's year filter wins over the window in the question ({window.phrase}).")
    searched = window.question_without_window if window is not None else query  # the words are no topic
    judged = without_journal(searched)
    if followup.is_followup and followup.wording:
        judged = followup.wording
    elif window is not None and searched != query:
        judged = plain_question(searched)
    judged = without_topic_periods(judged)
    judged = _PLURAL_POSSESSIVE.sub("", judged)
    # A question of characters Python strips but the API keeps ("\u0085") is searched as asked, never as nothing.
    searched, judged = (text if text.strip() else question for text in (searched, judged))
    decline = None
    if stats is not None and merged is not None:
        decline = _empty_window(merged, applied, stats)
        notes.extend(missing_metadata_notes(merged, stats))
    named = named_papers(query, authors) if authors is not None else NamedPapers()
    notes.extend(f"No indexed paper is by {citation}." for citation in named.missing)
    if named.title:  # "What did Herbst and Hendren find?" searches for their paper and the papers beside it
        searched = f"{searched} ({named.title})"
    return ResolvedRequest(question, query, searched, judged, merged, applied, followup.refers_to_cited, named,
                           followup.is_followup, tuple(notes), decline)  # fmt: skip


def missing_metadata_notes(filters: SearchFilters, stats: CorpusStats) -> list[str]:
    """What a filter on metadata some papers lack leaves out, whatever their topic: papers with no JEL codes (in
    the year window), papers with no year."""
    notes = []
    if filters.jel_prefix is not None:
        total = stats.papers(filters.year_min, filters.year_max)
        missing = stats.without_jel(filters.year_min, filters.year_max)
        if missing and total:
            papers = "the 1 paper" if missing == 1 else f"the {missing:,} papers"
            notes.append(f"The JEL filter {filters.jel_prefix.upper()} leaves out {papers} ({missing / total:.0%}) "
                         "that carry no JEL codes.")  # fmt: skip
    undated = stats.papers_by_year.get(None, 0)
    if (filters.year_min is not None or filters.year_max is not None) and undated:
        notes.append(f"The year filter leaves out the {undated:,} papers with no publication year.")
    return notes


def span(year_min: int | None, year_max: int | None) -> str:
    if year_min is not None and year_max is not None:
        return f"published in {year_min}" if year_min == year_max else f"published from {year_min} to {year_max}"
    return f"published in {year_min} or later" if year_min is not None else f"published in {year_max} or earlier"


def _with_titles(turn: Turn, paper: PaperLookup | None) -> Turn:
    """The turn's cited papers with their titles and years (unknown ids left out)."""
    if paper is None:
        return turn
    cited = []
    for cited_paper in turn.cited:
        found = paper(cited_paper.doc_id) if not cited_paper.title else (cited_paper.title, cited_paper.year)
        if found is not None:
            cited.append(CitedPaper(cited_paper.doc_id, found[0], found[1]))
    return replace(turn, cited=tuple(cited))


def _merge(filters: SearchFilters | None, window: TimeWindow | None) -> tuple[SearchFilters | None, AppliedFilters]:
    """The request's filters win; the window fills the year bounds they left open, unless that contradicts them."""
    year_min = filters.year_min if filters else None
    year_max = filters.year_max if filters else None
    jel_prefix = filters.jel_prefix if filters else None
    sources: dict[str, Source] = {name: "request" for name, value in
                                  (("year_min", year_min), ("year_max", year_max), ("jel_prefix", jel_prefix))
                                  if value is not None}  # fmt: skip
    meaning = None
    if window is not None:
        low = window.year_min if year_min is None else year_min
        high = window.year_max if year_max is None else year_max
        if low is None or high is None or low <= high:
            bounds = (("year_min", year_min, window.year_min), ("year_max", year_max, window.year_max))
            for name, ours, theirs in bounds:
                if ours is None and theirs is not None:
                    sources[name] = "question words"
            year_min, year_max = low, high
            meaning = window.meaning if "question words" in sources.values() else None
    if year_min is None and year_max is None and jel_prefix is None:
        return None, AppliedFilters()
    return SearchFilters(year_min, year_max, jel_prefix), AppliedFilters(year_min, year_max, jel_prefix, sources,
                                                                         meaning)  # fmt: skip


def _empty_window(filters: SearchFilters, applied: AppliedFilters, stats: CorpusStats) -> str | None:
    if (filters.year_min is None and filters.year_max is None) or stats.papers(filters.year_min, filters.year_max):
        return None
    latest, asked = stats.latest_year, applied.meaning or f"papers {span(filters.year_min, filters.year_max)}"
    dated = [year for year in stats.papers_by_year if year is not None]
    held = f"; its papers are from {min(dated)} to {latest}" if dated else ""
    return f"No paper in the index falls in the time window asked for ({asked.rstrip('.')}){held}: none can answer."
