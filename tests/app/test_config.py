"""Settings read from the environment: an empty value switches a component or check off."""

import pytest

from app.config import DEFAULT_ADAPTER_DIR, Settings


@pytest.mark.parametrize("name", ["AER_RAG_RERANKER_DIR", "AER_RAG_GENERATOR_ADAPTER", "AER_RAG_GENERATOR_PATH",
                                  "AER_RAG_COVERAGE_MIN_RERANK", "AER_RAG_ANSWER_MIN_RERANK"])
def test_an_empty_value_means_none(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, " ")
    field = name.removeprefix("AER_RAG_").lower()
    assert getattr(Settings(), field) is None


def test_rerank_first_stage_weight_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AER_RAG_RERANK_FIRST_STAGE_WEIGHT", "-1")
    with pytest.raises(ValueError, match="rerank_first_stage_weight"):
        Settings()
    monkeypatch.setenv("AER_RAG_RERANK_FIRST_STAGE_WEIGHT", "0.5")
    assert Settings().rerank_first_stage_weight == 0.5


def test_reranker_answerability_thresholds_must_be_ordered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AER_RAG_COVERAGE_MIN_RERANK", "6")
    monkeypatch.setenv("AER_RAG_ANSWER_MIN_RERANK", "5")
    with pytest.raises(ValueError, match="must not be below"):
        Settings()
    monkeypatch.setenv("AER_RAG_ANSWER_MIN_RERANK", "8.5")
    assert (Settings().coverage_min_rerank, Settings().answer_min_rerank) == (6.0, 8.5)


def test_the_shipped_adapter_is_the_default_only_for_the_default_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().generator_adapter == DEFAULT_ADAPTER_DIR
    monkeypatch.setenv("AER_RAG_GENERATOR_PATH", "/models/other.gguf")
    assert Settings().generator_adapter is None  # the shipped adapter fits SmolLM2 only
    monkeypatch.setenv("AER_RAG_GENERATOR_ADAPTER", "/adapters/other")
    assert str(Settings().generator_adapter) == "/adapters/other"
