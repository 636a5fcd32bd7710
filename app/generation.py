"""A bounded generation queue: decoding runs off the event loop (models.AsyncTextStream), never on it.

Requests beyond `workers + queue_size` are refused at once (the API answers 429 with Retry-After)
instead of piling up; a request that outlives its timeout, or whose client goes away, is cancelled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from answering.answerer import GenerationOutcome
from app.config import GenerationQueueSettings
from app.metrics import ServiceMetrics
from models import Generator, SamplingParams


class QueueFullError(RuntimeError):
    """Every generation slot is taken."""


class GenerationTimeoutError(TimeoutError):
    """Generation outlived its per-request time limit."""


class GenerationQueue:
    def __init__(self, generator: Generator, settings: GenerationQueueSettings, metrics: ServiceMetrics):
        self.generator = generator
        self.capacity = settings.workers + settings.queue_size
        self.timeout_s = settings.timeout_s
        self.metrics = metrics
        self._in_flight = 0  # touched only on the event loop thread, so no lock

    @property
    def depth(self) -> int:
        return self._in_flight

    def shutdown(self) -> None:
        """Nothing to stop: each generation's thread ends with its request."""

    def reserve(self) -> None:
        """Take a slot or raise QueueFullError; call before any response bytes are sent."""
        if self._in_flight >= self.capacity:
            self.metrics.generation_rejected.inc()
            raise QueueFullError(f"all {self.capacity} generation slots are busy")
        self._in_flight += 1
        self.metrics.queue_depth.set(self._in_flight)

    def _release(self) -> None:
        self._in_flight -= 1
        self.metrics.queue_depth.set(self._in_flight)

    async def stream(self, prompt: str, params: SamplingParams, outcome: GenerationOutcome) -> AsyncIterator[str]:
        """Yield text deltas for a reserved slot; fills `outcome` when done. Closing the iterator cancels.

        The slot is released when the decoding thread has stopped, not when the consumer goes away."""
        started = time.perf_counter()
        deltas = self.generator.astream(prompt, params, on_finished=self._release)
        deadline = started + self.timeout_s
        pieces: list[str] = []
        finished = False
        try:
            while True:
                remaining = deadline - time.perf_counter()
                try:
                    delta = await asyncio.wait_for(anext(deltas), timeout=max(remaining, 0.001))
                except StopAsyncIteration:
                    finished = True
                    break
                except TimeoutError as error:
                    raise GenerationTimeoutError(
                        f"generation took longer than {self.timeout_s:g} s and was stopped"
                    ) from error
                pieces.append(delta)
                yield delta
        finally:
            # Reached on completion, error, timeout, or the client going away (GeneratorExit).
            deltas.cancel()
            if not deltas.started:
                self._release()  # no thread ever ran: nothing else will release the slot
            outcome.prompt_tokens = deltas.prompt_tokens
            outcome.generated_tokens = deltas.generated_tokens
            outcome.finish_reason = (deltas.finish_reason or "stop") if finished else "cancelled"
            if not finished:
                self.metrics.generation_cancelled.inc()
            outcome.text = "".join(pieces)
            outcome.seconds = time.perf_counter() - started
            if outcome.generated_tokens:
                self.metrics.tokens_generated.inc(outcome.generated_tokens)
                self.metrics.generation_tokens_per_second.observe(outcome.generated_tokens / outcome.seconds)

    async def generate(self, prompt: str, params: SamplingParams) -> GenerationOutcome:
        """Run one generation to the end in a reserved slot."""
        outcome = GenerationOutcome()
        async for _ in self.stream(prompt, params, outcome):
            pass
        return outcome
