"""The named-paper questions: a valid set whose papers are in the corpus by the authors the questions cite."""

from __future__ import annotations

import csv
from pathlib import Path

from answering.named_papers import citations_in
from benchmarks.named_papers import load_questions, summarize
from corpus.authors import has_surnames


def test_every_question_cites_authors_whose_papers_it_lists(real_corpus: Path) -> None:
    with real_corpus.open(newline="", encoding="utf-8") as handle:
        authors = {row["doi"]: row["authors"].split(";") for row in csv.DictReader(handle)}
    questions = load_questions()
    assert len({q["id"] for q in questions}) == len(questions) == 38
    for question in questions:
        [citation] = citations_in(question["question"])
        assert all(has_surnames(authors[doi], citation.surnames) for doi in question["papers"]), question["id"]
        assert question["expect"] == "not_named" or len(question["papers"]) == 1, question["id"]


def test_the_figures_count_the_named_paper_answered_and_kept_out() -> None:
    records = [
        {"expect": "answer", "named": True, "first": True, "others": False},
        {"expect": "answer", "named": False, "first": False, "others": True},
        {"expect": "not_named", "kept_out": True},
    ]
    assert summarize(records) == {"named answered": 0.5, "named first": 0.5, "others cited": 0.5,
                                  "named kept out": 1.0, "questions": 3}  # fmt: skip
