from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from answering.session import AnswerReady, AnswerSession, PassagesFound, TextDelta
from app.api.deps import ServicesDep
from app.api.disconnect import answer_unless_gone, client_gone
from app.api.errors import log_stream_failure, public_message
from app.api.presenters import answer_result, passages_out, question_of, rerank_status
from app.schemas import BODY_RESPONSES, AskRequest, AskResponse, ErrorResponse
from app.services import Services

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1", tags=["ask"])

SSE_DESCRIPTION = """An answer is written from every passage that answers the question (up to `top_k` papers):
one finding per paper, most relevant first, after an opening line; `findings` lists them with their support.

With `stream: true` the answer comes as Server-Sent Events: `passages` (the numbered passages), then `delta`
events ({"text": …}) as the answer is composed, then one `done` event with citations, findings, usage and timings
(the same fields as the JSON answer). A failure mid-way sends an `error` event. Closing the connection cancels
generation, streamed or not."""


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
        429: {"model": ErrorResponse, "description": "Generation queue full; see Retry-After"},
        504: {"model": ErrorResponse, "description": "Generation timed out"},
        **BODY_RESPONSES,
    },
)
async def ask(body: AskRequest, services: ServicesDep, request: Request):
    session = await services.start_answer(question_of(body))  # 429 now, before retrieval and any byte of a stream
    if body.stream:
        return StreamingResponse(
            stream_answer(services, session),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    answer = await answer_unless_gone(request, session)  # a client gone cancels it, streamed or not
    if answer is None:
        return client_gone()
    services.metrics.observe_stages(answer.timings_ms)
    return AskResponse(
        query=body.query,
        model=services.answerer.model_name,
        rerank=rerank_status(services.search.rerank, answer.prepared.search.reranked),
        passages=passages_out(answer.prepared.hits),
        **answer_result(answer).model_dump(),
    )


async def stream_answer(services: Services, session: AnswerSession) -> AsyncIterator[bytes]:
    """The session's events as SSE: passages, delta…, done (or error, the status line being sent already).
    Closing this response (client gone) closes the events, which cancels decoding."""
    events = session.events()
    try:
        async for event in events:
            if isinstance(event, PassagesFound):
                prepared = event.prepared
                yield sse_event("passages", {
                    "query": prepared.query,
                    "model": services.answerer.model_name,
                    "rerank": rerank_status(services.search.rerank, prepared.search.reranked).model_dump(),
                    "passages": [p.model_dump() for p in passages_out(prepared.hits)],
                })  # fmt: skip
            elif isinstance(event, TextDelta):
                yield sse_event("delta", {"text": event.text})
            elif isinstance(event, AnswerReady):
                services.metrics.observe_stages(event.answer.timings_ms)
                yield sse_event("done", answer_result(event.answer).model_dump())
    except Exception as error:
        log_stream_failure(log, "streamed answer", error)
        message = public_message(error)
        yield sse_event("error", {"code": type(error).__name__, "message": message})
    finally:
        await events.aclose()
