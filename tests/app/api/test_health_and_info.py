from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app


def test_healthz_and_readyz_when_loaded(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["chunks"] >= 8


def test_readyz_is_503_with_a_reason_until_services_load(tmp_path) -> None:
    # Without entering the lifespan nothing is loaded: the health check answers, readiness does not.
    bare = TestClient(create_app(Settings(index_dir=tmp_path / "missing"), services=None))
    assert bare.get("/healthz").status_code == 200
    response = bare.get("/readyz")
    assert response.status_code == 503 and response.json()["reason"]
    search = bare.post("/v1/search", json={"query": "wages"})
    assert search.status_code == 503 and search.json()["error"]["code"] == "not_ready"


def test_every_response_carries_a_request_id(client: TestClient) -> None:
    generated = client.get("/healthz").headers["x-request-id"]
    assert len(generated) == 32
    assert client.get("/healthz", headers={"X-Request-ID": "abc-123"}).headers["x-request-id"] == "abc-123"
    # An id with odd characters is not echoed into headers and logs.
    assert client.get("/healthz", headers={"X-Request-ID": "a b\x7f"}).headers["x-request-id"] != "a b\x7f"
    error = client.post("/v1/search", json={}, headers={"X-Request-ID": "req-9"})
    assert error.headers["x-request-id"] == "req-9" and error.json()["error"]["request_id"] == "req-9"


def test_info_reports_manifest_models_and_reranker_status(client: TestClient) -> None:
    info = client.get("/v1/info").json()
    assert info["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert info["index"]["counts"]["documents"] == 8 if "counts" in info["index"] else info["index"]
    assert info["reranker"]["available"] is False and "off" in info["reranker"]["note"]
    assert info["generator"]["model"] == "tiny-random"
    assert info["device"] == "cpu"


def test_metrics_count_requests_by_route_and_status(client: TestClient) -> None:
    client.post("/v1/search", json={"query": "minimum wage"})
    client.post("/v1/search", json={"query": ""})
    text = client.get("/metrics").text
    assert 'aer_rag_requests_total{method="POST",route="/v1/search",status="200"} 1.0' in text
    assert 'aer_rag_requests_total{method="POST",route="/v1/search",status="422"} 1.0' in text
    assert 'aer_rag_stage_seconds_count{stage="retrieve"}' in text
    assert "aer_rag_generation_queue_depth 0.0" in text


def test_unknown_route_is_a_json_404(client: TestClient) -> None:
    response = client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert "/docs" in response.json()["error"]["message"]


def test_swagger_ui_and_openapi_schema_with_examples(client: TestClient) -> None:
    assert "swagger-ui" in client.get("/docs").text
    schema = client.get("/openapi.json").json()
    assert {"/v1/search", "/v1/ask", "/v1/info", "/v1/documents/{doc_id}", "/healthz", "/readyz"} <= set(
        schema["paths"]
    )
    ask = schema["components"]["schemas"]["AskRequest"]
    assert ask["examples"] and ask["additionalProperties"] is False
    assert ask["properties"]["query"]["maxLength"] == 1000
