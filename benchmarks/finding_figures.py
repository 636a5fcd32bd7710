"""What the shown findings say, against what a reader judged each relevant abstract to find
(../shared/eval/aer_dev/findings.jsonl: per (question, relevant abstract) the sentences that state the result that
answers it, the best one, and those that only give the method or setting).

For every cited relevant paper of an answer, each sentence of its shown finding is matched to the closest sentence
of its abstract (all-MiniLM-L6-v2 cosine, the abstract split as findings.jsonl splits it) and counted:

  finding stated    a closest sentence is one of the paper's finding sentences
  best finding      one is the best one
  best first        the first of them that states a finding is the best one (what a reader reads first)
  method shown      none states a finding and one is a method or setting sentence (a finding shown after the
                    sentence it points back to, "Who note that <setting>. These losses increase …", is judged by
                    what it states, not by its context)
  unfaithful        the finding holds a number, year or capitalised name that is neither in its abstract (title
                    included) nor in the attribution the service adds (the authors' names, the year)
  reworded          the finding holds a word its abstract does not have (answering.faithful.unfaithful_words:
                    beyond who found it and the reporting verb), as a glued "isefficient" or a swapped word
  spliced           the finding's first sentence does not say its source sentence's words in their order, or
                    drops the clause opening it ("Because …"): answering.faithful.keeps_its_source, against the
                    abstract sentence closest in words (a spelled-out acronym's words set aside)
  cut               the finding does not end a sentence
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from answering.attribution import attribution, finding_body
from answering.citations import sentences_of
from answering.faithful import (
    is_complete,
    keeps_its_source,
    source_sentence,
    unfaithful_specifics,
    unfaithful_words,
)
from corpus.sentences import split_sentences
from indexing.index import PublishedIndex
from training.evaluation.dev_questions import DEV_QUESTIONS

FINDINGS = DEV_QUESTIONS.with_name("findings.jsonl")


@dataclass(frozen=True)
class Judged:
    sentences: tuple[str, ...]
    finding: frozenset[int]
    best: int
    method: frozenset[int]


class FindingFigures:
    """Entry point: `count(question_id, findings)` with the answer's findings as [{"doi", "text"}, …]."""

    def __init__(self, index: PublishedIndex, path: Path = FINDINGS) -> None:
        self.index = index
        self.doc_of_doi = {d.doi: d for d in index.documents.values() if d.doi}
        self.judged: dict[tuple[str, str], Judged] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                self.judged[(row["qid"], row["doi"])] = Judged(
                    tuple(row["sentences"]), frozenset(row["finding"]), row["best"], frozenset(row["method"]))

    def count(self, question_id: str, findings: list[dict]) -> dict[str, int]:
        """Counts over the answer's findings: all shown, faithful ones, and for relevant judged papers the
        stated / best / method matches."""
        counts = {"findings": 0, "unfaithful": 0, "reworded": 0, "spliced": 0, "cut": 0, "judged": 0, "stated": 0,
                  "best": 0, "best_first": 0, "method": 0}  # fmt: skip
        for finding in findings:
            document = self.doc_of_doi.get(finding.get("doi", ""))
            who = attribution(document.authors, document.year) if document is not None else ""
            text = finding["text"]
            counts["findings"] += 1
            counts["cut"] += not is_complete(text)
            if document is not None:
                body = finding_body(text, who)
                allowed = f"{document.title}\n{' '.join(document.authors)} {document.year or ''}"
                counts["unfaithful"] += bool(unfaithful_specifics(body, document.abstract, allowed))
                counts["reworded"] += bool(unfaithful_words(body, document.abstract, allowed))
                counts["spliced"] += spliced(body, document.abstract, who)
            judged = self.judged.get((question_id, finding.get("doi", "")))
            if judged is None:
                continue
            in_order = [self.closest(finding_body(text[start:end], who), judged.sentences)
                        for start, end in split_sentences(text)]  # fmt: skip
            closest = set(in_order)
            stated = bool(closest & judged.finding)
            counts["judged"] += 1
            counts["stated"] += stated
            counts["best"] += judged.best in closest
            counts["best_first"] += next((i for i in in_order if i in judged.finding), None) == judged.best
            counts["method"] += not stated and bool(closest & judged.method)
        return counts

    def closest(self, text: str, sentences: tuple[str, ...]) -> int:
        vectors = self.index.embedder.encode([text, *sentences])
        return int(np.argmax(vectors[1:] @ vectors[0]))


def spliced(body: str, abstract: str, who: str = "") -> bool:
    """Whether a shown finding's first sentence strays from the abstract sentence it says (keeps_its_source). Who
    found it, named inside the body ("While von Wachter, Song, and Manchester (2011) confirm …"), is no word of
    the source's."""
    if who:
        body = body.replace(who, "the authors")
    spans = split_sentences(body)
    first = body[spans[0][0]:spans[0][1]] if spans else body
    first = re.sub(r"\s*\([^()]*\)", lambda m: m.group(0) if m.group(0).strip() in abstract else "", first)
    source = source_sentence(first, sentences_of(abstract))
    return source is not None and not keeps_its_source(first, source)
