"""Continuous batching: one loop owns the model, and requests join or leave the running batch at any step.

Every request gets a slot: a row of one preallocated KV cache (slots x slot_tokens), so memory is bounded and
known at start. Each turn of the loop
  1. decides (schedule(): planning.py): which waiting requests take free slots, which prompt chunks are read
     beside the next token of every running answer, and how they run; a Plan, no tensors;
  2. runs the plan (runner.py): one forward of the model holding the prompt chunks and the decode rows, so the
     weights are read once for both and a new prompt neither stalls the running answers for more than one chunk
     nor waits behind separate decode steps (or the rows through the decode step apart: steps.py);
  3. samples each request's token with its own sampling parameters, seed, stop strings, no-repeat state and
     text sink, and lets finished requests go, freeing their slots at once (cancelled ones go before deciding).
A request that does not fit in the slots waits (up to max_waiting; beyond that submit() raises EngineFullError):
submit() and the plan's admissions are the only places that decide admission.
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
from models.model import Transformer
from models.planning import Plan, Planner, Slot
from models.runner import ModelRunner, StepOutput
from models.sampling import SamplingParams, choose_next_tokens, make_generator
from models.steps import DecodeStep, ModelStep
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


@dataclass(frozen=True)
class SchedulerStats:
    """One consistent reading of the scheduler (for metrics and callers sizing their own lines against it)."""

    slots: int  # requests decoded together
    max_waiting: int  # requests that may wait for a slot; beyond, submit() raises EngineFullError
    running: int  # requests holding a slot (reading their prompt or decoding)
    waiting: int
    steps: int  # decode steps taken
    reused_tokens: int  # prompt tokens not computed again thanks to a slot's cached prefix

    @property
    def capacity(self) -> int:
        """Requests the scheduler holds at most, running and waiting."""
        return self.slots + self.max_waiting

    @property
    def room(self) -> int:
        """Requests submit() takes now before it raises EngineFullError (a slot frees at most one more)."""
        return max(0, self.max_waiting - self.waiting) + max(0, self.slots - self.running)


class Scheduler:
    """Entry point: submit(prompt_ids, params, sink) -> RequestHandle. The loop runs in its own thread."""

    def __init__(self, model: Transformer, tokenizer: Tokenizer, settings: SchedulerSettings,
                 step: DecodeStep | None = None) -> None:  # fmt: skip
        """step: the decode step (steps.py; default: the model itself). Whether it joins the prompt chunks'
        forward is the step's own joins_prefill."""
        self.model = model
        self.tokenizer = tokenizer
        self.settings = settings
        self.device = model.embed_tokens.weight.device
        self.cache = KVCache.allocate(model.config, settings.slots, settings.slot_tokens, self.device,
                                      model.embed_tokens.weight.dtype)  # fmt: skip
        self.slots = [Slot(i) for i in range(settings.slots)]
        self.step: DecodeStep = step or ModelStep(model)
        self.runner = ModelRunner(model, self.cache, self.step)
        batch_tokens = settings.prefill_batch_tokens
        if batch_tokens is None:
            batch_tokens = GPU_PREFILL_BATCH_TOKENS if self.device.type == "cuda" else 0
        self.planner = Planner(settings.prefill_chunk, batch_tokens, settings.reuse_prefix, self.step.joins_prefill)
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
        """Requests submitted inside are admitted in one turn of the loop (then read together: planning.py)."""
        with self._condition:
            yield

    def schedule(self) -> Plan:
        """What the next turn would do for the requests as they are now (it changes nothing)."""
        with self._condition:
            return self.planner.schedule(self._waiting, self._running, self.slots)

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

    @property
    def capacity(self) -> int:
        """Requests held at most, running and waiting: slots + max_waiting."""
        return self.settings.slots + self.settings.max_waiting

    def stats(self) -> SchedulerStats:
        with self._condition:
            return SchedulerStats(self.settings.slots, self.settings.max_waiting, len(self._running),
                                  len(self._waiting), self.steps, self.reused_tokens)  # fmt: skip

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
                self._drop_cancelled()
                plan = self.planner.schedule(self._waiting, self._running, self.slots)
                self._admit(plan)
            try:
                with torch.inference_mode():
                    self._update(plan, self.runner.execute(plan))
            except Exception as error:  # a failure fails the requests in flight, not the engine
                log.exception("generation step failed")
                for request in list(self._running):
                    self._finish(request, error)

    def _drop_cancelled(self) -> None:
        """Under the lock: cancelled requests leave at once, waiting or running, before the plan is made."""
        for request in [r for r in self._waiting if r.cancelled.is_set()]:
            self._waiting.remove(request)
            request.output.finish("cancelled")
            request.sink.on_finish(request.output.result(len(request.prompt_ids)))
        for request in [r for r in self._running if r.cancelled.is_set()]:
            request.output.finish("cancelled")
            self._finish(request)

    def _admit(self, plan: Plan) -> None:
        """Under the lock: the plan's admissions take their slots (they are the head of the waiting line)."""
        for admission in plan.admitted:
            request = self._waiting.popleft()
            assert request.request_id == admission.request_id
            slot = self.slots[admission.slot]
            slot.busy, request.slot, request.filled = True, slot, admission.reused
            self.reused_tokens += admission.reused
            self._running.append(request)

    def _update(self, plan: Plan, output: StepOutput) -> None:
        """Sample and emit: each prompt chunk read moves its request on (its last chunk gives the first token),
        each decode row gives its request the next token."""
        requests = {request.request_id: request for request in self._running}
        for chunk, logits in zip(plan.prefill, output.prefill, strict=True):
            self._read(requests[chunk.request_id], chunk.stop - chunk.start, logits)
        if plan.decode:
            assert output.decode is not None
            self.steps += 1
            self._advance([requests[row.request_id] for row in plan.decode], output.decode)

    def _read(self, request: Request, count: int, logits: Tensor) -> None:
        assert request.slot is not None
        request.filled += count
        request.slot.token_ids = request.prompt_ids[: request.filled]
        if request.filled == len(request.prompt_ids):
            self._take(request, self._choose(request, logits))

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
