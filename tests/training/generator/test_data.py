"""Grounded answering data from written questions: the answer states the marked finding with the right [n], the
passages are retrieved and focused as the service does and hold the answer, refusals come from unanswerable
questions, the validation split is held out by abstract, and the build is deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from answering.prompt import NOT_COVERED_ANSWER
from corpus.sentences import split_sentences
from indexing.index import PublishedIndex
from indexing.pipeline import IngestionPipeline, IngestionSettings
from training.generator.data import (
    GroundedDataBuilder,
    GroundedDataSettings,
    GroundedExample,
    cite,
    read_examples,
    third_person,
)

COLUMNS = ["date", "title", "abstract", "authors", "journal", "doi", "url", "jel_codes", "date_original", "source"]
TOPICS = ["tariffs", "schooling", "pensions", "banking", "housing", "migration", "energy", "health", "tax",
          "credit", "labor", "auctions", "voting", "insurance", "farming", "crime", "trade", "patents",
          "inflation", "saving"]  # fmt: skip


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[PublishedIndex, Path]:
    """A small corpus ingested by the real job, and written questions about it (two per abstract's finding)."""
    import csv

    root = tmp_path_factory.mktemp("grounded")
    with (root / "corpus.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for i, topic in enumerate(TOPICS):
            abstract = (f"This paper studies {topic} markets in country {i}. We use administrative records of "
                        f"{topic} contracts. We find that {topic} reforms raised welfare by {i + 2} percent. "
                        f"Our results suggest that {topic} subsidies matter.")
            writer.writerow([f"{2000 + i}-01", f"The Economics of {topic.title()} Reform", abstract, "Doe, Jane",
                             "Journal of Testing", f"10.9999/test.{i}", "", "", "", "test"])  # fmt: skip
    out = root / "index"
    IngestionPipeline(IngestionSettings(corpus=root / "corpus.csv", out_dir=out, device="cpu")).run()
    index = PublishedIndex.load(out, device="cpu")
    questions = root / "questions"
    (questions / "answerable").mkdir(parents=True)
    (questions / "unanswerable").mkdir()
    answerable = [{"id": f"qa-01-{i:03d}", "kind": "paraphrase", "doc_id": f"10.9999/test.{i}",
                   "question": f"Did reforming {topic} raise welfare?", "style": "yes/no", "answer_sentences": [2, 3]}
                  for i, topic in enumerate(TOPICS)]  # fmt: skip
    unanswerable = [{"id": f"qu-01-{i:03d}", "kind": "near_miss", "source_doc_id": f"10.9999/test.{i}",
                     "question": f"Did {topic} reforms in Japan change fertility?", "differs_by": "country",
                     "note": "other country"} for i, topic in enumerate(TOPICS)]  # fmt: skip
    for name, records in (("answerable", answerable), ("unanswerable", unanswerable)):
        (questions / name / "batch_01.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    verification = [{"id": r["id"], "unanswerable": True} for r in unanswerable]
    (questions / "unanswerable_verification.jsonl").write_text("\n".join(json.dumps(v) for v in verification))
    return index, questions


def build(corpus, tmp_path: Path, **overrides) -> tuple[list[GroundedExample], list[GroundedExample]]:
    index, questions = corpus
    settings = GroundedDataSettings(questions_dir=questions, out_dir=tmp_path / "out", refusal_share=0.3,
                                    **overrides)  # fmt: skip
    return GroundedDataBuilder(settings, index).build()


def test_answers_state_the_marked_finding_with_the_right_marker(corpus, tmp_path: Path) -> None:
    index, _ = corpus
    train, validation = build(corpus, tmp_path)
    singles = [e for e in train + validation if e.kind == "single"]
    assert len(singles) == len(TOPICS)
    for example in singles:
        (doc_id,) = example.target_doc_ids
        target = next(p for p in example.passages if p.doc_id == doc_id)
        assert example.answer.startswith("The authors find that") and f"[{target.number}]." in example.answer
        abstract = index.documents[doc_id].abstract
        finding = abstract[split_sentences(abstract)[2][0] : split_sentences(abstract)[2][1]]
        assert finding in target.text  # readable where the answer points
        assert [p.number for p in example.passages] == [1, 2, 3]
        assert len({p.doc_id for p in example.passages}) == 3


def test_passages_are_focused_as_the_service_focuses_them(corpus, tmp_path: Path) -> None:
    train, _ = build(corpus, tmp_path, max_sentences=2)
    for example in train:
        assert all(len(split_sentences(p.text)) <= 2 for p in example.passages if p.doc_id not in
                   example.target_doc_ids)  # fmt: skip


def test_refusals_come_from_unanswerable_questions(corpus, tmp_path: Path) -> None:
    train, validation = build(corpus, tmp_path)
    refusals = [e for e in train + validation if e.kind == "refusal"]
    assert refusals and all(e.answer == NOT_COVERED_ANSWER and "Japan" in e.question for e in refusals)
    assert abs(len(refusals) - 0.3 * (len(train) + len(validation) - len(refusals))) <= 2


def test_the_validation_split_is_held_out_by_abstract_and_the_build_is_deterministic(corpus, tmp_path) -> None:
    train, validation = build(corpus, tmp_path / "a")
    train_docs = {d for e in train for d in e.target_doc_ids}
    assert not train_docs & {d for e in validation for d in e.target_doc_ids}
    again, _ = build(corpus, tmp_path / "b")
    assert [e.to_json() for e in again] == [e.to_json() for e in train]
    assert [e.to_json() for e in read_examples(tmp_path / "a" / "out" / "train.jsonl")] == [e.to_json() for e in train]


def test_text_rules() -> None:
    assert third_person("We find that our estimates hold. This paper shows more.") == (
        "The authors find that their estimates hold. This study shows more.")
    assert cite("Prices rose.", 2) == "Prices rose [2]."
    assert cite("Did prices rise?", 1) == "Did prices rise [1]?"


@pytest.mark.parametrize("overrides", [{"passages": 1}, {"refusal_share": 1.5}, {"max_sentences": 0}])
def test_invalid_settings_are_rejected(overrides: dict) -> None:
    with pytest.raises(ValueError):
        GroundedDataSettings(**overrides)
