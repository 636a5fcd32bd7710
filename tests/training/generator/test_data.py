"""Grounded QA data: correct [n] markers, refusals without the target, two-passage answers, a validation
split held out by abstract, determinism, and no AER rows."""

from __future__ import annotations

import csv
import random
import re
from pathlib import Path

import pytest

from answering.prompt import NOT_COVERED_ANSWER
from models import Generator
from training.generator.data import (
    QUESTION_TEMPLATES,
    GroundedDataBuilder,
    GroundedDataSettings,
    GroundedExample,
    cite,
    question_topic,
    read_examples,
    third_person,
)
from training.generator.question_writer import QuestionWriter, accept_question

COLUMNS = ["date", "title", "abstract", "authors", "journal", "doi", "url", "jel_codes", "date_original", "source"]
TOPICS = ["tariffs", "schooling", "pensions", "banking", "housing", "migration", "energy", "health", "tax",
          "credit", "labor", "auctions", "voting", "insurance", "farming", "crime", "trade", "patents",
          "inflation", "saving", "fertility", "climate", "media", "unions", "rents", "loans", "exports",
          "tourism", "water", "transport"]


def write_corpus(path: Path, journal: str = "Journal of Testing") -> Path:
    rng = random.Random(0)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for i, topic in enumerate(TOPICS):
            other = TOPICS[(i + 1) % len(TOPICS)]
            abstract = (f"This paper studies {topic} markets and {other} policy in {rng.choice(['Chile', 'Peru'])}. "
                        f"We use administrative data on {topic} contracts from {1990 + i} to {2000 + i}. "
                        f"We find that {topic} reforms raised welfare by {i + 2} percent. "
                        f"The results suggest that {topic} subsidies matter for {other} outcomes.")
            writer.writerow([f"{2000 + i}-01", f"The Economics of {topic.title()} Reform", abstract, "Doe, Jane",
                             journal, f"10.9999/test.{i}", "", "", "", "test"])
    return path


def build(
    tmp_path: Path, writer: QuestionWriter | None = None, **overrides: object
) -> tuple[list[GroundedExample], list[GroundedExample]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    settings = dict(corpus=write_corpus(tmp_path / "corpus.csv"), out_dir=tmp_path / "out", train_abstracts=20,
                    validation_abstracts=6, passages=3, max_passage_words=32, multi_share=0.3,
                    refusal_share=0.3, written_question_share=0.0, seed=3)
    settings.update(overrides)
    return GroundedDataBuilder(GroundedDataSettings(**settings), question_writer=writer).build()


def is_title_question(question: str) -> bool:
    return any(re.fullmatch(re.escape(t).replace(r"\{topic\}", ".+"), question) for t in QUESTION_TEMPLATES)


def markers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", text)]


def test_every_kind_has_correct_markers(tmp_path: Path) -> None:
    train, validation = build(tmp_path)
    examples = train + validation
    assert {e.kind for e in examples} == {"single", "multi", "refusal"}
    for example in examples:
        assert [p.number for p in example.passages] == [1, 2, 3]
        by_number = {p.number: p for p in example.passages}
        shown_docs = [p.doc_id for p in example.passages]
        assert len(set(shown_docs)) == len(shown_docs)  # one window per abstract
        if example.kind == "refusal":
            assert example.answer == NOT_COVERED_ANSWER
            assert example.target_doc_ids[0] not in shown_docs  # the answer was removed
            continue
        cited = markers(example.answer)
        # One marker per answer sentence, each pointing at a passage of a target abstract.
        assert len(cited) == example.answer.count("].")
        assert {by_number[n].doc_id for n in cited} == set(example.target_doc_ids)
        for sentence, number in zip(re.split(r"(?<=\]\.) ", example.answer), cited, strict=True):
            claim = re.sub(r" \[\d+\]\.$", "", sentence)
            # The answer sentence is the cited passage's own sentence (in the third person).
            assert claim in third_person(by_number[number].text)
        if example.kind == "multi":
            assert len(example.target_doc_ids) == 2 and len(set(cited)) == 2


def test_validation_is_held_out_by_abstract(tmp_path: Path) -> None:
    train, validation = build(tmp_path)
    validation_targets = {d for e in validation for d in e.target_doc_ids}
    seen_in_training = {d for e in train for d in e.target_doc_ids} | {p.doc_id for e in train for p in e.passages}
    assert validation_targets and not validation_targets & seen_in_training


def test_the_target_sits_at_varying_positions(tmp_path: Path) -> None:
    train, _ = build(tmp_path)
    positions = {markers(e.answer)[0] for e in train if e.kind == "single"}
    assert len(positions) >= 2


def test_deterministic_with_a_seed_and_cached_as_jsonl(tmp_path: Path) -> None:
    first, _ = build(tmp_path / "a")
    again, _ = build(tmp_path / "b")
    other, _ = build(tmp_path / "c", seed=4)
    assert [e.to_json() for e in first] == [e.to_json() for e in again]
    assert [e.to_json() for e in first] != [e.to_json() for e in other]
    assert [e.to_json() for e in read_examples(tmp_path / "a" / "out" / "train.jsonl")] == [e.to_json() for e in first]


def test_aer_rows_are_refused(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "aer.csv", journal="American Economic Review")
    with pytest.raises(ValueError, match="American Economic Review"):
        GroundedDataBuilder(GroundedDataSettings(corpus=corpus, out_dir=tmp_path, train_abstracts=5,
                                                 validation_abstracts=2)).build()


def test_text_rules() -> None:
    assert question_topic("The Economics of Trade: Evidence from Chile") == "the Economics of Trade"
    assert question_topic("On Optimal Taxation") == "Optimal Taxation"
    assert third_person("We find that our estimates hold. I show this.") == (
        "The authors find that their estimates hold. The authors show this.")
    assert cite("Prices rose.", 2) == "Prices rose [2]."
    assert cite("Did prices rise?", 1) == "Did prices rise [1]?"


def test_written_questions_are_filtered() -> None:
    finding = "The authors find that tariff reforms raised welfare by 3 percent."
    assert accept_question("How did tariff reforms affect welfare?", finding)
    assert not accept_question("How did tariff reforms affect welfare", finding)  # not a question
    assert not accept_question("What does this paper find about tariff reforms and welfare?", finding)  # source
    assert not accept_question("Why do people vote in elections?", finding)  # not about the finding
    assert not accept_question("Tariffs?", finding)  # too short
    assert not accept_question("Did tariff reforms raise welfare? Did prices fall?", finding)  # two questions


def test_rejected_written_questions_fall_back_to_title_questions(tmp_path: Path, tiny_generator: Generator) -> None:
    # A tiny random model writes gibberish: every question is rejected and the builder uses the title rules.
    writer = QuestionWriter(tiny_generator, batch_size=8, max_new_tokens=8)
    train, validation = build(tmp_path, writer, written_question_share=1.0)
    assert all(is_title_question(e.question) for e in train + validation if e.kind != "multi")


@pytest.mark.slow
def test_smollm_writes_questions_about_the_finding(tmp_path: Path, smollm_generator: Generator) -> None:
    train, validation = build(tmp_path, QuestionWriter(smollm_generator), written_question_share=1.0)
    examples = [e for e in train + validation if e.kind != "multi"]
    written = [e for e in examples if not is_title_question(e.question)]
    assert len(written) >= len(examples) // 2
    for example in written:
        source = next(p.text for p in example.passages if p.doc_id == example.target_doc_ids[0]) \
            if example.kind == "single" else ""
        assert example.question.endswith("?")
        if source:  # the question shares content words with the abstract it was written from
            assert len(set(re.findall(r"[a-z]{5,}", example.question.lower())) &
                       set(re.findall(r"[a-z]{5,}", source.lower()))) >= 1


@pytest.mark.parametrize("overrides", [{"passages": 1}, {"train_abstracts": 0}, {"multi_share": 0.6,
                                                                                  "refusal_share": 0.5},
                                       {"written_question_share": 1.5}])
def test_invalid_settings_are_rejected(overrides: dict) -> None:
    with pytest.raises(ValueError):
        GroundedDataSettings(**overrides)
