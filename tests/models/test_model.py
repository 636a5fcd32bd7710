"""Our transformer against transformers' Llama/Qwen2 (test-only reference) on tiny random weights."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from models.kv_cache import KVCache
from models.loading import build_model, config_from_hf
from models.model import CPU_QUERY_BLOCK, SPLIT_WEIGHT_MAX_ROWS, Linear, Segment, Transformer, _row_splits

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


@pytest.fixture
def two_threads():
    """The CPU attention splits rows by thread count (models.model._row_splits): pin it for the test."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("rows", [1, 3, SPLIT_WEIGHT_MAX_ROWS, SPLIT_WEIGHT_MAX_ROWS + 1])
@pytest.mark.parametrize("bias", [False, True])
def test_projection_split_among_threads_equals_one_product(two_threads, rows: int, bias: bool) -> None:
    """Few rows: the weight split into one matrix per thread (a batched matmul); more: one product."""
    torch.manual_seed(0)
    layer = Linear(48, 30, bias=bias)
    x = torch.randn(1, rows, 48)
    with torch.no_grad():
        torch.testing.assert_close(layer(x), torch.nn.functional.linear(x, layer.weight, layer.bias))
        torch.testing.assert_close(layer(x[0, -1]), torch.nn.functional.linear(x[0, -1], layer.weight, layer.bias))


@pytest.mark.parametrize("grad", [False, True], ids=["inference", "autograd"])
@pytest.mark.parametrize(("batch", "kv_heads"), [(2, 2), (1, 3)], ids=["2-rows-2-kv-heads", "1-row-3-kv-heads"])
def test_long_prompt_attended_block_by_block_matches_transformers(make_hf_llama, two_threads, grad: bool,
                                                                  batch: int, kv_heads: int) -> None:
    """199 tokens: three query blocks of CPU_QUERY_BLOCK and a partial one, with the reused score buffer
    (inference) and with fresh tensors (autograd, the training path). 3 key/value heads on 2 threads take the
    split-rows path, whose last block (7 queries x 3 heads: odd) is not split."""
    assert 3 * CPU_QUERY_BLOCK < 199 < 4 * CPU_QUERY_BLOCK
    hf_model = make_hf_llama(hidden_size=48 * kv_heads, num_attention_heads=3 * kv_heads, num_key_value_heads=kv_heads)
    assert (_row_splits(batch * kv_heads, 3 * CPU_QUERY_BLOCK) > 1) == (kv_heads == 3)
    tokens = torch.randint(0, hf_model.config.vocab_size, (batch, 199), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        expected = hf_model(tokens).logits
    model = ours_from_hf(hf_model).requires_grad_(grad)
    cache = KVCache.allocate(model.config, batch, 200, torch.device("cpu"), torch.float32)
    with torch.set_grad_enabled(grad):
        logits = model(tokens, cache, 0, last_only=False)
    assert logits.requires_grad == grad
    torch.testing.assert_close(logits.detach(), expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("chunk", [1, 50, 64, 130])
def test_chunked_prefill_last_token_equals_one_pass(hf_llama, two_threads, chunk: int) -> None:
    """Prefill in chunks (each chunk's queries start past slot 0, blocks end mid-chunk) with the last layer
    computing the last token only: the next-token logits and every cached key and value are those of one
    full pass."""
    model = ours_from_hf(hf_llama)
    tokens = torch.randint(0, hf_llama.config.vocab_size, (1, 150), generator=torch.Generator().manual_seed(4))
    whole = KVCache.allocate(model.config, 1, 160, torch.device("cpu"), torch.float32)
    chunked = KVCache.allocate(model.config, 1, 160, torch.device("cpu"), torch.float32)
    with torch.no_grad():
        expected = model(tokens, whole, 0, last_only=False)[0, -1]
        for start in range(0, tokens.shape[1], chunk):
            logits = model(tokens[:, start : start + chunk], chunked, start)
    torch.testing.assert_close(logits[0], expected, atol=1e-4, rtol=1e-4)
    for ours, reference in zip(chunked.k + chunked.v, whole.k + whole.v, strict=True):
        torch.testing.assert_close(ours, reference, atol=1e-4, rtol=1e-4)


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


def test_segments_in_one_forward_equal_separate_forwards(hf_llama) -> None:
    """Continuous batching's mixed step: a prompt chunk of one row beside a decode step of other rows, in one
    forward, gives the logits and writes the keys and values that two forwards would."""
    model = ours_from_hf(hf_llama)
    prompts = [[5, 17, 42, 99], [3, 250, 7]]
    chunk = torch.tensor([[8, 120, 64, 33, 2, 9]])
    caches = {}
    for mixed in (False, True):
        cache = KVCache.allocate(model.config, 3, 32, torch.device("cpu"), torch.float32)
        with torch.no_grad():
            model(torch.tensor([[11, 12]]), cache.rows(2, 3), 0)  # row 2 already holds two prompt tokens
            for row, ids in enumerate(prompts):
                model(torch.tensor([ids]), cache.rows(row, row + 1), 0)
            step = Segment(torch.tensor([[7], [11]]), cache.rows(0, 2), torch.tensor([4, 3]))
            prompt_chunk = Segment(chunk, cache.rows(2, 3), 2)
            if mixed:
                logits = model.forward_segments([prompt_chunk, step])
            else:
                logits = [model.forward_segments([segment])[0] for segment in (prompt_chunk, step)]
        caches[mixed] = (cache, logits)
    (separate_cache, separate), (mixed_cache, mixed) = caches[False], caches[True]
    assert [t.shape for t in mixed] == [(1, model.config.vocab_size), (2, model.config.vocab_size)]
    for got, expected in zip(mixed, separate, strict=True):
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    for got, expected in zip(mixed_cache.k + mixed_cache.v, separate_cache.k + separate_cache.v, strict=True):
        torch.testing.assert_close(got[:, :, :8], expected[:, :, :8], atol=1e-4, rtol=1e-4)
