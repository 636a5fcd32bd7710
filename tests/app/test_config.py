"""Settings read from the environment: components nest (AER_RAG_<COMPONENT>__<NAME>), an empty value switches a
component or check off, and names that mean nothing are reported."""

import pytest

from app.config import DEFAULT_ADAPTER_DIR, Settings, unknown_environment_variables


@pytest.mark.parametrize(("name", "component", "field"), [
    ("AER_RAG_RERANKER__MODEL_DIR", "reranker", "model_dir"),
    ("AER_RAG_GENERATOR__ADAPTER", "generator", "adapter"),
    ("AER_RAG_GENERATOR__PATH", "generator", "path"),
    ("AER_RAG_ANSWERABILITY__MODEL_PATH", "answerability", "model_path"),
])  # fmt: skip
def test_an_empty_value_means_none(monkeypatch: pytest.MonkeyPatch, name: str, component: str, field: str) -> None:
    monkeypatch.setenv(name, " ")
    assert getattr(getattr(Settings(), component), field) is None


def test_component_settings_are_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AER_RAG_RERANKER__FIRST_STAGE_WEIGHT", "-1")
    with pytest.raises(ValueError, match="first_stage_weight"):
        Settings()
    monkeypatch.setenv("AER_RAG_RERANKER__FIRST_STAGE_WEIGHT", "0.5")
    monkeypatch.setenv("AER_RAG_RETRIEVAL__CANDIDATES", "40")
    settings = Settings()
    assert (settings.reranker.first_stage_weight, settings.retrieval.candidates) == (0.5, 40)


def test_answerability_thresholds_must_be_ordered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AER_RAG_ANSWERABILITY__DECLINE_BELOW", "0.6")
    monkeypatch.setenv("AER_RAG_ANSWERABILITY__ANSWER_FROM", "0.5")
    with pytest.raises(ValueError, match="must not be below"):
        Settings()
    monkeypatch.setenv("AER_RAG_ANSWERABILITY__ANSWER_FROM", "0.85")
    answerability = Settings().answerability
    assert (answerability.decline_below, answerability.answer_from) == (0.6, 0.85)


def test_the_shipped_adapter_is_the_default_only_for_the_default_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().generator.adapter == DEFAULT_ADAPTER_DIR
    monkeypatch.setenv("AER_RAG_GENERATOR__PATH", "/models/other.gguf")
    assert Settings().generator.adapter is None  # the shipped adapter fits SmolLM2 only
    monkeypatch.setenv("AER_RAG_GENERATOR__ADAPTER", "/adapters/other")
    assert str(Settings().generator.adapter) == "/adapters/other"


def test_unknown_variables_are_reported() -> None:
    environ = {"AER_RAG_API_KEY": "k", "AER_RAG_RERANKER__TOP_M": "20", "AER_RAG_RERANKER_DIR": "/old/name",
               "AER_RAG_RERANKER__TOPM": "1", "HOME": "/root"}  # fmt: skip
    assert unknown_environment_variables(environ) == ["AER_RAG_RERANKER_DIR", "AER_RAG_RERANKER__TOPM"]


def test_public_settings_carry_no_secret_and_no_path() -> None:
    public = Settings(api_key="secret-key").public()
    assert public["api_key_required"] is True
    assert "secret-key" not in str(public) and "model_dir" not in public["reranker"]
    assert public["retrieval"]["rrf_k"] == 60


@pytest.mark.parametrize(("value", "expected"), [
    ("", []),
    ("  ", []),
    ("http://a.example", ["http://a.example"]),
    ("http://a.example, http://b.example", ["http://a.example", "http://b.example"]),
    ('["http://a.example", "http://b.example"]', ["http://a.example", "http://b.example"]),
])  # fmt: skip
def test_list_settings_parse_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str,
                                                  expected: list[str]) -> None:  # fmt: skip
    monkeypatch.setenv("AER_RAG_CORS_ORIGINS", value)
    assert Settings().cors_origins == expected


def test_a_broken_json_list_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AER_RAG_CORS_ORIGINS", '["http://a.example",')
    with pytest.raises(ValueError, match="not a valid JSON list"):
        Settings()
