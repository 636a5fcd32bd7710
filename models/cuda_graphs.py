"""CUDA graphs for the decode step (CUDA only): the step for n rows is captured once and replayed, removing the
per-kernel launch overhead that dominates a 135M model at small batch sizes (as in gpt-fast).

A graph needs fixed addresses and shapes: the scheduler's cache is allocated once and the step reads its tokens
and positions from static buffers. Attention covers a fixed span of each slot, masked by position: the filled
part rounded up to a bucket (256, 512, 1024, ... slots), so a step reads the keys and values the rows hold, not
the whole slot, with one graph per (row count, bucket). What is captured is the model's forward, or the same
step through our fused kernels (fused_step.py), which has a third of the kernels to replay.
"""

from __future__ import annotations

import torch
from torch import Tensor

from models.kv_cache import KVCache
from models.model import Transformer
from models.steps import DecodeStep, ModelStep

SMALLEST_ATTENTION_BUCKET = 256  # cache slots a captured step attends over, at least


def attention_bucket(attend_len: int, max_len: int) -> int:
    """The span a graph attends over for rows filled up to attend_len: the smallest power-of-two multiple of
    SMALLEST_ATTENTION_BUCKET that holds it, capped at the slot's length."""
    if not 0 < attend_len <= max_len:
        raise ValueError(f"attend_len must be in [1, {max_len}], got {attend_len}.")
    bucket = SMALLEST_ATTENTION_BUCKET
    while bucket < attend_len:
        bucket *= 2
    return min(bucket, max_len)


class CudaGraphDecoder:
    """A DecodeStep (steps.py) that replays a captured step: the model's arithmetic, so it joins prefill forwards."""

    joins_prefill = True

    def __init__(self, model: Transformer, step: DecodeStep | None = None) -> None:
        """step: what a graph captures (default: the model's forward)."""
        self.step: DecodeStep = step or ModelStep(model)
        self.name = f"cuda graphs of {self.step.name}"
        self._graphs: dict[tuple[int, int], tuple[torch.cuda.CUDAGraph, Tensor, Tensor, Tensor]] = {}

    def __call__(self, tokens: Tensor, cache: KVCache, positions: Tensor, attend_len: int) -> Tensor:
        key = (tokens.shape[0], attention_bucket(attend_len, cache.max_len))
        if key not in self._graphs:
            self._graphs[key] = self._capture(*key, cache)
        graph, static_tokens, static_positions, logits = self._graphs[key]
        static_tokens.copy_(tokens)
        static_positions.copy_(positions)
        graph.replay()
        return logits

    def _capture(self, rows: int, span: int, cache: KVCache) -> tuple[torch.cuda.CUDAGraph, Tensor, Tensor, Tensor]:
        device = cache.k[0].device
        static_tokens = torch.zeros(rows, 1, dtype=torch.long, device=device)
        # Capturing writes KV at these positions: the last slot of each row is the scheduler's scratch space
        # (outside the attended span unless the span is the whole slot, and then hidden by position).
        static_positions = torch.full((rows,), cache.max_len - 1, dtype=torch.long, device=device)

        def forward() -> Tensor:
            return self.step(static_tokens, cache, static_positions, span)

        # Warm up on a side stream before capture, as torch.cuda.graphs requires.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            forward()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            logits = forward()
        return graph, static_tokens, static_positions, logits
