"""Continuous batching: one loop owns the model, and requests join or leave the running batch at any step.

Every request gets a slot: a row of one preallocated KV cache (slots x slot_tokens), so memory is bounded and
known at start. Each turn of the loop
  1. admits waiting requests into free slots, preferring the slot whose cached tokens share the longest prefix
     with the prompt (the system message is then not computed again);
  2. runs one forward of the model holding a chunk (prefill_chunk tokens) of the oldest request still reading its
     prompt beside the next token of every running request, each at its own position: the weights are read
     once for both, so a new prompt neither stalls the streams already running for more than one chunk nor
     waits behind separate decode steps (with no stream running, the whole prompt goes in one forward: larger
     matmuls, less time to the first token). Younger prompts that fit whole in what is left of the forward's
     budget (prefill_chunk, or prefill_batch_tokens with no stream running) are read in the same forward: a
     forward has a fixed cost (on a GPU, most of a short prompt's), paid once for all of them. On CPU, where a
     prompt's arithmetic is the cost, prompts are by default not batched with no stream running: the oldest one's
     first token would wait for the others';
  3. samples each request's token with its own sampling parameters, seed, stop strings, no-repeat state and
     text sink;
  4. lets cancelled and finished requests go, freeing their slots at once.
A request that does not fit in the slots waits (up to max_waiting; beyond that submit() raises EngineFullError).
"""

from __future__ import annotations

import atexit
import itertools
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import Tensor

from models.detokenize import GenerationResult, OutputText
from models.kv_cache import KVCache
from models.model import Segment, Transformer
from models.sampling import SamplingParams, choose_next_tokens, make_generator
from models.tokenizer import Tokenizer

log = logging.getLogger(__name__)


class EngineFullError(RuntimeError):
    """Every slot is taken and the waiting line is full."""


class EngineStoppedError(RuntimeError):
    """The engine was shut down while the request was waiting or running."""


class RequestSink(Protocol):
    """Where a request's output goes; called on the scheduler's thread."""

    def on_delta(self, text: str) -> None: ...

    def on_finish(self, result: GenerationResult) -> None: ...

    def on_error(self, error: BaseException) -> None: ...


GPU_PREFILL_BATCH_TOKENS = 1024  # on an H200 a forward of a prompt costs ~17 ms of launches whatever its length


@dataclass(frozen=True)
class SchedulerSettings:
    slots: int = 8  # requests decoded together
    slot_tokens: int = 2048  # KV cache per slot: prompt + answer
    prefill_chunk: int = 256  # prompt tokens per forward while other requests decode (a rest < 1/2 chunk joins)
    max_waiting: int = 64  # requests waiting for a slot
    reuse_prefix: bool = True
    # Prompt tokens read together in one forward with no stream running; None: 1024 on a GPU, 0 (one prompt) on CPU.
    prefill_batch_tokens: int | None = None

    def __post_init__(self) -> None:
        if min(self.slots, self.prefill_chunk) < 1 or self.slot_tokens < 16 or self.max_waiting < 0 \
                or (self.prefill_batch_tokens or 0) < 0:
            raise ValueError(f"Invalid scheduler settings: {self}.")


@dataclass
class Slot:
    index: int
    token_ids: list[int] = field(default_factory=list)  # the tokens whose KV the slot holds (for prefix reuse)
    busy: bool = False


_ids = itertools.count(1)


@dataclass
class Request:
    prompt_ids: list[int]
    params: SamplingParams
    budget: int  # new tokens at most
    sink: RequestSink
    output: OutputText
    generator: torch.Generator | None
    request_id: int = field(default_factory=lambda: next(_ids))
    submitted: float = field(default_factory=time.perf_counter)
    slot: Slot | None = None
    filled: int = 0  # slots of the cache holding this request's KV
    next_token: int | None = None  # sampled, not yet run through the model
    generated: list[int] = field(default_factory=list)
    cancelled: threading.Event = field(default_factory=threading.Event)

    @property
    def decoding(self) -> bool:
        return self.next_token is not None


class RequestHandle:
    """What submit() returns: cancel() frees the request's slot at the next step; the counts are live."""

    def __init__(self, prompt_tokens: int, cancelled: threading.Event, generated: Callable[[], int],
                 wake: Callable[[], None] | None = None) -> None:  # fmt: skip
        self.prompt_tokens = prompt_tokens
        self._cancelled = cancelled
        self._generated = generated
        self._wake = wake

    @property
    def generated_tokens(self) -> int:
        return self._generated()

    def cancel(self) -> None:
        self._cancelled.set()
        if self._wake is not None:
            self._wake()


class Scheduler:
    """Entry point: submit(prompt_ids, params, sink) -> RequestHandle. The loop runs in its own thread."""

    def __init__(self, model: Transformer, tokenizer: Tokenizer, settings: SchedulerSettings,
                 step: Callable[[Tensor, KVCache, Tensor, int], Tensor] | None = None,
                 decode_apart: bool = False) -> None:  # fmt: skip
        """step(tokens (n, 1), cache rows 0..n-1, positions (n,), attend_len) -> logits (n, V): the decode step
        (default: the model itself; CUDA graphs replay a captured one). decode_apart: the step is not the model's
        arithmetic (quantized weights), so the running answers always go through it, never beside a prompt chunk
        in the model's forward: an answer then does not depend on what else is running."""
        self.model = model
        self.tokenizer = tokenizer
        self.settings = settings
        self.device = model.embed_tokens.weight.device
        self.cache = KVCache.allocate(model.config, settings.slots, settings.slot_tokens, self.device,
                                      model.embed_tokens.weight.dtype)  # fmt: skip
        self.slots = [Slot(i) for i in range(settings.slots)]
        self._decode = step or (lambda tokens, cache, positions, length: model(tokens, cache, positions, length))
        self._decode_apart = decode_apart and step is not None
        self._waiting: deque[Request] = deque()
        self._running: list[Request] = []
        self._condition = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None
        # A process that exits while the loop is inside a forward aborts (torch's threads are torn down under it):
        # at exit, stop the loop after its current step. A weak reference, so the cache can still be freed.
        atexit.register(_stop_at_exit, weakref.ref(self))
        self.steps = 0  # decode steps taken (for metrics)
        self.reused_tokens = 0  # prompt tokens not computed again thanks to a slot's cached prefix

    # ------------------------------------------------------------------------------------- public
    def submit(self, prompt_ids: list[int], params: SamplingParams, budget: int, sink: RequestSink,
               cancel: threading.Event | None = None) -> RequestHandle:  # fmt: skip
        """Queue a request (prompt + budget must fit a slot). Raises EngineFullError when the line is full;
        `cancel`, when set (here or by the handle), ends the request at the next step."""
        # The last new token is never fed back, so a request fills prompt + budget - 1 slots, and the slot's
        # last position stays free as scratch space for the decode step's idle rows.
        if len(prompt_ids) + budget > self.settings.slot_tokens:
            raise ValueError(f"{len(prompt_ids)} prompt tokens + {budget} new ones do not fit a slot of "
                             f"{self.settings.slot_tokens} tokens.")  # fmt: skip
        request = Request(prompt_ids, params, budget, sink, OutputText(self.tokenizer, params),
                          make_generator(params.seed, self.device), cancelled=cancel or threading.Event())  # fmt: skip
        with self._condition:
            if len(self._waiting) >= self.settings.max_waiting:
                raise EngineFullError(f"all {self.settings.slots} slots are busy and {len(self._waiting)} wait")
            self._waiting.append(request)
            self._start()
            self._condition.notify()
        return RequestHandle(len(prompt_ids), request.cancelled, lambda: request.output.steps, self.wake)

    @contextmanager
    def admitting_together(self) -> Iterator[None]:
        """Requests submitted inside are admitted in one turn of the loop (then read together, see _chunks)."""
        with self._condition:
            yield

    def forget_prefixes(self) -> None:
        """Drop what the free slots remember (benchmarks time a cold prompt with it)."""
        with self._condition:
            for slot in self.slots:
                if not slot.busy:
                    slot.token_ids = []

    def wake(self) -> None:
        with self._condition:
            self._condition.notify()

    @property
    def running(self) -> int:
        return len(self._running)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def shutdown(self, error: BaseException | None = None) -> None:
        """Stop the loop; every waiting or running request ends with `error` (default EngineStoppedError).
        A later submit() starts the loop again."""
        with self._condition:
            self._stopped = True
            self._condition.notify()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._condition:
            ended = [*self._waiting, *self._running]
            self._waiting.clear()
            self._running.clear()
            for slot in self.slots:
                slot.busy = False
            self._stopped, self._thread = False, None
        for request in ended:
            request.slot = None
            request.sink.on_error(error or EngineStoppedError("The engine was shut down."))

    # ------------------------------------------------------------------------------------- the loop
    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="aer-rag-scheduler", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        torch.set_grad_enabled(False)
        while True:
            with self._condition:
                while not self._stopped and not self._waiting and not self._running:
                    self._condition.wait()
                if self._stopped:
                    return
                self._admit()
            try:
                with torch.inference_mode():
                    self._drop_cancelled()
                    self._forward()
            except Exception as error:  # a failure fails the requests in flight, not the engine
                log.exception("generation step failed")
                for request in list(self._running):
                    self._finish(request, error)

    def _admit(self) -> None:
        """Under the lock: cancelled waiting requests leave at once; the others take free slots in order."""
        for request in [r for r in self._waiting if r.cancelled.is_set()]:
            self._waiting.remove(request)
            request.output.finish("cancelled")
            request.sink.on_finish(request.output.result(len(request.prompt_ids)))
        while self._waiting:
            free = [slot for slot in self.slots if not slot.busy]
            if not free:
                return
            request = self._waiting.popleft()
            slot, reused = max(((s, self._shared_prefix(s, request.prompt_ids)) for s in free), key=lambda x: x[1])
            slot.busy, request.slot, request.filled = True, slot, reused
            self.reused_tokens += reused
            self._running.append(request)

    def _shared_prefix(self, slot: Slot, prompt: list[int]) -> int:
        if not self.settings.reuse_prefix:
            return 0
        shared = 0
        for cached, wanted in zip(slot.token_ids, prompt, strict=False):
            if cached != wanted:
                break
            shared += 1
        return min(shared, len(prompt) - 1)  # at least one prompt token runs, for the next-token logits

    def _drop_cancelled(self) -> None:
        for request in list(self._running):
            if request.cancelled.is_set():
                request.output.finish("cancelled")
                self._finish(request)

    def _forward(self) -> None:
        """One forward of the model: chunks of the prompts still being read (the oldest first) beside one decode
        step of every running answer, so that the weights are read once for all of them (either may be absent)."""
        decoding = [r for r in self._running if r.decoding]
        reading = sorted((r for r in self._running if not r.decoding), key=lambda r: r.submitted)
        chunks = self._chunks(reading, whole=not decoding)
        step = self._decode_segment(decoding) if decoding else None
        if not chunks and step is None:
            return
        segments = [chunk for _, chunk in chunks]
        if not chunks:
            assert step is not None
            logits = [self._decode(step.tokens, step.cache, step.start, step.attend_len)]  # a graph may replay it
        elif step is not None and self._decode_apart:
            logits = [*self.model.forward_segments(segments),
                      self._decode(step.tokens, step.cache, step.start, step.attend_len)]  # fmt: skip
        else:
            logits = self.model.forward_segments(segments if step is None else [*segments, step])
        for (request, chunk), request_logits in zip(chunks, logits, strict=False):
            self._read(request, chunk.tokens.shape[1], request_logits)
        if decoding:
            self.steps += 1
            self._advance(decoding, logits[-1])

    def _chunks(self, reading: list[Request], whole: bool) -> list[tuple[Request, Segment]]:
        """The oldest prompt's next chunk (see _chunk), then the next prompts whole while they fit in what is left of
        the forward's budget: prefill_batch_tokens when nothing else is decoding, else prefill_chunk."""
        if not reading:
            return []
        first = self._chunk(reading[0], whole)
        chunks, left = [(reading[0], first)], self._budget(whole) - first.tokens.shape[1]
        for request in reading[1:]:
            rest = len(request.prompt_ids) - request.filled
            if rest > left:
                break  # the oldest first: a younger prompt does not overtake one that waits
            chunks.append((request, self._chunk(request, whole=True)))
            left -= rest
        return chunks

    def _budget(self, whole: bool) -> int:
        if not whole:
            return self.settings.prefill_chunk
        if self.settings.prefill_batch_tokens is None:
            return GPU_PREFILL_BATCH_TOKENS if self.device.type == "cuda" else 0
        return self.settings.prefill_batch_tokens

    def _chunk(self, request: Request, whole: bool) -> Segment:
        """The request's next prompt tokens: all of them when nothing else is decoding (larger matmuls), else
        prefill_chunk, so that the running answers are not stalled for long; a rest of up to half a chunk more
        goes along rather than costing a forward of its own (each forward has a fixed cost)."""
        assert request.slot is not None
        rest, chunk = request.prompt_ids[request.filled :], self.settings.prefill_chunk
        ids = rest if whole or len(rest) <= chunk * 3 // 2 else rest[:chunk]
        row = request.slot.index
        return Segment(torch.tensor([ids], device=self.device), self.cache.rows(row, row + 1), request.filled)

    def _read(self, request: Request, count: int, logits: Tensor) -> None:
        assert request.slot is not None
        request.filled += count
        request.slot.token_ids = request.prompt_ids[: request.filled]
        if request.filled == len(request.prompt_ids):
            self._take(request, self._choose(request, logits))

    def _decode_segment(self, decoding: list[Request]) -> Segment:
        """Every decoding request's next token at its own position, in the cache rows 0..n-1 (n = 1 + the highest
        slot in use); rows without a decoding request write to their scratch slot and are not read."""
        rows = 1 + max(r.slot.index for r in decoding)  # type: ignore[union-attr]
        scratch = self.settings.slot_tokens - 1  # never part of a request's tokens
        tokens, positions = [0] * rows, [scratch] * rows
        for request in decoding:
            tokens[request.slot.index] = request.next_token  # type: ignore[union-attr, call-overload]
            positions[request.slot.index] = request.filled  # type: ignore[union-attr]
        attend_len = 1 + max(r.filled for r in decoding)
        staged = torch.tensor([tokens, positions]).to(self.device, non_blocking=True)  # one copy to the device
        return Segment(staged[0].view(rows, 1), self.cache.rows(0, rows), staged[1], attend_len)

    def _advance(self, decoding: list[Request], logits: Tensor) -> None:
        chosen = self._choose_all(decoding, logits)
        for request, token in zip(decoding, chosen, strict=True):
            request.filled += 1
            request.slot.token_ids.append(request.next_token)  # type: ignore[union-attr, arg-type]
            self._take(request, token)

    # ------------------------------------------------------------------------------------- tokens
    def _choose(self, request: Request, logits: Tensor) -> int:
        history = torch.tensor([request.generated], dtype=torch.long, device=logits.device).reshape(1, -1)
        return int(choose_next_tokens(logits[-1:].float(), request.params, history, request.generator)[0])

    def _choose_all(self, decoding: list[Request], logits: Tensor) -> list[int]:
        if all(r.params.plain_greedy for r in decoding):  # one argmax for all rows, one read back
            best = logits.argmax(dim=-1).tolist()
            return [best[r.slot.index] for r in decoding]  # type: ignore[union-attr]
        return [self._choose(r, logits[r.slot.index : r.slot.index + 1]) for r in decoding]  # type: ignore[union-attr]

    def _take(self, request: Request, token: int) -> None:
        """Record a sampled token: emit its text, then finish the request or queue the token for decoding."""
        request.output.push(token)
        delta = request.output.take_delta()
        if delta:
            request.sink.on_delta(delta)
        if not request.output.finished:
            request.generated.append(token)
            if len(request.generated) < request.budget:
                request.next_token = token
                return
            request.output.finish("length")
        self._finish(request)

    def _finish(self, request: Request, error: BaseException | None = None) -> None:
        if request in self._running:
            self._running.remove(request)
        if request.slot is not None:
            request.slot.token_ids = request.slot.token_ids[: request.filled]
            request.slot.busy = False
            request.slot = None
        request.next_token = None
        if error is not None:
            request.sink.on_error(error)
            return
        tail = request.output.take_delta()
        if tail:
            request.sink.on_delta(tail)
        request.sink.on_finish(request.output.result(len(request.prompt_ids)))


def _stop_at_exit(scheduler: weakref.ref[Scheduler]) -> None:
    live = scheduler()
    if live is not None and live._thread is not None:
        live.shutdown(EngineStoppedError("The process is exiting."))
