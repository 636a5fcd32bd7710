"""Per-stage wall times, torch-free so answering times its own stages without loading a model."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class StageTimer:
    """Collects per-stage wall times in milliseconds, in the order the stages ran. Each run of a stage has its
    own, and its result carries a copy of the timings: no two stages write one dict."""

    def __init__(self) -> None:
        self.timings_ms: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings_ms[name] = round(self.timings_ms.get(name, 0.0) + (time.perf_counter() - started) * 1000, 3)
