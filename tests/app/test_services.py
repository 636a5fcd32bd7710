import json
import logging
from pathlib import Path

import pytest

from app.config import Settings
from corpus.search_backend import BackendInfo, SearchBackend
from retrieval.query import check_encoder


def test_the_services_search_through_the_port_with_one_query_encoding(make_services) -> None:
    services = make_services()
    assert isinstance(services.backend, SearchBackend)
    outcome = services.search.run("minimum wage and teenage employment", 3)
    assert outcome.hits and outcome.query.encoded
    info = services.backend.info()
    assert info.kind == "local" and info.chunks >= len(outcome.hits) and info.embedding_dimension == 384


def test_a_postgres_backend_needs_a_dsn() -> None:
    with pytest.raises(ValueError, match="dsn"):
        Settings(backend={"kind": "postgres"})
    assert Settings(backend={"kind": "postgres", "dsn": "postgresql://127.0.0.1:5432/aer"}).backend.dsn is not None
    assert "dsn" not in Settings(backend={"kind": "postgres", "dsn": "postgresql://x@h/db"}).public()["backend"]


def test_queries_must_be_encoded_by_the_weights_the_index_was_built_with() -> None:
    info = BackendInfo("postgres", 10, 5, "all-MiniLM-L6-v2", "a" * 64, 384)
    check_encoder(info, "all-MiniLM-L6-v2", "a" * 64)
    with pytest.raises(ValueError, match="Rebuild the index"):
        check_encoder(info, "all-MiniLM-L6-v2", "b" * 64)


def test_a_judge_other_than_the_one_the_gate_was_calibrated_for_is_warned_about(
    make_services, dense_answerability: Path, tiny_reranker_dir: Path, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    gated = json.loads(dense_answerability.read_text())
    gated["thresholds"]["judge"] = {"judge_from": 0.5, "also_from": 0.5, "judge": "another-judge"}
    model_path = tmp_path / "answerability.json"
    model_path.write_text(json.dumps(gated))
    judge = {"model_dirs": str(tiny_reranker_dir), "precision": "float32"}
    with caplog.at_level(logging.WARNING, logger="app.services"):
        services = make_services(answerability={"model_path": model_path}, judge=judge)
    assert services.answerer.judge is not None
    assert "chosen for another-judge" in caplog.text
    caplog.clear()
    gated["thresholds"]["judge"]["judge"] = services.answerer.judge.name  # the judge it was calibrated for
    model_path.write_text(json.dumps(gated))
    with caplog.at_level(logging.WARNING, logger="app.services"):
        make_services(answerability={"model_path": model_path}, judge=judge)
    assert "chosen for" not in caplog.text
