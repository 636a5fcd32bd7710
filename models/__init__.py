"""The generator: an in-house decoder-only transformer (SmolLM2 / Llama / Qwen2 family) and its engine."""

from models.generate import (
    AsyncTextStream,
    ContextLengthError,
    GenerationResult,
    Generator,
    SamplingParams,
    TextStream,
)
from models.model import KVCache, ModelConfig, Transformer
from models.tokenizer import Tokenizer

__all__ = [
    "AsyncTextStream",
    "ContextLengthError",
    "GenerationResult",
    "Generator",
    "KVCache",
    "ModelConfig",
    "SamplingParams",
    "TextStream",
    "Tokenizer",
    "Transformer",
]
