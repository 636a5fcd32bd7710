"""The reranker shipped in models/weights/reranker loads offline and ranks sensibly."""

import json

import pytest
from safetensors import safe_open

from retrieval.reranker import DEFAULT_RERANKER_DIR, CrossEncoderReranker


@pytest.mark.slow
def test_shipped_reranker_is_stored_as_deltas_and_described() -> None:
    weights = DEFAULT_RERANKER_DIR / "model.int4-delta.safetensors"
    assert weights.stat().st_size < 8 * 1024 * 1024
    with safe_open(str(weights), framework="pt") as tensors:
        assert tensors.metadata()["format"] == "int4-delta-v1"
    assert not (DEFAULT_RERANKER_DIR / "model.safetensors").exists()
    assert (DEFAULT_RERANKER_DIR / "MODEL_CARD.md").is_file()
    assert json.loads((DEFAULT_RERANKER_DIR / "reranker.json").read_text())["name"]


@pytest.mark.slow
def test_shipped_reranker_prefers_the_relevant_passage() -> None:
    reranker = CrossEncoderReranker(DEFAULT_RERANKER_DIR)
    query = "Does raising the minimum wage reduce employment of teenagers?"
    relevant = (
        "Minimum wages and teen employment\nWe estimate the employment effects of state minimum wage increases "
        "on teenage workers and find small negative effects on hours and employment."
    )
    irrelevant = (
        "Sovereign default and bond spreads\nWe build a model of sovereign debt in which governments default "
        "when output is low, and match the volatility of emerging-market bond spreads."
    )
    scores = reranker.score(query, [irrelevant, relevant])
    assert scores[1] > scores[0]
