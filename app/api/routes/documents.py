from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import ServicesDep
from app.api.errors import APIError
from app.api.presenters import document_out
from app.schemas import DocumentDetail, ErrorResponse

router = APIRouter(prefix="/v1", tags=["documents"])


@router.get(
    "/documents/{doc_id:path}",
    summary="One indexed abstract, by its id (usually the DOI, e.g. 10.1257/aer.20191823)",
    responses={404: {"model": ErrorResponse}},
)
def get_document(doc_id: str, services: ServicesDep) -> DocumentDetail:
    found = services.backend.document(doc_id)
    if found is None:
        raise APIError(404, "document_not_found", f"No indexed document has the id {doc_id!r}.")
    document, chunk_ids = found
    return DocumentDetail(
        **document_out(document).model_dump(),
        abstract=document.abstract,
        abstract_original=document.abstract_original,
        chunk_ids=chunk_ids,
    )
