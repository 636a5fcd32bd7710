"""The service's side of the generation engine: admission, one answer's async stream, shutdown, metrics.

The engine (models.scheduler) decodes up to `slots` generations together and keeps others waiting; an answer is
one generation per answering paper (its finding), all submitted at once. Admission is decided here first, per
answer and before any retrieval: beyond `slots + queue_size` answers in flight the API answers 429 with
Retry-After at once. An answer that outlives its timeout, or whose client goes away, is cancelled and its slots
freed at the engine's next step.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence

from answering.answerer import GenerationOutcome
from app.config import GenerationQueueSettings
from app.metrics import ServiceMetrics
from models import Generator, SamplingParams
from models.scheduler import EngineFullError, EngineStoppedError
from models.streams import AsyncTextStream


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

    def _submit(self, prompt: str, params: SamplingParams, release: Callable[[], None]) -> AsyncTextStream:
        """Hand a prompt to the engine; `release` is called once the engine is done with it (or could not take
        it)."""
        try:
            return self.generator.astream(prompt, params, on_finished=release)
        except EngineFullError as error:  # the engine's own line is full (it is sized to make this rare)
            release()
            self.metrics.generation_rejected.inc()
            raise QueueFullError(str(error)) from None
        except BaseException:
            release()
            raise

    async def stream(self, prompt: str, params: SamplingParams, outcome: GenerationOutcome) -> AsyncIterator[str]:
        """Yield text deltas for a reserved place; fills `outcome` when done. Closing the iterator cancels.

        The place is given back when the engine is done with the request, not when the consumer goes away."""
        started = time.perf_counter()
        deltas = self._submit(prompt, params, self._release)
        async for delta in self._deltas(deltas, outcome, started):
            yield delta

    def stream_many(self, prompts: Sequence[str], params: SamplingParams,
                    outcomes: Sequence[GenerationOutcome]) -> MergedStreams:  # fmt: skip
        """One answer's generations, all submitted now in its one reserved place (given back when the engine is
        done with the last of them); see MergedStreams."""
        started = time.perf_counter()
        remaining = len(prompts)

        def one_done() -> None:
            nonlocal remaining
            remaining -= 1
            if remaining == 0:
                self._release()

        submitted: list[AsyncTextStream] = []
        try:
            for prompt in prompts:
                submitted.append(self._submit(prompt, params, one_done))
        except BaseException:
            for deltas in submitted:
                deltas.cancel()
            for _ in range(len(prompts) - len(submitted) - 1):  # never submitted: their share of the place
                one_done()
            raise
        iterators = [self._deltas(d, o, started) for d, o in zip(submitted, outcomes, strict=True)]
        return MergedStreams(iterators, submitted)

    async def _deltas(self, deltas: AsyncTextStream, outcome: GenerationOutcome, started: float
                      ) -> AsyncIterator[str]:  # fmt: skip
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


class MergedStreams:
    """Several generations' deltas as one async iterator of (index, delta), then (index, None) when generation
    `index` ends; `stop(index)` ends one early; closing it (aclose) cancels those still running. An error of any
    generation is raised from the iteration."""

    def __init__(self, streams: Sequence[AsyncIterator[str]], requests: Sequence[AsyncTextStream]) -> None:
        self._streams = list(streams)
        self._requests = list(requests)  # the engine's side: cancelling one frees its slot
        self._events: asyncio.Queue[tuple[int, str | BaseException | None]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._open = len(self._streams)

    async def _pump(self, index: int) -> None:
        stream = self._streams[index]
        try:
            async for delta in stream:
                self._events.put_nowait((index, delta))
        except asyncio.CancelledError:
            await stream.aclose()  # type: ignore[attr-defined]
            return  # stop() reports the end
        except Exception as error:  # handed to the consumer, which raises it
            self._events.put_nowait((index, error))
            return
        self._events.put_nowait((index, None))

    def __aiter__(self) -> MergedStreams:
        if not self._tasks:
            self._tasks = [asyncio.ensure_future(self._pump(i)) for i in range(len(self._streams))]
        return self

    async def __anext__(self) -> tuple[int, str | None]:
        if self._open == 0:
            raise StopAsyncIteration
        index, item = await self._events.get()
        if isinstance(item, BaseException):
            raise item
        if item is None:
            self._open -= 1
        return index, item

    def stop(self, index: int) -> None:
        """End generation `index` now (its (index, None) still comes)."""
        task = self._tasks[index]
        self._requests[index].cancel()
        if not task.done():
            task.cancel()
            task.add_done_callback(lambda _: self._events.put_nowait((index, None)))

    async def aclose(self) -> None:
        for request in self._requests:
            request.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
