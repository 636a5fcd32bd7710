import pytest
from fastapi.testclient import TestClient

from app.main import create_app


@pytest.fixture
def secured(make_services) -> TestClient:
    services = make_services(api_key="s3cret-key")
    return TestClient(create_app(services.settings, services))


def test_v1_needs_the_api_key(secured: TestClient) -> None:
    missing = secured.post("/v1/search", json={"query": "wages"})
    assert missing.status_code == 401 and "API key" in missing.json()["error"]["message"]
    wrong = secured.post("/v1/search", json={"query": "wages"}, headers={"X-API-Key": "s3cret-kex"})
    assert wrong.status_code == 401
    assert secured.get("/v1/info", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_bearer_or_header_key_is_accepted(secured: TestClient) -> None:
    assert secured.post("/v1/search", json={"query": "wages"}, headers={"X-API-Key": "s3cret-key"}).status_code == 200
    assert secured.get("/v1/info", headers={"Authorization": "Bearer s3cret-key"}).status_code == 200


def test_health_endpoints_stay_open(secured: TestClient) -> None:
    assert secured.get("/healthz").status_code == 200
    assert secured.get("/readyz").status_code == 200


def test_metrics_need_the_key_when_one_is_set_unless_opened(make_services, secured: TestClient,
                                                            client: TestClient) -> None:  # fmt: skip
    assert secured.get("/metrics").status_code == 401
    assert secured.get("/metrics", headers={"X-API-Key": "s3cret-key"}).status_code == 200
    assert client.get("/metrics").status_code == 200  # no key set: nothing to show it behind
    services = make_services(api_key="s3cret-key", metrics_need_key=False)
    assert TestClient(create_app(services.settings, services)).get("/metrics").status_code == 200


def test_version_details_of_info_only_behind_the_key(secured: TestClient, client: TestClient) -> None:
    detailed = secured.get("/v1/info", headers={"X-API-Key": "s3cret-key"}).json()["index"]
    assert "packages" in detailed and "timings_s" in detailed
    open_info = client.get("/v1/info").json()["index"]
    assert "packages" not in open_info and "timings_s" not in open_info and "counts" in open_info


def test_cors_is_off_unless_configured(make_services, client: TestClient) -> None:
    preflight = {"Origin": "https://example.org", "Access-Control-Request-Method": "POST"}
    assert "access-control-allow-origin" not in client.options("/v1/search", headers=preflight).headers
    services = make_services(cors_origins="https://example.org")
    allowed = TestClient(create_app(services.settings, services)).options("/v1/search", headers=preflight)
    assert allowed.headers["access-control-allow-origin"] == "https://example.org"
