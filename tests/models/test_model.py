"""Our transformer against transformers' Llama/Qwen2 (test-only reference) on tiny random weights."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from models.loading import build_model, config_from_hf
from models.model import KVCache, Transformer

TOKENS = torch.tensor([[5, 17, 42, 99, 3, 250, 7, 8, 120, 64, 33, 2]])


def full_logits(model: Transformer, tokens: torch.Tensor) -> torch.Tensor:
    cache = KVCache.allocate(model.config, tokens.shape[0], tokens.shape[1], torch.device("cpu"), torch.float32)
    with torch.no_grad():
        return model(tokens, cache, 0, last_only=False)


def ours_from_hf(hf_model) -> Transformer:
    return build_model(config_from_hf(hf_model.config.to_dict()), hf_model.state_dict())


@pytest.mark.parametrize("rope", [
    {"rope_type": "default", "rope_theta": 10000.0},
    {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0},
    {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
     "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
])
def test_logits_match_transformers_llama(make_hf_llama, rope: dict) -> None:
    hf_model = make_hf_llama(rope_parameters=rope)
    with torch.no_grad():
        expected = hf_model(TOKENS).logits
    torch.testing.assert_close(full_logits(ours_from_hf(hf_model), TOKENS), expected, atol=1e-4, rtol=1e-4)


def test_logits_match_transformers_qwen2_with_biases() -> None:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(1)
    config = Qwen2Config(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         tie_word_embeddings=False, rope_parameters={"rope_type": "default", "rope_theta": 1e6})
    hf_model = Qwen2ForCausalLM(config).eval()
    with torch.no_grad():
        for param in hf_model.parameters():
            param.normal_(0, 0.3)
    ours = ours_from_hf(hf_model)
    assert ours.config.attention_bias and not ours.config.tie_embeddings
    with torch.no_grad():
        expected = hf_model(TOKENS).logits
    torch.testing.assert_close(full_logits(ours, TOKENS), expected, atol=1e-4, rtol=1e-4)


def test_rows_at_different_lengths_equal_one_by_one(hf_llama) -> None:
    """Continuous batching: each row prefilled in its own slots, then one decode step for all rows at once, each
    at its own position."""
    model = ours_from_hf(hf_llama)
    prompts = [[5, 17, 42, 99], [3, 250], [7, 8, 120, 64, 33, 9, 11]]
    cache = KVCache.allocate(model.config, len(prompts), 16, torch.device("cpu"), torch.float32)
    with torch.no_grad():
        prefilled = [model(torch.tensor([ids]), cache.rows(row, row + 1), 0)[0] for row, ids in enumerate(prompts)]
        next_tokens = torch.stack(prefilled).argmax(-1, keepdim=True)
        lengths = torch.tensor([len(ids) for ids in prompts])
        batched_step = model(next_tokens, cache, lengths)
    for row, ids in enumerate(prompts):
        logits = full_logits(model, torch.tensor([[*ids, int(next_tokens[row])]]))[0]
        torch.testing.assert_close(prefilled[row], logits[-2], atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(batched_step[row], logits[-1], atol=1e-4, rtol=1e-4)


def test_kv_cache_decoding_equals_full_recompute(hf_llama) -> None:
    model = ours_from_hf(hf_llama)
    prompt = [5, 17, 42, 99, 3]
    cache = KVCache.allocate(model.config, 1, 64, torch.device("cpu"), torch.float32)
    cached_tokens, recomputed_tokens = list(prompt), list(prompt)
    with torch.no_grad():
        logits = model(torch.tensor([prompt]), cache, 0)
        for step in range(12):
            cached_tokens.append(int(logits.argmax()))
            full = full_logits(model, torch.tensor([recomputed_tokens]))[0, -1]
            recomputed_tokens.append(int(full.argmax()))
            torch.testing.assert_close(logits[0], full, atol=1e-4, rtol=1e-4)
            logits = model(torch.tensor([[cached_tokens[-1]]]), cache, len(prompt) + step)
    assert cached_tokens == recomputed_tokens


def test_static_shape_step_matches_dynamic_step(hf_llama) -> None:
    """The CUDA-graph decode step (positions as a tensor, attention over the whole masked buffer) on CPU."""
    model = ours_from_hf(hf_llama)
    prompt = torch.tensor([[5, 17, 42, 99, 3], [2, 2, 8, 9, 10]])
    logits = {}
    for static in (False, True):
        cache = KVCache.allocate(model.config, 2, 32, torch.device("cpu"), torch.float32)
        with torch.no_grad():
            model(prompt, cache, 0)
            step = torch.tensor([[7], [11]])
            if static:
                logits[static] = model(step, cache, torch.tensor([5, 5]), attend_len=cache.max_len)
            else:
                logits[static] = model(step, cache, 5)
    torch.testing.assert_close(logits[True], logits[False], atol=1e-5, rtol=1e-5)


def test_generation_path_uses_no_modeling_library() -> None:
    forbidden = re.compile(r"scaled_dot_product_attention|MultiheadAttention|^\s*(from|import) transformers", re.M)
    package = Path(__file__).resolve().parents[2] / "models"
    offenders = [p.name for p in package.glob("*.py") if forbidden.search(p.read_text())]
    assert offenders == []
