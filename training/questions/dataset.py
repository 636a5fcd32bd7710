"""The written training questions as records, with one fixed validation split shared by every training job.

A question belongs to the validation split when the document it was written from does (a hash of its doc_id),
so the reranker, the answerability model and the adapter all hold out the same abstracts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from corpus.documents import Chunk, Document
from corpus.sentences import split_sentences
from training.corpus import REPO_ROOT
from training.splits import in_validation_split

QUESTIONS_DIR = REPO_ROOT / "training" / "data" / "questions"
VALIDATION_FRACTION = 0.1


@dataclass(frozen=True)
class ParaphraseQuestion:
    question_id: str
    doc_id: str
    question: str
    style: str
    answer_sentences: tuple[int, ...]

    @property
    def is_validation(self) -> bool:
        return in_validation_split(f"questions:{self.doc_id}", VALIDATION_FRACTION)

    def answer_text(self, document: Document) -> list[str]:
        """The abstract's sentences that state the finding the question asks about."""
        spans = split_sentences(document.abstract)
        return [document.abstract[spans[i][0] : spans[i][1]] for i in self.answer_sentences if i < len(spans)]

    def answer_chunk(self, document: Document, chunks: list[Chunk]) -> Chunk:
        """The chunk of the document that holds the first answer sentence (abstracts longer than the
        embedding window are split into several chunks)."""
        spans = split_sentences(document.abstract)
        start = spans[min(self.answer_sentences[0], len(spans) - 1)][0]
        holding = [chunk for chunk in chunks if chunk.char_start <= start < chunk.char_end]
        return holding[0] if holding else chunks[0]


@dataclass(frozen=True)
class UnanswerableQuestion:
    question_id: str
    kind: str  # "near_miss" or "absent_topic"
    question: str
    source_doc_id: str | None  # the abstract a near miss was derived from

    @property
    def is_validation(self) -> bool:
        return in_validation_split(f"questions:{self.source_doc_id or self.question_id}", VALIDATION_FRACTION)


@dataclass(frozen=True)
class TopicalQuestion:
    """A question several abstracts answer in part; every abstract in `judged` was read, `relevant` answer it,
    each with the numbers of the sentences that state its finding (`findings`)."""

    question_id: str
    question: str
    relevant: tuple[str, ...]
    judged: tuple[str, ...]
    findings: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @property
    def is_validation(self) -> bool:
        return in_validation_split(f"questions:{self.question_id}", VALIDATION_FRACTION)


@dataclass(frozen=True)
class ContrastQuestion:
    """A near miss written for the abstract that the paraphrase `contrasts` is answered by: same topic, another
    outcome, population, country, period or mechanism (training/data/questions/contrast)."""

    question_id: str
    question: str
    source_doc_id: str
    contrasts: str  # the paraphrase question's id
    differs_by: str


def _records(directory: Path) -> list[dict]:
    return [
        json.loads(line)
        for path in sorted(directory.glob("batch_*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def _paraphrases(directory: Path) -> list[ParaphraseQuestion]:
    return [
        ParaphraseQuestion(r["id"], r["doc_id"], r["question"], r["style"], tuple(r["answer_sentences"]))
        for r in _records(directory)
    ]


def load_paraphrases(questions_dir: Path = QUESTIONS_DIR) -> list[ParaphraseQuestion]:
    return _paraphrases(questions_dir / "answerable")


def load_reworded(questions_dir: Path = QUESTIONS_DIR) -> list[ParaphraseQuestion]:
    """Second paraphrases of the contrast questions' abstracts, worded as far from the abstract as a reader who never
    saw it would ask (training/data/questions/reworded; each names the paraphrase it rewords)."""
    return _paraphrases(questions_dir / "reworded")


def load_unanswerables(questions_dir: Path = QUESTIONS_DIR) -> list[UnanswerableQuestion]:
    """The unanswerable questions that the retriever check confirmed (unanswerable_verification.jsonl)."""
    verification = questions_dir / "unanswerable_verification.jsonl"
    confirmed = {
        row["id"] for row in map(json.loads, verification.read_text().splitlines()) if row.get("unanswerable")
    }
    return [
        UnanswerableQuestion(r["id"], r["kind"], r["question"], r.get("source_doc_id"))
        for r in _records(questions_dir / "unanswerable")
        if r["id"] in confirmed
    ]


def load_topicals(questions_dir: Path = QUESTIONS_DIR) -> list[TopicalQuestion]:
    return [
        TopicalQuestion(r["id"], r["question"], tuple(r["relevant"]), tuple(r["judged"]),
                        tuple((doc_id, tuple(numbers)) for doc_id, numbers in r["findings"].items()))
        for r in _records(questions_dir / "topical")
    ]


def load_contrasts(questions_dir: Path = QUESTIONS_DIR) -> list[ContrastQuestion]:
    return [
        ContrastQuestion(r["id"], r["question"], r["source_doc_id"], r["contrasts"], r["differs_by"])
        for r in _records(questions_dir / "contrast")
    ]
