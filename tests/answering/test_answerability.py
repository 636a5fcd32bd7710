"""The answerability decision: its features, its logistic model, and the three outcomes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from answering.answerability import (
    DEFAULT_MODEL_PATH,
    FEATURES,
    AnswerabilityModel,
    AnswerabilitySettings,
    LogisticModel,
    retrieval_signals,
)
from indexing.documents import Chunk, Document
from retrieval.types import RetrievedChunk


def hit(doc_id: str, position: int = 0, rerank: float | None = None, bm25_rank: int | None = None) -> RetrievedChunk:
    chunk = Chunk(f"{doc_id}#{position}", doc_id, position, "text", 0, 4, "Title")
    document = Document(doc_id, "", "Title", "text", "text", "2020", 2020)
    return RetrievedChunk(chunk, document, rerank_score=rerank, bm25_rank=bm25_rank)


def one_feature_model(feature: str, weight: float = 1.0) -> LogisticModel:
    return LogisticModel((feature,), (0.0,), (1.0,), (weight,), 0.0)


def test_signals_take_each_documents_best_chunk() -> None:
    pool = [hit("a", 0, rerank=7.0, bm25_rank=3), hit("a", 1, rerank=6.5), hit("b", 0, rerank=4.0)]
    signals = retrieval_signals("Does text help?", pool[:2], [0.61, 0.4], pool)
    assert signals["rerank_best"] == 7.0
    assert signals["rerank_margin"] == 3.0  # against document b, not against a's second chunk
    assert signals["dense_best"] == 0.61
    assert signals["bm25_agreement"] == pytest.approx(1 / math.log2(4))


def test_without_reranking_only_the_dense_signals_exist() -> None:
    pool = [hit("a"), hit("b", bm25_rank=1)]
    signals = retrieval_signals("Does text help?", pool, [0.2, 0.3], pool)
    assert set(signals) == {"dense_best", "bm25_agreement", "specifics_unmatched"}
    assert signals["bm25_agreement"] == 0.0


def test_a_specific_the_passages_never_name_is_a_signal() -> None:
    pool = [hit("a")]  # title "Title", text "text"
    assert retrieval_signals("Did Seattle's wage floor cut hours in 2015?", pool, [0.5], pool)[
        "specifics_unmatched"] == 1.0  # fmt: skip


def test_logistic_model_round_trips_through_json() -> None:
    model = LogisticModel(("dense_best", "bm25_agreement"), (0.5, 0.2), (0.1, 0.3), (2.0, 0.5), -0.25)
    assert LogisticModel.from_json(json.loads(json.dumps(model.to_json()))) == model
    z = -0.25 + 2.0 * (0.7 - 0.5) / 0.1 + 0.5 * (0.0 - 0.2) / 0.3
    assert model.probability({"dense_best": 0.7, "bm25_agreement": 0.0}) == pytest.approx(1 / (1 + math.exp(-z)))


def test_three_outcomes_by_probability() -> None:
    # P = sigmoid(rerank_best): 0.5 at score 0.
    model = AnswerabilityModel(one_feature_model("rerank_best"), one_feature_model("dense_best"), 0.3, 0.7)

    def assess(score: float):
        pool = [hit("a", rerank=score), hit("b", rerank=score - 1)]
        return model.assess("Does text help?", pool[:1], [0.5], pool)

    assert assess(3.0).coverage == "covered"
    partial = assess(0.0)
    assert partial.coverage == "partial" and partial.answers and not partial.covered
    declined = assess(-3.0)
    assert declined.coverage == "not_covered" and not declined.answers
    assert declined.probability == pytest.approx(1 / (1 + math.exp(3.0)))
    assert model.assess("Does text help?", [], [], []).coverage == "not_covered"


def test_unreranked_searches_use_the_dense_model() -> None:
    model = AnswerabilityModel(one_feature_model("rerank_best"), one_feature_model("dense_best", 10.0), 0.3, 0.7)
    assert model.assess("Does text help?", [hit("a")], [0.5], [hit("a")]).coverage == "covered"  # sigmoid(5)
    assert model.assess("Does text help?", [hit("a")], [-0.5], [hit("a")]).coverage == "not_covered"


def test_thresholds_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="decline_below"):
        AnswerabilityModel(one_feature_model("rerank_best"), one_feature_model("dense_best"), 0.8, 0.2)
    with pytest.raises(ValueError, match="must not be below"):
        AnswerabilitySettings(decline_below=0.8, answer_from=0.2)
    assert AnswerabilitySettings(model_path=" ").model_path is None


def test_an_unreadable_model_file_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "answerability.json"
    broken.write_text('{"reranked": {}}')
    with pytest.raises(ValueError, match="Cannot read the answerability model"):
        AnswerabilityModel.load(broken)


def test_the_shipped_model_loads_with_every_feature() -> None:
    model = AnswerabilityModel.load(DEFAULT_MODEL_PATH)
    assert model.reranked.features == FEATURES and set(model.dense_only.features) <= set(FEATURES)
    assert 0 < model.decline_below <= model.answer_from < 1
    # Stronger evidence raises the probability: two spreads above the training mean on the best
    # reranker and dense scores clears answer_from, two below falls under it.
    fitted = model.reranked
    centre = dict(zip(fitted.features, fitted.means, strict=True))
    spread = dict(zip(fitted.features, fitted.scales, strict=True))
    strong = centre | {name: centre[name] + 2 * spread[name] for name in ("rerank_best", "dense_best")}
    weak = centre | {name: centre[name] - 2 * spread[name] for name in ("rerank_best", "dense_best")}
    assert fitted.probability(strong) > model.answer_from > fitted.probability(weak)
    overrides = AnswerabilityModel.load(DEFAULT_MODEL_PATH, decline_below=0.1, answer_from=0.9)
    assert (overrides.decline_below, overrides.answer_from) == (0.1, 0.9)
