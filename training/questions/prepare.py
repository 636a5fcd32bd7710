"""Draw the abstracts that question writers work from and write them as batches (under var/, never committed:
the abstracts are the publishers' text). Each batch lists abstracts for paraphrase questions and abstracts
whose topic seeds an unanswerable question, each with its sentences numbered as the project splits them.

    python -m training.questions.prepare --batches 8 --answerable 1800 --unanswerable 400
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from corpus.documents import Document
from corpus.sentences import split_sentences
from training.corpus import REPO_ROOT, load_training_corpus

MIN_ABSTRACT_CHARS = 400  # as the development set's sources
NOT_RESEARCH = ("comment", "reply", "erratum", "corrigendum", "correction", "rejoinder", "addendum")


def usable(document: Document) -> bool:
    title = document.title.strip().lower()
    return (
        bool(title)
        and len(document.abstract) >= MIN_ABSTRACT_CHARS
        and len(split_sentences(document.abstract)) >= 3
        and not title.startswith(NOT_RESEARCH)
    )


def describe(document: Document) -> dict:
    return {
        "doc_id": document.doc_id,
        "title": document.title,
        "journal": document.journal,
        "year": document.year,
        "sentences": [document.abstract[start:end] for start, end in split_sentences(document.abstract)],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.questions.prepare", description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "var" / "questions" / "batches")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--answerable", type=int, default=1800)
    parser.add_argument("--unanswerable", type=int, default=400)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    documents = sorted((d for d in load_training_corpus().values() if usable(d)), key=lambda d: d.doc_id)
    random.Random(args.seed).shuffle(documents)
    answerable = documents[: args.answerable]
    unanswerable = documents[args.answerable : args.answerable + args.unanswerable]
    args.out.mkdir(parents=True, exist_ok=True)
    for batch in range(args.batches):
        payload = {
            "batch": batch + 1,
            "answerable": [describe(d) for d in answerable[batch :: args.batches]],
            "unanswerable": [describe(d) for d in unanswerable[batch :: args.batches]],
        }
        path = args.out / f"batch_{batch + 1:02d}.json"
        path.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        counts = f"{len(payload['answerable'])} answerable, {len(payload['unanswerable'])} unanswerable"
        print(f"{path.relative_to(REPO_ROOT)}: {counts}")


if __name__ == "__main__":
    main()
