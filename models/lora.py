"""Low-rank adapters (LoRA) for `models.model.Transformer`, written in plain torch.

A LoRA layer keeps the pretrained `nn.Linear` frozen and learns a low-rank update
W' = W + (alpha / rank) * B @ A, with A (rank, in) random and B (out, rank) zero, so training starts
exactly at the base model. Our transformer fuses Q/K/V into `attn.qkv_proj` and gate/up into
`mlp.gate_up_proj`; one adapter per fused matrix is the same as one per part with a shared A.

What ships is only A and B (safetensors) plus `adapter_config.json`; `apply_adapter` loads them onto a
base model and merges them into the base weights, so inference runs at exactly the base model's speed.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from models.model import Transformer

ADAPTER_WEIGHTS = "adapter.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
# The four projection matrices of every block (attention and MLP), by module name.
ALL_PROJECTIONS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")


class AdapterError(ValueError):
    """An adapter cannot be applied: missing files, unknown settings, or tensors that do not fit the model."""


@dataclass(frozen=True)
class LoraConfig:
    rank: int = 8
    alpha: float = 16.0
    dropout: float = 0.05
    target_modules: tuple[str, ...] = ALL_PROJECTIONS
    base_model: str = ""  # informational: which base weights the adapter was trained on
    extra: dict = field(default_factory=dict)  # informational (e.g. training steps), saved as is

    def __post_init__(self) -> None:
        if self.rank < 1:
            raise ValueError(f"LoRA rank must be at least 1, got {self.rank}.")
        if self.alpha <= 0:
            raise ValueError(f"LoRA alpha must be positive, got {self.alpha}.")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"LoRA dropout must be in [0, 1), got {self.dropout}.")
        unknown = set(self.target_modules) - set(ALL_PROJECTIONS)
        if not self.target_modules or unknown:
            raise ValueError(
                f"LoRA target_modules must be a non-empty subset of {ALL_PROJECTIONS}, got {self.target_modules}."
            )
        object.__setattr__(self, "target_modules", tuple(self.target_modules))

    @property
    def scaling(self) -> float:
        return self.alpha / self.rank

    def to_json(self) -> dict:
        return {**asdict(self), "target_modules": list(self.target_modules)}

    @classmethod
    def from_json(cls, data: dict) -> LoraConfig:
        known = {name for name in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise AdapterError(f"Unknown adapter settings {sorted(unknown)} in {ADAPTER_CONFIG}.")
        return cls(**{**data, "target_modules": tuple(data.get("target_modules", ALL_PROJECTIONS))})


class LoraLinear(nn.Module):
    """A frozen `nn.Linear` plus a trainable low-rank update."""

    def __init__(self, base: nn.Linear, config: LoraConfig) -> None:
        super().__init__()
        self.base = base.requires_grad_(False)
        self.scaling = config.scaling
        weight = base.weight
        self.lora_a = nn.Parameter(torch.empty(config.rank, base.in_features, device=weight.device))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, config.rank, device=weight.device))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))  # as nn.Linear initialises its weight
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        update = self.dropout(x) @ self.lora_a.t().to(x.dtype) @ self.lora_b.t().to(x.dtype)
        return self.base(x) + update * self.scaling

    def delta_weight(self) -> Tensor:
        return (self.lora_b.float() @ self.lora_a.float()) * self.scaling

    def merged(self) -> nn.Linear:
        """The base Linear with the update folded into its weight (in place)."""
        with torch.no_grad():
            self.base.weight += self.delta_weight().to(self.base.weight.dtype)
        return self.base


def _targets(model: Transformer, config: LoraConfig) -> list[tuple[nn.Module, str, str]]:
    """(parent module, attribute, full name) for every projection the adapter wraps."""
    found = []
    for name, module in model.named_modules():
        for attribute in config.target_modules:
            child = getattr(module, attribute, None)
            if isinstance(child, nn.Linear | LoraLinear):
                found.append((module, attribute, f"{name}.{attribute}"))
    return found


def add_lora(model: Transformer, config: LoraConfig) -> list[str]:
    """Wrap the target projections in LoRA layers, freeze everything else; returns the wrapped names."""
    model.requires_grad_(False)
    names = []
    for parent, attribute, name in _targets(model, config):
        layer = getattr(parent, attribute)
        if isinstance(layer, LoraLinear):
            raise AdapterError(f"{name} already has a LoRA adapter.")
        setattr(parent, attribute, LoraLinear(layer, config))
        names.append(name)
    if not names:
        raise AdapterError(f"The model has none of the projections {config.target_modules}.")
    return names


def lora_layers(model: nn.Module) -> dict[str, LoraLinear]:
    return {name: module for name, module in model.named_modules() if isinstance(module, LoraLinear)}


def lora_state_dict(model: nn.Module) -> dict[str, Tensor]:
    """Only the adapter tensors: "<projection name>.lora_a" / ".lora_b"."""
    state = {}
    for name, layer in lora_layers(model).items():
        state[f"{name}.lora_a"] = layer.lora_a.detach()
        state[f"{name}.lora_b"] = layer.lora_b.detach()
    return state


def merge_lora(model: nn.Module) -> int:
    """Fold every adapter into its base weight and put the plain Linear back; returns how many were merged."""
    layers = lora_layers(model)
    for name, layer in layers.items():
        parent_name, _, attribute = name.rpartition(".")
        setattr(model.get_submodule(parent_name), attribute, layer.merged())
    return len(layers)


def save_adapter(model: nn.Module, config: LoraConfig, directory: Path,
                 dtype: torch.dtype = torch.float16) -> Path:
    """Write adapter.safetensors (the A and B matrices, float16 by default: half the size, same quality)
    and adapter_config.json into `directory`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {name: t.to(dtype).contiguous().cpu() for name, t in lora_state_dict(model).items()}
    if not tensors:
        raise AdapterError("The model has no LoRA layers to save.")
    save_file(tensors, str(directory / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    (directory / ADAPTER_CONFIG).write_text(json.dumps(config.to_json(), indent=2) + "\n")
    return directory


def read_adapter(directory: Path) -> tuple[LoraConfig, dict[str, Tensor]]:
    directory = Path(directory)
    weights, config_file = directory / ADAPTER_WEIGHTS, directory / ADAPTER_CONFIG
    if not weights.is_file() or not config_file.is_file():
        raise AdapterError(f"{directory} is not an adapter directory: it needs {ADAPTER_WEIGHTS} and {ADAPTER_CONFIG}.")
    return LoraConfig.from_json(json.loads(config_file.read_text())), load_file(str(weights))


def load_adapter_weights(model: nn.Module, tensors: dict[str, Tensor]) -> None:
    """Copy saved A/B matrices into a model that already has (matching) LoRA layers."""
    layers = lora_layers(model)
    expected = {f"{name}.lora_{part}" for name in layers for part in "ab"}
    if set(tensors) != expected:
        missing, extra = sorted(expected - set(tensors))[:3], sorted(set(tensors) - expected)[:3]
        raise AdapterError(f"The adapter does not fit this model (missing {missing}, unexpected {extra}).")
    with torch.no_grad():
        for name, layer in layers.items():
            for part in "ab":
                target, value = getattr(layer, f"lora_{part}"), tensors[f"{name}.lora_{part}"]
                if target.shape != value.shape:
                    raise AdapterError(f"{name}.lora_{part} has shape {tuple(value.shape)}, the model needs "
                                       f"{tuple(target.shape)}: the adapter was trained for another model.")
                target.copy_(value.to(target.dtype))


def apply_adapter(model: Transformer, directory: str | Path, merge: bool = True) -> LoraConfig:
    """Load the adapter in `directory` onto `model`; merged into the base weights unless merge=False.

    This is what `Generator.from_pretrained(..., adapter=path)` calls after loading the base weights.
    """
    config, tensors = read_adapter(Path(directory))
    add_lora(model, config)
    load_adapter_weights(model, tensors)
    if merge:
        merge_lora(model)
        model.requires_grad_(False)
    return config
