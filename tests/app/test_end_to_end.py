"""Slow: the real index, the shipped reranker and SmolLM2-135M-Instruct, through the HTTP API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from answering.citations import is_refusal
from app.config import Settings
from app.main import create_app

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def real_client(real_index_dir: Path) -> Iterator[TestClient]:
    # Through the lifespan, exactly as `python -m app` loads things.
    with TestClient(create_app(Settings(index_dir=real_index_dir, device="cpu"))) as client:
        yield client


def test_search_finds_minimum_wage_papers(real_client: TestClient) -> None:
    body = real_client.post("/v1/search", json={"query": "minimum wage effects on employment", "top_k": 5}).json()
    titles = " ".join(hit["document"]["title"].lower() for hit in body["results"])
    assert "minimum wage" in titles
    assert body["timings_ms"]["retrieve"] < 5000


def test_real_answer_is_grounded_and_cited(real_client: TestClient, sse) -> None:
    request = {
        "query": "What happened to employment when firms faced a minimum wage in the online labor market?",
        "top_k": 3,
        "stream": True,
        "generation": {"max_new_tokens": 60},
    }
    with real_client.stream("POST", "/v1/ask", json=request) as response:
        events = sse(response.read().decode())
    passages, done = events[0][1], events[-1][1]
    assert events[-1][0] == "done", events[-1]
    assert any("minimum wage" in p["text"].lower() for p in passages["passages"])
    assert done["covered"] and done["coverage"] == "covered" and done["confidence"] > 0.5
    assert len(done["answer"].split()) >= 5
    assert done["usage"]["generated_tokens"] > 0
    # The default path (answerability decision, focused passages, LoRA adapter) answers this covered question
    # with cited, supported sentences rather than declining.
    assert not is_refusal(done["answer"]), done["answer"]
    assert done["citations"] and not done["unsupported_sentences"], done


def test_a_question_several_papers_answer_gets_a_cited_finding_from_each(real_client: TestClient) -> None:
    body = real_client.post("/v1/ask", json={"query": "Does raising the minimum wage reduce employment?"}).json()
    assert body["coverage"] == "covered", body["notes"]
    findings = body["findings"]
    assert len(findings) >= 2 and len({f["doi"] for f in findings}) == len(findings), findings
    numbers = [f["passage"] for f in findings]
    assert numbers == sorted(numbers)  # most relevant first, as the passages are ranked
    for finding in findings:
        assert f"[{finding['passage']}]" in finding["text"] and finding["text"] in body["answer"]
        assert 0.0 < finding["probability"] <= 1.0
    assert sum(f["supported"] for f in findings) >= len(findings) - 1, findings
    assert body["answer"].split(".")[0].endswith("papers in the indexed abstracts address this")


def test_off_topic_question_is_refused_without_generation(real_client: TestClient) -> None:
    body = real_client.post("/v1/ask", json={"query": "How long should sourdough bread bake?"}).json()
    assert body["covered"] is False and body["coverage"] == "not_covered" and body["usage"]["generated_tokens"] == 0


def test_info_describes_the_real_setup(real_client: TestClient) -> None:
    info = real_client.get("/v1/info").json()
    assert info["generator"]["model"].startswith("SmolLM2-135M-Instruct")
    assert info["generator"]["model"].endswith("+smollm2-grounded-lora")  # the shipped adapter, by default
    assert info["settings"]["answerability"]["check"] is True and info["settings"]["focus"]["enabled"] is True
    assert info["generator"]["max_context"] >= 2048
    # The CPU default with the shipped adapter merged: Q8_0 projections (4-bit ones would round the adapter away),
    # with the kernels this CPU runs (the test machines have a compiler).
    assert info["generator"]["weights"] in ("q8_0 (avx512vnni)", "q8_0 (avx2)", "q8_0 (scalar)")
