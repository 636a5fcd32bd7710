import pytest
from fastapi.testclient import TestClient

from app.main import create_app


def test_search_returns_chunks_with_metadata_scores_and_offsets(client: TestClient) -> None:
    response = client.post("/v1/search", json={"query": "minimum wage teen employment fast food", "top_k": 3})
    assert response.status_code == 200
    body = response.json()
    top = body["results"][0]
    assert top["document"]["doi"] == "10.1257/test.1"
    assert top["document"]["year"] == 1999 and top["document"]["jel_codes"] == ["J23", "J31"]
    assert [hit["rank"] for hit in body["results"]] == [1, 2, 3]
    assert top["scores"]["bm25_rank"] == 1 and top["scores"]["dense_rank"] == 1 and top["scores"]["fused_rank"] == 1
    assert body["rerank"]["applied"] is False and body["timings_ms"]["retrieve"] > 0
    # Offsets point into the document's cleaned abstract.
    document = client.get(f"/v1/documents/{top['document']['doc_id']}").json()
    assert document["abstract"][top["char_start"] : top["char_end"]] == top["text"]
    assert "(JEL" not in document["abstract"] and "(JEL" in document["abstract_original"]


@pytest.mark.parametrize("mode", ["bm25", "dense"])
def test_single_retriever_modes_fill_only_their_scores(client: TestClient, mode: str) -> None:
    hits = client.post("/v1/search", json={"query": "carbon tax emissions", "mode": mode}).json()["results"]
    assert hits[0]["document"]["doi"] == "10.1257/test.5"
    other = "dense" if mode == "bm25" else "bm25"
    assert all(hit["scores"][f"{mode}_rank"] is not None for hit in hits)
    assert all(hit["scores"][f"{other}_rank"] is None for hit in hits)


def test_year_filter_still_returns_top_k_when_enough_documents_match(client: TestClient) -> None:
    body = {"query": "minimum wage teen employment", "top_k": 4, "filters": {"year_min": 2012}}
    hits = client.post("/v1/search", json=body).json()["results"]
    assert len(hits) == 4  # five documents are from 2012 on: filtering happens before the cut
    assert all(hit["document"]["year"] >= 2012 for hit in hits)


def test_jel_prefix_filter(client: TestClient) -> None:
    hits = client.post("/v1/search", json={"query": "banks", "filters": {"jel_prefix": "g2"}}).json()["results"]
    assert {hit["document"]["doi"] for hit in hits} == {"10.1257/test.2", "10.1257/test.6"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "   "}, "query"),
        ({"query": "x" * 1001}, "query"),
        ({"query": "wages", "top_k": 0}, "top_k"),
        ({"query": "wages", "top_k": 51}, "top_k"),
        ({"query": "wages", "topk": 5}, "topk"),
        ({"query": "wages", "mode": "fuzzy"}, "mode"),
        ({"query": "wages", "filters": {"year_min": 2020, "year_max": 2010}}, "filters"),
        ({"query": "wages", "filters": {"jel_prefix": "JEL"}}, "filters.jel_prefix"),
        ({}, "query"),
    ],
)
def test_bad_input_gets_a_clear_422(client: TestClient, body: dict, field: str) -> None:
    response = client.post("/v1/search", json=body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert any(detail["field"].startswith(field) for detail in error["details"]), error
    assert field.split(".")[0] in error["message"]


def test_query_is_trimmed_before_the_length_check(client: TestClient) -> None:
    response = client.post("/v1/search", json={"query": "  " + "wage " * 199 + "  "})
    assert response.status_code == 200 and response.json()["query"] == ("wage " * 199).strip()


def test_malformed_json_is_a_400(client: TestClient) -> None:
    response = client.post("/v1/search", content=b'{"query": "wages",', headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "malformed_json"


def test_rerank_true_without_a_reranker_is_a_409(client: TestClient) -> None:
    response = client.post("/v1/search", json={"query": "wages", "rerank": True})
    assert response.status_code == 409
    assert "rerank" in response.json()["error"]["message"].lower()


def test_rerank_with_a_cross_encoder(make_services) -> None:
    services = make_services(reranker=True)
    client = TestClient(create_app(services.settings, services))
    body = client.post("/v1/search", json={"query": "job search information", "top_k": 5}).json()
    assert body["rerank"]["applied"] and body["rerank"]["available"]
    scores = [hit["scores"]["rerank_score"] for hit in body["results"]]
    assert scores == sorted(scores, reverse=True)
    assert [hit["scores"]["rerank_rank"] for hit in body["results"]] == [1, 2, 3, 4, 5]
    off = client.post("/v1/search", json={"query": "job search information", "rerank": False}).json()
    assert not off["rerank"]["applied"] and off["results"][0]["scores"]["rerank_score"] is None
    reranker = client.get("/v1/info").json()["reranker"]
    assert (reranker["model"], reranker["precision"]) == ("tiny-cross-encoder", "int8")


def test_unexpected_failure_is_a_json_500_without_internals(make_services, monkeypatch) -> None:
    services = make_services()

    def explode(*args, **kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(services.search.retriever, "retrieve", explode)
    client = TestClient(create_app(services.settings, services), raise_server_exceptions=False)
    response = client.post("/v1/search", json={"query": "wages"})
    assert response.status_code == 500
    assert "secret" not in response.text and "Traceback" not in response.text
    assert response.json()["error"]["request_id"] == response.headers["x-request-id"]


def test_documents_by_doi_and_unknown_id(client: TestClient) -> None:
    document = client.get("/v1/documents/10.1257/test.8").json()
    assert document["title"] == "School Vouchers and Student Achievement"
    assert document["chunk_ids"] and document["authors"] == ["Doe, Jane", "Roe, Richard"]
    missing = client.get("/v1/documents/10.1257/none")
    assert missing.status_code == 404 and "10.1257/none" in missing.json()["error"]["message"]
