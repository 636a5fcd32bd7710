"""Our Triton kernels against the torch ops they replace (models/model.py's), on the GPU where there is one, else
under Triton's interpreter on CPU (tests/models/conftest.py sets TRITON_INTERPRET), which has no bfloat16."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from models import triton_kernels
from models.model import RMSNorm, apply_rotary

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if DEVICE == "cuda" else [])


def close(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """Equal up to one rounding of the dtype (float32: a few ulps of accumulated sums)."""
    tolerance = 1e-5 if expected.dtype == torch.float32 else 2 * torch.finfo(expected.dtype).eps
    return bool(((got.float() - expected.float()).abs() <= tolerance * (1 + expected.float().abs())).all())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_delta", [True, False])
def test_add_rms_norm_is_the_residual_add_then_rmsnorm(dtype: torch.dtype, with_delta: bool) -> None:
    torch.manual_seed(0)
    norm = RMSNorm(96, 1e-5).to(DEVICE, dtype)
    norm.weight.data.uniform_(0.5, 1.5)
    x, delta = (torch.randn(3, 96, device=DEVICE, dtype=dtype) * 4 for _ in range(2))
    total, normed = triton_kernels.add_rms_norm(x, delta if with_delta else None, norm.weight, norm.eps)
    expected_total = x + delta if with_delta else x
    assert torch.equal(total, expected_total)
    assert close(normed, norm(expected_total))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_cache_write_rotates_queries_and_writes_keys_and_values_at_each_rows_slot(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    heads, kv_heads, dim, slots = 6, 2, 16, 32
    qkv = torch.randn(3, (heads + 2 * kv_heads) * dim, device=DEVICE, dtype=dtype)
    positions = torch.tensor([4, 0, 31], device=DEVICE)
    angles = torch.outer(torch.arange(slots).float(), torch.rand(dim // 2) * 2)
    cos = torch.cat([angles.cos(), angles.cos()], -1).to(DEVICE, dtype)
    sin = torch.cat([-angles.sin(), angles.sin()], -1).to(DEVICE, dtype)
    scale = 1 / math.sqrt(dim)
    cache_k, cache_v = (torch.zeros(4, kv_heads, slots, dim, device=DEVICE, dtype=dtype) for _ in range(2))
    q = triton_kernels.rope_cache_write(qkv, positions, (cos, sin, cos * scale, sin * scale), cache_k, cache_v,
                                        heads, kv_heads, dim)  # fmt: skip
    expected_q, k, v = qkv.split([heads * dim, kv_heads * dim, kv_heads * dim], dim=-1)
    for row, position in enumerate(positions.tolist()):
        table = (cos[position], sin[position])
        rotated_q = apply_rotary(expected_q[row].view(heads, dim), table[0] * scale, table[1] * scale)
        assert close(q[row].view(heads, dim), rotated_q)
        assert close(cache_k[row, :, position], apply_rotary(k[row].view(kv_heads, dim), *table))
        assert torch.equal(cache_v[row, :, position], v[row].view(kv_heads, dim))
    written = torch.zeros(4, slots, dtype=torch.bool)
    written[torch.arange(3), positions.cpu()] = True
    assert not cache_k.abs().sum((1, 3)).cpu()[~written].any()  # nothing else was written
    assert not cache_v.abs().sum((1, 3)).cpu()[~written].any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_softmax_sees_each_rows_slots_up_to_its_position(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    scores = torch.randn(3, 4, 40, device=DEVICE, dtype=dtype) * 5
    positions = torch.tensor([0, 17, 39], device=DEVICE)
    probs = triton_kernels.masked_softmax(scores, positions)
    hidden = torch.arange(40, device=DEVICE)[None, None, :] > positions[:, None, None]
    expected = torch.softmax(scores.float().masked_fill(hidden, float("-inf")), dim=-1).to(dtype)
    assert probs.dtype == dtype and close(probs, expected)
    assert not probs.masked_select(hidden).any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_silu_mul_is_swiglus_product(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    gate_up = torch.randn(3, 2 * 1100, device=DEVICE, dtype=dtype) * 3  # more than one block per row
    gate, up = gate_up.split(1100, dim=-1)
    assert close(triton_kernels.silu_mul(gate_up), F.silu(gate) * up)

