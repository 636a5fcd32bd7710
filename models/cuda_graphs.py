"""CUDA graphs for the decode step (CUDA only): the step for n rows is captured once and replayed, removing the
per-kernel launch overhead that dominates a 135M model at small batch sizes (as in gpt-fast).

A graph needs fixed addresses and shapes: the scheduler's cache is allocated once, the step reads its tokens and
positions from static buffers, and it attends over the whole slot (masked by position), not over the filled
part, so one graph per row count serves every length.
"""

from __future__ import annotations

import torch
from torch import Tensor

from models.model import KVCache, Transformer


class CudaGraphDecoder:
    """step(tokens (n, 1), cache rows 0..n-1, positions (n,), attend_len) -> logits (n, V), as the model's."""

    def __init__(self, model: Transformer) -> None:
        self.model = model
        self._graphs: dict[int, tuple[torch.cuda.CUDAGraph, Tensor, Tensor, Tensor]] = {}

    def __call__(self, tokens: Tensor, cache: KVCache, positions: Tensor, attend_len: int) -> Tensor:
        rows = tokens.shape[0]
        if rows not in self._graphs:
            self._graphs[rows] = self._capture(rows, cache)
        graph, static_tokens, static_positions, logits = self._graphs[rows]
        static_tokens.copy_(tokens)
        static_positions.copy_(positions)
        graph.replay()
        return logits

    def _capture(self, rows: int, cache: KVCache) -> tuple[torch.cuda.CUDAGraph, Tensor, Tensor, Tensor]:
        device = cache.k[0].device
        static_tokens = torch.zeros(rows, 1, dtype=torch.long, device=device)
        # Capturing writes KV at these positions: the last slot of each row is the scheduler's scratch space.
        static_positions = torch.full((rows,), cache.max_len - 1, dtype=torch.long, device=device)

        def forward() -> Tensor:
            return self.model(static_tokens, cache, static_positions, attend_len=cache.max_len)

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
