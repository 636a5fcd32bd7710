"""The service's side of the generation engine, and answering's Generator port over it (answering/ports.py):
admission, one answer's streams, shutdown, metrics. The engine's types and errors stay here.

The engine (models.scheduler) decodes up to `slots` generations together and keeps others waiting; an answer is
one generation per answering paper (its finding), all submitted at once. Admission is decided here first, per
answer and before any retrieval (`reserve`): beyond `slots + queue_size` answers in flight the API answers 429
with Retry-After at once; the place goes back when the engine is done with the answer's last generation, or at
`cancel_reservation` when the answer generates nothing. Admission also refuses, with a Retry-After of the excess,
when a new answer's expected time plus `wait_margin_s` is over `max_wait_s` (see `expected_wait_s`: answers in
flight + 1, times the p90 of recent answers' seconds per place in line). An answer that outlives its timeout, or
whose client goes away, is cancelled and its slots freed at the engine's next step; /metrics counts each early end
by its reason (CANCEL_REASONS).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from answering.answerer import MAX_PAPERS
from answering.ports import GenerationEvent, GenerationOutcome, SamplingParams
from app.config import GenerationQueueSettings
from app.metrics import ServiceMetrics
from models import AsyncTextStream, Generator
from models import SamplingParams as EngineSamplingParams
from models.scheduler import EngineFullError, EngineStoppedError
from runtime.arenas import IdleTrim


class QueueFullError(RuntimeError):
    """Every generation slot is taken, and so is every place in the line; or the expected wait is too long."""

    def __init__(self, message: str, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s  # None: the configured one


class GenerationTimeoutError(TimeoutError):
    """Generation outlived its per-request time limit."""


class ShuttingDownError(RuntimeError):
    """The server is shutting down: answers still generating after the grace period are stopped."""


def cancel_reason(error: BaseException) -> str:
    """The label of a generation ended early by `error` (aer_rag_generation_cancelled_total{reason})."""
    if isinstance(error, GenerationTimeoutError):
        return "timeout"
    if isinstance(error, ShuttingDownError | EngineStoppedError):
        return "shutdown"
    return "error"


# Admission's estimate reads the p90, not the average, of the recent answers' seconds per place: the target is that
# nearly every admitted answer (p95) ends within max_wait_s, and with the average about half of them ended past it
# (issue 37: 16 clients, asks p95 39.7 s over a 30 s limit).
WAIT_SAMPLES = 20  # recent answers the estimate reads
WAIT_QUANTILE = 0.9


def engine_params(params: SamplingParams) -> EngineSamplingParams:
    """The engine's parameters (which it checks) from answering's."""
    return EngineSamplingParams(**vars(params))


class GenerationQueue:
    """answering.ports.Generator for answers that hold a place (`reserve` first)."""

    def __init__(self, generator: Generator, settings: GenerationQueueSettings, metrics: ServiceMetrics,
                 idle: IdleTrim | None = None):  # fmt: skip
        self.generator = generator
        # The one admission line: answers in flight at most. The engine is sized from the same settings
        # (GenerationQueueSettings.scheduler()) to hold every admitted answer's generations, so its own limit
        # (EngineFullError) is a backstop that admission never reaches; an engine too small is a setup error.
        self.capacity = settings.slots + settings.queue_size
        if generator.scheduler.capacity < self.capacity * MAX_PAPERS:
            raise ValueError(f"The engine holds {generator.scheduler.capacity} generations, fewer than the "
                             f"{self.capacity} admitted answers of up to {MAX_PAPERS} findings each need; build it "
                             "with GenerationQueueSettings.scheduler().")  # fmt: skip
        self.timeout_s = settings.timeout_s
        self.max_wait_s = settings.max_wait_s
        self.wait_margin_s = settings.wait_margin_s
        self.retry_after_s = settings.retry_after_s
        self.metrics = metrics
        self._in_flight = 0  # touched only on the event loop thread, so no lock
        self._generating = 0  # answers in flight that have reached the engine (the others are being prepared)
        self._generating_seconds = 0.0  # the integral of _generating over time, up to _counted_at
        self._counted_at = time.perf_counter()
        self._seconds_per_place: deque[float] = deque(maxlen=WAIT_SAMPLES)  # the recent answers' (see _measured)
        self.idle = idle  # told of every answer, so that freed memory is trimmed once answers stop too
        metrics.track_engine(generator.scheduler)
        metrics.generation_expected_wait.set_function(self.expected_wait_s)

    @property
    def depth(self) -> int:
        return self._in_flight

    def expected_wait_s(self) -> float:
        """Seconds a new answer is expected to take (0 until one has been measured): answers in flight + 1, times
        the p90 of the recent answers' seconds per place (see _measured). In the engine answers share the slots
        (and the CPU), so an answer's time grows with the answers generating beside it, whether they started before
        or after it; holding (in flight + 1) x p90 within the limit at every admission therefore bounds those
        already admitted too. Answers still being prepared count as if they will generate (some will be declined),
        so the estimate errs long."""
        if not self._seconds_per_place:
            return 0.0
        ordered = sorted(self._seconds_per_place)
        return (self._in_flight + 1) * ordered[math.ceil(WAIT_QUANTILE * len(ordered)) - 1]

    def reserve(self) -> None:
        """Take a place or raise QueueFullError; call before any work is spent on the request. An idle server
        always admits, and so does one that has measured no answer yet."""
        if self._in_flight >= self.capacity:
            self.metrics.generation_rejected.inc()
            raise QueueFullError(f"all {self.capacity} places for answers are taken")
        wait = self.expected_wait_s()
        # The margin stands for what the estimate leaves out: retrieving and deciding before generation starts,
        # and the estimate's own error.
        excess = wait + self.wait_margin_s - self.max_wait_s
        if self._in_flight and self.max_wait_s and wait and excess > 0:
            self.metrics.generation_rejected.inc()
            # Places free about one per p90 seconds per place, so the excess is about when enough have freed; every
            # answer in flight ends within timeout_s, so never more than that.
            retry = max(self.retry_after_s, min(math.ceil(excess), math.ceil(self.timeout_s)))
            raise QueueFullError(f"an answer would take about {wait:.0f} s (+ {self.wait_margin_s:g} s margin), over "
                                 f"the {self.max_wait_s:g} s limit, behind {self._in_flight} others",
                                 retry_after_s=retry)  # fmt: skip
        self._in_flight += 1
        self.metrics.queue_depth.set(self._in_flight)
        if self.idle is not None:
            self.idle.enter()

    def _count_generating(self, change: int) -> None:
        now = time.perf_counter()
        self._generating_seconds += self._generating * (now - self._counted_at)
        self._counted_at = now
        self._generating += change

    def generating_seconds(self) -> float:
        """The integral over time of the answers generating, up to now: its growth over an interval, divided by the
        interval, is the mean number generating during it."""
        return self._generating_seconds + self._generating * (time.perf_counter() - self._counted_at)

    def cancel_reservation(self) -> None:
        """Give back a place that will not generate (the question was declined, or preparing it failed)."""
        self._release()

    def _release(self) -> None:
        self._in_flight -= 1
        self.metrics.queue_depth.set(self._in_flight)
        if self.idle is not None:
            self.idle.leave()

    def _measured(self, seconds: float, generating_seconds: float) -> None:
        """An answer generated in `seconds`, during which the answers generating (itself included) held
        `generating_seconds`: its seconds per place are its time over the mean number generating beside it. The
        mean over its whole generation, not the number when it started, since answers that start after it share
        the engine too; and only answers generating, since one being prepared (often to be declined, a few seconds
        of retrieval) does not slow the engine much: counted, it halved a lone answer's seconds per place, and a
        second answer admitted on that estimate doubled both answers' times."""
        places = max(generating_seconds / seconds, 1.0) if seconds > 0 else 1.0
        self._seconds_per_place.append(seconds / places)

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

    def stream_many(self, prompts: Sequence[str], params: SamplingParams) -> MergedStreams:
        """One answer's generations, all submitted now in its one reserved place (given back when the engine is
        done with the last of them); see MergedStreams."""
        started = time.perf_counter()
        self._count_generating(+1)
        generating_seconds = self.generating_seconds()
        settings = engine_params(params)
        remaining = len(prompts)
        merged: MergedStreams | None = None

        def one_done() -> None:
            nonlocal remaining
            remaining -= 1
            if remaining == 0:
                if merged is not None and not merged.closed_early:  # a client gone says nothing of the load
                    self._measured(time.perf_counter() - started, self.generating_seconds() - generating_seconds)
                self._count_generating(-1)
                self._release()

        submitted: list[AsyncTextStream] = []
        try:
            for prompt in prompts:
                submitted.append(self._submit(prompt, settings, one_done))
        except BaseException:
            for request in submitted:
                request.cancel()
            for _ in range(len(prompts) - len(submitted) - 1):  # never submitted: their share of the place
                one_done()
            raise
        merged = MergedStreams(submitted, started, self.timeout_s, self.metrics)
        return merged

    async def generate(self, prompt: str, params: SamplingParams) -> GenerationOutcome:
        """Run one generation to the end in a reserved place."""
        async for _, item in self.stream_many([prompt], params):
            if isinstance(item, GenerationOutcome):
                return item
        raise AssertionError("a generation ends with its outcome")

    def _submit(self, prompt: str, params: EngineSamplingParams, release: Callable[[], None]) -> AsyncTextStream:
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


class MergedStreams:
    """answering.ports.GenerationStreams over the engine: several generations' events as one async iterator of
    (index, delta), then (index, GenerationOutcome) when generation `index` ends; `stop(index)` ends one early;
    closing it (aclose) cancels those still running. An error of any generation is raised from the iteration."""

    def __init__(self, requests: Sequence[AsyncTextStream], started: float, timeout_s: float,
                 metrics: ServiceMetrics) -> None:  # fmt: skip
        self._requests = list(requests)  # the engine's side: cancelling one frees its slot
        self._deadline = started + timeout_s
        self._started = started
        self._timeout_s = timeout_s
        self._metrics = metrics
        self._events: asyncio.Queue[tuple[int, str | GenerationOutcome | BaseException]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping: set[int] = set()
        self._open = len(self._requests)
        self._failure: str | None = None  # the cancel reason of the first generation that failed
        self.closed_early = False  # closed (aclose) while generations still ran, none having failed: client gone

    async def _pump(self, index: int) -> None:
        """Generation `index`'s deltas onto the events, then its outcome (or its error)."""
        request = self._requests[index]
        pieces: list[str] = []
        finished = False
        failed: str | None = None
        try:
            while True:
                delta = await self._next(request)
                if delta is None:
                    finished = True
                    break
                pieces.append(delta)
                self._events.put_nowait((index, delta))
        except asyncio.CancelledError:
            if index not in self._stopping:  # closed: nobody reads an outcome
                raise
        except Exception as error:  # handed to the consumer, which raises it
            failed = cancel_reason(error)
            self._failure = self._failure or failed
            self._events.put_nowait((index, error))
            return
        finally:
            # Reached on completion, error, stop, or the client going away (aclose).
            if not finished:
                request.cancel()
                reason = "stopped" if index in self._stopping else failed or self._failure or "disconnect"
                self._metrics.generation_cancelled.labels(reason).inc()
            seconds = time.perf_counter() - self._started
            if request.generated_tokens:
                self._metrics.tokens_generated.inc(request.generated_tokens)
                self._metrics.generation_tokens_per_second.observe(request.generated_tokens / seconds)
        reason = (request.finish_reason or "stop") if finished else "cancelled"
        self._events.put_nowait((index, GenerationOutcome("".join(pieces), request.prompt_tokens,
                                                          request.generated_tokens, reason, seconds)))  # fmt: skip

    async def _next(self, request: AsyncTextStream) -> str | None:
        """The request's next delta (None at its end), within the answer's time limit."""
        remaining = self._deadline - time.perf_counter()
        try:
            return await asyncio.wait_for(anext(request), timeout=max(remaining, 0.001))
        except StopAsyncIteration:
            return None
        except TimeoutError as error:
            raise GenerationTimeoutError(f"generation took longer than {self._timeout_s:g} s and was stopped"
                                         ) from error  # fmt: skip
        except (EngineStoppedError, ShuttingDownError) as error:
            # A new error per stream: the engine hands every stream one object, which would otherwise gather each
            # stream's traceback as it is re-raised in turn.
            raise ShuttingDownError(str(error)) from None

    def __aiter__(self) -> MergedStreams:
        if not self._tasks:
            self._tasks = [asyncio.ensure_future(self._pump(i)) for i in range(len(self._requests))]
        return self

    async def __anext__(self) -> GenerationEvent:
        if self._open == 0:
            raise StopAsyncIteration
        index, item = await self._events.get()
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, GenerationOutcome):
            self._open -= 1
        return index, item

    def stop(self, index: int) -> None:
        """End generation `index` now (its outcome, finish_reason cancelled, still comes)."""
        self._requests[index].cancel()
        task = self._tasks[index]
        if not task.done():
            self._stopping.add(index)
            task.cancel()

    async def aclose(self) -> None:
        """Cancel the generations still running: those a failure left are counted by its reason, the others as
        the client's disconnect (the only other reader that closes early)."""
        if self._failure is None and (not self._tasks or any(not task.done() for task in self._tasks)):
            self.closed_early = True
        for request in self._requests:
            request.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
