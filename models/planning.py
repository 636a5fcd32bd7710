"""What one turn of the scheduler's loop does, decided apart from doing it (as vLLM v1's scheduler output): the
Planner reads the requests and slots and returns a Plan, a frozen value with no tensors in it; the runner
(runner.py) builds the tensors and runs the forward it names, and the scheduler samples and emits (scheduler.py).

A turn's plan
  1. admits waiting requests, in order, into free slots: the slot whose cached tokens share the longest prefix
     with the prompt (the system message is then not computed again); no free slot, no admission;
  2. reads a chunk of the oldest prompt still being read: prefill_chunk tokens while answers decode (a rest of up
     to half a chunk more goes along: each forward has a fixed cost), the whole prompt when none does (larger
     matmuls, less time to the first token). Younger prompts that fit whole in what is left of the forward's budget
     (prefill_chunk, or prefill_batch_tokens with no answer decoding) are read in the same forward: a forward's
     fixed cost (on a GPU, most of a short prompt's) is paid once for all of them; the oldest first, always;
  3. decodes the next token of every running answer, each in its slot's cache row at its own position;
  4. names how they run: the prompt chunks and the decode rows in one forward of the model where the decode step
     is the model's arithmetic (the weights read once for both), else the chunks through the model and the rows
     through the step (quantized weights: an answer does not depend on what else runs).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class Slot:
    """A row of the scheduler's KV cache."""

    index: int
    token_ids: list[int] = field(default_factory=list)  # the tokens whose KV the slot holds (for prefix reuse)
    busy: bool = False


class PlannedRequest(Protocol):
    """What the planner reads of a request (scheduler.Request)."""

    request_id: int
    prompt_ids: list[int]
    submitted: float
    filled: int  # cache positions holding the request's KV
    next_token: int | None  # sampled, not yet run through the model: the request is decoding
    slot: Slot | None


class Run(enum.Enum):
    """Which forwards a plan runs."""

    IDLE = "idle"  # nothing to run
    STEP = "step"  # decode rows only, through the decode step (a CUDA graph may replay it)
    FORWARD = "forward"  # prompt chunks, and the decode rows if any, in one forward of the model
    FORWARD_THEN_STEP = "forward, then step"  # prompt chunks through the model, decode rows through the step


@dataclass(frozen=True)
class Admission:
    request_id: int
    slot: int
    reused: int  # prompt tokens the slot already holds: not computed again


@dataclass(frozen=True)
class PrefillChunk:
    """Prompt tokens [start, stop) of a request, into its slot's cache row at positions start.."""

    request_id: int
    slot: int
    start: int
    tokens: tuple[int, ...] = field(repr=False)

    @property
    def stop(self) -> int:
        return self.start + len(self.tokens)


@dataclass(frozen=True)
class DecodeRow:
    """A running answer's next token, into cache row `slot` at `position`."""

    request_id: int
    slot: int
    position: int
    token: int


@dataclass(frozen=True)
class Plan:
    admitted: tuple[Admission, ...] = ()
    prefill: tuple[PrefillChunk, ...] = ()  # the oldest prompt first
    decode: tuple[DecodeRow, ...] = ()
    run: Run = Run.IDLE

    @property
    def decode_rows(self) -> int:
        """Cache rows 0..n-1 the decode step covers (n = 1 + the highest slot decoding); others are idle rows."""
        return 1 + max(row.slot for row in self.decode) if self.decode else 0

    @property
    def attend_len(self) -> int:
        """Cache positions the decode rows attend over."""
        return 1 + max(row.position for row in self.decode) if self.decode else 0


@dataclass(frozen=True)
class Planner:
    prefill_chunk: int
    prefill_batch_tokens: int  # prompt tokens read together with no answer decoding (0: one prompt)
    reuse_prefix: bool = True
    joins_prefill: bool = True  # the decode step is the model's arithmetic (steps.DecodeStep.joins_prefill)

    def schedule(self, waiting: Iterable[PlannedRequest], running: Sequence[PlannedRequest],
                 slots: Sequence[Slot]) -> Plan:  # fmt: skip
        """The next turn for these requests (waiting in arrival order); reads them, changes nothing."""
        admitted = self._admit(waiting, slots)
        new = {request.request_id: admission for request, admission in admitted}
        decoding = [r for r in running if r.next_token is not None]
        reading = sorted([*(r for r in running if r.next_token is None), *(r for r, _ in admitted)],
                         key=lambda r: r.submitted)  # fmt: skip
        prefill = self._chunks(reading, new, whole=not decoding)
        decode = tuple(DecodeRow(r.request_id, r.slot.index, r.filled, r.next_token)  # type: ignore[union-attr, arg-type]
                       for r in decoding)  # fmt: skip
        if prefill and decode:
            run = Run.FORWARD if self.joins_prefill else Run.FORWARD_THEN_STEP
        else:
            run = Run.FORWARD if prefill else Run.STEP if decode else Run.IDLE
        return Plan(tuple(admission for _, admission in admitted), prefill, decode, run)

    def _admit(self, waiting: Iterable[PlannedRequest],
               slots: Sequence[Slot]) -> list[tuple[PlannedRequest, Admission]]:  # fmt: skip
        free = [slot for slot in slots if not slot.busy]
        admitted = []
        for request in waiting:
            if not free:
                break
            slot, reused = max(((s, self._shared_prefix(s, request.prompt_ids)) for s in free), key=lambda x: x[1])
            free.remove(slot)
            admitted.append((request, Admission(request.request_id, slot.index, reused)))
        return admitted

    def _shared_prefix(self, slot: Slot, prompt: list[int]) -> int:
        if not self.reuse_prefix:
            return 0
        shared = 0
        for cached, wanted in zip(slot.token_ids, prompt, strict=False):
            if cached != wanted:
                break
            shared += 1
        return min(shared, len(prompt) - 1)  # at least one prompt token runs, for the next-token logits

    def _chunks(self, reading: list[PlannedRequest], new: dict[int, Admission],
                whole: bool) -> tuple[PrefillChunk, ...]:  # fmt: skip
        """The oldest prompt's next chunk, then the next prompts whole while they fit in what is left of the
        forward's budget."""

        def place(request: PlannedRequest) -> tuple[int, int]:  # (slot, filled), as admitted this turn or before
            admission = new.get(request.request_id)
            if admission is not None:
                return admission.slot, admission.reused
            assert request.slot is not None
            return request.slot.index, request.filled

        chunks: list[PrefillChunk] = []
        left = self.prefill_chunk if not whole else self.prefill_batch_tokens
        for request in reading:
            slot, filled = place(request)
            rest = request.prompt_ids[filled:]
            if chunks and len(rest) > left:
                break  # the oldest first: a younger prompt does not overtake one that waits
            if not chunks and not whole and len(rest) > self.prefill_chunk * 3 // 2:
                rest = rest[: self.prefill_chunk]
            chunks.append(PrefillChunk(request.request_id, slot, filled, tuple(rest)))
            left -= len(rest)
        return tuple(chunks)
