"""Runs a plan (planning.py): builds its tensors and runs the forward it names; the scheduler then samples."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from models.kv_cache import KVCache
from models.model import Segment, Transformer
from models.planning import DecodeRow, Plan, PrefillChunk, Run
from models.steps import DecodeStep


@dataclass(frozen=True)
class StepOutput:
    prefill: list[Tensor]  # per prompt chunk of the plan, in order: its last position's logits (1, V)
    decode: Tensor | None  # (plan.decode_rows, V): row i is cache row (slot) i; idle rows are not to be read


class ModelRunner:
    """Owns the model, the cache and the decode step; called on the scheduler's thread only."""

    def __init__(self, model: Transformer, cache: KVCache, step: DecodeStep) -> None:
        self.model = model
        self.cache = cache
        self.step = step
        self.device = model.embed_tokens.weight.device

    def execute(self, plan: Plan) -> StepOutput:
        chunks = [self._chunk_segment(chunk) for chunk in plan.prefill]
        rows = self._decode_segment(plan.decode, plan.decode_rows, plan.attend_len) if plan.decode else None
        if plan.run is Run.IDLE:
            return StepOutput([], None)
        if plan.run is Run.STEP:
            assert rows is not None and not chunks
            return StepOutput([], self._step(rows))
        if plan.run is Run.FORWARD_THEN_STEP:
            assert rows is not None
            return StepOutput(self.model.forward_segments(chunks), self._step(rows))
        logits = self.model.forward_segments(chunks if rows is None else [*chunks, rows])
        return StepOutput(logits[: len(chunks)], None if rows is None else logits[-1])

    def _step(self, rows: Segment) -> Tensor:
        assert isinstance(rows.start, Tensor) and rows.attend_len is not None
        return self.step(rows.tokens, rows.cache, rows.start, rows.attend_len)

    def _chunk_segment(self, chunk: PrefillChunk) -> Segment:
        tokens = torch.tensor([chunk.tokens], device=self.device)
        return Segment(tokens, self.cache.rows(chunk.slot, chunk.slot + 1), chunk.start)

    def _decode_segment(self, decode: tuple[DecodeRow, ...], rows: int, attend_len: int) -> Segment:
        """Every decode row's next token at its own position, in cache rows 0..rows-1; rows without one write to
        their scratch slot (the slot's last position, never part of a request's tokens) and are not read."""
        scratch = self.cache.max_len - 1
        tokens, positions = [0] * rows, [scratch] * rows
        for row in decode:
            tokens[row.slot], positions[row.slot] = row.token, row.position
        staged = torch.tensor([tokens, positions]).to(self.device, non_blocking=True)  # one copy to the device
        return Segment(staged[0].view(rows, 1), self.cache.rows(0, rows), staged[1], attend_len)
