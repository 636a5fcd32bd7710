"""The one-text forward (indexing/bert_forward.py) against sentence-transformers' own encoding of the same text."""

from __future__ import annotations

import numpy as np
import pytest

from indexing.bert_forward import LeanBertForward
from indexing.embedding import Embedder

TEXTS = [
    "What are the employment effects of minimum wage increases on teenagers?",
    "minimum wage",
    "",
    "Déjà vu: do café owners in Zürich raise prices after a 20% rent shock?",
    "Does foreign aid increase growth? " * 80,  # past the model's 256-token window: truncated the same way
]


@pytest.fixture(scope="module")
def float32_embedder() -> Embedder:
    return Embedder(device="cpu", precision="float32")


def test_the_lean_forward_is_used_for_one_text_in_float32(float32_embedder: Embedder) -> None:
    assert isinstance(float32_embedder._one_text, LeanBertForward)


@pytest.mark.parametrize("text", TEXTS)
def test_one_text_equals_sentence_transformers(float32_embedder: Embedder, text: str) -> None:
    alone = float32_embedder.encode([text])  # the lean forward
    batched = float32_embedder.encode([text, "an unrelated second text to make it a batch"])  # sentence-transformers
    assert alone.shape == (1, 384) and alone.dtype == np.float32
    assert np.linalg.norm(alone[0]) == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(alone[0], batched[0], atol=2e-6)


def test_token_ids_outside_the_window_are_refused(float32_embedder: Embedder) -> None:
    forward = float32_embedder._one_text
    assert forward is not None
    with pytest.raises(ValueError, match="token ids"):
        forward.encode([])
    with pytest.raises(ValueError, match="token ids"):
        forward.encode([101] * (forward.max_tokens + 1))
