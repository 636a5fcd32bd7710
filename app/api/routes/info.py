from __future__ import annotations

from fastapi import APIRouter

from app import __version__
from app.api.deps import ServicesDep
from app.api.presenters import rerank_status
from app.schemas import InfoResponse

router = APIRouter(prefix="/v1", tags=["info"])


@router.get("/info", summary="Index manifest, models, device and reranker status")
def info(services: ServicesDep) -> InfoResponse:
    settings = services.settings
    generator = services.answerer
    reranker = services.search.rerank.reranker
    return InfoResponse(
        version=__version__,
        index=services.index.manifest,
        embedding_model=services.index.embedder.model_name,
        reranker=rerank_status(services.search.rerank, applied=services.search.rerank.available),
        generator={
            "model": generator.model_name,
            "max_context": generator.prompts.max_context,
            "queue_capacity": generator.queue.capacity,
            "queue_depth": generator.queue.depth,
        },
        device=services.device,
        settings={
            "retrieval_candidates": settings.retrieval_candidates,
            "rrf_k": settings.rrf_k,
            "bm25_weight": settings.bm25_weight,
            "dense_weight": settings.dense_weight,
            "rerank_top_m": settings.rerank_top_m,
            "rerank_first_stage_weight": reranker.first_stage_weight if reranker is not None else None,
            "coverage_check": settings.coverage_check,
            "coverage_min_dense": settings.coverage_min_dense,
            "coverage_min_rerank": settings.coverage_min_rerank,
            "answer_min_rerank": settings.answer_min_rerank,
            "support_threshold": settings.support_threshold,
            "api_key_required": settings.api_key is not None,
        },
    )
