"""Bodies and methods a careless or hostile client sends: nesting at every depth the parser takes or refuses,
wrong methods (405, not 415), HEAD wherever GET is served. None of them is a server error."""

from __future__ import annotations

import sys

import pytest
from fastapi.testclient import TestClient

from app.api.body_guard import json_depth_exceeds
from app.main import create_app

LIMIT = 32  # Settings.max_json_depth's default
# Around the limit, around the parser's own recursion limit, and far beyond it (within the 64 KiB body limit).
DEPTHS = [1, 2, LIMIT - 1, LIMIT, LIMIT + 1, 100, 500, sys.getrecursionlimit() - 50, sys.getrecursionlimit(),
          sys.getrecursionlimit() + 50, 5_000, 30_000]  # fmt: skip


def nested(kind: str, depth: int) -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    if kind == "object":
        return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)
    return '{"query":' * depth + '"x"' + "}" * depth  # the nesting inside a field the API reads


@pytest.fixture
def secured(make_services) -> TestClient:
    services = make_services(api_key="k")
    return TestClient(create_app(services.settings, services))


@pytest.mark.parametrize("kind", ["array", "object", "field"])
@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("path", ["/v1/search", "/v1/ask", "/v1/chat/completions"])
def test_nested_bodies_never_make_a_server_error(client: TestClient, secured: TestClient, kind: str, depth: int,
                                                 path: str) -> None:  # fmt: skip
    body = nested(kind, depth)
    for app, headers in ((client, {}), (secured, {}), (secured, {"X-API-Key": "k"})):
        response = app.post(path, content=body, headers={"Content-Type": "application/json", **headers})
        assert response.status_code < 500, (depth, response.text[:200])
        if len(body) > 64 * 1024:
            assert response.status_code == 413  # the size limit comes first
        elif depth > LIMIT:
            assert response.status_code == 400 and response.json()["error"]["code"] == "json_too_deep"
        else:
            assert response.status_code in (200, 400, 401, 422)  # served, a schema mismatch or no key


def test_depth_check_counts_containers_only() -> None:
    assert not json_depth_exceeds({"a": [1, {"b": "c"}]}, 3)
    assert json_depth_exceeds({"a": [1, {"b": []}]}, 3)
    assert not json_depth_exceeds("just a string", 1)


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/", "/v1/info", "/v1/models"])
def test_a_wrong_method_is_405_even_with_a_body_of_another_type(client: TestClient, path: str) -> None:
    for method in ("PUT", "PATCH", "DELETE"):
        response = client.request(method, path, content=b"x", headers={"Content-Type": "text/plain"})
        assert response.status_code == 405, (method, path)
        assert response.json()["error"]["code"] == "method_not_allowed"


def test_a_wrong_body_type_on_a_body_route_is_still_415(client: TestClient) -> None:
    response = client.post("/v1/search", content=b"x", headers={"Content-Type": "text/plain"})
    assert response.status_code == 415


@pytest.mark.parametrize("path", ["/", "/healthz", "/readyz", "/openapi.json", "/v1/info"])
def test_head_is_served_wherever_get_is(client: TestClient, path: str) -> None:
    get, head = client.get(path), client.head(path)
    assert head.status_code == get.status_code == 200
    assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]


def test_head_of_a_post_only_route_is_405_and_of_nothing_404(client: TestClient) -> None:
    assert client.head("/v1/search").status_code == 405
    assert client.head("/nowhere").status_code == 404


@pytest.mark.parametrize("path", ["/v1/search", "/v1/ask", "/v1/chat/completions"])
def test_a_huge_integer_or_a_lone_surrogate_is_a_400_before_the_key_check(secured: TestClient, path: str) -> None:
    huge = '{"query": "wages", "top_k": ' + "9" * 5000 + "}"
    surrogate = '{"query": "wages \\ud800", "messages": [{"role": "user", "content": "a \\udfff b"}]}'
    for body, code in ((huge, "number_too_long"), (surrogate, "invalid_unicode")):
        response = secured.post(path, content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 400 and response.json()["error"]["code"] == code, response.text[:200]
    # a surrogate pair written as escapes is one valid character, not refused for it
    pair = '{"query": "wages \\ud83d\\ude00"}'
    response = secured.post(path, content=pair, headers={"Content-Type": "application/json", "X-API-Key": "k"})
    assert response.status_code != 400 or response.json()["error"]["code"] != "invalid_unicode"


# Bodies no schema allows, or JSON that strict parsers refuse, each sent to every route that reads a body.
HOSTILE_BODIES = [
    "null", "[]", '"wages"', "12", "true", "{}", '{"query": NaN}', '{"query": Infinity}', '{"query": -Infinity}',
    '{"query": "a", "query": "b", "top_k": 1}', '{"query": "wages", "unknown": 1}', '{"query": "\\u0000\\u0007"}',
    '{"query": "wages", "top_k": -1}', '{"query": "wages", "top_k": 1e400}', '{"query": "wages", "top_k": 3.0}',
    '{"query": ' + '"' + "x" * 60_000 + '"}', '{"model": null, "messages": null}', '{"ids": [null, 1, {}]}',
    '{"model": "aer-rag", "messages": [{"role": "system", "content": "no user"}]}', '{"query": {"$gt": ""}}',
]  # fmt: skip


@pytest.mark.parametrize("body", HOSTILE_BODIES, ids=range(len(HOSTILE_BODIES)))
def test_hostile_bodies_on_every_body_route_are_refused_or_served_never_a_server_error(client: TestClient,
                                                                                      body: str) -> None:  # fmt: skip
    spec = client.app.openapi()  # type: ignore[attr-defined]
    routes = [path for path, methods in spec["paths"].items() if "post" in methods]
    assert {"/v1/search", "/v1/ask", "/v1/chat/completions"} <= set(routes)
    for path in routes:
        concrete = path.replace("{doc_id}", "10.1257%2Ftest.1")
        response = client.post(concrete, content=body, headers={"Content-Type": "application/json"})
        assert response.status_code < 500, (path, response.status_code, response.text[:200])
        if response.status_code >= 400:
            assert "error" in response.json(), (path, response.text[:200])  # every error is JSON of one shape
