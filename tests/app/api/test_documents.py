"""/v1/documents: one abstract as JSON, BibTeX or RIS; its related papers; a citation file of several."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.api.citation_formats import bibtex, citation_key, display_title, people, ris
from corpus.documents import Document

BIBTEX = "application/x-bibtex"
RIS = "application/x-research-info-systems"


def test_json_stays_the_default(client: TestClient) -> None:
    response = client.get("/v1/documents/10.1257/test.3")
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    assert response.json()["title"] == "Trade Shocks and Local Labor Markets"
    assert client.get("/v1/documents/10.1257/test.3", headers={"Accept": "text/html, */*"}).json()["doi"]


@pytest.mark.parametrize(("how", "media"), [({"headers": {"Accept": BIBTEX}}, BIBTEX),
                                            ({"params": {"format": "bibtex"}}, BIBTEX),
                                            ({"headers": {"Accept": f"application/json;q=0.5, {RIS}"}}, RIS),
                                            ({"params": {"format": "ris"}, "headers": {"Accept": BIBTEX}}, RIS)])
def test_content_negotiation(client: TestClient, how: dict, media: str) -> None:
    response = client.get("/v1/documents/10.1257/test.3", **how)
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == media
    if media == BIBTEX:
        assert response.text.startswith("@article{doe2012trade,\n")
        assert "  author = {Doe, Jane and Roe, Richard},\n" in response.text
        assert "  title = {{Trade Shocks and Local Labor Markets}},\n" in response.text
        assert "  journal = {American Economic Review},\n" in response.text
        assert "  year = {2012},\n  month = may,\n  doi = {10.1257/test.3},\n" in response.text
        assert "  url = {https://doi.org/10.1257/test.3}" in response.text
        assert response.text.count("{") == response.text.count("}")
    else:
        lines = response.text.splitlines()
        assert lines[0] == "TY  - JOUR" and lines[-1] == "ER  - "
        assert {"AU  - Doe, Jane", "AU  - Roe, Richard", "TI  - Trade Shocks and Local Labor Markets",
                "JO  - American Economic Review", "PY  - 2012", "DA  - 2012/05//", "DO  - 10.1257/test.3",
                "UR  - https://doi.org/10.1257/test.3"} <= set(lines)  # fmt: skip


def test_bad_format_and_unknown_document(client: TestClient) -> None:
    assert client.get("/v1/documents/10.1257/test.3", params={"format": "pdf"}).status_code == 422
    missing = client.get("/v1/documents/10.1257/none", params={"format": "bibtex"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "document_not_found"


def paper(**fields: object) -> Document:
    base = {"doc_id": "10.1257/aer.103.6.2121", "doi": "10.1257/aer.103.6.2121",
            "title": "The China Syndrome: Local Labor Market Effects of Import Competition in the United States",
            "abstract": "We analyze the effect of rising Chinese import competition.", "abstract_original": "",
            "date": "2013-10", "year": 2013, "authors": ["Autor, David H.", "Dorn, David", "Hanson, Gordon H."],
            "journal": "American Economic Review", "url": "", "jel_codes": ["F14", "J23"]}  # fmt: skip
    return Document(**{**base, **fields})  # type: ignore[arg-type]


def test_citation_key_authors_and_escaping() -> None:
    assert citation_key(paper()) == "autor2013china"
    entry = bibtex(paper(title="R&D_50% {costs} #1 $ ~ ^ \\"))
    assert r"R\&D\_50\% \{costs\} \#1 \$ \textasciitilde{} \textasciicircum{} \textbackslash{}" in entry
    assert "author = {Autor, David H. and Dorn, David and Hanson, Gordon H.}" in entry
    # The corpus's two author forms, and names run together where the source did not separate them.
    assert [p.inverted for p in people(["Hunt Allcott", "Ludwig van Beethoven"])] == ["Allcott, Hunt",
                                                                                      "van Beethoven, Ludwig"]
    assert [p.inverted for p in people(["Faccio, Mara Lang, Larry H. P. Young, Leslie"])] == [
        "Faccio, Mara", "Lang, Larry H. P.", "Young, Leslie"]
    # two records the source garbled: an initial moved to the end, a first author's comma and given name lost
    assert [p.inverted for p in people(["Bentley MacLeod W."])] == ["MacLeod, W. Bentley"]
    assert [p.inverted for p in people(["Goeree K. Offerman, Theo"])] == ["Goeree, K.", "Offerman, Theo"]
    assert [p.inverted for p in people(["Lang, Larry H. P. Young, Leslie"])] == ["Lang, Larry H. P.", "Young, Leslie"]
    assert citation_key(paper(authors=["Abdulkadiroğlu, Atila"], title="")) == "abdulkadiroglu2013analyze"


def test_a_paper_without_title_or_doi_is_cited_by_its_first_words() -> None:
    untitled = paper(title="", doi="", doc_id="sha1:0123456789abcdef", authors=[], jel_codes=[],
                     abstract="We study how storm warnings on the Great Lakes changed shipping losses and rates.")
    assert display_title(untitled) == "[We study how storm warnings on the Great …]"
    entry = bibtex(untitled)
    assert "Untitled" not in entry and "title = {{[We study how storm warnings on the Great …]}}" in entry
    assert "doi" not in entry and "url" not in entry and entry.startswith("@article{aer2013study,")
    assert "TI  - [We study how storm warnings on the Great …]" in ris(untitled).splitlines()


def test_related_papers_are_the_nearest_other_papers(client: TestClient) -> None:
    response = client.get("/v1/documents/10.1257/test.2/related", params={"k": 3})
    assert response.status_code == 200
    body = response.json()
    related = body["related"]
    assert body["doc_id"] == "10.1257/test.2" and len(related) == 3
    ids = [item["document"]["doc_id"] for item in related]
    assert "10.1257/test.2" not in ids and len(set(ids)) == 3
    similarities = [item["similarity"] for item in related]
    assert similarities == sorted(similarities, reverse=True)
    everything = client.get("/v1/documents/10.1257/test.2/related", params={"k": 20}).json()["related"]
    assert len(everything) == 7  # every other paper of the eight, once
    assert client.get("/v1/documents/10.1257/none/related").status_code == 404
    assert client.get("/v1/documents/10.1257/test.2/related", params={"k": 0}).status_code == 422


def test_related_uses_the_stored_vectors(make_services) -> None:
    services = make_services()
    backend = services.backend
    _, chunk_ids = backend.document("10.1257/test.1")
    vectors = backend.vectors(chunk_ids)
    assert set(vectors) == set(chunk_ids)
    for vector in vectors.values():
        assert abs(float((vector**2).sum()) - 1.0) < 1e-3


@pytest.mark.parametrize(("fmt", "media", "extension"), [("bibtex", BIBTEX, "bib"), ("ris", RIS, "ris")])
def test_export_one_file_of_the_cited_papers(client: TestClient, fmt: str, media: str, extension: str) -> None:
    ids = ["10.1257/test.3", "10.1257/test.1", "10.1257/test.3"]
    response = client.post("/v1/documents/export", json={"doc_ids": ids, "format": fmt})
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == media
    assert response.headers["content-disposition"] == f'attachment; filename="aer-citations.{extension}"'
    text = response.text
    if fmt == "bibtex":
        assert text.count("@article{") == 2 and text.index("doe2012trade") < text.index("doe1999minimum")
    else:
        assert text.count("TY  - JOUR") == 2 and text.count("ER  - ") == 2


def test_export_refuses_unknown_ids_and_bad_bodies(client: TestClient) -> None:
    missing = client.post("/v1/documents/export", json={"doc_ids": ["10.1257/test.1", "10.1257/none"]})
    assert missing.status_code == 404 and "10.1257/none" in missing.json()["error"]["message"]
    for body in ({"doc_ids": []}, {"doc_ids": ["10.1257/test.1"], "format": "pdf"}, {"ids": ["x"]}):
        assert client.post("/v1/documents/export", json=body).status_code == 422
