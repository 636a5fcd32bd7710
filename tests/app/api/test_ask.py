import pytest
from fastapi.testclient import TestClient

from answering.prompt import NOT_COVERED_ANSWER
from app.api.presenters import question_of
from app.main import create_app
from app.schemas import AskRequest

COVERED = "Did the minimum wage increase reduce teenage employment in fast food restaurants?"
OFF_TOPIC = "How long should sourdough bread bake, and at what oven temperature?"


def test_ask_answers_with_numbered_passages_findings_usage_and_timings(client: TestClient) -> None:
    response = client.post("/v1/ask", json={"query": COVERED, "top_k": 3})
    assert response.status_code == 200
    body = response.json()
    assert body["covered"] is True and body["model"] == "tiny-random"
    # The passages the decision judged (8, the whole tiny index), numbered; at most 3 papers answer.
    assert [p["number"] for p in body["passages"]] == list(range(1, 9))
    assert body["passages"][0]["document"]["doi"] == "10.1257/test.1"
    findings = body["findings"]
    assert 1 <= len(findings) <= 3 and len({f["doi"] for f in findings}) == len(findings)
    for finding in findings:
        passage = body["passages"][finding["passage"] - 1]
        assert finding["doi"] == passage["document"]["doi"] and 0 <= finding["probability"] <= 1
    assert 0 < body["usage"]["generated_tokens"] <= 16 * len(findings) and body["usage"]["prompt_tokens"] > 100
    assert body["finish_reason"] in {"stop", "length"}
    assert {"retrieve", "answerability", "focus", "prompt", "generate"} <= set(body["timings_ms"])
    assert isinstance(body["answer"], str)
    # Every answer sentence is checked; unsupported ones are listed.
    assert body["unsupported_sentences"] == [i for i, s in enumerate(body["sentences"]) if not s["supported"]]


def test_uncovered_question_gets_a_plain_statement_and_the_closest_passages(client: TestClient) -> None:
    body = client.post("/v1/ask", json={"query": OFF_TOPIC}).json()
    assert body["covered"] is False and body["answer"] == NOT_COVERED_ANSWER
    assert body["finish_reason"] == "not_covered" and body["usage"]["generated_tokens"] == 0
    assert body["passages"] and any("do not appear to cover" in note for note in body["notes"])


def test_coverage_check_can_be_turned_off_per_request(client: TestClient) -> None:
    body = client.post("/v1/ask", json={"query": OFF_TOPIC, "coverage_check": False}).json()
    assert body["covered"] is True and body["usage"]["generated_tokens"] > 0


def test_generation_options_are_bounded(client: TestClient) -> None:
    for generation in ({"max_new_tokens": 1025}, {"temperature": 2.5}, {"top_p": 0}, {"seed": -1}, {"beams": 2}):
        response = client.post("/v1/ask", json={"query": COVERED, "generation": generation})
        assert response.status_code == 422, generation


def test_same_seed_same_answer_when_sampling(client: TestClient) -> None:
    body = {"query": COVERED, "generation": {"temperature": 1.0, "top_p": 0.9, "seed": 7, "max_new_tokens": 12}}
    first, second = (client.post("/v1/ask", json=body).json()["answer"] for _ in range(2))
    assert first == second


def test_streamed_answer_is_passages_then_deltas_then_citations(client: TestClient, sse) -> None:
    with client.stream("POST", "/v1/ask", json={"query": COVERED, "stream": True, "top_k": 2}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse(response.read().decode())
    names = [name for name, _ in events]
    assert names[0] == "passages" and names[-1] == "done" and "delta" in names
    assert set(names[1:-1]) == {"delta"}
    passages, done = events[0][1], events[-1][1]
    assert [p["number"] for p in passages["passages"]] == list(range(1, 9))
    deltas = [data["text"] for name, data in events if name == "delta"]
    assert deltas[0] == "Two papers in the indexed abstracts address this."  # the opening comes first, at once
    assert done["answer"] == " ".join("".join(deltas).split())
    assert done["usage"]["generated_tokens"] > 0 and "generate" in done["timings_ms"]
    assert {"citations", "sentences", "unsupported_sentences", "findings"} <= set(done)
    numbers = [f["passage"] for f in done["findings"]]
    assert len(numbers) == 2 and numbers == sorted(numbers)  # the answering passages, in rank order


def test_streamed_uncovered_question_has_no_deltas(client: TestClient, sse) -> None:
    events = sse(client.post("/v1/ask", json={"query": OFF_TOPIC, "stream": True}).text)
    assert [name for name, _ in events] == ["passages", "done"]
    assert events[-1][1]["answer"] == NOT_COVERED_ANSWER


@pytest.mark.parametrize("stream", [False, True])
def test_full_queue_is_a_429_with_retry_after(make_services, stream: bool) -> None:
    services = make_services(generation={"slots": 1, "queue_size": 0, "retry_after_s": 7})
    client = TestClient(create_app(services.settings, services))
    services.queue.reserve()  # another answer holds the only slot
    response = client.post("/v1/ask", json={"query": COVERED, "stream": stream})
    assert response.status_code == 429
    assert response.headers["retry-after"] == "7" and response.json()["error"]["code"] == "busy"
    # Searching is not queued behind generation.
    assert client.post("/v1/search", json={"query": "wages"}).status_code == 200
    # Admission comes before retrieval: no search is spent on a request that cannot be answered now.
    assert client.post("/v1/ask", json={"query": OFF_TOPIC}).status_code == 429
    metrics = client.get("/metrics").text
    assert "aer_rag_generation_rejected_total 2.0" in metrics
    assert 'aer_rag_stage_seconds_count{stage="answerability"}' not in metrics
    # A declined question gives its slot back at once.
    services.queue.cancel_reservation()
    assert client.post("/v1/ask", json={"query": OFF_TOPIC}).json()["coverage"] == "not_covered"
    assert services.queue.depth == 0


def test_rerank_on_and_off_in_answers(make_services) -> None:
    services = make_services(reranker=True, answering={"max_new_tokens": 4})
    client = TestClient(create_app(services.settings, services))
    on = client.post("/v1/ask", json={"query": COVERED}).json()
    assert on["rerank"]["applied"] and on["passages"][0]["scores"]["rerank_rank"] == 1
    off = client.post("/v1/ask", json={"query": COVERED, "rerank": False}).json()
    assert not off["rerank"]["applied"] and "Reranking was off for this answer." in off["notes"]


def test_answering_passages_that_do_not_fit_the_context_are_left_out(make_services) -> None:
    services = make_services(answering={"max_new_tokens": 8}, answerability={"decline_below": 0.0, "answer_from": 0.0})
    client = TestClient(create_app(services.settings, services))
    request = {"query": COVERED, "top_k": 5}
    full = client.post("/v1/ask", json=request).json()
    assert full["dropped_passages"] == 0 and len(full["findings"]) == 5
    # Shrink the context between the shortest and the longest finding prompt: the longer ones must go.
    prepared = services.answerer.prepare(question_of(AskRequest.model_validate(request)))
    sizes = [f.prompt.prompt_tokens for f in prepared.findings]
    assert min(sizes) < max(sizes)
    services.answerer.prompts.max_context = min(sizes) + 8
    body = client.post("/v1/ask", json=request).json()
    assert body["dropped_passages"] == sum(size > min(sizes) for size in sizes)
    assert len(body["findings"]) == 5 - body["dropped_passages"]
    assert any("left out of the prompts" in note for note in body["notes"])


@pytest.mark.parametrize("generation", [
    {"temperature": 0.5, "top_p": 1e-50}, {"temperature": 1e-40}, {"temperature": 2.0, "top_k": 1000},
])  # fmt: skip
def test_extreme_sampling_values_still_answer(client: TestClient, sse, generation: dict) -> None:
    request = {"query": COVERED, "generation": {"max_new_tokens": 6, "seed": 1, **generation}}
    assert client.post("/v1/ask", json=request).status_code == 200
    events = sse(client.post("/v1/ask", json={**request, "stream": True}).text)
    assert events[-1][0] == "done"
