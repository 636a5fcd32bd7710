from __future__ import annotations

from fastapi import APIRouter

from app import __version__
from app.api.deps import ServicesDep
from app.api.presenters import public_manifest, rerank_status
from app.schemas import InfoResponse

router = APIRouter(prefix="/v1", tags=["info"])
VERSION_DETAILS = ("packages", "timings_s")  # manifest fields shown only when the server needs a key


@router.get("/info", summary="Index manifest, models, device and reranker status")
def info(services: ServicesDep) -> InfoResponse:
    answerer = services.answerer
    reranker = services.search.rerank.reranker
    settings = services.settings.public()
    # The weight in use: the configured one, or the one stored with the model.
    settings["reranker"]["first_stage_weight"] = reranker.first_stage_weight if reranker is not None else None
    served = services.backend.info()
    index = public_manifest(served.manifest) | {"backend": served.kind}
    if served.stats is not None:  # what a year window can hold, and what a JEL filter leaves out
        index |= {"latest_year": served.stats.latest_year, "papers_without_jel_codes": served.stats.without_jel()}
    if services.settings.api_key is None:
        # Exact package versions and build timings help an attacker more than a user: only for key holders.
        for detail in VERSION_DETAILS:
            index.pop(detail, None)
    return InfoResponse(
        version=__version__,
        index=index,
        embedding_model=served.embedding_model,
        reranker=rerank_status(services.search.rerank, applied=services.search.rerank.available),
        generator={
            "model": answerer.model_name,
            "max_context": answerer.prompts.max_context,
            "weights": getattr(services.queue.generator, "weights", None),  # e.g. "q4_1 (avx2)" or "float32"
            "queue_capacity": services.queue.capacity,
            "queue_depth": services.queue.depth,
        },
        device=services.device,
        settings=settings,
    )
