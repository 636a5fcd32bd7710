"""Queries of any length and script the API accepts are scored by every cross-encoder, never a tokenizer error:
a query is cut to half of the model's window (the passage keeps the rest)."""

from __future__ import annotations

import math

import pytest

from retrieval.judge import DEFAULT_JUDGE_DIR
from retrieval.reranker import DEFAULT_RERANKER_DIR, CrossEncoderReranker, truncated

SCRIPTS = {"latin": "minimum wage? ", "sentence ends": "a.", "cjk": "最低工资", "emoji": "📈", "arabic": "الأجر ",
           "mixed": "wage 工资 ☃ "}  # fmt: skip
LENGTHS = [1, 60, 191, 192, 193, 400, 1000]  # characters; the API accepts up to 1,000


@pytest.fixture(scope="module", params=[DEFAULT_RERANKER_DIR, DEFAULT_JUDGE_DIR], ids=["reranker", "judge"])
def cross_encoder(request: pytest.FixtureRequest) -> CrossEncoderReranker:
    return CrossEncoderReranker(request.param, max_length=192 if request.param == DEFAULT_RERANKER_DIR else 256)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_length_and_script_is_scored(cross_encoder: CrossEncoderReranker, script: str) -> None:
    for length in LENGTHS:
        query = (SCRIPTS[script] * length)[:length]
        scores = cross_encoder.score(query, ["Minimum wages raised teen earnings.", "word " * 400])
        assert len(scores) == 2 and all(math.isfinite(float(s)) for s in scores), (script, length)


def test_truncation_keeps_a_short_query_whole_and_cuts_a_long_one(cross_encoder: CrossEncoderReranker) -> None:
    tokenizer = cross_encoder.tokenizer
    assert truncated(tokenizer, "Do minimum wages cut jobs?", 96) == "Do minimum wages cut jobs?"
    cut = truncated(tokenizer, "minimum wage " * 200, 96)
    assert len(tokenizer(cut, add_special_tokens=False)["input_ids"]) <= 96 and cut.startswith("minimum wage")
