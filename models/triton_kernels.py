"""Our fused GPU kernels for the decode step (Triton), each replacing a run of small torch ops.

A 135M model's decode step on a GPU is launch-bound: about 31 kernels a layer, each a few microseconds, even
inside a CUDA graph. These four kernels cut that to 11 a layer (fused_step.py puts them together):

- add_rms_norm: the residual add and the next RMSNorm in one pass (six kernels -> one);
- rope_cache_write: rotary embedding of the queries and keys, and the keys' and values' cache writes;
- masked_softmax: each row's causal mask (its position), softmax in float32, the result in the activations' dtype;
- silu_mul: SwiGLU's silu(gate) * up.

Each rounds where the torch ops of models/model.py round (float32 math, results in the activations' dtype), so a
step through them matches the model's own step. On a machine without a GPU they run under Triton's interpreter
(TRITON_INTERPRET=1, float32 and float16), which is how the tests check them there.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor


@triton.jit
def _add_rms_norm_kernel(x_ptr, delta_ptr, weight_ptr, sum_ptr, normed_ptr, columns, eps,
                         HAS_DELTA: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < columns
    x = tl.load(x_ptr + row * columns + offsets, mask=inside, other=0.0)
    if HAS_DELTA:  # x + delta, rounded to the activations' dtype as torch's add is
        x = (x.to(tl.float32) + tl.load(delta_ptr + row * columns + offsets, mask=inside, other=0.0).to(tl.float32))
        x = x.to(sum_ptr.dtype.element_ty)
        tl.store(sum_ptr + row * columns + offsets, x, mask=inside)
    x32 = x.to(tl.float32)
    scaled = (x32 * tl.rsqrt(tl.sum(x32 * x32, axis=0) / columns + eps)).to(normed_ptr.dtype.element_ty)
    weight = tl.load(weight_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    tl.store(normed_ptr + row * columns + offsets, (scaled.to(tl.float32) * weight).to(normed_ptr.dtype.element_ty),
             mask=inside)


def add_rms_norm(x: Tensor, delta: Tensor | None, weight: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """(x + delta, RMSNorm(x + delta) * weight) for x (N, C); with delta None, (x, RMSNorm(x) * weight)."""
    rows, columns = x.shape
    total = torch.empty_like(x) if delta is not None else x
    normed = torch.empty_like(x)
    _add_rms_norm_kernel[(rows,)](x, x if delta is None else delta, weight, total, normed, columns, eps,
                                  HAS_DELTA=delta is not None, BLOCK=triton.next_power_of_2(columns))  # fmt: skip
    return total, normed


@triton.jit
def _rotate(x_ptr, cos_ptr, sin_ptr, heads, HEAD_DIM: tl.constexpr, BLOCK_HEADS: tl.constexpr):
    """Rotate-half RoPE of `heads` vectors at x_ptr: round(round(x * cos) + swap_halves(x) * signed_sin)."""
    head = tl.arange(0, BLOCK_HEADS)[:, None]
    dim = tl.arange(0, HEAD_DIM)[None, :]
    inside = head < heads
    x = tl.load(x_ptr + head * HEAD_DIM + dim, mask=inside, other=0.0)
    swapped = tl.load(x_ptr + head * HEAD_DIM + (dim + HEAD_DIM // 2) % HEAD_DIM, mask=inside, other=0.0)
    cos = tl.load(cos_ptr + dim)
    sin = tl.load(sin_ptr + dim)
    first = (x.to(tl.float32) * cos.to(tl.float32)).to(x.dtype)
    return (first.to(tl.float32) + swapped.to(tl.float32) * sin.to(tl.float32)).to(x.dtype), head, dim, inside


@triton.jit
def _rope_cache_write_kernel(qkv_ptr, positions_ptr, cos_ptr, sin_ptr, q_cos_ptr, q_sin_ptr, q_out_ptr,
                             cache_k_ptr, cache_v_ptr, k_row_stride, k_head_stride, k_slot_stride,
                             v_row_stride, v_head_stride, v_slot_stride, q_heads, kv_heads,
                             HEAD_DIM: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_KV: tl.constexpr):  # fmt: skip
    row = tl.program_id(0)
    position = tl.load(positions_ptr + row)
    width = (q_heads + 2 * kv_heads) * HEAD_DIM
    q_ptr = qkv_ptr + row * width
    k_ptr = q_ptr + q_heads * HEAD_DIM
    v_ptr = k_ptr + kv_heads * HEAD_DIM
    q, head, dim, inside = _rotate(q_ptr, q_cos_ptr + position * HEAD_DIM, q_sin_ptr + position * HEAD_DIM,
                                   q_heads, HEAD_DIM, BLOCK_Q)  # fmt: skip
    tl.store(q_out_ptr + row * q_heads * HEAD_DIM + head * HEAD_DIM + dim, q, mask=inside)
    k, head, dim, inside = _rotate(k_ptr, cos_ptr + position * HEAD_DIM, sin_ptr + position * HEAD_DIM,
                                   kv_heads, HEAD_DIM, BLOCK_KV)  # fmt: skip
    tl.store(cache_k_ptr + row * k_row_stride + head * k_head_stride + position * k_slot_stride + dim, k, mask=inside)
    v = tl.load(v_ptr + head * HEAD_DIM + dim, mask=inside, other=0.0)
    tl.store(cache_v_ptr + row * v_row_stride + head * v_head_stride + position * v_slot_stride + dim, v, mask=inside)


def rope_cache_write(qkv: Tensor, positions: Tensor, tables: tuple[Tensor, Tensor, Tensor, Tensor],
                     cache_k: Tensor, cache_v: Tensor, q_heads: int, kv_heads: int, head_dim: int) -> Tensor:
    """One decode token a row: qkv (N, (H + 2KV) * D), positions (N,). Writes the rotated keys and the values to
    slot positions[n] of cache rows n (B >= N, KV, L, D); returns the rotated queries (N, H * D).
    tables: (cos, signed_sin) for the keys and (cos, signed_sin) * 1/sqrt(D) for the queries, (L, D) each, in
    the activations' dtype."""
    rows = qkv.shape[0]
    cos, sin, q_cos, q_sin = tables
    q = torch.empty(rows, q_heads * head_dim, device=qkv.device, dtype=qkv.dtype)
    _rope_cache_write_kernel[(rows,)](qkv, positions, cos, sin, q_cos, q_sin, q, cache_k, cache_v,
                                      *cache_k.stride()[:3], *cache_v.stride()[:3], q_heads, kv_heads,
                                      HEAD_DIM=head_dim, BLOCK_Q=triton.next_power_of_2(q_heads),
                                      BLOCK_KV=triton.next_power_of_2(kv_heads))  # fmt: skip
    return q


@triton.jit
def _masked_softmax_kernel(scores_ptr, positions_ptr, probs_ptr, columns, rows_per_position,
                           BLOCK: tl.constexpr):  # fmt: skip
    row = tl.program_id(0)
    position = tl.load(positions_ptr + row // rows_per_position)
    offsets = tl.arange(0, BLOCK)
    visible = offsets <= position  # a key is visible at or before the query's own slot
    scores = tl.load(scores_ptr + row * columns + offsets, mask=visible & (offsets < columns), other=-float("inf"))
    scores = scores.to(tl.float32)
    exp = tl.exp(scores - tl.max(scores, axis=0))
    probs = exp / tl.sum(exp, axis=0)
    tl.store(probs_ptr + row * columns + offsets, probs.to(probs_ptr.dtype.element_ty), mask=offsets < columns)


def masked_softmax(scores: Tensor, positions: Tensor) -> Tensor:
    """scores (N, R, L): row n's R score rows attend to slots 0..positions[n] -> probabilities, same shape and
    dtype (float32 softmax)."""
    rows, per_row, columns = scores.shape
    probs = torch.empty_like(scores)
    block = triton.next_power_of_2(columns)
    _masked_softmax_kernel[(rows * per_row,)](scores, positions, probs, columns, per_row, BLOCK=block,
                                              num_warps=4 if block <= 2048 else 8)  # fmt: skip
    return probs


@triton.jit
def _silu_mul_kernel(gate_up_ptr, out_ptr, width, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < width
    gate = tl.load(gate_up_ptr + row * 2 * width + offsets, mask=inside, other=0.0).to(tl.float32)
    up = tl.load(gate_up_ptr + row * 2 * width + width + offsets, mask=inside, other=0.0).to(tl.float32)
    silu = (gate / (1.0 + tl.exp(-gate))).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + row * width + offsets, (silu.to(tl.float32) * up).to(out_ptr.dtype.element_ty), mask=inside)


def silu_mul(gate_up: Tensor) -> Tensor:
    """gate_up (N, 2I), gate then up -> silu(gate) * up (N, I)."""
    rows, width = gate_up.shape[0], gate_up.shape[1] // 2
    out = torch.empty(rows, width, device=gate_up.device, dtype=gate_up.dtype)
    block = 1024
    _silu_mul_kernel[(rows, triton.cdiv(width, block))](gate_up, out, width, BLOCK=block)
    return out

