from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import ServicesDep
from app.api.presenters import rerank_status, search_filters, search_hit
from app.schemas import BODY_RESPONSES, ErrorResponse, SearchRequest, SearchResponse

router = APIRouter(prefix="/v1", tags=["search"])


@router.post(
    "/search",
    summary="Hybrid search over the abstracts",
    responses={409: {"model": ErrorResponse, "description": "rerank: true but no reranker is loaded"},
               429: {"model": ErrorResponse, "description": "Every search worker and place in line is taken; see "
                                                            "Retry-After"},
               **BODY_RESPONSES},
)  # fmt: skip
async def search(body: SearchRequest, services: ServicesDep) -> SearchResponse:
    # On the service's search workers (app/search_admission.py): a few at once, 429 beyond; never behind generation.
    filters = search_filters(body.filters)
    outcome = await services.searches.run(
        lambda: services.search.run(body.query, body.top_k, body.mode, filters, body.rerank)
    )
    services.metrics.observe_stages(outcome.timings_ms)
    return SearchResponse(
        query=body.query,
        mode=body.mode,
        rerank=rerank_status(services.search.rerank, outcome.reranked),
        results=[search_hit(hit, rank) for rank, hit in enumerate(outcome.hits, start=1)],
        timings_ms=outcome.timings_ms,
    )
