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
    assert {"retrieve", "answerability", "sentences", "prompt", "generate"} <= set(body["timings_ms"])
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


def test_a_followup_is_answered_in_the_context_of_the_history(client: TestClient, sse) -> None:
    first = client.post("/v1/ask", json={"query": COVERED}).json()
    turn = {"question": COVERED, "answer": first["answer"], "doc_ids": [f["doc_id"] for f in first["findings"]]}
    body = client.post("/v1/ask", json={"query": "What about fast food wages instead?", "history": [turn]}).json()
    assert body["query"] == "What about fast food wages instead?"
    resolved = body["resolved_query"]
    assert resolved.startswith("What about fast food wages instead? (") and "minimum" in resolved
    assert any(note.startswith("Read as a follow-up to:") for note in body["notes"])
    assert body["passages"][0]["document"]["doi"] == "10.1257/test.1"
    # Streamed: the done event carries the same fields.
    with client.stream("POST", "/v1/ask", json={"query": "What about fast food wages instead?", "history": [turn],
                                                "stream": True}) as response:  # fmt: skip
        done = sse(response.read().decode())[-1]
    assert done[0] == "done" and done[1]["resolved_query"] == body["resolved_query"]
    assert done[1]["applied_filters"] == {"year_min": None, "year_max": None, "jel_prefix": None, "sources": {},
                                          "meaning": None}  # fmt: skip


def test_a_standalone_question_is_its_own_resolved_query(client: TestClient) -> None:
    body = client.post("/v1/ask", json={"query": COVERED, "history": [{"question": "Do carbon taxes cut emissions?"}]})
    assert body.json()["resolved_query"] == COVERED and not any("follow-up" in n for n in body.json()["notes"])


def test_referred_papers_are_among_the_judged_passages(make_services) -> None:
    services = make_services(answering={"evidence_k": 1, "max_new_tokens": 8})
    with TestClient(create_app(services.settings, services)) as client:
        turn = {"question": "Do carbon taxes reduce emissions?", "doc_ids": ["10.1257/test.5", "10.1257/test.8"]}
        body = client.post("/v1/ask", json={"query": "Which of those is most recent?", "history": [turn]}).json()
    assert {"10.1257/test.5", "10.1257/test.8"} <= {p["document"]["doi"] for p in body["passages"]}


def test_a_window_in_the_words_filters_the_years_and_says_so(client: TestClient) -> None:
    body = client.post("/v1/ask", json={"query": "Since 2022, what do firms expect about inflation?"}).json()
    assert body["applied_filters"]["year_min"] == 2022 and body["applied_filters"]["sources"] == {
        "year_min": "question words"}
    assert body["applied_filters"]["meaning"] == "Since 2022: papers from 2022 or later."
    assert {p["document"]["year"] for p in body["passages"]} <= {2022, 2023, 2024}
    assert any(note.startswith("Read a time window in the question") for note in body["notes"])


def test_explicit_filters_win_over_the_words(client: TestClient) -> None:
    body = client.post("/v1/ask", json={"query": "Since 2022, what do firms expect about inflation?",
                                        "filters": {"year_min": 2000, "year_max": 2005}}).json()  # fmt: skip
    assert body["applied_filters"]["sources"] == {"year_min": "request", "year_max": "request"}
    assert {p["document"]["year"] for p in body["passages"]} <= set(range(2000, 2006))


def test_an_empty_window_is_declined_with_its_reason(client: TestClient) -> None:
    body = client.post("/v1/ask", json={"query": "What did papers after 2030 find about minimum wages?"}).json()
    assert body["coverage"] == "not_covered" and body["answer"] == NOT_COVERED_ANSWER and body["passages"] == []
    assert any("No paper in the index falls in the time window" in n and "after 2030" in n for n in body["notes"])


def test_a_jel_filter_says_what_it_leaves_out_and_info_counts_it(make_services) -> None:
    services = make_services()
    # One paper of the tiny index without JEL codes, so the filter's note has something to say.
    stats = services.backend.info().stats
    assert stats is not None and stats.without_jel() == 0
    with TestClient(create_app(services.settings, services)) as client:
        info = client.get("/v1/info").json()["index"]
        assert info["papers_without_jel_codes"] == 0 and info["latest_year"] == 2024
        body = client.post("/v1/ask", json={"query": COVERED, "filters": {"jel_prefix": "J"}}).json()
    assert body["applied_filters"]["jel_prefix"] == "J" and body["applied_filters"]["sources"] == {
        "jel_prefix": "request"}
    assert not any("JEL filter" in note for note in body["notes"])  # no paper lacks codes here


def test_history_is_bounded_and_invalid_filters_are_explained(client: TestClient) -> None:
    turn = {"question": "Do carbon taxes cut emissions?"}
    for history in ([turn] * 11, [{**turn, "answer": "x" * 8001}], [{**turn, "doc_ids": ["d"] * 11}],
                    [{**turn, "question": "q" * 1001}], [{**turn, "cited": []}]):  # fmt: skip
        assert client.post("/v1/ask", json={"query": COVERED, "history": history}).status_code == 422
    response = client.post("/v1/ask", json={"query": COVERED, "filters": {"year_min": 2020, "year_max": 2010}})
    assert response.status_code == 422 and "year_min (2020) is after year_max (2010)" in response.text
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert "year_min (2020) is after year_max (2010)" in schema["Filters"]["description"]
    assert schema["AskRequest"]["properties"]["history"]["maxItems"] == 10
