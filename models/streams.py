"""A request's text as it is generated: a synchronous iterator and its asyncio twin, the one place where the
engine's thread hands text to a consumer (another thread, or an event loop). Both are the request's sink
(models.scheduler.RequestSink): the engine calls on_delta / on_finish / on_error from its own thread."""

from __future__ import annotations

import asyncio
import contextlib
import queue
from collections.abc import Callable

from models.detokenize import FinishReason, GenerationResult
from models.scheduler import RequestHandle, RequestSink

Submit = Callable[[RequestSink], RequestHandle]  # hands the sink to the engine and returns the request's handle
_DELTA, _DONE, _ERROR = "delta", "done", "error"


class _Stream:
    """What both streams share: the request's handle, its counts and its result."""

    handle: RequestHandle
    result: GenerationResult | None = None

    @property
    def prompt_tokens(self) -> int:
        return self.handle.prompt_tokens

    @property
    def generated_tokens(self) -> int:
        return self.result.generated_tokens if self.result else self.handle.generated_tokens

    @property
    def finish_reason(self) -> FinishReason | None:
        """None until the request is done."""
        return self.result.finish_reason if self.result else None

    def cancel(self) -> None:
        """Stop generating at the engine's next step (safe from any thread; does not wait)."""
        self.handle.cancel()


class TextStream(_Stream):
    """Iterator of text deltas for one request; close() (or cancel()) stops it."""

    def __init__(self, submit: Submit) -> None:
        self._items: queue.SimpleQueue[tuple[str, object]] = queue.SimpleQueue()
        self.handle = submit(self)

    def on_delta(self, text: str) -> None:
        self._items.put((_DELTA, text))

    def on_finish(self, result: GenerationResult) -> None:
        self._items.put((_DONE, result))

    def on_error(self, error: BaseException) -> None:
        self._items.put((_ERROR, error))

    def __iter__(self) -> TextStream:
        return self

    def __next__(self) -> str:
        if self.result is not None:
            raise StopIteration
        kind, item = self._items.get()
        if kind == _DONE:
            self.result = item  # type: ignore[assignment]
            raise StopIteration
        if kind == _ERROR:
            raise item  # type: ignore[misc]
        return item  # type: ignore[return-value]

    def close(self) -> None:
        """Cancel, and wait (one engine step at most) until the request is done."""
        self.cancel()
        with contextlib.suppress(Exception):
            self.wait()

    def wait(self) -> GenerationResult:
        """Consume the rest and return the result."""
        for _ in self:
            pass
        assert self.result is not None
        return self.result


class AsyncTextStream(_Stream):
    """`async for delta in stream`: the engine decodes in its own thread. Cancelling the consuming task (a
    client gone), cancel() or aclose() frees the request's slot at the engine's next step. Create it inside the
    event loop that consumes it."""

    def __init__(self, submit: Submit, on_finished: Callable[[], None] | None = None) -> None:
        """on_finished: called on the event loop once the request is done (finished, cancelled or failed)."""
        self._loop = asyncio.get_running_loop()
        self._items: asyncio.Queue[tuple[str, object]] = asyncio.Queue()
        self._on_finished = on_finished
        self.handle = submit(self)

    def _put(self, kind: str, item: object) -> None:
        with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody is listening
            self._loop.call_soon_threadsafe(self._deliver, kind, item)

    def _deliver(self, kind: str, item: object) -> None:
        if kind == _DONE:
            self.result = item  # type: ignore[assignment]
        self._items.put_nowait((kind, item))
        if kind != _DELTA and self._on_finished is not None:
            self._on_finished()

    def on_delta(self, text: str) -> None:
        self._put(_DELTA, text)

    def on_finish(self, result: GenerationResult) -> None:
        self._put(_DONE, result)

    def on_error(self, error: BaseException) -> None:
        self._put(_ERROR, error)

    def __aiter__(self) -> AsyncTextStream:
        return self

    async def __anext__(self) -> str:
        try:
            kind, item = await self._items.get()
        except asyncio.CancelledError:
            self.cancel()
            raise
        if kind == _DONE:
            raise StopAsyncIteration
        if kind == _ERROR:
            raise item  # type: ignore[misc]
        return item  # type: ignore[return-value]

    async def aclose(self) -> None:
        """Cancel, and wait (one engine step at most) until the request is done."""
        self.cancel()
        with contextlib.suppress(Exception):
            async for _ in self:
                pass
