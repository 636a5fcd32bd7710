"""/v1/documents: one abstract (as JSON, BibTeX or RIS), its related papers, and a citation file of several."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query
from fastapi.responses import Response

from app.api.citation_formats import FORMATS, display_title
from app.api.deps import ServicesDep
from app.api.errors import APIError
from app.api.presenters import document_out
from app.document_schemas import ExportRequest, RelatedPaperOut, RelatedResponse
from app.schemas import BODY_RESPONSES, DocumentDetail, ErrorResponse
from corpus.documents import Document
from retrieval.related import related_papers

router = APIRouter(prefix="/v1", tags=["documents"])

_TEXT = {"schema": {"type": "string"}}
_CITATION_CONTENT = {
    "application/x-bibtex": {**_TEXT, "example": "@article{autor2013china,\n  author = {Autor, David H. and Dorn, "
                             "David},\n  title = {{The China Syndrome}},\n  journal = {American Economic Review},\n"
                             "  year = {2013}\n}\n"},
    "application/x-research-info-systems": {**_TEXT, "example": "TY  - JOUR\nAU  - Autor, David H.\nTI  - The China "
                                            "Syndrome\nJO  - American Economic Review\nPY  - 2013\nER  - \n"},
}  # fmt: skip
_NOT_FOUND = {404: {"model": ErrorResponse, "description": "No indexed document has that id"}}


def _negotiated(accept: str | None) -> str:
    """The format an Accept header prefers among ours (highest q, then the first named); json when it names none."""
    named = {"application/json": "json", **{media: name for name, (media, *_) in FORMATS.items()}}
    choices = []
    for rank, media_range in enumerate((accept or "").split(",")):
        media_type, *parameters = [part.strip().lower() for part in media_range.split(";")]
        q = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if media_type in named and q > 0:
            choices.append((q, -rank, named[media_type]))
    return max(choices)[2] if choices else "json"


def _document(services: ServicesDep, doc_id: str) -> tuple[Document, list[str]]:
    found = services.backend.document(doc_id)
    if found is None:
        raise APIError(404, "document_not_found", f"No indexed document has the id {doc_id!r}.")
    return found


@router.get(
    "/documents/{doc_id:path}/related",
    summary="The papers nearest to one paper, by their stored embeddings",
    responses=_NOT_FOUND,
)
def related(doc_id: str, services: ServicesDep,
            k: Annotated[int, Query(ge=1, le=20, description="How many papers.")] = 5) -> RelatedResponse:  # fmt: skip
    _, chunk_ids = _document(services, doc_id)
    papers = related_papers(services.backend, doc_id, chunk_ids, k)
    return RelatedResponse(doc_id=doc_id, k=k, related=[
        RelatedPaperOut(document=document_out(paper.document), display_title=display_title(paper.document),
                        similarity=round(paper.similarity, 4))
        for paper in papers])  # fmt: skip


@router.post(
    "/documents/export",
    summary="One citation file (BibTeX or RIS) of the papers given, e.g. those an answer cites",
    response_class=Response,
    responses={200: {"content": _CITATION_CONTENT, "description": "The file, as an attachment"},
               **_NOT_FOUND, **BODY_RESPONSES},
)  # fmt: skip
def export(body: ExportRequest, services: ServicesDep) -> Response:
    documents, missing = [], []
    for doc_id in dict.fromkeys(body.doc_ids):
        found = services.backend.document(doc_id)
        if found is None:
            missing.append(doc_id)
        else:
            documents.append(found[0])
    if missing:
        raise APIError(404, "document_not_found", f"No indexed document has the id(s) {', '.join(map(repr, missing))}.")
    media_type, extension, _, write_file = FORMATS[body.format]
    return Response(write_file(documents), media_type=f"{media_type}; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="aer-citations.{extension}"'})  # fmt: skip


@router.get(
    "/documents/{doc_id:path}",
    summary="One indexed abstract, by its id (usually the DOI, e.g. 10.1257/aer.20191823), as JSON, BibTeX or RIS",
    description="The format is `format` when given, else the Accept header's choice among `application/json`, "
    "`application/x-bibtex` and `application/x-research-info-systems` (JSON by default).",
    responses={200: {"content": _CITATION_CONTENT}, **_NOT_FOUND},
)
def get_document(
    doc_id: str,
    services: ServicesDep,
    response: Response,
    format: Annotated[Literal["json", "bibtex", "ris"] | None, Query(description="Overrides the Accept header.")
                      ] = None,
    accept: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> DocumentDetail:
    document, chunk_ids = _document(services, doc_id)
    chosen = format or _negotiated(accept)
    if chosen != "json":
        media_type, _, write, _ = FORMATS[chosen]
        return Response(write(document), media_type=f"{media_type}; charset=utf-8", headers={"Vary": "Accept"})
    response.headers["Vary"] = "Accept"
    return DocumentDetail(
        **document_out(document).model_dump(),
        abstract=document.abstract,
        abstract_original=document.abstract_original,
        chunk_ids=chunk_ids,
    )
