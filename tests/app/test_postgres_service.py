"""The service on PostgreSQL + pgvector, over real HTTP: the same searches as on the published directory, an
outage seen by clients as 503 with a clear error (readiness false), and recovery without a restart."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from app.config import Settings
from app.metrics import ServiceMetrics
from app.services import build_services
from indexing.index import PublishedIndex
from indexing.pipeline import IngestionPipeline, IngestionSettings
from indexing.postgres.backend import PostgresBackend
from indexing.postgres.embedded import EmbeddedPostgres
from indexing.postgres.target import PostgresTarget
from models import Generator
from retrieval.search import RerankState
from tests.conftest import serving, throwaway_postgres, write_corpus

QUERIES = ["minimum wage and teenage employment", "bank lending when rates rise", "import competition wages"]


@pytest.fixture(scope="module")
def own_server() -> Iterator[EmbeddedPostgres]:
    """A server of this module's own: the outage test stops and starts it."""
    with throwaway_postgres("aer-pg-service-") as server:
        yield server


@pytest.fixture(scope="module")
def postgres_served(own_server: EmbeddedPostgres, tiny_index: PublishedIndex, tmp_path_factory: pytest.TempPathFactory
                    ) -> str:  # fmt: skip
    """The test corpus (the one tiny_index was built from) ingested into PostgreSQL by the real job."""
    root = tmp_path_factory.mktemp("postgres-ingest")
    corpus = write_corpus(root / "corpus.csv")
    settings = IngestionSettings(corpus=corpus, out_dir=root / "unused", cache_dir=root / "cache", device="cpu")
    IngestionPipeline(settings, embedder=tiny_index.embedder, target=PostgresTarget(own_server.dsn)).run()
    return own_server.dsn


@pytest.fixture
def postgres_base(postgres_served: str, tiny_index: PublishedIndex, tiny_generator: Generator) -> Iterator[str]:
    settings = Settings(backend={"kind": "postgres", "dsn": postgres_served}, reranker={"model_dir": None},
                        answerability={"model_path": None})  # fmt: skip
    backend = PostgresBackend(postgres_served, pool_size=2, timeout=2.0)
    services = build_services(settings, ServiceMetrics(), backend, tiny_index.embedder,
                              RerankState(None, "no reranker configured"), tiny_generator, "cpu")  # fmt: skip
    try:
        with serving(services) as base:
            yield base
    finally:
        services.close()


def test_searches_equal_the_local_backends(postgres_base: str, live_server) -> None:
    local_base, _ = live_server(reranker=False)
    for query in QUERIES:
        for mode in ("hybrid", "bm25", "dense"):
            body = {"query": query, "top_k": 5, "mode": mode, "rerank": False}
            local = httpx.post(f"{local_base}/v1/search", json=body, timeout=30).json()["results"]
            served = httpx.post(f"{postgres_base}/v1/search", json=body, timeout=30).json()["results"]
            assert [hit["chunk_id"] for hit in served] == [hit["chunk_id"] for hit in local]
            for ours, theirs in zip(served, local, strict=True):
                for name, value in theirs["scores"].items():
                    assert ours["scores"][name] == pytest.approx(value, abs=1e-4), (query, mode, name)
    document = httpx.get(f"{postgres_base}/v1/documents/10.1257/test.1", timeout=30).json()
    assert document["chunk_ids"] == ["10.1257/test.1#0"] and document["year"] == 1999
    assert httpx.get(f"{postgres_base}/v1/info", timeout=30).json()["index"]["backend"] == "postgres"


def test_related_papers_and_citations_equal_the_local_backends(postgres_base: str, live_server) -> None:
    local_base, _ = live_server(reranker=False)
    for doc_id in ("10.1257/test.1", "10.1257/test.5"):
        path = f"/v1/documents/{doc_id}/related?k=4"
        local = httpx.get(local_base + path, timeout=30).json()["related"]
        served = httpx.get(postgres_base + path, timeout=30).json()["related"]
        assert len(served) == 4
        assert [item["document"]["doc_id"] for item in served] == [item["document"]["doc_id"] for item in local]
        for ours, theirs in zip(served, local, strict=True):
            assert ours["similarity"] == pytest.approx(theirs["similarity"], abs=1e-3)
    body = {"doc_ids": ["10.1257/test.2", "10.1257/test.7"], "format": "bibtex"}
    assert (httpx.post(f"{postgres_base}/v1/documents/export", json=body, timeout=30).text
            == httpx.post(f"{local_base}/v1/documents/export", json=body, timeout=30).text)  # fmt: skip


def test_an_outage_is_a_clear_503_and_the_service_recovers_without_restart(own_server: EmbeddedPostgres,
                                                                           postgres_base: str) -> None:  # fmt: skip
    body = {"query": QUERIES[0], "top_k": 3, "rerank": False}
    assert httpx.get(f"{postgres_base}/readyz", timeout=30).status_code == 200
    assert httpx.post(f"{postgres_base}/v1/search", json=body, timeout=30).status_code == 200

    own_server.stop()
    try:
        ready = httpx.get(f"{postgres_base}/readyz", timeout=30)
        assert ready.status_code == 503 and ready.json()["status"] == "not_ready"
        assert "unavailable" in ready.json()["reason"]
        for path, payload in (("/v1/search", body), ("/v1/ask", {"query": QUERIES[0]})):
            response = httpx.post(f"{postgres_base}{path}", json=payload, timeout=30)
            assert response.status_code == 503, response.text
            error = response.json()["error"]
            assert error["code"] == "index_unavailable" and "retry" in error["message"]
            assert "Traceback" not in response.text and "psycopg" not in response.text
            assert response.headers["Retry-After"]
        assert httpx.get(f"{postgres_base}/v1/documents/10.1257/test.1", timeout=30).status_code == 503
    finally:
        own_server.start()

    assert httpx.get(f"{postgres_base}/readyz", timeout=30).status_code == 200
    results = httpx.post(f"{postgres_base}/v1/search", json=body, timeout=30).json()["results"]
    assert results and results[0]["document"]["doi"]
