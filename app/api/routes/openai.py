"""An OpenAI-compatible chat endpoint, so existing clients (the openai package, Open WebUI, LangChain's OpenAI chat
model) can ask the service: the last user message is the question, the earlier user/assistant pairs its history (a
follow-up is resolved against them); the answer is the message's content, ending with a numbered source list
(setting `openai_source_list`); the passages, verified citations and the per-paper findings ride along in the
`aer_rag` field (of the response, or of the last chunk)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace

from anyio import to_thread
from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from answering.answerer import Answer, GenerationOptions, Question
from answering.session import AnswerReady, AnswerSession, TextDelta
from app.api.chat_history import history_of, source_list
from app.api.deps import ServicesDep
from app.api.disconnect import answer_unless_gone, client_gone
from app.api.errors import APIError, log_stream_failure, public_message
from app.api.presenters import answer_result, passages_out
from app.openai_schemas import (
    MODEL_ID,
    AssistantMessage,
    ChatCompletion,
    ChatCompletionRequest,
    Choice,
    CompletionUsage,
    ModelCard,
    ModelList,
)
from app.schemas import BODY_RESPONSES, ErrorResponse
from app.services import Services

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1", tags=["openai"])
STARTED = int(time.time())


@router.get("/models", summary="OpenAI-compatible: the model this service answers with")
def models() -> ModelList:
    return ModelList(data=[ModelCard(id=MODEL_ID, created=STARTED)])


def question_of(body: ChatCompletionRequest) -> Question:
    if body.model != MODEL_ID:
        raise APIError(404, "model_not_found", f"The model {body.model!r} does not exist; use {MODEL_ID!r}.")
    query = body.question
    if not query:
        raise APIError(422, "invalid_request", "The messages hold no user message with text: nothing to answer.")
    if len(query) > 1000:
        raise APIError(422, "invalid_request", "The last user message is over 1,000 characters; shorten it.")
    options = GenerationOptions(
        max_new_tokens=body.max_completion_tokens or body.max_tokens,
        temperature=body.temperature or 0.0,
        top_p=body.top_p or 1.0,
        seed=body.seed,
    )
    return Question(query=query, generation=options)


def extra(answer: Answer) -> dict:
    """This service's own fields: what a plain OpenAI client ignores and an aer-rag-aware one reads."""
    result = answer_result(answer)
    return {
        "coverage": result.coverage,
        "confidence": result.confidence,
        "passages": [p.model_dump() for p in passages_out(answer.prepared.hits)],
        "citations": [c.model_dump() for c in result.citations],
        "findings": [f.model_dump() for f in result.findings],
        "unsupported_sentences": result.unsupported_sentences,
        "notes": result.notes,
        "resolved_query": result.resolved_query,
        "applied_filters": result.applied_filters.model_dump(),
    }


def finish_reason(answer: Answer) -> str:
    return "length" if answer.finish_reason == "length" else "stop"


def usage(answer: Answer) -> CompletionUsage:
    prompt, completion = answer.usage.prompt_tokens, answer.usage.generated_tokens
    return CompletionUsage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


@router.post(
    "/chat/completions",
    summary="OpenAI-compatible chat completion: the last user message is the question",
    response_model=ChatCompletion,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "A chat completion, or its chunks (stream)"},
        404: {"model": ErrorResponse, "description": "Unknown model"},
        429: {"model": ErrorResponse, "description": "Generation queue full; see Retry-After"},
        504: {"model": ErrorResponse, "description": "Generation timed out"},
        **BODY_RESPONSES,
    },
)
async def chat_completions(body: ChatCompletionRequest, services: ServicesDep, request: Request):
    question = question_of(body)
    question = replace(question, history=await to_thread.run_sync(history_of, body.messages, services.backend))
    session = await services.start_answer(question)
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    if body.stream:
        include_usage = body.stream_options is not None and body.stream_options.include_usage
        return StreamingResponse(
            stream_chunks(services, session, completion_id, created, include_usage),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    answer = await answer_unless_gone(request, session)  # a client gone cancels it, streamed or not
    if answer is None:
        return client_gone()
    services.metrics.observe_stages(answer.timings_ms)
    content = answer.text + (source_list(answer) if services.settings.openai_source_list else "")
    return ChatCompletion(
        id=completion_id, created=created, model=MODEL_ID,
        choices=[Choice(message=AssistantMessage(content=content), finish_reason=finish_reason(answer))],
        usage=usage(answer), aer_rag=extra(answer),
    )  # fmt: skip


def chunk(completion_id: str, created: int, delta: dict, finish: str | None = None, **fields: object) -> bytes:
    payload = {
        "id": completion_id, "object": "chat.completion.chunk", "created": created, "model": MODEL_ID,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **fields,
    }  # fmt: skip
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


async def stream_chunks(services: Services, session: AnswerSession, completion_id: str, created: int,
                        include_usage: bool) -> AsyncIterator[bytes]:  # fmt: skip
    yield chunk(completion_id, created, {"role": "assistant", "content": ""})
    events = session.events()
    try:
        async for event in events:
            if isinstance(event, TextDelta):
                yield chunk(completion_id, created, {"content": event.text})
            elif isinstance(event, AnswerReady):
                answer = event.answer
                services.metrics.observe_stages(answer.timings_ms)
                if not answer.prepared.generates:  # declined: the statement is the whole answer
                    yield chunk(completion_id, created, {"content": answer.text})
                if services.settings.openai_source_list and (sources := source_list(answer)):
                    yield chunk(completion_id, created, {"content": sources})
                yield chunk(completion_id, created, {}, finish_reason(answer), aer_rag=extra(answer))
                if include_usage:
                    payload = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                               "model": MODEL_ID, "choices": [], "usage": usage(answer).model_dump()}  # fmt: skip
                    yield f"data: {json.dumps(payload)}\n\n".encode()
    except Exception as error:  # the status line is sent already: report the failure in-band, as OpenAI does
        log_stream_failure(log, "streamed chat completion", error)
        message = public_message(error)
        yield f"data: {json.dumps({'error': {'message': message, 'type': type(error).__name__}})}\n\n".encode()
    finally:
        await events.aclose()
    yield b"data: [DONE]\n\n"
