"""ROUGE-L, repetition loops and the pooled answer scores of the grounded benchmark."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pytest

from answering.citations import SupportChecker
from answering.prompt import NOT_COVERED_ANSWER, Passage
from training.generator.metrics import AnswerScorer, has_repetition_loop, longest_common_subsequence, rouge_l, summarize


def test_longest_common_subsequence() -> None:
    assert longest_common_subsequence("abcbdab", "bdcaba") == 4
    assert longest_common_subsequence([], ["a"]) == 0


def test_rouge_l_f1() -> None:
    assert rouge_l("The cat sat on the mat.", "the cat sat on the mat") == pytest.approx(1.0)
    # LCS "a c d" = 3 of 4 words each side: precision = recall = 0.75.
    assert rouge_l("a b c d", "a c d e") == pytest.approx(0.75)
    # Unequal lengths: LCS 2, precision 2/2, recall 2/4 -> F1 = 2/3.
    assert rouge_l("growth rose", "growth clearly rose sharply") == pytest.approx(2 / 3)
    assert rouge_l("Trade raises growth [2].", "Trade raises growth.") == pytest.approx(1.0)  # markers ignored
    assert rouge_l("", "anything") == 0.0
    assert rouge_l("nothing shared", "entirely different") == 0.0


def test_repetition_loop() -> None:
    loop = "The effect of trade is large. " * 3
    assert has_repetition_loop(loop)
    assert not has_repetition_loop("The effect of trade is large. The effect of trade is small.")  # twice is a quote
    assert not has_repetition_loop("short")


def bag_of_words(texts: Sequence[str]) -> np.ndarray:
    """A deterministic stand-in for the sentence embedder: normalised word-count vectors."""
    vocabulary: dict[str, int] = {}
    rows = [re.findall(r"[a-z]+", t.lower()) for t in texts]
    for row in rows:
        for word in row:
            vocabulary.setdefault(word, len(vocabulary))
    vectors = np.zeros((len(texts), max(1, len(vocabulary))), dtype=np.float32)
    for i, row in enumerate(rows):
        for word in row:
            vectors[i, vocabulary[word]] += 1
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)


PASSAGES = [
    Passage(1, "doc-a", "doc-a#0", "Trade", 2001, "Tariff cuts raised plant productivity in Chile."),
    Passage(2, "doc-b", "doc-b#0", "Schools", 2005, "Smaller classes improved test scores of young pupils."),
]


def test_scores_support_markers_refusals_and_loops() -> None:
    scorer = AnswerScorer(SupportChecker(bag_of_words, threshold=0.8))
    right = scorer.score("Tariff cuts raised plant productivity in Chile [1].", PASSAGES, True,
                         reference="Tariff cuts raised plant productivity.", target_doc_ids=["doc-a"])
    assert (right.claims, right.supported_claims, right.markers, right.correct_markers) == (1, 1, 1, 1)
    # LCS 5 words: precision 5/7 (the answer has 7), recall 5/5 -> F1 = 10/12.
    assert right.cites_target and not right.refused and right.rouge_l == pytest.approx(10 / 12)

    wrong = scorer.score("Smaller classes improved test scores of young pupils [1]. Prices fell sharply.",
                         PASSAGES, True, reference="Smaller classes help.", target_doc_ids=["doc-b"])
    assert (wrong.claims, wrong.supported_claims, wrong.markers, wrong.correct_markers) == (2, 1, 1, 0)
    assert wrong.cites_target is False

    refusal = scorer.score(NOT_COVERED_ANSWER, PASSAGES, False, target_doc_ids=["doc-c"])
    assert refusal.refused and refusal.claims == 0 and refusal.rouge_l is None

    summary = summarize([right, wrong, refusal])
    assert summary["supported_sentences"] == pytest.approx(2 / 3, abs=1e-4)
    assert summary["correct_markers"] == 0.5
    assert summary["refusal_when_absent"] == 1.0
    assert summary["false_refusal"] == 0.0
    assert summary["cites_target"] == 0.5
    assert summary["repetition_loops"] == 0.0
