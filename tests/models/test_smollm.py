"""The real SmolLM2-135M-Instruct GGUF: our logits against transformers' GGUF loader, and fluent answers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import torch

from models import Generator, SamplingParams
from models.kv_cache import KVCache

pytestmark = pytest.mark.slow

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def reference_model(smollm_gguf: Path):
    """transformers' own GGUF dequantization and Q/K handling, in its LlamaForCausalLM.

    (AutoModelForCausalLM.from_pretrained(..., gguf_file=...) does the same but insists on `accelerate`.)
    """
    from transformers import AutoConfig, LlamaForCausalLM
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    config = AutoConfig.from_pretrained(smollm_gguf.parent, gguf_file=smollm_gguf.name)
    model = LlamaForCausalLM(config).eval()
    tensors = load_gguf_checkpoint(str(smollm_gguf), return_tensors=True, model_to_load=model)["tensors"]
    model.load_state_dict(tensors, strict=False)
    model.tie_weights()
    return model


def test_logits_match_transformers_gguf_loader(smollm_generator: Generator, reference_model) -> None:
    prompt = smollm_generator.tokenizer.apply_chat_template(QUESTION)
    ids = torch.tensor([smollm_generator.tokenizer.encode(prompt)])
    model = smollm_generator.model
    cache = KVCache.allocate(model.config, 1, ids.shape[1], torch.device("cpu"), torch.float32)
    with torch.no_grad():
        ours = model(ids, cache, 0, last_only=False)[0]
        expected = reference_model(ids).logits[0]
    torch.testing.assert_close(ours, expected, atol=2e-3, rtol=1e-3)
    assert torch.equal(ours.argmax(-1), expected.argmax(-1))


def test_greedy_answer_matches_reference_and_is_on_topic(smollm_generator: Generator, reference_model) -> None:
    prompt = smollm_generator.tokenizer.apply_chat_template(QUESTION)
    (result,) = smollm_generator.generate([prompt], SamplingParams(max_new_tokens=24))
    assert "Paris" in result.text and result.finish_reason == "stop"
    ids = torch.tensor([smollm_generator.tokenizer.encode(prompt)])
    with torch.no_grad():
        expected = reference_model.generate(ids, max_new_tokens=24, do_sample=False)[0, ids.shape[1]:].tolist()
    assert result.token_ids == [t for t in expected if t not in smollm_generator.tokenizer.eos_token_ids][
        : len(result.token_ids)]


def test_longer_answer_is_fluent_without_loops(smollm_generator: Generator) -> None:
    messages = [
        {"role": "system", "content": "You are a concise economics tutor."},
        {"role": "user", "content": "Explain in two sentences what inflation is and why central banks raise "
                                    "interest rates."},
    ]
    prompt = smollm_generator.tokenizer.apply_chat_template(messages)
    (result,) = smollm_generator.generate([prompt], SamplingParams(max_new_tokens=64))
    text = result.text.lower()
    assert "inflation" in text and ("interest" in text or "rate" in text or "price" in text)
    words = text.split()
    assert len(words) > 15
    trigrams = Counter(zip(words, words[1:], words[2:], strict=False))
    assert max(trigrams.values()) <= 2, f"degenerate repetition: {result.text!r}"
    # the streamed answer is the same text, computed the same way: without the cached prompt of the call above
    # (the last prompt token alone rather than in the whole prompt's forward moves float32 sums by ~1e-7, which
    # the quantized decode step's 8-bit activations can turn into a different token ~45 tokens later)
    smollm_generator.scheduler.forget_prefixes()
    assert "".join(smollm_generator.stream(prompt, SamplingParams(max_new_tokens=64))) == result.text


def test_the_quantized_default_answers_like_float32(smollm_generator: Generator) -> None:
    """The default CPU decode step (Q4_1 weights from the file, our C++ step) against the float32 reference path,
    with every kernel variant this CPU can run (AVX-512 VNNI, AVX2, scalar): the same opening answer, and one decode
    step's logits within the error bound of float32's. (Greedy token ids are not compared: a near-tie a dozen tokens
    in may be broken either way by a variant's rounding.)

    What must hold on every instruction set: the bound, the same top set, and equal argmax only where float32's own
    margin is wider than the quantization error can move it (here float32's top two are 0.08 apart, and VNNI's
    rounding, well inside the bound, may swap them).
    """
    from models import native

    assert smollm_generator.weights.startswith("q4_1")
    kernels = native.kernels()
    assert kernels is not None
    reference = Generator.from_pretrained(device="cpu", weights="float32")
    prompt = smollm_generator.tokenizer.apply_chat_template(QUESTION)
    params = SamplingParams(max_new_tokens=16)
    (theirs,) = reference.generate([prompt], params)
    assert "Paris" in theirs.text
    ids = torch.tensor([reference.tokenizer.encode(prompt)])
    cache = KVCache.allocate(reference.model.config, 1, ids.shape[1] + 1, torch.device("cpu"), torch.float32)
    with torch.inference_mode():
        reference.model(ids[:, :-1], cache, 0)
        step = ids[:, -1:], torch.tensor([ids.shape[1] - 1]), ids.shape[1]
        expected = reference.model(step[0], KVCache([k.clone() for k in cache.k], [v.clone() for v in cache.v]),
                                   *step[1:])[0].flatten()
    variants = kernels.available_isas()
    try:
        for variant in variants:
            kernels.use_isa(variant)
            smollm_generator.scheduler.forget_prefixes()
            (ours,) = smollm_generator.generate([prompt], params)
            assert "Paris" in ours.text, variant
            with torch.inference_mode():
                copy = KVCache([k.clone() for k in cache.k], [v.clone() for v in cache.v])
                quantized = smollm_generator._quantized(step[0], copy, *step[1:])[0].flatten()
            error = (quantized - expected).abs().max().item()
            assert ((quantized - expected).norm() / expected.norm()).item() < 0.1, variant
            top_expected, top_quantized = expected.topk(5).indices.tolist(), quantized.topk(5).indices.tolist()
            assert top_quantized[0] in top_expected[:3] and top_expected[0] in top_quantized[:3], variant
            margin = (expected.topk(2).values[0] - expected.topk(2).values[1]).item()
            if margin > 2 * error:  # a wide margin cannot be flipped by this variant's rounding
                assert top_quantized[0] == top_expected[0], variant
    finally:
        kernels.use_isa(variants[0])
        smollm_generator.scheduler.forget_prefixes()
