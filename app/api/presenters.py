"""Map between the API's schemas and the domain: requests to domain questions, domain results to responses."""

from __future__ import annotations

from pathlib import Path

from answering.answerer import Answer, Finding, GenerationOptions, Question
from answering.conversation import CitedPaper, Turn
from app.schemas import (
    AppliedFiltersOut,
    AskRequest,
    AskResult,
    CitationOut,
    DocumentOut,
    Filters,
    FindingOut,
    Passage,
    RerankStatus,
    SearchHit,
    SentenceOut,
    StageScores,
    Usage,
)
from corpus.documents import Document
from corpus.filters import SearchFilters
from retrieval.search import RerankState
from retrieval.types import RetrievedChunk


def search_filters(filters: Filters | None) -> SearchFilters | None:
    return SearchFilters(**filters.model_dump()) if filters else None


def question_of(request: AskRequest) -> Question:
    options = request.generation
    return Question(
        query=request.query,
        top_k=request.top_k,
        mode=request.mode,
        rerank=request.rerank,
        filters=search_filters(request.filters),
        coverage_check=request.coverage_check,
        generation=GenerationOptions(**options.model_dump()),
        history=tuple(Turn(turn.question, turn.answer, tuple(CitedPaper(doc_id, "", None) for doc_id in turn.doc_ids))
                      for turn in request.history),  # titles and years: the resolve stage looks them up
    )


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
        scores=stage_scores(hit),
    )


def stage_scores(hit: RetrievedChunk) -> StageScores:
    """Each retriever's score and rank under its own name (bm25_score, dense_rank, ...), then the later stages'."""
    retrievers = {f"{name}_score": score for name, score in hit.scores.items()}
    retrievers |= {f"{name}_rank": rank for name, rank in hit.ranks.items()}
    return StageScores(**retrievers, fused_score=hit.fused_score, fused_rank=hit.fused_rank,
                       rerank_score=hit.rerank_score, rerank_rank=hit.rerank_rank)  # fmt: skip


def passages_out(hits: list[RetrievedChunk]) -> list[Passage]:
    return [Passage(number=i, **search_hit(hit, i).model_dump()) for i, hit in enumerate(hits, start=1)]


def answer_result(answer: Answer) -> AskResult:
    """The part of the response known only after generation (also the final SSE event)."""
    report = answer.report
    citations = []
    for citation in report.citations:
        document = answer.hit_for(citation.passage).document
        citations.append(CitationOut(
            passage=citation.passage, doc_id=document.doc_id, doi=document.doi, title=document.title,
            answer_sentence=citation.answer_sentence, supporting_sentence=citation.supporting_sentence,
            similarity=citation.similarity,
        ))  # fmt: skip
    return AskResult(
        answer=answer.text,
        covered=answer.covered,
        coverage=answer.coverage,
        confidence=answer.confidence,
        finish_reason=answer.finish_reason,
        citations=citations,
        findings=[finding_out(finding) for finding in answer.findings],
        sentences=[
            SentenceOut(
                text=s.text, markers=s.markers, supported_by=s.supported_by, supported=s.supported,
                similarity=None if s.similarity is None else round(s.similarity, 4),
            )
            for s in report.sentences
        ],
        unsupported_sentences=report.unsupported,
        dropped_passages=answer.dropped_passages,
        notes=answer.notes,
        usage=Usage(**vars(answer.usage)),
        timings_ms=answer.timings_ms,
        **resolution(answer),
    )


def resolution(answer: Answer) -> dict:
    """resolved_query and applied_filters: how the question was read before retrieval."""
    resolved = answer.prepared.resolved
    if resolved is None:
        return {"resolved_query": answer.prepared.query, "applied_filters": AppliedFiltersOut()}
    applied = resolved.applied
    return {"resolved_query": resolved.query, "applied_filters": AppliedFiltersOut(
        year_min=applied.year_min, year_max=applied.year_max, jel_prefix=applied.jel_prefix,
        sources=dict(applied.sources), meaning=applied.meaning)}  # fmt: skip


def finding_out(finding: Finding) -> FindingOut:
    document = finding.hit.document
    return FindingOut(
        passage=finding.passage, doc_id=document.doc_id, doi=document.doi, title=document.title, year=document.year,
        text=finding.text, probability=None if finding.probability is None else round(finding.probability, 4),
        supported=finding.supported, supporting_sentence=finding.supporting_sentence, similarity=finding.similarity,
    )  # fmt: skip


def public_manifest(manifest: dict) -> dict:
    """The index manifest as /v1/info shows it: the corpus by file name, no path of the server's disk."""
    shown = {key: value for key, value in manifest.items() if key != "corpus"}
    corpus = manifest.get("corpus", {})
    shown["corpus"] = {"file": Path(corpus.get("path", "")).name, "sha256": corpus.get("sha256"),
                       "bytes": corpus.get("bytes")}  # fmt: skip
    return shown


def rerank_status(state: RerankState, applied: bool) -> RerankStatus:
    if applied:
        note = f"reranked by {state.reason}"
    elif state.available:
        note = "reranking was not requested"
    else:
        note = f"reranking is off: {state.reason}"
    reranker = state.reranker
    return RerankStatus(
        applied=applied, available=reranker is not None, model=reranker.name if reranker else None,
        precision=reranker.precision if reranker else None, note=note,
    )  # fmt: skip
