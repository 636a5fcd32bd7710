"""The decode step through our fused kernels (models/fused_step.py) against the model's own step: rows at
different lengths, stale keys and values beyond each row's filled slots, GPU or Triton's interpreter on CPU."""

from __future__ import annotations

import pytest
import torch

from models.fused_step import FusedDecodeStep
from models.kv_cache import KVCache
from models.loading import build_model, config_from_hf

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if DEVICE == "cuda" else [])
PROMPTS = [[5, 17, 42, 99, 3, 8], [3, 250], [7] * 11]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("qkv_bias", [False, True], ids=["llama", "qwen2-biases"])
def test_fused_step_equals_the_models_step(make_hf_llama, dtype: torch.dtype, qkv_bias: bool) -> None:
    hf = make_hf_llama(attention_bias=qkv_bias)
    model = build_model(config_from_hf(hf.config.to_dict()), hf.state_dict(), device=DEVICE, dtype=dtype)
    cache = KVCache.allocate(model.config, 4, 48, torch.device(DEVICE), dtype)
    for buffer in (*cache.k, *cache.v):
        buffer.normal_(0, 3)  # what earlier answers left in the slots
    step = torch.tensor([[7], [11], [13]], device=DEVICE)
    positions = torch.tensor([len(ids) for ids in PROMPTS], device=DEVICE)
    with torch.no_grad():
        for row, ids in enumerate(PROMPTS):
            model(torch.tensor([ids], device=DEVICE), cache.rows(row, row + 1), 0)
        fused_cache = KVCache([k.clone() for k in cache.k], [v.clone() for v in cache.v])
        expected = model(step, cache.rows(0, 3), positions, attend_len=32)
        got = FusedDecodeStep(model)(step, fused_cache.rows(0, 3), positions, 32)
    assert got.shape == expected.shape and got.dtype == torch.float32
    tolerance = 1e-4 if dtype == torch.float32 else 0.02
    assert (got - expected).abs().max() <= tolerance * expected.abs().max()
    assert torch.equal(got.argmax(-1), expected.argmax(-1))
    for mine, theirs in zip(fused_cache.k + fused_cache.v, cache.k + cache.v, strict=True):
        assert (mine.float() - theirs.float()).abs().max() <= tolerance * theirs.float().abs().max()
