"""Admission for /v1/search (a bounded number in flight, 429 with Retry-After beyond it, or after waiting too long
for a worker), the per-client rate limit, and the cross-field rules the OpenAPI document states."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from fastapi.testclient import TestClient

from app.api.rate_limit import TokenBuckets
from app.limits import RateLimitSettings, SearchAdmissionSettings
from app.main import create_app
from app.metrics import ServiceMetrics
from app.search_admission import SearchAdmission, SearchBusyError

QUERY = {"query": "carbon tax", "top_k": 2}


def test_searches_beyond_workers_and_line_get_429_with_retry_after(make_services) -> None:
    services = make_services(search={"workers": 1, "queue_size": 1, "max_wait_s": 30, "retry_after_s": 2})
    release = threading.Event()
    original = services.search.run

    def blocked(*args, **kwargs):
        release.wait(timeout=30)
        return original(*args, **kwargs)

    services.search.run = blocked  # type: ignore[method-assign]
    client = TestClient(create_app(services.settings, services))
    results: list[int] = []
    workers = [threading.Thread(target=lambda: results.append(client.post("/v1/search", json=QUERY).status_code))
               for _ in range(2)]  # fmt: skip
    for thread in workers:
        thread.start()
    try:
        while services.searches.in_flight < 2:  # one running, one waiting: every place is taken
            threading.Event().wait(0.01)
        refused = client.post("/v1/search", json=QUERY)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "2"
        assert refused.json()["error"]["code"] == "busy"
    finally:
        release.set()
        for thread in workers:
            thread.join(timeout=30)
    assert results == [200, 200]
    assert services.searches.in_flight == 0
    assert client.post("/v1/search", json=QUERY).status_code == 200
    assert "aer_rag_search_rejected_total 1.0" in client.get("/metrics").text


def test_a_search_that_waited_too_long_for_a_worker_is_refused_not_run_late() -> None:
    admission = SearchAdmission(SearchAdmissionSettings(workers=1, queue_size=4, max_wait_s=0.05), ServiceMetrics())
    release, ran = threading.Event(), []

    async def scenario() -> None:
        first = asyncio.ensure_future(admission.run(lambda: release.wait(timeout=30)))
        second = asyncio.ensure_future(admission.run(lambda: ran.append(True)))
        await asyncio.sleep(0)  # both submitted: the second waits behind the first
        await asyncio.get_running_loop().run_in_executor(None, lambda: threading.Event().wait(0.2))
        release.set()
        assert await first is True
        with pytest.raises(SearchBusyError, match="waited"):
            await second

    try:
        asyncio.run(scenario())
    finally:
        admission.close()
    assert ran == [] and admission.in_flight == 0


def test_a_search_with_a_worker_free_runs_however_late_its_thread_starts() -> None:
    admission = SearchAdmission(SearchAdmissionSettings(workers=1, queue_size=4, max_wait_s=0.05), ServiceMetrics())
    started = threading.Event()
    admission._executor.submit(lambda: started.set() or time.sleep(0.3))  # the pool's thread busy with no search

    async def scenario() -> str:
        started.wait(timeout=30)
        return await admission.run(lambda: "ran")  # a worker is free by the count: it runs, 0.25 s late

    try:
        assert asyncio.run(scenario()) == "ran"
    finally:
        admission.close()
    assert admission.in_flight == 0


def test_token_buckets_allow_a_burst_then_the_rate() -> None:
    now = [0.0]
    buckets = TokenBuckets(RateLimitSettings(enabled=True, per_minute=60, burst=3, max_clients=2), clock=lambda: now[0])
    assert [buckets.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("a") == pytest.approx(1.0)  # one a second: the next in 1 s
    assert buckets.take("b") == 0.0  # another client has its own bucket
    now[0] = 1.0
    assert buckets.take("a") == 0.0
    buckets.take("c")  # a third client: the least recent ("b") is forgotten, memory stays bounded
    assert len(buckets._buckets) == 2 and "b" not in buckets._buckets


def test_rate_limit_is_per_client_by_key_or_address_and_off_by_default(make_services, client: TestClient) -> None:
    assert all(client.get("/v1/models").status_code == 200 for _ in range(40))  # off by default
    services = make_services(api_key="k", rate_limit={"enabled": True, "per_minute": 1, "burst": 2})
    limited = TestClient(create_app(services.settings, services))
    keyed = {"X-API-Key": "k"}
    assert [limited.get("/v1/models", headers=keyed).status_code for _ in range(3)] == [200, 200, 429]
    refused = limited.get("/v1/models", headers=keyed)
    assert int(refused.headers["retry-after"]) >= 1 and refused.json()["error"]["code"] == "rate_limited"
    # Without the key (or with a made-up one) the client is its address: a bucket of its own, not a fresh one each.
    assert [limited.get("/v1/models", headers={"X-API-Key": f"fake-{i}"}).status_code for i in range(3)] == [
        401, 401, 429]  # fmt: skip
    assert limited.get("/healthz").status_code == 200  # health and pages are not limited
    assert "aer_rag_rate_limited_total 3.0" in limited.get("/metrics", headers={"Authorization": "Bearer k"}).text


def test_the_spec_states_its_cross_field_rules(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert "year_min must not be after year_max" in schemas["Filters"]["description"]
    assert "role 'user'" in schemas["ChatCompletionRequest"]["properties"]["messages"]["description"]


def test_freed_memory_is_trimmed_once_searches_go_idle() -> None:
    admission = SearchAdmission(SearchAdmissionSettings(workers=1), ServiceMetrics(), trim_after_idle_s=0.05)

    async def burst() -> None:
        await asyncio.gather(*(admission.run(lambda: 1) for _ in range(3)))

    try:
        asyncio.run(burst())
        for _ in range(200):  # the timer's own thread runs it; bounded only so a broken timer cannot hang
            if admission.trims:
                break
            threading.Event().wait(0.05)
    finally:
        admission.close()
    assert admission.trims == 1  # one trim for the idle period, not one per search
