"""Admission for /v1/search, like generation's: searches run in a small pool of the service's own threads, a few
wait for one, and beyond them the API answers 429 with Retry-After at once.

Why a pool of its own rather than Starlette's (40 threads): every search runs the embedding and rerank models,
which already use all the cores. Forty at once only queue inside torch, with each thread's allocator arena and
per-thread buffers kept resident: p50 of 2-4 s under 16 clients and a resident size that grew by 2 GB and stayed.
A search that waited in line longer than `max_wait_s` for a worker is refused rather than run late, so admitted
searches stay quick (one that found a worker free always runs).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from app.limits import SearchAdmissionSettings
from app.metrics import ServiceMetrics
from runtime.arenas import IdleTrim

T = TypeVar("T")


class SearchBusyError(RuntimeError):
    """Every search worker and place in line is taken, or the search waited too long for a worker."""


class SearchAdmission:
    def __init__(self, settings: SearchAdmissionSettings, metrics: ServiceMetrics, trim_after_idle_s: float = 0.0,
                 idle: IdleTrim | None = None):  # fmt: skip
        self.workers = settings.workers
        self.capacity = settings.workers + settings.queue_size
        self.max_wait_s = settings.max_wait_s
        self.retry_after_s = settings.retry_after_s
        self.metrics = metrics
        self._executor = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="aer-rag-search")
        self._lock = threading.Lock()  # released from the worker thread when a job ends
        self._in_flight = 0
        # After a burst, the models' freed buffers go back to the kernel once the process is idle (0: never):
        # `idle` is shared with the answers' queue (app/services.py), or one of the searches' own.
        self.idle = idle or IdleTrim(trim_after_idle_s)

    @property
    def trims(self) -> int:
        return self.idle.trims

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def _change(self, by: int) -> None:
        with self._lock:
            self._in_flight += by
            self.metrics.search_in_flight.set(self._in_flight)
        if by > 0:
            self.idle.enter()
        else:
            self.idle.leave()

    async def run(self, function: Callable[[], T]) -> T:
        """Run `function` on a search worker, or raise SearchBusyError at once (or when it waited too long).

        The place is held until the job itself ends, not when the caller stops waiting (a client gone)."""
        with self._lock:
            if self._in_flight >= self.capacity:
                self.metrics.search_rejected.inc()
                raise SearchBusyError(f"all {self.workers} search workers and {self.capacity - self.workers} "
                                      "places in line are taken")  # fmt: skip
            # Only a search that waits in line behind others can wait too long: one with a worker free runs, however
            # slowly a busy machine starts its thread.
            in_line = self._in_flight >= self.workers
        self._change(+1)
        submitted = time.monotonic()

        def job() -> T:
            try:
                waited = time.monotonic() - submitted
                if in_line and waited > self.max_wait_s:
                    self.metrics.search_rejected.inc()
                    raise SearchBusyError(f"the search waited {waited:.1f} s for a worker")
                return function()
            finally:
                self._change(-1)

        return await asyncio.wrap_future(self._executor.submit(job))

    def close(self) -> None:
        self.idle.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
