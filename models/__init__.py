"""The generator engine: an in-house decoder-only transformer (SmolLM2 / Llama / Qwen2 family) and what runs it.

    model.py        the transformer in one file (config, RMSNorm, attention, MLP, block, segments)
    kv_cache.py     the KV cache, where new tokens go in it and what they may see
    loading.py      GGUF and Hugging Face safetensors weights      tokenizer.py  BPE + chat template
    sampling.py     next-token choice                              detokenize.py incremental text, stop strings
    engine.py       Generator: prefill, decode, prefix reuse       streams.py    sync and async text streams
    scheduler.py    continuous batching: one loop, prompt chunks and decode rows in one forward
    planning.py     what a turn of the loop does (a Plan)          runner.py     builds a plan's tensors, runs it
    steps.py        the decode step's protocol                     cuda_graphs.py  CUDA-graph decode steps
    quantized.py    the CPU decode step on GGML Q4_1/Q8_0 blocks: one C++ call per step (native.py, kernels/)
    fused_step.py   the GPU decode step through our Triton kernels (triton_kernels.py), for the CUDA graph
    lora.py         adapters (devices and precisions: runtime/device.py)
"""

import runtime  # noqa: F401  (first: it sets OpenMP's waiting policy before torch loads)
from models.detokenize import GenerationResult
from models.engine import ContextLengthError, Generator
from models.kv_cache import KVCache
from models.model import ModelConfig, Transformer
from models.sampling import SamplingParams
from models.streams import AsyncTextStream, TextStream
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
