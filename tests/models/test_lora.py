"""LoRA: starts at the base model, merges exactly, saves/loads as safetensors + JSON, applied at load time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from models import Generator
from models.kv_cache import KVCache
from models.lora import (
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    AdapterError,
    LoraConfig,
    LoraLinear,
    add_lora,
    apply_adapter,
    lora_layers,
    merge_lora,
    save_adapter,
)
from models.model import ModelConfig, Transformer


def tiny_model(seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    config = ModelConfig(vocab_size=50, hidden_size=32, intermediate_size=48, num_layers=2, num_heads=4,
                         num_kv_heads=2, max_seq_len=64)
    model = Transformer(config).eval().requires_grad_(False)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0, 0.3)
    return model


def logits(model: Transformer, tokens: torch.Tensor) -> torch.Tensor:
    cache = KVCache.allocate(model.config, tokens.shape[0], tokens.shape[1], torch.device("cpu"), torch.float32)
    with torch.no_grad():
        return model(tokens, cache, 0, last_only=False)


def randomize_adapter(model: nn.Module, seed: int = 1) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in lora_layers(model).values():
            layer.lora_b.copy_(torch.randn(layer.lora_b.shape, generator=generator) * 0.2)


TOKENS = torch.tensor([[3, 7, 1, 9, 4, 4, 12]])


def test_wraps_every_projection_and_trains_only_the_adapter() -> None:
    model = tiny_model()
    names = add_lora(model, LoraConfig(rank=4))
    assert len(names) == 4 * model.config.num_layers
    assert {n.rsplit(".", 1)[1] for n in names} == {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(n.endswith(("lora_a", "lora_b")) for n in trainable)


def test_a_fresh_adapter_leaves_the_model_unchanged() -> None:
    base = tiny_model()
    adapted = tiny_model()
    add_lora(adapted, LoraConfig(rank=4, dropout=0.0))
    torch.testing.assert_close(logits(adapted, TOKENS), logits(base, TOKENS))


def test_merge_gives_the_same_outputs_as_the_adapter() -> None:
    model = tiny_model()
    add_lora(model, LoraConfig(rank=4, alpha=8, dropout=0.3))
    randomize_adapter(model)
    model.eval()  # no dropout
    before = logits(model, TOKENS)
    assert not torch.allclose(before, logits(tiny_model(), TOKENS))  # the adapter does change the model
    assert merge_lora(model) == 4 * model.config.num_layers
    assert not lora_layers(model) and isinstance(model.layers[0].attn.qkv_proj, nn.Linear)
    torch.testing.assert_close(logits(model, TOKENS), before, atol=1e-5, rtol=1e-5)


def test_save_and_apply_reproduce_the_trained_model(tmp_path: Path) -> None:
    trained = tiny_model()
    config = LoraConfig(rank=4, alpha=8, target_modules=("qkv_proj", "down_proj"), extra={"steps": 3})
    add_lora(trained, config)
    randomize_adapter(trained)
    trained.eval()
    save_adapter(trained, config, tmp_path / "adapter", dtype=torch.float32)
    assert {p.name for p in (tmp_path / "adapter").iterdir()} == {ADAPTER_WEIGHTS, ADAPTER_CONFIG}
    assert json.loads((tmp_path / "adapter" / ADAPTER_CONFIG).read_text())["extra"] == {"steps": 3}

    fresh = tiny_model()
    loaded = apply_adapter(fresh, tmp_path / "adapter")
    assert loaded == config
    assert not lora_layers(fresh)  # merged
    torch.testing.assert_close(logits(fresh, TOKENS), logits(trained, TOKENS), atol=1e-5, rtol=1e-5)

    unmerged = tiny_model()
    apply_adapter(unmerged, tmp_path / "adapter", merge=False)
    assert all(isinstance(layer, LoraLinear) for layer in lora_layers(unmerged).values())
    torch.testing.assert_close(logits(unmerged.eval(), TOKENS), logits(trained, TOKENS), atol=1e-5, rtol=1e-5)


def test_an_adapter_for_another_model_is_refused(tmp_path: Path) -> None:
    model = tiny_model()
    add_lora(model, LoraConfig(rank=4))
    save_adapter(model, LoraConfig(rank=4), tmp_path)
    bigger = Transformer(ModelConfig(vocab_size=50, hidden_size=64, intermediate_size=48, num_layers=2,
                                     num_heads=4, num_kv_heads=2, max_seq_len=64))
    with pytest.raises(AdapterError, match="shape"):
        apply_adapter(bigger, tmp_path)
    with pytest.raises(AdapterError, match="not an adapter directory"):
        apply_adapter(tiny_model(), tmp_path / "missing")


@pytest.mark.parametrize("settings", [{"rank": 0}, {"alpha": 0}, {"dropout": 1.0}, {"target_modules": ("q_proj",)}])
def test_invalid_settings_are_rejected(settings: dict) -> None:
    with pytest.raises(ValueError):
        LoraConfig(**settings)


def test_generator_applies_the_adapter_at_load(tmp_path: Path, tiny_gguf: Path) -> None:
    base = Generator.from_pretrained(tiny_gguf, device="cpu")
    add_lora(base.model, LoraConfig(rank=2))
    randomize_adapter(base.model)
    base.model.eval()
    save_adapter(base.model, LoraConfig(rank=2), tmp_path / "adapter", dtype=torch.float32)
    expected = logits(base.model, TOKENS)

    adapted = Generator.from_pretrained(tiny_gguf, device="cpu", adapter=tmp_path / "adapter")
    assert not lora_layers(adapted.model)  # merged: inference costs what the base model costs
    # Merged (W + BA)x and unmerged Wx + B(Ax) round differently in float32: 1e-4 is that noise, far
    # below the adapter's own effect on the logits.
    torch.testing.assert_close(logits(adapted.model, TOKENS), expected, atol=1e-4, rtol=1e-4)
