"""The automatic checks of the written training questions, and the committed questions against them."""

import pytest

from corpus.documents import Document
from training.corpus import load_training_corpus
from training.questions.checks import check_records, read_records
from training.questions.dataset import (
    QUESTIONS_DIR,
    load_contrasts,
    load_paraphrases,
    load_reworded,
    load_unanswerables,
)

ABSTRACT = (
    "We study how local newspapers closing affects municipal borrowing costs. "
    "Using the staggered closure of newspapers across US counties, we find that borrowing costs rise by five basis "
    "points after a closure. The effect is larger where government oversight is weak."
)
DOCUMENT = Document(doc_id="d1", doi="", title="Financing Dies in Darkness? Newspaper Closures and Public Finance",
                    abstract=ABSTRACT, abstract_original=ABSTRACT, date="2020", year=2020)  # fmt: skip


def paraphrase(question: str, **fields: object) -> dict:
    return {"id": "q1", "kind": "paraphrase", "doc_id": "d1", "question": question, "style": "what",
            "answer_sentences": [1], **fields}  # fmt: skip


def messages(record: dict) -> list[str]:
    return [problem.message for problem in check_records([record], {"d1": DOCUMENT})]


def test_a_question_in_a_users_own_words_passes() -> None:
    assert messages(paraphrase("When a town loses its local paper, does the town pay more to borrow money?")) == []


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (paraphrase("Newspapers and debt?"), "words; write 6-25"),
        (paraphrase("Do the borrowing costs rise by five basis points for towns?"), "copies the run"),
        (paraphrase("What does this paper say about towns that lose their local paper?"), "points at its source"),
        (paraphrase("What do newspaper closures mean for the public finance of towns?"), "title"),
        (paraphrase("When a town loses its local paper, does borrowing get dearer?", answer_sentences=[9]),
         "answer_sentences"),
        (paraphrase("When a town loses its local paper, does borrowing get dearer?", style="rhetorical"), "style"),
        ({"id": "q1", "kind": "absent_topic", "question": "How did newspapers on Mars finance their printing presses?",
          "key_terms": ["newspapers"]}, "occurs in the corpus"),
        ({"id": "q1", "kind": "near_miss", "source_doc_id": "d1", "differs_by": "country", "note": "",
          "question": "Did newspaper closures in Brazil change what its cities pay to borrow?"}, "note"),
        ({"id": "q1", "kind": "essay", "question": "Anything at all about local newspapers and towns?"},
         "kind must be"),
    ],
)  # fmt: skip
def test_each_rule_is_enforced(record: dict, expected: str) -> None:
    assert any(expected in message for message in messages(record)), messages(record)


def test_a_rewording_must_ask_of_the_same_abstract_in_other_words() -> None:
    original = paraphrase("When a town loses its local paper, does the town pay more to borrow money?")
    reworded = paraphrase("Do municipalities face dearer loans once the local press shuts down?", id="q2",
                          rewords="q1")  # fmt: skip
    assert check_records([original, reworded], {"d1": DOCUMENT}) == []
    close = paraphrase("When a town loses its local paper, is borrowing dearer?", id="q2", rewords="q1")
    problems = check_records([original, close], {"d1": DOCUMENT})
    assert any("from the paraphrase it rewords" in problem.message for problem in problems)
    elsewhere = {**reworded, "rewords": "q9"}
    assert any("not a paraphrase of the same abstract" in p.message
               for p in check_records([original, elsewhere], {"d1": DOCUMENT}))  # fmt: skip


def test_duplicates_are_found() -> None:
    record = paraphrase("When a town loses its local paper, does the town pay more to borrow money?")
    problems = check_records([record, dict(record)], {"d1": DOCUMENT})
    assert {"duplicate id", "the same question appears twice"} <= {problem.message for problem in problems}


def test_the_committed_questions_pass_and_are_enough() -> None:
    # The domain gate's questions (offdomain/, economics_casual/) have checks of their own (training/domain.py).
    records = read_records(sorted(path for path in QUESTIONS_DIR.glob("*/batch_*.jsonl")
                                  if path.parent.name not in ("offdomain", "economics_casual")))  # fmt: skip
    assert check_records(records, load_training_corpus()) == []
    assert sum("rewords" in record for record in records) >= 1000
    paraphrases, unanswerables = load_paraphrases(), load_unanswerables()
    assert len(paraphrases) >= 1500 and len(unanswerables) >= 300  # verified unanswerable only
    assert {q.kind for q in unanswerables} == {"near_miss", "absent_topic"}
    held_out = sum(q.is_validation for q in paraphrases) / len(paraphrases)
    assert 0.05 < held_out < 0.15  # the split every training job shares
    # Each contrastive near miss is written for the abstract of a training-split paraphrase (the judge's data),
    # never for a held-out one (the decision's and the gate's).
    training_split = {q.question_id: q.doc_id for q in paraphrases if not q.is_validation}
    contrasts = load_contrasts()
    assert len(contrasts) >= 1000
    assert all(training_split.get(c.contrasts) == c.source_doc_id for c in contrasts)
    # The reworded paraphrases (the judge's far-worded positives) ask of those same training-split abstracts.
    contrasted = {c.source_doc_id for c in contrasts}
    assert all(q.doc_id in contrasted and not q.is_validation for q in load_reworded())
