"""Passage focus: each passage keeps its sentences closest to the question, best first."""

import numpy as np
import pytest

from answering.focus import SentenceFocus
from answering.prompt import Passage

WORDS = ("wage", "bank", "trade", "tax")


def encode(texts):
    """One dimension per topic word: a sentence is close to a question that names its word."""
    vectors = np.array([[text.lower().count(word) for word in WORDS] for text in texts], dtype=np.float32) + 1e-3
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_the_closest_sentences_come_first_and_the_rest_go() -> None:
    passage = Passage(1, "d", "d#0", "T", 2000, "Banks lend. Trade grew. Wages rose after the wage law. Taxes fell.")
    (focused,) = SentenceFocus(encode, max_sentences=2).apply("What happened to wages?", [passage])
    assert focused.text.startswith("Wages rose after the wage law.")
    assert len(focused.text.split(". ")) == 2 and "Taxes fell" not in focused.text
    assert (focused.number, focused.doc_id, focused.title) == (1, "d", "T")


def test_a_short_passage_is_kept_whole() -> None:
    passage = Passage(2, "d", "d#0", "", None, "Trade grew.")
    assert SentenceFocus(encode, max_sentences=3).apply("trade?", [passage]) == [passage]
    with pytest.raises(ValueError, match="max_sentences"):
        SentenceFocus(encode, max_sentences=0)
