"""The sentence judge's training pairs from the written topical questions: each answering abstract's finding
sentences positive, its other sentences and its on-topic neighbours' negative, held-out questions left out."""

from __future__ import annotations

from answering.citations import sentences_of
from retrieval.reranker import passage_text
from training.corpus import load_training_corpus
from training.questions.dataset import load_topicals
from training.sentence_judge import topical_pairs


def test_topical_questions_give_findings_as_positives_and_judged_neighbours_as_negatives() -> None:
    corpus = load_training_corpus()
    pairs = topical_pairs(corpus, held_out_docs=set(), off_topic=2, seed=7)
    questions = load_topicals()
    assert not {p.question for p in pairs} & {q.question for q in questions if q.is_validation}
    question = next(q for q in questions if not q.is_validation and all(d in corpus for d in q.judged))
    own = [p for p in pairs if p.question == question.question]
    expected_positives = {passage_text(corpus[doc_id].title, sentences_of(corpus[doc_id].abstract)[number])
                          for doc_id, numbers in question.findings for number in numbers}  # fmt: skip
    assert {p.passage for p in own if p.label == 1} == expected_positives
    off_topic = [p for p in own if p.source == "topical off-topic"]
    assert off_topic and all(p.label == 0 for p in off_topic)
    neighbours = {doc_id for doc_id in question.judged if doc_id not in question.relevant}
    from_docs = {doc_id for doc_id in neighbours for s in sentences_of(corpus[doc_id].abstract)
                 if passage_text(corpus[doc_id].title, s) in {p.passage for p in off_topic}}  # fmt: skip
    assert len(from_docs) == min(2, len(neighbours))
    # held-out abstracts give no pair at all
    held_out = set(question.judged)
    assert not {p.passage for p in topical_pairs(corpus, held_out, 2, 7) if p.question == question.question}
