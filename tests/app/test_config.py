"""Settings read from the environment: an empty path switches a component off."""

import pytest

from app.config import Settings


@pytest.mark.parametrize("name", ["AER_RAG_RERANKER_DIR", "AER_RAG_GENERATOR_ADAPTER", "AER_RAG_GENERATOR_PATH"])
def test_an_empty_path_means_none(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, " ")
    field = name.removeprefix("AER_RAG_").lower()
    assert getattr(Settings(), field) is None


def test_rerank_first_stage_weight_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AER_RAG_RERANK_FIRST_STAGE_WEIGHT", "-1")
    with pytest.raises(ValueError, match="rerank_first_stage_weight"):
        Settings()
    monkeypatch.setenv("AER_RAG_RERANK_FIRST_STAGE_WEIGHT", "0.5")
    assert Settings().rerank_first_stage_weight == 0.5
