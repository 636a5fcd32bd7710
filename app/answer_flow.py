"""One answer through the service, shared by /v1/ask and /v1/chat/completions: admission first (a full generation
queue answers 429 before any retrieval is spent), then the answerer's preparation off the event loop, generation
through the queue, and the finished Answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool

from answering.answerer import Answer, GenerationOutcome, PreparedAnswer, Question
from app.services import Services


@dataclass
class AnswerRun:
    prepared: PreparedAnswer
    outcome: GenerationOutcome | None = None


async def start_answer(services: Services, question: Question) -> AnswerRun:
    """Admit, then retrieve and decide (raises QueueFullError before any work when the queue is full)."""
    services.queue.reserve()
    try:
        prepared = await run_in_threadpool(services.answerer.prepare, question)
    except BaseException:
        services.queue.cancel_reservation()
        raise
    if prepared.prompt is None:  # declined: nothing to generate
        services.queue.cancel_reservation()
    return AnswerRun(prepared)


async def answer_deltas(services: Services, run: AnswerRun) -> AsyncIterator[str]:
    """The answer's text as it is generated (a partial answer's caveat first); closing the iterator cancels."""
    prompt = run.prepared.prompt
    if prompt is None:
        return
    run.outcome = GenerationOutcome()
    if run.prepared.preface:
        yield run.prepared.preface + " "
    async for delta in services.queue.stream(prompt.text, run.prepared.params, run.outcome):
        yield delta


async def generate_answer(services: Services, run: AnswerRun) -> Answer:
    async for _ in answer_deltas(services, run):
        pass
    return await finish_answer(services, run)


async def finish_answer(services: Services, run: AnswerRun) -> Answer:
    """Check the answer's support (blocking: embedding); the stage timings go to /metrics."""
    answer = await run_in_threadpool(services.answerer.finish, run.prepared, run.outcome)
    services.metrics.observe_stages(answer.timings_ms)
    return answer
