"""Streams of text deltas for one request: a synchronous iterator and its asyncio bridge (the only place where
decoding threads hand text to an event loop)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator

from models.detokenize import FinishReason

# What produces a stream's deltas: called once with the stream, which it keeps up to date (counts, finish).
DeltaSource = Callable[["TextStream"], Iterator[str]]


class TextStream:
    """Iterator of text deltas for one prompt. prompt_tokens / generated_tokens / finish_reason are filled
    in as it runs (finish_reason stays None until done). close() — or setting the cancel event — stops it."""

    def __init__(self, prompt_tokens: int, source: DeltaSource, cancel: threading.Event | None = None) -> None:
        self.cancel = cancel or threading.Event()
        self.prompt_tokens = prompt_tokens
        self.generated_tokens = 0
        self.finish_reason: FinishReason | None = None
        self._deltas = source(self)
        self._consumer_thread: int | None = None

    def __iter__(self) -> TextStream:
        return self

    def __next__(self) -> str:
        self._consumer_thread = self._consumer_thread or threading.get_ident()
        return next(self._deltas)

    def close(self) -> None:
        self.cancel.set()
        # From another thread only the event is set: the consuming thread stops at its next step (closing
        # the generator here would release the engine's lock from the wrong thread).
        if self._consumer_thread in (None, threading.get_ident()):
            with contextlib.suppress(ValueError):  # already executing
                self._deltas.close()


class AsyncTextStream:
    """Async iterator of text deltas: decoding runs in a worker thread. Cancelling the consuming task
    (e.g. on client disconnect) or aclose() stops the decode at the next step."""

    _DONE = object()

    def __init__(self, stream: TextStream, on_finished: Callable[[], None] | None = None) -> None:
        """on_finished: called on the event loop once the decoding thread has stopped (also after a cancel)."""
        self._stream = stream
        self._on_finished = on_finished
        self._queue: asyncio.Queue[object] | None = None
        self._thread: threading.Thread | None = None

    @property
    def prompt_tokens(self) -> int:
        return self._stream.prompt_tokens

    @property
    def generated_tokens(self) -> int:
        return self._stream.generated_tokens

    @property
    def finish_reason(self) -> FinishReason | None:
        return self._stream.finish_reason

    @property
    def started(self) -> bool:
        """Whether the decoding thread was started (by the first __anext__)."""
        return self._queue is not None

    def __aiter__(self) -> AsyncTextStream:
        return self

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        self._queue = queue

        def put(item: object) -> None:
            with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody is listening
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            try:
                for delta in self._stream:
                    put(delta)
                    if self._stream.cancel.is_set():
                        break
                self._stream.close()
                put(self._DONE)
            except BaseException as error:  # handed to the consumer, raised there
                put(error)
            finally:
                if self._on_finished is not None:
                    with contextlib.suppress(RuntimeError):
                        loop.call_soon_threadsafe(self._on_finished)

        self._thread = threading.Thread(target=work, name="aer-generate", daemon=True)
        self._thread.start()

    async def __anext__(self) -> str:
        if self._queue is None:
            self._start()
        assert self._queue is not None
        try:
            item = await self._queue.get()
        except asyncio.CancelledError:
            self._stream.cancel.set()
            raise
        if item is self._DONE:
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            raise item
        return item  # type: ignore[return-value]

    def cancel(self) -> None:
        """Stop decoding at the next step (safe from any thread; does not wait)."""
        self._stream.cancel.set()

    async def aclose(self) -> None:
        self._stream.cancel.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
