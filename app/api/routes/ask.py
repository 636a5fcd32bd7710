from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from answering.answerer import GenerationOutcome, PreparedAnswer
from app.api.deps import ServicesDep
from app.api.presenters import answer_result, passages_out, question_of, rerank_status
from app.schemas import AskRequest, AskResponse, AskResult, ErrorResponse
from app.services import Services

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1", tags=["ask"])

SSE_DESCRIPTION = """With `stream: true` the answer comes as Server-Sent Events:
`passages` (the numbered passages), then `delta` events ({"text": …}) as tokens are decoded, then one
`done` event with citations, usage and timings (the same fields as the JSON answer). A failure mid-way
sends an `error` event. Closing the connection cancels generation."""


def sse_event(event: str, data: object) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


@router.post(
    "/ask",
    summary="Answer a question from the abstracts, with citations",
    description=SSE_DESCRIPTION,
    response_model=AskResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "JSON answer, or an SSE stream"},
        409: {"model": ErrorResponse, "description": "rerank: true but no reranker is loaded"},
        422: {"model": ErrorResponse},
        429: {"model": ErrorResponse, "description": "Generation queue full; see Retry-After"},
        504: {"model": ErrorResponse, "description": "Generation timed out"},
    },
)
async def ask(body: AskRequest, services: ServicesDep):
    answerer = services.answerer
    prepared = await run_in_threadpool(answerer.prepare, question_of(body))
    if prepared.prompt is not None:
        services.queue.reserve()  # 429 now, before any byte of a stream is sent
    if body.stream:
        return StreamingResponse(
            stream_answer(services, prepared),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    outcome = None
    if prepared.prompt is not None:
        outcome = await services.queue.generate(prepared.prompt.text, prepared.params)
    result = await run_in_threadpool(finish, services, prepared, outcome)
    return AskResponse(
        query=body.query,
        model=answerer.model_name,
        rerank=rerank_status(services.search.rerank, prepared.search.reranked),
        passages=passages_out(prepared.hits),
        **result.model_dump(),
    )


def finish(services: Services, prepared: PreparedAnswer, outcome: GenerationOutcome | None) -> AskResult:
    """Check the answer's support (blocking: embedding) and present it; the stage timings go to /metrics."""
    answer = services.answerer.finish(prepared, outcome)
    services.metrics.observe_stages(answer.timings_ms)
    return answer_result(answer)


async def stream_answer(services: Services, prepared: PreparedAnswer) -> AsyncIterator[bytes]:
    answerer = services.answerer
    yield sse_event(
        "passages",
        {
            "query": prepared.query,
            "model": answerer.model_name,
            "rerank": rerank_status(services.search.rerank, prepared.search.reranked).model_dump(),
            "passages": [p.model_dump() for p in passages_out(prepared.hits)],
        },
    )
    outcome: GenerationOutcome | None = None
    try:
        if prepared.prompt is not None:
            outcome = GenerationOutcome()
            # Closing this response (client gone) closes the queue's stream, which cancels decoding.
            async for delta in services.queue.stream(prepared.prompt.text, prepared.params, outcome):
                yield sse_event("delta", {"text": delta})
        result = await run_in_threadpool(finish, services, prepared, outcome)
        yield sse_event("done", result.model_dump())
    except Exception as error:  # the status line is sent already: report the failure in-band
        log.exception("streamed answer failed")
        message = str(error) if isinstance(error, TimeoutError) else "generation failed; see the server log"
        yield sse_event("error", {"code": type(error).__name__, "message": message})
