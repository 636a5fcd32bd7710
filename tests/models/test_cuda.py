"""The same engine on a CUDA GPU in bfloat16 (skipped without one): the eager model against the CPU
float32 reference, and CUDA-graph decoding against eager decoding."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from models import Generator, SamplingParams
from models.kv_cache import KVCache
from models.loading import build_model, load_gguf

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
TOKENS = [5, 17, 42, 99, 3, 250, 7, 8, 120]


def last_logits(model, device: str) -> torch.Tensor:
    dtype = model.embed_tokens.weight.dtype
    cache = KVCache.allocate(model.config, 1, 16, torch.device(device), dtype)
    with torch.no_grad():
        return model(torch.tensor([TOKENS], device=device), cache, 0, last_only=False)[0].cpu()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cuda_half_precision_logits_close_to_cpu_float32(tiny_gguf: Path, dtype: torch.dtype) -> None:
    config, tensors, _ = load_gguf(tiny_gguf)
    reference = last_logits(build_model(config, tensors), "cpu")
    on_gpu = last_logits(build_model(config, tensors, device="cuda", dtype=dtype), "cuda")
    scale = reference.abs().max()
    assert (on_gpu - reference).abs().max() < 0.05 * scale


def test_cuda_graph_decoding_equals_eager(tiny_gguf: Path) -> None:
    graphs = Generator.from_pretrained(tiny_gguf, device="cuda", dtype="float32")
    eager = Generator.from_pretrained(tiny_gguf, device="cuda", dtype="float32", cuda_graphs=False)
    prompts = ["hello there", "a", "the quick brown fox jumps"]
    params = SamplingParams(max_new_tokens=20, ignore_eos=True)
    for first, second in zip(graphs.generate(prompts, params), eager.generate(prompts, params), strict=True):
        assert first.token_ids == second.token_ids
    # a second request replays the captured graph with a fresh prompt
    assert graphs.generate(prompts[:1], params)[0].token_ids == eager.generate(prompts[:1], params)[0].token_ids
    streamed = "".join(graphs.stream(prompts[0], params))
    assert streamed == eager.generate(prompts[:1], params)[0].text


def test_cuda_bfloat16_rows_at_different_lengths_close_to_one_by_one(tiny_gguf: Path) -> None:
    """The continuous-batching step on a GPU: rows prefilled alone, then one decode step for all, each at its own
    position, against each row decoded alone."""
    config, tensors, _ = load_gguf(tiny_gguf)
    model = build_model(config, tensors, device="cuda", dtype=torch.bfloat16)
    prompts = [TOKENS, TOKENS[:3], TOKENS[2:7]]
    cache = KVCache.allocate(config, len(prompts), 16, torch.device("cuda"), torch.bfloat16)
    with torch.no_grad():
        for row, ids in enumerate(prompts):
            model(torch.tensor([ids], device="cuda"), cache.rows(row, row + 1), 0)
        step = torch.tensor([[11], [12], [13]], device="cuda")
        batched = model(step, cache, torch.tensor([len(ids) for ids in prompts], device="cuda")).cpu()
    for row, ids in enumerate(prompts):
        alone = KVCache.allocate(config, 1, 16, torch.device("cuda"), torch.bfloat16)
        with torch.no_grad():
            expected = model(torch.tensor([[*ids, 11 + row]], device="cuda"), alone, 0).cpu()[0]
        assert (batched[row] - expected).abs().max() < 0.05 * expected.abs().max()
