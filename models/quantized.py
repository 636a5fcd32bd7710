"""Quantized weights for the CPU decode step: GGML blocks and one C++ call per step (models/kernels/).

Every projection and the LM head are held as GGML blocks of 32 weights: Q4_1 (4-bit values with a scale and a
minimum, what SmolLM2's GGUF stores) or Q8_0 (8-bit values with a scale, the GGUF's token embedding). Matrices the
file stores in the wanted format are taken from it as they are (the 4-bit blocks are never widened to float32 and
back); matrices that differ from the file (a merged LoRA adapter) or come from float weights are quantized here,
the way ggml's reference quantizers do.

`QuantizedDecoder` is the scheduler's decode step (the same signature as the CUDA-graph one): the whole step for
every running row -- all layers, the keys and values written into the scheduler's cache -- is one call into
`DecodeModel.step` (models/kernels/decode.cpp), with no Python per layer. Prompts still run the float32 model:
its MKL matrix products are faster for hundreds of rows, so prefill does not slow down, and both write the same
cache.

weights: "float32" (the reference), "q4_1" (Q4_1 projections, Q8_0 embedding/LM head, the file's formats),
"q8_0" (every matrix Q8_0: 1.7x the bytes of Q4_1, closer to float32), "auto" (on CPU where the kernels build,
else float32): each matrix as the file stores it where the model's weights are still the file's, Q8_0 where they
are not. A merged LoRA adapter (the service's default) changes every projection by less than a 4-bit step:
requantized to Q4_1 most of its update is rounded away (benchmarks.aer_dev: citation hit 0.638 against float32's
0.831), in Q8_0 it stays.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

import gguf
import torch
from torch import Tensor

from models.kv_cache import KVCache
from models.loading import unpermute_rotary_rows
from models.model import Transformer
from models.native import kernels

log = logging.getLogger(__name__)

Weights = Literal["auto", "float32", "q4_1", "q8_0"]
WEIGHT_CHOICES = ("auto", "float32", "q4_1", "q8_0")
Q4_1, Q8_0 = 1, 2  # the kernels' format codes
_GGML_FORMATS = {gguf.GGMLQuantizationType.Q4_1: Q4_1, gguf.GGMLQuantizationType.Q8_0: Q8_0}
_PROJECTIONS = ("attn.qkv_proj", "attn.o_proj", "mlp.gate_up_proj", "mlp.down_proj")
_GGUF_PARTS = {"attn.qkv_proj": ("attn_q", "attn_k", "attn_v"), "attn.o_proj": ("attn_output",),
               "mlp.gate_up_proj": ("ffn_gate", "ffn_up"), "mlp.down_proj": ("ffn_down",)}  # fmt: skip


@dataclass(frozen=True)
class BlockMatrix:
    """A (rows, cols) matrix as raw GGML blocks: uint8 (rows, cols / 32 * block bytes)."""

    data: Tensor
    format: int
    rows: int
    cols: int


def gguf_blocks(reader: gguf.GGUFReader) -> dict[str, BlockMatrix]:
    """The file's Q4_1 and Q8_0 matrices under our (fused) weight names, Q/K rows in Hugging Face order."""
    arch = str(reader.fields["general.architecture"].contents())
    heads = int(reader.fields[f"{arch}.attention.head_count"].contents())
    kv_field = reader.fields.get(f"{arch}.attention.head_count_kv")
    kv_heads = int(kv_field.contents()) if kv_field is not None else heads
    tensors = {t.name: t for t in reader.tensors if t.tensor_type in _GGML_FORMATS}

    def raw(name: str) -> tuple[Tensor, int, int] | None:
        tensor = tensors.get(name)
        if tensor is None:
            return None
        data = torch.from_numpy(tensor.data.copy())  # (rows, bytes per row), a copy of the memory-mapped file
        if arch in ("llama", "mistral") and (name.endswith("attn_q.weight") or name.endswith("attn_k.weight")):
            data = unpermute_rotary_rows(data, heads if "attn_q" in name else kv_heads).contiguous()
        return data, _GGML_FORMATS[tensor.tensor_type], int(tensor.shape[0])

    def fused(names: list[str], ours: str) -> dict[str, BlockMatrix]:
        parts = [raw(name) for name in names]
        if any(part is None for part in parts) or len({(p[1], p[2]) for p in parts}) != 1:  # type: ignore[index]
            return {}
        data = torch.cat([p[0] for p in parts]).contiguous()  # type: ignore[index]
        return {ours: BlockMatrix(data, parts[0][1], data.shape[0], parts[0][2])}  # type: ignore[index]

    out = fused(["token_embd.weight"], "embed_tokens.weight") | fused(["output.weight"], "lm_head.weight")
    layers = 1 + max((int(name.split(".")[1]) for name in tensors if name.startswith("blk.")), default=-1)
    for layer in range(layers):
        for ours, parts in _GGUF_PARTS.items():
            out |= fused([f"blk.{layer}.{part}.weight" for part in parts], f"layers.{layer}.{ours}.weight")
    return out


def supports(model: Transformer) -> str | None:
    """Why the quantized step cannot run this model, or None."""
    config, weight = model.config, model.embed_tokens.weight
    if weight.device.type != "cpu" or weight.dtype != torch.float32:
        return "it runs float32 models on the CPU"
    if any(size % 32 for size in (config.hidden_size, config.intermediate_size, config.num_heads * config.head_dim)):
        return "the hidden, MLP and attention widths must be multiples of 32"
    if not all(hasattr(getattr(model.layers[0], p.split(".")[0]), p.split(".")[1]) for p in _PROJECTIONS) or any(
        not hasattr(module, "weight") for module in (model.layers[0].attn.qkv_proj, model.lm_head)
    ):
        return "the projections are not plain weights"
    return None


class QuantizedDecoder:
    """A DecodeStep (steps.py): step(tokens (n, 1), cache rows 0..n-1, positions (n,), attend_len) -> logits (n, V),
    as the model's decode step; rows at or beyond attend_len are the scheduler's idle rows, not computed at all (zero
    logits): a step costs what its running rows cost, whichever slots they hold."""

    # Other arithmetic than the float32 forward: the running rows always go through this step, never beside a
    # prompt chunk in the model's forward, so an answer does not depend on what else is running.
    joins_prefill = False

    def __init__(self, model: Transformer, weights: Literal["auto", "q4_1", "q8_0"],
                 blocks: dict[str, BlockMatrix] | None = None) -> None:  # fmt: skip
        native = kernels()
        if native is None:
            raise RuntimeError("the quantized kernels are not available (see the log)")
        self.isa = native.isa()
        projection_format = {"auto": None, "q4_1": Q4_1, "q8_0": Q8_0}[weights]
        blocks = blocks or {}
        state = model.state_dict()
        self.from_file = 0  # matrices whose blocks come from the file as they are

        def matrix(name: str, wanted: int | None) -> BlockMatrix:
            """wanted None: the file's blocks where the weights are still the file's, else Q8_0."""
            weight = state[name]
            stored = blocks.get(name)
            same = (stored is not None and wanted in (None, stored.format)
                    and stored.data.shape[0] == weight.shape[0])  # fmt: skip
            if same and torch.equal(native.dequantize(stored.data, stored.format, stored.rows, stored.cols), weight):
                self.from_file += 1
                return stored  # the file's blocks, untouched
            wanted = Q8_0 if wanted is None else wanted
            return BlockMatrix(native.quantize(weight, wanted), wanted, *weight.shape)

        config = model.config
        layers, formats = [], []
        for index, layer in enumerate(model.layers):
            mats = [matrix(f"layers.{index}.{p}.weight", projection_format) for p in _PROJECTIONS]
            bias = layer.attn.qkv_proj.bias
            layers.append([layer.attn_norm.weight, layer.mlp_norm.weight,
                           torch.empty(0) if bias is None else bias.detach(), *[m.data for m in mats]])
            formats.append([m.format for m in mats])
        embed = matrix("embed_tokens.weight", None if weights == "auto" else Q8_0)
        head = embed if config.tie_embeddings else matrix("lm_head.weight", None if weights == "auto" else Q8_0)
        names = {Q4_1: "q4_1", Q8_0: "q8_0"}
        # What /v1/info shows: the projections' format(s), e.g. "q4_1", or "q8_0" for an adapter merged into them.
        self.weights = "+".join(sorted({names[f] for layer in formats for f in layer}))
        shape = [config.hidden_size, config.intermediate_size, config.num_heads, config.num_kv_heads,
                 config.head_dim, config.vocab_size]  # fmt: skip
        self._step = native.DecodeModel(layers, formats, embed.data, embed.format, head.data, head.format,
                                        model.norm.weight, model.rotary.cos, model.rotary.signed_sin, shape,
                                        config.rms_norm_eps)  # fmt: skip
        # Bytes read per decode step: every projection and the LM head (one row of the embedding).
        self.weight_bytes = head.data.numel() + sum(t.numel() for layer in layers for t in layer[3:])
        self._bound: tuple[int, int] | None = None

    @property
    def name(self) -> str:
        return f"{self.weights} ({self.isa})"

    def __call__(self, tokens: Tensor, cache: KVCache, positions: Tensor, attend_len: int) -> Tensor:
        binding = (cache.k[0].data_ptr(), cache.batch_size)
        if binding != self._bound:
            self._step.bind_cache(cache.k, cache.v)
            self._bound = binding
        return self._step.step(tokens.reshape(-1), positions.reshape(-1), attend_len)


def decoder_for(model: Transformer, weights: Weights,
                blocks: dict[str, BlockMatrix] | None = None) -> QuantizedDecoder | None:  # fmt: skip
    """The quantized decode step the choice asks for, or None (float32: the model itself). "auto" falls back to
    float32 with a log line where the kernels cannot run; an explicit q4_1/q8_0 that cannot run raises."""
    if weights not in WEIGHT_CHOICES:
        raise ValueError(f"weights must be one of {', '.join(WEIGHT_CHOICES)}, got {weights!r}.")
    if weights == "float32" or (weights == "auto" and model.embed_tokens.weight.device.type != "cpu"):
        return None
    reason = supports(model)
    if reason is None and kernels() is None:
        reason = "the kernels did not build (see the log above)"
    if reason is not None:
        if weights != "auto":
            raise ValueError(f"weights={weights!r} cannot run here: {reason}.")
        log.warning("generator: float32 weights (quantized decode step unavailable: %s)", reason)
        return None
    return QuantizedDecoder(model, weights, blocks)
