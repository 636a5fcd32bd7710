"""Turn pipeline objects into API schemas."""

from __future__ import annotations

from app.retrieval.types import RetrievedChunk
from app.schemas import DocumentOut, Passage, RerankStatus, SearchHit, StageScores
from app.services import RerankState
from indexing.documents import Document


def document_out(document: Document) -> DocumentOut:
    return DocumentOut(
        doc_id=document.doc_id, doi=document.doi, title=document.title, date=document.date, year=document.year,
        authors=list(document.authors), journal=document.journal, url=document.url,
        jel_codes=list(document.jel_codes),
    )


def search_hit(hit: RetrievedChunk, rank: int) -> SearchHit:
    chunk = hit.chunk
    return SearchHit(
        rank=rank, chunk_id=chunk.chunk_id, position=chunk.position, text=chunk.text,
        char_start=chunk.char_start, char_end=chunk.char_end, document=document_out(hit.document),
        scores=StageScores(**{name: getattr(hit, name) for name in StageScores.model_fields}),
    )


def passages_out(hits: list[RetrievedChunk]) -> list[Passage]:
    return [Passage(number=i, **search_hit(hit, i).model_dump()) for i, hit in enumerate(hits, start=1)]


def rerank_status(state: RerankState, applied: bool) -> RerankStatus:
    if applied:
        note = f"reranked by {state.reason}"
    elif state.available:
        note = "reranking was not requested"
    else:
        note = f"reranking is off: {state.reason}"
    return RerankStatus(
        applied=applied, available=state.available, model=state.reason if state.available else None, note=note
    )
