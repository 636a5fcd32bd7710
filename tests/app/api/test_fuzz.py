"""The OpenAPI spec fuzzed by schemathesis (bounded examples, valid and invalid data), every operation of it, the
OpenAI-compatible ones included: no request makes a server error (5xx), and every response matches what the spec
declares (status code, content type, body schema)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance

from app.main import create_app

KEY = "fuzz-key"
# Every operation the API serves (the spec may grow: a new one is fuzzed too, these must stay).
OPERATIONS = {
    ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics"), ("POST", "/v1/search"), ("POST", "/v1/ask"),
    ("GET", "/v1/documents/{doc_id}"), ("GET", "/v1/info"), ("GET", "/v1/models"), ("POST", "/v1/chat/completions"),
}  # fmt: skip


@pytest.fixture(params=["open", "with-key"])
def api_schema(request, make_services):
    """The spec of an open server and of one that needs an API key (schemathesis then also checks that a request
    without the key, or with a wrong one, is refused). A real reranker, so that "rerank": true is served;
    short answers keep generating requests quick."""
    key = KEY if request.param == "with-key" else None
    services = make_services(reranker=True, answering={"max_new_tokens": 8}, api_key=key)
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(services.settings, services))
    return schema, ({"X-API-Key": KEY} if key else {})


def valid_data_is_accepted(ctx, response, case) -> None:
    """schemathesis's positive_data_acceptance, less the one rule a JSON schema cannot state: filters whose
    year_min is after year_max are refused (422) with a message naming both."""
    body = case.body if isinstance(case.body, dict) else {}
    years = (body.get("filters") or {}) if isinstance(body.get("filters"), dict) else {}
    low, high = years.get("year_min"), years.get("year_max")
    if low is not None and high is not None and low > high:
        if response.status_code != 401:  # a request without the right key is refused before its body is read
            assert response.status_code == 422 and "year_min" in response.text and "year_max" in response.text
        return
    positive_data_acceptance(ctx, response, case)


def fuzz(operation, headers: dict[str, str], examples: int) -> None:
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        try:
            fuzz_mode(operation, mode, headers, examples)
        except Unsatisfiable:
            # Some operations admit no invalid request at all (no body, and no parameter or only a free string).
            assert mode is GenerationMode.NEGATIVE and not operation.body


def fuzz_mode(operation, mode: GenerationMode, headers: dict[str, str], examples: int) -> None:
    checks = {"excluded_checks": [positive_data_acceptance]}
    if mode is GenerationMode.POSITIVE:
        checks["additional_checks"] = [valid_data_is_accepted]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None,
              derandomize=True)  # the same cases each run: CI fails on the service, not on a draw
    def check(case) -> None:
        response = case.call_and_validate(headers=headers, **checks)
        assert response.status_code < 500, (case.method, case.path, response.status_code, response.text[:300])

    check()


def operations(schema, ask: bool) -> list:
    found = [result.ok() for result in schema.get_all_operations()]
    return [op for op in found if (op.path == "/v1/ask") == ask]


def test_every_operation_of_the_spec_is_fuzzed(api_schema) -> None:
    schema, _ = api_schema
    found = {(op.method.upper(), op.path) for op in operations(schema, ask=False) + operations(schema, ask=True)}
    assert found >= OPERATIONS, OPERATIONS - found


def test_every_endpoint_but_ask_survives_fuzzing(api_schema) -> None:
    schema, headers = api_schema
    fuzzed = operations(schema, ask=False)
    for operation in fuzzed:
        fuzz(operation, headers, examples=20)


def test_ask_survives_a_few_fuzzed_cases(api_schema) -> None:
    schema, headers = api_schema
    (ask,) = operations(schema, ask=True)
    fuzz(ask, headers, examples=5)
