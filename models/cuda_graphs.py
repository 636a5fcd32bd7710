"""CUDA graphs for the decode step (CUDA only): one captured graph per (batch, cache length)."""

from __future__ import annotations

import torch
from torch import Tensor

from models.model import KVCache, Transformer


class CudaGraphDecoder:
    """CUDA only: decode steps replayed from captured CUDA graphs (as in gpt-fast), removing the
    per-kernel launch overhead that dominates a 135M model at batch 1.

    The graph needs fixed addresses and shapes, so each (batch, cache length) gets its own static cache,
    input buffers and graph, and the step attends over the whole cache with a mask (start is a tensor).
    """

    def __init__(self, model: Transformer) -> None:
        self.model = model
        self._entries: dict[tuple[int, int], dict[str, object]] = {}

    def cache(self, batch: int, length: int, dtype: torch.dtype) -> KVCache:
        key = (batch, length)
        if key not in self._entries:
            device = self.model.embed_tokens.weight.device
            self._entries[key] = {
                "cache": KVCache.allocate(self.model.config, batch, length, device, dtype),
                "tokens": torch.zeros(batch, 1, dtype=torch.long, device=device),
                "position": torch.zeros((), dtype=torch.long, device=device),
            }
        return self._entries[key]["cache"]  # type: ignore[return-value]

    def step(self, cache: KVCache, tokens: Tensor, position: int) -> Tensor:
        entry = self._entries[(cache.batch_size, cache.max_len)]
        static_tokens: Tensor = entry["tokens"]  # type: ignore[assignment]
        static_position: Tensor = entry["position"]  # type: ignore[assignment]
        static_tokens.copy_(tokens)
        static_position.fill_(position)
        if "graph" not in entry:
            def forward() -> Tensor:
                return self.model(static_tokens, cache, static_position, attend_len=cache.max_len)

            # Warm up on a side stream before capture, as torch.cuda.graphs requires; the KV written
            # at `position` is rewritten identically by the replay below, so warming up is harmless.
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                forward()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                entry["logits"] = forward()
            entry["graph"] = graph
        entry["graph"].replay()  # type: ignore[attr-defined]
        return entry["logits"]  # type: ignore[return-value]
