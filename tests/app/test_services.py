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
