"""GGUF and Hugging Face directory loading."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import pytest
import torch

from models.kv_cache import KVCache
from models.loading import (
    WeightLoadError,
    build_model,
    load_gguf,
    load_hf_directory,
    permute_rotary_rows,
    unpermute_rotary_rows,
)
from models.model import Transformer

TOKENS = torch.tensor([[5, 17, 42, 99, 3, 250, 7, 8, 120]])


def logits_of(model: Transformer) -> torch.Tensor:
    cache = KVCache.allocate(model.config, 1, TOKENS.shape[1], torch.device("cpu"), torch.float32)
    with torch.no_grad():
        return model(TOKENS, cache, 0, last_only=False)


def test_unpermute_inverts_llama_cpp_permutation() -> None:
    weight = torch.randn(4 * 8, 16)
    assert not torch.equal(permute_rotary_rows(weight, 4), weight)
    torch.testing.assert_close(unpermute_rotary_rows(permute_rotary_rows(weight, 4), 4), weight)


def test_gguf_with_permuted_q_k_rows_matches_reference(tiny_gguf: Path, hf_llama) -> None:
    config, tensors, _ = load_gguf(tiny_gguf)
    assert (config.num_heads, config.num_kv_heads, config.num_layers, config.tie_embeddings) == (4, 2, 2, True)
    with torch.no_grad():
        expected = hf_llama(TOKENS).logits
    torch.testing.assert_close(logits_of(build_model(config, tensors)), expected, atol=1e-4, rtol=1e-4)
    # Skipping the un-permutation must break it, or this test proves nothing.
    wrong = dict(tensors)
    for name in wrong:
        if name.endswith("q_proj.weight"):
            wrong[name] = permute_rotary_rows(wrong[name], config.num_heads)
    assert not torch.allclose(logits_of(build_model(config, wrong)), expected, atol=1e-2)


@pytest.mark.parametrize("qtype", [gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.F16])
def test_quantized_gguf_dequantizes_close_to_reference(tmp_path: Path, hf_llama, make_gguf, qtype) -> None:
    quantized = {f"blk.{i}.{part}.weight": qtype for i in range(2) for part in ("attn_q", "attn_k", "ffn_up")}
    config, tensors, _ = load_gguf(make_gguf(tmp_path / "q.gguf", hf_llama, quantized))
    original = hf_llama.state_dict()["model.layers.0.self_attn.q_proj.weight"]
    assert (tensors["model.layers.0.self_attn.q_proj.weight"] - original).abs().max() < 0.02
    with torch.no_grad():
        expected = hf_llama(TOKENS).logits
    torch.testing.assert_close(logits_of(build_model(config, tensors)), expected, atol=0.3, rtol=0.05)


def test_hf_directory_with_safetensors(tmp_path: Path, hf_llama) -> None:
    hf_llama.save_pretrained(tmp_path)
    config, tensors = load_hf_directory(tmp_path)
    with torch.no_grad():
        expected = hf_llama(TOKENS).logits
    torch.testing.assert_close(logits_of(build_model(config, tensors)), expected, atol=1e-4, rtol=1e-4)


def test_unsupported_architecture_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(WeightLoadError, match="not supported"):
        load_hf_directory(tmp_path)
    with pytest.raises(WeightLoadError, match=r"config\.json"):
        load_hf_directory(tmp_path / "missing")


def test_generator_from_hf_directory_equals_gguf(tmp_path: Path, hf_llama, tiny_gguf: Path,
                                                  tiny_tokenizer) -> None:
    from models import Generator, SamplingParams

    hf_llama.save_pretrained(tmp_path)
    tiny_tokenizer.backend.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}))
    (tmp_path / "chat_template.jinja").write_text(tiny_tokenizer.chat_template)
    from_dir = Generator.from_pretrained(tmp_path, device="cpu")
    from_gguf = Generator.from_pretrained(tiny_gguf, device="cpu")
    messages = [{"role": "user", "content": "hello"}]
    prompt = from_dir.tokenizer.apply_chat_template(messages)
    assert prompt == from_gguf.tokenizer.apply_chat_template(messages)
    params = SamplingParams(max_new_tokens=8)
    assert from_dir.generate([prompt], params)[0].token_ids == from_gguf.generate([prompt], params)[0].token_ids
    assert from_dir.tokenizer.eos_token_ids[0] == 2
