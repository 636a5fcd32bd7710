"""Optional weight-only int8 for CPU decoding: 4x fewer weight bytes per token than float32.

Each Linear's weight is stored as int8 with one scale per output row and multiplied by torch's int8
weight-pack kernel, with activations rounded to bfloat16 (the kernel's fast path on AVX-512/AMX CPUs).
That is not float32-exact: logits move by ~1 on SmolLM2 and long greedy answers can diverge after a few
dozen tokens (still fluent), so float32 stays the default and this is opt-in (`quantize="int8"`).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from models.model import Transformer


class Int8Linear(nn.Module):
    """y = x W^T (+ b) with W stored as int8 rows times a per-row scale."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        scale = (weight.abs().amax(dim=1) / 127.0).clamp(min=1e-12)
        self.register_buffer("weight_int8", (weight / scale[:, None]).round().clamp(-127, 127).to(torch.int8))
        self.register_buffer("scale", scale.to(torch.bfloat16))
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().float(), requires_grad=False)
        self.out_features = weight.shape[0]

    def forward(self, x: Tensor) -> Tensor:
        rows = x.reshape(-1, x.shape[-1]).to(torch.bfloat16)
        y = torch.ops.aten._weight_int8pack_mm(rows, self.weight_int8, self.scale).to(x.dtype)
        if self.bias is not None:
            y = y + self.bias.to(x.dtype)
        return y.view(*x.shape[:-1], self.out_features)


def quantize_int8(model: Transformer) -> Transformer:
    """Replace every projection and the LM head by Int8Linear, in place (embeddings stay float)."""
    if model.embed_tokens.weight.device.type != "cpu" or model.embed_tokens.weight.dtype != torch.float32:
        raise ValueError("int8 weights are for float32 models on the CPU.")
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, name, Int8Linear(child))
    return model
