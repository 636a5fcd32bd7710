"""Automatic checks for the written training questions (training/data/questions), by the development set's rules.

A paraphrase question must: have 6-25 words; copy no run of four words from its abstract or title; reuse at
most two of the title's distinctive words and no pair of adjacent title content words; not point at its
source ("this paper", "the authors"); name at least one answer sentence of its abstract; and, when it rewords
another paraphrase (`rewords`), be about the same abstract and copy no run of four words from it. An unanswerable
question is a near miss (derived from an abstract: it must copy no 4-word run from it and say how it
differs from it) or about an absent topic (its key terms appear in no abstract or title of the corpus); both have
6-25 words. A topical question has 8-25 words and 2-6 relevant abstracts among the candidates its writer read,
each with the sentences of its finding, and copies no 4-word run from any of them.

    python -m training.questions.checks training/data/questions/answerable/*.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from corpus.documents import Document
from indexing.bm25 import ENGLISH_STOP_WORDS

MIN_WORDS, MAX_WORDS = 6, 25
TOPICAL_MIN_WORDS = 8
TOPICAL_MIN_RELEVANT, TOPICAL_MAX_RELEVANT = 2, 6
COPY_RUN = 4  # words: a run this long shared with the abstract or title is a copy
MAX_TITLE_WORDS = 2  # distinctive title words a question may keep
STYLES = ("yes/no", "how", "what", "why", "evidence", "which", "other")
DIFFERENCES = ("country", "outcome", "period", "mechanism", "population")
# Words too generic to give a title away (the development rules let "tax" or "prices" stay).
GENERIC_WORDS = frozenset(
    [
        "economic", "economics", "economy", "evidence", "effect", "effects", "impact", "impacts", "model", "models",
        "theory", "theories", "market", "markets", "price", "prices", "pricing", "tax", "taxes", "taxation", "policy",
        "policies", "trade", "labor", "labour", "wage", "wages", "firm", "firms", "bank", "banks", "growth", "income",
        "incomes", "data", "analysis", "study", "role", "case", "new", "united", "states", "american", "government",
        "public", "social", "country", "countries", "international", "monetary", "fiscal", "inflation", "interest",
        "rate", "rates", "capital", "investment", "credit", "insurance", "health", "education", "school", "schools",
        "women", "children", "workers", "worker", "employment", "unemployment", "household", "households",
        "consumption", "risk", "demand", "supply", "cost", "costs", "value", "welfare", "choice", "choices",
        "information", "competition", "structural", "empirical", "estimation", "estimating", "estimates", "approach",
        "dynamic", "dynamics", "optimal", "equilibrium", "general", "individual", "individuals", "industry",
        "industries", "production", "productivity",
    ]
)
SOURCE_REFERENCES = re.compile(
    r"\b(this|the) (paper|article|study|abstract)\b|\bthe authors?\b|\bthis research\b", re.IGNORECASE
)
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words (punctuation and markup dropped)."""
    return _WORD.findall(re.sub(r"<[^>]+>", " ", text.lower()).replace("’", "'"))


def stem(word: str) -> str:
    """A crude stem (6-letter prefix, plural s dropped): enough to see "regulation" in "regulations"."""
    return word[:6] if len(word) > 6 else word.rstrip("s")


def ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def distinctive_title_stems(title: str) -> set[str]:
    return {
        stem(word)
        for word in words(title)
        if len(word) >= 4 and word not in ENGLISH_STOP_WORDS and word not in GENERIC_WORDS and not word.isdigit()
    }


def title_content_bigrams(title: str) -> set[tuple[str, str]]:
    """Adjacent title words that are both distinctive (the title's phrases)."""
    tokens = [stem(w) if len(w) >= 4 and w not in ENGLISH_STOP_WORDS and w not in GENERIC_WORDS else "" for w in
              words(title)]  # fmt: skip
    return {(a, b) for a, b in itertools.pairwise(tokens) if a and b}


@dataclass(frozen=True)
class Problem:
    record_id: str
    message: str


def common_problems(record_id: str, question: str, document: Document) -> list[Problem]:
    """The rules every written question follows, answerable or not."""
    problems = []
    tokens = words(question)
    if not MIN_WORDS <= len(question.split()) <= MAX_WORDS:
        problems.append(Problem(record_id, f"{len(question.split())} words; write {MIN_WORDS}-{MAX_WORDS}"))
    copied = ngrams(tokens, COPY_RUN) & (ngrams(words(document.abstract), COPY_RUN) | ngrams(words(document.title),
                                                                                            COPY_RUN))  # fmt: skip
    if copied:
        problems.append(Problem(record_id, f"copies the run {' '.join(sorted(copied)[0])!r} from the abstract/title"))
    if SOURCE_REFERENCES.search(question):
        problems.append(Problem(record_id, "points at its source (this paper / the authors); ask as a user would"))
    return problems


def answerable_problems(record: dict, document: Document | None, sentence_count: int) -> list[Problem]:
    record_id = str(record.get("id"))
    if document is None:
        return [Problem(record_id, f"unknown doc_id {record.get('doc_id')!r}")]
    question = str(record.get("question", "")).strip()
    problems = common_problems(record_id, question, document)
    stems = [stem(w) for w in words(question)]
    reused = distinctive_title_stems(document.title) & set(stems)
    if len(reused) > MAX_TITLE_WORDS:
        problems.append(Problem(record_id, f"reuses {len(reused)} distinctive title words {sorted(reused)}"))
    phrases = title_content_bigrams(document.title) & set(itertools.pairwise(stems))
    if phrases:
        problems.append(Problem(record_id, f"reuses the title phrase {' '.join(sorted(phrases)[0])!r}"))
    if record.get("style") not in STYLES:
        problems.append(Problem(record_id, f"style must be one of {STYLES}"))
    sentences = record.get("answer_sentences")
    if (not isinstance(sentences, list) or not sentences
            or not all(isinstance(i, int) and 0 <= i < sentence_count for i in sentences)):  # fmt: skip
        problems.append(Problem(record_id, f"answer_sentences must list sentence numbers 0-{sentence_count - 1}"))
    return problems


def reword_problems(record: dict, original: dict | None) -> list[Problem]:
    """A second paraphrase (`rewords`: the first one's id) asks the same of the same abstract in other words."""
    record_id = str(record.get("id"))
    if original is None or original.get("doc_id") != record.get("doc_id"):
        return [Problem(record_id, f"rewords {record.get('rewords')!r} is not a paraphrase of the same abstract")]
    copied = ngrams(words(str(record.get("question", ""))), COPY_RUN) & ngrams(words(original["question"]), COPY_RUN)
    if copied:
        return [Problem(record_id, f"copies the run {' '.join(sorted(copied)[0])!r} from the paraphrase it rewords")]
    return []


def near_miss_problems(record: dict, document: Document | None) -> list[Problem]:
    record_id = str(record.get("id"))
    if document is None:
        return [Problem(record_id, f"unknown source_doc_id {record.get('source_doc_id')!r}")]
    question = str(record.get("question", "")).strip()
    problems = common_problems(record_id, question, document)
    if record.get("differs_by") not in DIFFERENCES:
        problems.append(Problem(record_id, f"differs_by must be one of {DIFFERENCES}"))
    if not str(record.get("note", "")).strip():
        problems.append(Problem(record_id, "note (why the source abstract does not answer it) is empty"))
    return problems


def absent_topic_problems(record: dict, corpus_text: str) -> list[Problem]:
    record_id = str(record.get("id"))
    question = str(record.get("question", "")).strip()
    problems = []
    if not MIN_WORDS <= len(question.split()) <= MAX_WORDS:
        problems.append(Problem(record_id, f"{len(question.split())} words; write {MIN_WORDS}-{MAX_WORDS}"))
    terms = record.get("key_terms")
    if not isinstance(terms, list) or not terms or not all(isinstance(t, str) and t.strip() for t in terms):
        return [*problems, Problem(record_id, "key_terms must list the question's key terms")]
    for term in terms:
        if not re.search(r"\b" + re.escape(term.lower()), question.lower()):
            problems.append(Problem(record_id, f"key term {term!r} is not in the question"))
        if re.search(r"\b" + re.escape(term.lower()) + r"\b", corpus_text):
            problems.append(Problem(record_id, f"key term {term!r} occurs in the corpus: the topic is not absent"))
    return problems


def topical_problems(record: dict, documents: dict[str, Document]) -> list[Problem]:
    """A topical question: 8-25 words, 2-6 relevant abstracts among those the writer read, each with the sentence
    numbers of its finding, and no 4-word run copied from any relevant abstract or title."""
    from corpus.sentences import split_sentences

    record_id = str(record.get("id"))
    question = str(record.get("question", "")).strip()
    judged, relevant = record.get("judged"), record.get("relevant")
    if not isinstance(judged, list) or not isinstance(relevant, list):
        return [Problem(record_id, "judged and relevant must be lists of doc_ids")]
    problems = []
    if len(question.split()) < TOPICAL_MIN_WORDS:
        problems.append(Problem(record_id, f"{len(question.split())} words; write {TOPICAL_MIN_WORDS}-{MAX_WORDS}"))
    if not TOPICAL_MIN_RELEVANT <= len(set(relevant)) <= TOPICAL_MAX_RELEVANT:
        problems.append(Problem(record_id, f"{len(set(relevant))} relevant; a topical question has 2-6"))
    if record.get("style") not in STYLES:
        problems.append(Problem(record_id, f"style must be one of {STYLES}"))
    findings = record.get("findings") if isinstance(record.get("findings"), dict) else {}
    for doc_id in relevant:
        document = documents.get(doc_id)
        if document is None or doc_id not in judged:
            problems.append(Problem(record_id, f"relevant {doc_id!r} is unknown or not among the judged candidates"))
            continue
        problems += common_problems(record_id, question, document)
        count = len(split_sentences(document.abstract))
        sentences = findings.get(doc_id)
        if (not isinstance(sentences, list) or not sentences
                or not all(isinstance(i, int) and 0 <= i < count for i in sentences)):  # fmt: skip
            problems.append(Problem(record_id, f"findings[{doc_id!r}] must list sentence numbers 0-{count - 1}"))
    problems += [Problem(record_id, f"judged {d!r} is not in the corpus") for d in judged if d not in documents]
    return list({(p.record_id, p.message): p for p in problems}.values())


def read_records(paths: Iterable[Path]) -> list[dict]:
    records = []
    for path in paths:
        for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise SystemExit(f"{path}, line {number}: not JSON ({error.msg})") from None
    return records


def check_records(records: list[dict], documents: dict[str, Document],
                  paraphrases: dict[str, dict] | None = None) -> list[Problem]:  # fmt: skip
    """`paraphrases`: the written paraphrase records by id, for the records that reword one (besides `records`)."""
    from corpus.sentences import split_sentences

    corpus_text = " ".join(f"{d.title} {d.abstract}" for d in documents.values()).lower()
    problems: list[Problem] = []
    ids = Counter(str(r.get("id")) for r in records)
    problems += [Problem(record_id, "duplicate id") for record_id, n in ids.items() if n > 1]
    questions = Counter(" ".join(words(str(r.get("question", "")))) for r in records)
    originals = {**(paraphrases or {}), **{str(r.get("id")): r for r in records}}
    for record in records:
        if questions[" ".join(words(str(record.get("question", ""))))] > 1:
            problems.append(Problem(str(record.get("id")), "the same question appears twice"))
        kind = record.get("kind")
        if kind == "near_miss":
            problems += near_miss_problems(record, documents.get(record.get("source_doc_id", "")))
        elif kind == "absent_topic":
            problems += absent_topic_problems(record, corpus_text)
        elif kind == "topical":
            problems += topical_problems(record, documents)
        elif kind == "paraphrase":
            document = documents.get(record.get("doc_id", ""))
            count = len(split_sentences(document.abstract)) if document else 0
            problems += answerable_problems(record, document, count)
            if "rewords" in record:
                problems += reword_problems(record, originals.get(str(record["rewords"])))
        else:
            kinds = "paraphrase, topical, near_miss or absent_topic"
            problems.append(Problem(str(record.get("id")), f"kind must be {kinds}"))
    return problems


def main(argv: list[str] | None = None) -> int:
    from training.corpus import load_training_corpus

    parser = argparse.ArgumentParser(prog="python -m training.questions.checks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    records = read_records(args.files)
    from training.questions.dataset import QUESTIONS_DIR

    paraphrases = {r["id"]: r for r in read_records(sorted((QUESTIONS_DIR / "answerable").glob("batch_*.jsonl")))}
    problems = check_records(records, load_training_corpus(), paraphrases)
    for problem in problems:
        print(f"{problem.record_id}: {problem.message}")
    styles = Counter(r.get("style") or r.get("differs_by") or r.get("kind") for r in records)
    print(f"{len(records)} questions, {len({p.record_id for p in problems})} with problems; mix: {dict(styles)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
