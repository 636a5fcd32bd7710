"""The decode step: one new token for each of n cache rows, whichever way it runs (the model's forward, our C++
step on quantized blocks, a replayed CUDA graph, our fused Triton kernels inside the graph).

What the scheduler must know about a step is a property of the step (`joins_prefill`), not something the engine
passes beside it: the scheduler plans with it (planning.py) and the runner calls the step (runner.py).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from torch import Tensor

from models.kv_cache import KVCache
from models.model import Transformer


@runtime_checkable
class DecodeStep(Protocol):
    """step(tokens (n, 1), cache rows 0..n-1, positions (n,), attend_len) -> logits (n, V) float32, as
    model(tokens, cache, positions, attend_len=attend_len)."""

    @property
    def name(self) -> str:
        """How the step runs, for logs and /v1/info: "model", "q4_1", "cuda graph", ..."""
        ...

    @property
    def joins_prefill(self) -> bool:
        """True where the step is the model's own arithmetic: while prompts are read, the decode rows go into the
        same forward as the prompt chunks (the weights read once). False (quantized weights): the rows always go
        through the step, so an answer does not depend on what else is running."""
        ...

    def __call__(self, tokens: Tensor, cache: KVCache, positions: Tensor, attend_len: int) -> Tensor: ...


class ModelStep:
    """The model's own forward as the decode step (CPU float32, or a GPU without CUDA graphs)."""

    name = "model"
    joins_prefill = True

    def __init__(self, model: Transformer) -> None:
        self.model = model

    def __call__(self, tokens: Tensor, cache: KVCache, positions: Tensor, attend_len: int) -> Tensor:
        return self.model(tokens, cache, positions, attend_len=attend_len)
