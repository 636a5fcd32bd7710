"""The decode step (one new token a row) on a GPU through our fused kernels (triton_kernels.py): the model's own
weights and arithmetic in 11 kernels a layer instead of about 31, for the CUDA graph to replay (cuda_graphs.py).

The step is the model's forward for a decode segment (models/model.py: Transformer.forward with a tensor of
positions and a fixed attend_len), written out layer by layer: the residual add with the next RMSNorm, rotary with
the cache writes, the mask with the softmax, and SwiGLU's product each run as one kernel; the projections and
attention's two products stay torch's (cuBLAS). Measured on an H200 (docs/generator.md): the captured step takes
1.0 ms for 1 to 16 rows against 2.7-3.1 ms unfused. Our own Triton products with the norm and SwiGLU folded in
(8 kernels a layer) were tried: 2.0 ms, slower than cuBLAS's at these shapes, so not kept.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from models.kv_cache import KVCache
from models.model import Transformer


def fused_kernels_available(device: torch.device) -> bool:
    """On a CUDA device where Triton is installed (it comes with torch's CUDA builds)."""
    if device.type != "cuda":
        return False
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


class FusedDecodeStep:
    """A DecodeStep (steps.py): step(tokens (N, 1), cache (rows 0..N-1 used), positions (N,), attend_len) -> logits
    (N, V) float32, as model(tokens, cache, positions, attend_len=attend_len)."""

    name = "fused kernels"
    joins_prefill = True  # the model's arithmetic, kernel by kernel

    def __init__(self, model: Transformer) -> None:
        # Triton only where this step runs; from the module itself, not the package (models/__init__ imports us).
        import models.triton_kernels as triton_kernels

        self.kernels = triton_kernels
        self.model = model
        config = model.config
        self.heads, self.kv_heads, self.head_dim = config.num_heads, config.num_kv_heads, config.head_dim
        dtype = model.embed_tokens.weight.dtype
        # The model's tables in the activations' dtype, the queries' scaled by 1/sqrt(D) there as the model does.
        cos, sin = model.rotary.cos.to(dtype), model.rotary.signed_sin.to(dtype)
        scale = 1.0 / math.sqrt(config.head_dim)
        self.tables = (cos, sin, cos * scale, sin * scale)

    def __call__(self, tokens: Tensor, cache: KVCache, positions: Tensor, attend_len: int) -> Tensor:
        kernels, model = self.kernels, self.model
        rows, group = tokens.shape[0], self.heads // self.kv_heads
        x = model.embed_tokens(tokens.reshape(-1))  # (N, C)
        delta = None  # what the previous layer adds to the residual stream
        for index, layer in enumerate(model.layers):
            attn, mlp = layer.attn, layer.mlp
            x, normed = kernels.add_rms_norm(x, delta, layer.attn_norm.weight, layer.attn_norm.eps)
            qkv = F.linear(normed, attn.qkv_proj.weight, attn.qkv_proj.bias)
            q = kernels.rope_cache_write(qkv, positions, self.tables, cache.k[index], cache.v[index],
                                         self.heads, self.kv_heads, self.head_dim)  # fmt: skip
            keys = cache.k[index][:rows, :, :attend_len]  # (N, KV, S, D)
            values = cache.v[index][:rows, :, :attend_len]
            scores = torch.matmul(q.view(rows, self.kv_heads, group, self.head_dim), keys.transpose(-1, -2))
            probs = kernels.masked_softmax(scores.view(rows, self.kv_heads * group, attend_len), positions)
            attended = torch.matmul(probs.view(rows, self.kv_heads, group, attend_len), values)
            attended = F.linear(attended.reshape(rows, -1), attn.o_proj.weight)
            x, normed = kernels.add_rms_norm(x, attended, layer.mlp_norm.weight, layer.mlp_norm.eps)
            delta = F.linear(kernels.silu_mul(F.linear(normed, mlp.gate_up_proj.weight)), mlp.down_proj.weight)
        _, normed = kernels.add_rms_norm(x, delta, model.norm.weight, model.norm.eps)
        return F.linear(normed, model.lm_head.weight).float()
