"""The same engine on a CUDA GPU in bfloat16 (skipped without one): the eager model against the CPU
float32 reference, and CUDA-graph decoding against eager decoding."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from models import Generator, SamplingParams
from models.loading import build_model, load_gguf
from models.model import KVCache

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
TOKENS = [5, 17, 42, 99, 3, 250, 7, 8, 120]


def last_logits(model, device: str) -> torch.Tensor:
    dtype = model.embed_tokens.weight.dtype
    cache = KVCache.allocate(model.config, 1, 16, torch.device(device), dtype)
    cache.key_valid[:] = True
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


def test_cuda_bfloat16_left_padded_batch_close_to_one_by_one(tiny_gguf: Path) -> None:
    config, tensors, _ = load_gguf(tiny_gguf)
    model = build_model(config, tensors, device="cuda", dtype=torch.bfloat16)
    prompts = [TOKENS, TOKENS[:3], TOKENS[2:7]]
    longest = max(map(len, prompts))
    batch = torch.full((len(prompts), longest), 2, device="cuda")
    cache = KVCache.allocate(config, len(prompts), longest, torch.device("cuda"), torch.bfloat16)
    for row, ids in enumerate(prompts):
        batch[row, longest - len(ids):] = torch.tensor(ids)
        cache.key_valid[row, longest - len(ids):] = True
    with torch.no_grad():
        batched = model(batch, cache, 0).cpu()
    for row, ids in enumerate(prompts):
        alone = KVCache.allocate(config, 1, len(ids), torch.device("cuda"), torch.bfloat16)
        alone.key_valid[:] = True
        with torch.no_grad():
            expected = model(torch.tensor([ids], device="cuda"), alone, 0).cpu()[0]
        assert (batched[row] - expected).abs().max() < 0.05 * expected.abs().max()
