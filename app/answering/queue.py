"""A bounded generation queue: decoding runs in worker threads, never on the event loop.

Requests beyond `workers + max_waiting` are refused at once (the API answers 429 with Retry-After)
instead of piling up; a request that outlives its timeout, or whose client goes away, is cancelled.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from app.metrics import ServiceMetrics


class QueueFullError(RuntimeError):
    """Every generation slot is taken."""


class GenerationTimeoutError(TimeoutError):
    """Generation outlived its per-request time limit."""


class TextStream(Protocol):
    """What models.Generator.stream returns: text deltas, with counts filled in as it goes."""

    prompt_tokens: int
    generated_tokens: int
    finish_reason: str | None

    def __iter__(self) -> Iterator[str]: ...


class StreamingGenerator(Protocol):
    def stream(self, prompt: str, params: object, cancel: threading.Event | None = None) -> TextStream: ...


@dataclass
class GenerationOutcome:
    text: str
    prompt_tokens: int
    generated_tokens: int
    finish_reason: str
    seconds: float


_DONE = object()


class GenerationQueue:
    def __init__(
        self,
        generator: StreamingGenerator,
        workers: int,
        max_waiting: int,
        timeout_s: float,
        metrics: ServiceMetrics,
    ):
        if workers < 1 or max_waiting < 0 or timeout_s <= 0:
            raise ValueError("workers >= 1, max_waiting >= 0 and timeout_s > 0 are required")
        self.generator = generator
        self.capacity = workers + max_waiting
        self.timeout_s = timeout_s
        self.metrics = metrics
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="generate")
        self._in_flight = 0  # touched only on the event loop thread, so no lock

    @property
    def depth(self) -> int:
        return self._in_flight

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

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

    async def stream(self, prompt: str, params: object, outcome: GenerationOutcome) -> AsyncIterator[str]:
        """Yield text deltas for a reserved slot; fills `outcome` when done. Closing the iterator cancels."""
        loop = asyncio.get_running_loop()
        deltas: asyncio.Queue[object] = asyncio.Queue()
        cancel = threading.Event()
        started = time.perf_counter()

        def work() -> None:
            try:
                text_stream = self.generator.stream(prompt, params, cancel=cancel)
                for delta in text_stream:
                    loop.call_soon_threadsafe(deltas.put_nowait, delta)
                outcome.prompt_tokens = text_stream.prompt_tokens
                outcome.generated_tokens = text_stream.generated_tokens
                outcome.finish_reason = text_stream.finish_reason or "stop"
            except BaseException as error:  # handed to the consumer, which re-raises it
                loop.call_soon_threadsafe(deltas.put_nowait, error)
            finally:
                loop.call_soon_threadsafe(deltas.put_nowait, _DONE)

        future = loop.run_in_executor(self._executor, work)
        deadline = started + self.timeout_s
        pieces: list[str] = []
        finished = False  # the worker ran to its end (or raised), as opposed to being abandoned
        try:
            while True:
                remaining = deadline - time.perf_counter()
                try:
                    item = await asyncio.wait_for(deltas.get(), timeout=max(remaining, 0.001))
                except TimeoutError as error:
                    raise GenerationTimeoutError(
                        f"generation took longer than {self.timeout_s:g} s and was stopped"
                    ) from error
                if item is _DONE:
                    finished = True
                    break
                if isinstance(item, BaseException):
                    finished = True
                    raise item
                pieces.append(item)  # type: ignore[arg-type]
                yield item  # type: ignore[misc]
        finally:
            # Reached on completion, error, timeout, or the client going away (GeneratorExit).
            cancel.set()
            if finished:
                await future  # the worker has queued its last item and is returning
                self._release()
            else:
                outcome.finish_reason = "cancelled"
                self.metrics.generation_cancelled.inc()
                # The slot stays taken until the worker thread notices the cancel flag and stops.
                future.add_done_callback(lambda _: self._release())
            outcome.text = "".join(pieces)
            outcome.seconds = time.perf_counter() - started
            if outcome.generated_tokens:
                self.metrics.tokens_generated.inc(outcome.generated_tokens)
                self.metrics.generation_tokens_per_second.observe(outcome.generated_tokens / outcome.seconds)

    async def generate(self, prompt: str, params: object) -> GenerationOutcome:
        """Run one generation to the end in a reserved slot."""
        outcome = GenerationOutcome("", 0, 0, "stop", 0.0)
        async for _ in self.stream(prompt, params, outcome):
            pass
        return outcome
