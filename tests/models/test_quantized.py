"""The quantized decode step (models/quantized.py, models/kernels/): block formats against gguf's reference
quantizers, every kernel variant against the scalar one, and the whole C++ step against the float32 model."""

from __future__ import annotations

import logging

import gguf
import pytest
import torch

from models import Generator, SamplingParams
from models.kv_cache import KVCache
from models.loading import build_model, load_gguf
from models.native import kernels, unavailable_reason
from models.quantized import Q4_1, Q8_0, QuantizedDecoder, decoder_for, gguf_blocks

GGML = {Q4_1: gguf.GGMLQuantizationType.Q4_1, Q8_0: gguf.GGMLQuantizationType.Q8_0}


@pytest.fixture(scope="module")
def native():
    module = kernels()
    assert module is not None, f"the kernels must build on the test machines ({unavailable_reason()})"
    return module


@pytest.mark.parametrize("fmt", [Q4_1, Q8_0])
def test_blocks_are_ggmls_reference_quantization(native, fmt: int) -> None:
    weight = torch.randn(48, 96, generator=torch.Generator().manual_seed(fmt)) * 0.1
    weight[3, :32] = 0.0  # an all-zero block
    ours = native.quantize(weight, fmt)
    reference = gguf.quants.quantize(weight.numpy(), GGML[fmt])
    assert ours.numpy().tobytes() == reference.tobytes()
    restored = native.dequantize(ours, fmt, 48, 96)
    assert torch.equal(restored, torch.from_numpy(gguf.quants.dequantize(reference, GGML[fmt]).reshape(48, 96)))


@pytest.mark.parametrize("fmt", [Q4_1, Q8_0])
@pytest.mark.parametrize("rows", [1, 3, 4, 9])
@pytest.mark.parametrize("out_rows", [40, 36], ids=["repacked-8-rows", "plain"])  # rows in eights are repacked
def test_every_kernel_variant_equals_the_scalar_one_and_the_float_product(native, fmt: int, rows: int,
                                                                          out_rows: int) -> None:  # fmt: skip
    rng = torch.Generator().manual_seed(rows)
    # 160 columns: five blocks, so the last pair is padded and the eight-block scale groups are partial
    weight, x = torch.randn(out_rows, 160, generator=rng), torch.randn(rows, 160, generator=rng)
    blocks = native.quantize(weight, fmt)
    variants = native.available_isas()  # e.g. avx512vnni, avx2, scalar: all that this CPU runs
    assert variants[0] == native.isa() and variants[-1] == "scalar"
    results = {}
    try:
        for variant in variants:
            native.use_isa(variant)
            results[variant] = native.linear(blocks, fmt, out_rows, 160, x)
    finally:
        native.use_isa(variants[0])
    for variant in variants[:-1]:  # integer sums: only the order of the float operations differs
        torch.testing.assert_close(results[variant], results["scalar"], atol=1e-4, rtol=1e-5)
    exact = x @ native.dequantize(blocks, fmt, out_rows, 160).T  # what is left is the activations' 8-bit rounding
    assert ((results["scalar"] - exact).norm() / exact.norm()).item() < 0.02


def dequantized_model(tiny_gguf, weights: str):
    """The tiny model, and a float32 copy whose matrices are the quantized ones widened back to float."""
    config, tensors, reader = load_gguf(tiny_gguf)
    model = build_model(config, tensors)
    decoder = QuantizedDecoder(model, weights, gguf_blocks(reader))
    widened = build_model(config, tensors)
    native = kernels()
    fmt = Q4_1 if weights == "q4_1" else Q8_0
    for name, param in widened.named_parameters():
        if param.dim() == 2:
            wanted = Q8_0 if name.startswith(("embed_tokens", "lm_head")) else fmt
            param.copy_(native.dequantize(native.quantize(param, wanted), wanted, *param.shape))
    return model, decoder, widened


@pytest.mark.parametrize("weights", ["q4_1", "q8_0"])
def test_the_step_equals_the_float_model_with_the_same_weights(native, tiny_gguf, weights: str) -> None:
    """Rows at different positions, an idle row: logits and the cache's new keys and values, against the
    float32 model holding the dequantized weights (the difference left is the activations' int8 rounding)."""
    model, decoder, widened = dequantized_model(tiny_gguf, weights)
    config = model.config
    prompt = torch.randint(3, config.vocab_size, (3, 20), generator=torch.Generator().manual_seed(0))
    ours = KVCache.allocate(config, 3, 64, torch.device("cpu"), torch.float32)
    with torch.inference_mode():
        widened(prompt, ours, 0)
        theirs = KVCache([k.clone() for k in ours.k], [v.clone() for v in ours.v])
        tokens, positions = torch.tensor([[5], [7], [9]]), torch.tensor([20, 13, 63])  # row 2 is idle
        expected = widened(tokens, theirs, positions, 21)
        idle_before = [k[2].clone() for k in ours.k]
        logits = decoder(tokens, ours, positions, 21)
    assert torch.equal(logits[2], torch.zeros_like(logits[2]))  # the idle row is not computed ...
    assert all(torch.equal(k[2], before) for k, before in zip(ours.k, idle_before, strict=True))  # ... nor written
    for row in (0, 1):
        error = (logits[row] - expected[row]).norm() / expected[row].norm()
        assert error < 0.05, f"row {row}: relative error {error:.3f}"
        assert logits[row].argmax() == expected[row].argmax()
        for written, wanted in zip([*ours.k, *ours.v], [*theirs.k, *theirs.v], strict=True):
            new, reference = written[row, :, positions[row]], wanted[row, :, positions[row]]
            assert (new - reference).norm() / reference.norm() < 0.05
            assert torch.equal(written[row, :, : positions[row]], wanted[row, :, : positions[row]])  # the rest stays


def test_file_blocks_are_used_as_they_are(native, tiny_gguf, tmp_path, hf_llama) -> None:
    """A Q4_1/Q8_0 GGUF: the step reads the file's blocks; a matrix changed after loading is quantized anew."""
    from tests.models.conftest import write_gguf

    types = {f"blk.{i}.{part}.weight": gguf.GGMLQuantizationType.Q4_1 for i in range(2)
             for part in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")}
    types["token_embd.weight"] = gguf.GGMLQuantizationType.Q8_0
    path = write_gguf(tmp_path / "q4.gguf", hf_llama, types)
    config, tensors, reader = load_gguf(path)
    blocks = gguf_blocks(reader)
    assert blocks["layers.0.attn.qkv_proj.weight"].format == Q4_1 and blocks["embed_tokens.weight"].format == Q8_0
    model = build_model(config, tensors)
    assert QuantizedDecoder(model, "q4_1", blocks).from_file == 2 * 4 + 1
    with torch.no_grad():
        model.layers[1].mlp.down_proj.weight.mul_(1.01)
    assert QuantizedDecoder(model, "q4_1", blocks).from_file == 2 * 4
    assert QuantizedDecoder(model, "q8_0", blocks).from_file == 1  # only the embedding is Q8_0 in the file
    auto = QuantizedDecoder(model, "auto", blocks)  # the file's blocks where unchanged, Q8_0 for the changed one
    assert auto.from_file == 2 * 4 and auto.weights == "q4_1+q8_0"
    with torch.no_grad():
        for layer in model.layers:  # every projection changed, as a merged LoRA adapter does
            for linear in (layer.attn.qkv_proj, layer.attn.o_proj, layer.mlp.gate_up_proj, layer.mlp.down_proj):
                linear.weight.add_(1e-3)
    auto = QuantizedDecoder(model, "auto", blocks)
    assert auto.from_file == 1 and auto.weights == "q8_0"


def test_generator_reports_its_weights_and_quantized_answers_track_float32(native, tiny_gguf) -> None:
    quantized = Generator.from_pretrained(tiny_gguf, device="cpu")
    reference = Generator.from_pretrained(tiny_gguf, device="cpu", weights="float32")
    # a float GGUF: every matrix is quantized here, to Q8_0 (auto takes 4-bit blocks only as a file stores them)
    assert quantized.weights == f"q8_0 ({native.isa()})" and reference.weights == "float32"
    params = SamplingParams(max_new_tokens=6, ignore_eos=True)
    prompt = "the quick brown fox"
    first = quantized.generate([prompt], params)[0]
    assert first.generated_tokens == 6
    assert first.token_ids[0] == reference.generate([prompt], params)[0].token_ids[0]  # the prompt's logits: float32
    assert quantized.generate([prompt, "a"], params)[0].token_ids == first.token_ids  # batching changes nothing


def test_without_kernels_auto_falls_back_to_float32_with_a_log_line(tiny_gguf, monkeypatch, caplog) -> None:
    monkeypatch.setenv("AER_RAG_NATIVE_KERNELS", "0")
    assert unavailable_reason() == "disabled by AER_RAG_NATIVE_KERNELS=0"
    monkeypatch.setattr("models.quantized.kernels", lambda: None)
    config, tensors, _ = load_gguf(tiny_gguf)
    model = build_model(config, tensors)
    with caplog.at_level(logging.WARNING, logger="models.quantized"):
        assert decoder_for(model, "auto") is None
    assert "float32 weights" in caplog.text
    with pytest.raises(ValueError, match="cannot run here"):
        decoder_for(model, "q4_1")
    with pytest.raises(ValueError, match="weights must be one of"):
        decoder_for(model, "int4")  # type: ignore[arg-type]
