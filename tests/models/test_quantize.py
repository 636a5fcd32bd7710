"""Optional weight-only int8 (CPU): close to float32, and usable end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from models import Generator, SamplingParams
from models.kv_cache import KVCache
from models.loading import build_model, load_gguf
from models.quantize import Int8Linear, quantize_int8

TOKENS = torch.tensor([[5, 17, 42, 99, 3, 250, 7, 8, 120]])


def logits_of(model) -> torch.Tensor:
    cache = KVCache.allocate(model.config, 1, TOKENS.shape[1], torch.device("cpu"), torch.float32)
    with torch.no_grad():
        return model(TOKENS, cache, 0, last_only=False)


def test_int8_linear_is_close_to_float() -> None:
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 48, bias=True)
    x = torch.randn(3, 5, 64)
    expected = linear(x)
    got = Int8Linear(linear)(x)
    assert got.shape == expected.shape and got.dtype == torch.float32
    assert (got - expected).abs().max() < 0.02 * expected.abs().max()


def test_int8_model_logits_close_to_float(tiny_gguf: Path) -> None:
    config, tensors, _ = load_gguf(tiny_gguf)
    expected = logits_of(build_model(config, tensors))
    quantized = quantize_int8(build_model(config, tensors))
    assert not any(isinstance(m, torch.nn.Linear) for m in quantized.modules())
    got = logits_of(quantized)
    assert (got - expected).abs().max() < 0.05 * expected.abs().max()


def test_generator_with_int8_weights(tiny_gguf: Path) -> None:
    generator = Generator.from_pretrained(tiny_gguf, device="cpu", quantize="int8")
    assert generator.model_name.endswith("(int8)")
    (result,) = generator.generate(["hello"], SamplingParams(max_new_tokens=5, ignore_eos=True))
    assert result.generated_tokens == 5
    with pytest.raises(ValueError, match="quantize"):
        Generator.from_pretrained(tiny_gguf, device="cpu", quantize="int4")  # type: ignore[arg-type]
