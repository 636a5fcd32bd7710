"""The service's side of the generation engine: admission, one answer's async stream, shutdown, metrics.

The engine (models.scheduler) decodes up to `slots` answers together and keeps others waiting. Admission is
decided here first, before any retrieval: beyond `slots + queue_size` answers in flight the API answers 429 with
Retry-After at once. An answer that outlives its timeout, or whose client goes away, is cancelled and its slot
freed at the engine's next step.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

from answering.answerer import GenerationOutcome
from app.config import GenerationQueueSettings
from app.metrics import ServiceMetrics
from models import Generator, SamplingParams
from models.scheduler import EngineFullError, EngineStoppedError


class QueueFullError(RuntimeError):
    """Every generation slot is taken, and so is every place in the line."""


class GenerationTimeoutError(TimeoutError):
    """Generation outlived its per-request time limit."""


class ShuttingDownError(RuntimeError):
    """The server is shutting down: answers still generating after the grace period are stopped."""


class GenerationQueue:
    def __init__(self, generator: Generator, settings: GenerationQueueSettings, metrics: ServiceMetrics):
        self.generator = generator
        self.capacity = settings.slots + settings.queue_size
        self.timeout_s = settings.timeout_s
        self.metrics = metrics
        self._in_flight = 0  # touched only on the event loop thread, so no lock
        metrics.track_engine(generator.scheduler)

    @property
    def depth(self) -> int:
        return self._in_flight

    def reserve(self) -> None:
        """Take a place or raise QueueFullError; call before any work is spent on the request."""
        if self._in_flight >= self.capacity:
            self.metrics.generation_rejected.inc()
            raise QueueFullError(f"all {self.capacity} places for answers are taken")
        self._in_flight += 1
        self.metrics.queue_depth.set(self._in_flight)

    def cancel_reservation(self) -> None:
        """Give back a place that will not generate (the question was declined, or preparing it failed)."""
        self._release()

    def _release(self) -> None:
        self._in_flight -= 1
        self.metrics.queue_depth.set(self._in_flight)

    def stop_after(self, grace_s: float) -> threading.Timer:
        """On shutdown: answers still generating after grace_s seconds end with ShuttingDownError."""
        error = ShuttingDownError(f"the server is shutting down; answers still generating after {grace_s:g} s "
                                  "were stopped")  # fmt: skip
        timer = threading.Timer(grace_s, self.generator.shutdown, args=(error,))
        timer.daemon = True
        timer.start()
        return timer

    def shutdown(self) -> None:
        self.generator.shutdown(ShuttingDownError("the server is shutting down"))

    async def stream(self, prompt: str, params: SamplingParams, outcome: GenerationOutcome) -> AsyncIterator[str]:
        """Yield text deltas for a reserved place; fills `outcome` when done. Closing the iterator cancels.

        The place is given back when the engine is done with the request, not when the consumer goes away."""
        started = time.perf_counter()
        try:
            deltas = self.generator.astream(prompt, params, on_finished=self._release)
        except EngineFullError as error:  # the engine's own line is full (it is sized to make this rare)
            self._release()
            self.metrics.generation_rejected.inc()
            raise QueueFullError(str(error)) from None
        except BaseException:
            self._release()
            raise
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
                except (EngineStoppedError, ShuttingDownError) as error:
                    # A new error per stream: the engine hands every stream one object, which would otherwise
                    # gather each stream's traceback as it is re-raised in turn.
                    raise ShuttingDownError(str(error)) from None
                pieces.append(delta)
                yield delta
        finally:
            # Reached on completion, error, timeout, or the client going away (GeneratorExit).
            if not finished:
                deltas.cancel()
                self.metrics.generation_cancelled.inc()
            outcome.prompt_tokens = deltas.prompt_tokens
            outcome.generated_tokens = deltas.generated_tokens
            outcome.finish_reason = (deltas.finish_reason or "stop") if finished else "cancelled"
            outcome.text = "".join(pieces)
            outcome.seconds = time.perf_counter() - started
            if outcome.generated_tokens:
                self.metrics.tokens_generated.inc(outcome.generated_tokens)
                self.metrics.generation_tokens_per_second.observe(outcome.generated_tokens / outcome.seconds)

    async def generate(self, prompt: str, params: SamplingParams) -> GenerationOutcome:
        """Run one generation to the end in a reserved place."""
        outcome = GenerationOutcome()
        async for _ in self.stream(prompt, params, outcome):
            pass
        return outcome
