"""One answer through the service, shared by /v1/ask and /v1/chat/completions: admission first (a full generation
queue answers 429 before any retrieval is spent), then the answerer's preparation off the event loop, every
answering paper's finding generated at once through the queue and composed as it comes, and the finished
Answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool

from answering.answerer import Answer, GenerationOutcome, PreparedAnswer, Question
from answering.compose import AnswerComposer
from app.services import Services


@dataclass
class AnswerRun:
    prepared: PreparedAnswer
    composer: AnswerComposer | None = None
    outcomes: list[GenerationOutcome] | None = None


async def start_answer(services: Services, question: Question) -> AnswerRun:
    """Admit, then retrieve and decide (raises QueueFullError before any work when the queue is full)."""
    services.queue.reserve()
    try:
        prepared = await run_in_threadpool(services.answerer.prepare, question)
    except BaseException:
        services.queue.cancel_reservation()
        raise
    if not prepared.generates:  # declined: nothing to generate
        services.queue.cancel_reservation()
    return AnswerRun(prepared)


async def answer_deltas(services: Services, run: AnswerRun) -> AsyncIterator[str]:
    """The answer's text as it is composed: the opening line at once, then the findings in order, the first
    paper's as it is generated. A finding's generation stops once it has its sentences; closing the iterator
    cancels them all."""
    prepared = run.prepared
    if not prepared.generates:
        return
    composer = run.composer = prepared.composer()
    run.outcomes = [GenerationOutcome() for _ in prepared.findings]
    yield composer.start()
    streams = services.queue.stream_many([f.prompt.text for f in prepared.findings], prepared.params, run.outcomes)
    try:
        async for index, delta in streams:
            text = composer.finish(index) if delta is None else composer.feed(index, delta)
            if delta is not None and not composer.wants_more(index):
                streams.stop(index)
            if text:
                yield text
    finally:
        await streams.aclose()


async def generate_answer(services: Services, run: AnswerRun) -> Answer:
    async for _ in answer_deltas(services, run):
        pass
    return await finish_answer(services, run)


async def finish_answer(services: Services, run: AnswerRun) -> Answer:
    """Check the answer's support (blocking: embedding); the stage timings go to /metrics."""
    answer = await run_in_threadpool(services.answerer.finish, run.prepared, run.composer, run.outcomes)
    services.metrics.observe_stages(answer.timings_ms)
    return answer
