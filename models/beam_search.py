"""Beam search (deterministic, batch 1): keeps num_beams partial answers and returns the best finished one.

It runs outside the decode loop of the engine, on a cache of its own, because beams are reordered every step.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from models.detokenize import FinishReason, GenerationResult, OutputText
from models.kv_cache import KVCache
from models.model import ModelConfig, Transformer
from models.sampling import SamplingParams, adjust_logits
from models.tokenizer import Tokenizer


class Engine(Protocol):
    """What beam search needs of the engine (models.engine.Generator)."""

    model: Transformer
    tokenizer: Tokenizer
    config: ModelConfig
    device: torch.device
    dtype: torch.dtype

    def new_token_budget(self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams) -> int: ...

    def cache_length(self, total_len: int) -> int: ...

    def prefill(self, cache: KVCache, tokens: Tensor, start: int) -> Tensor: ...


@torch.inference_mode()
def beam_search(engine: Engine, prompt_ids: list[int], params: SamplingParams,
                cancel: threading.Event) -> GenerationResult:
    """Keep the num_beams best partial answers by total log-probability; rank finished ones by
    sum log p / length ** length_penalty (length counts the EOS)."""
    beams = params.num_beams
    budget = engine.new_token_budget([prompt_ids], params)
    prompt_len = len(prompt_ids)
    cache_len = engine.cache_length(prompt_len + budget)
    cache = KVCache.allocate(engine.config, beams, cache_len, engine.device, engine.dtype)
    # Prefill row 0 only, then copy it to the other beams.
    prompt = torch.tensor([prompt_ids], device=engine.device)
    logits = engine.prefill(cache.rows(0, 1), prompt, 0).expand(beams, -1)
    filled = prompt_len
    cache.reorder(torch.zeros(beams, dtype=torch.long, device=engine.device), filled)
    eos = set() if params.ignore_eos else set(engine.tokenizer.eos_token_ids)
    scores = torch.full((beams,), float("-inf"), device=engine.device)
    scores[0] = 0.0  # all beams start identical: expand only the first
    history = torch.zeros(beams, 0, dtype=torch.long, device=engine.device)
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
        rows = torch.tensor(keep_rows, device=engine.device)
        new_tokens = torch.tensor(keep_tokens, device=engine.device)
        history = torch.cat([history.index_select(0, rows), new_tokens[:, None]], dim=1)
        scores = torch.tensor(keep_scores, device=engine.device)
        if len(keep_rows) < beams:  # fewer live candidates than beams: pad with dead copies
            pad = beams - len(keep_rows)
            rows = torch.cat([rows, rows[:1].expand(pad)])
            history = torch.cat([history, history[:1].expand(pad, -1)])
            scores = torch.cat([scores, torch.full((pad,), float("-inf"), device=engine.device)])
        cache.reorder(rows, filled)
        if step + 1 == budget:
            break
        logits = engine.model(history[:, -1:], cache, prompt_len + step)
        filled = prompt_len + step + 1
    reason: FinishReason = "cancelled" if cancel.is_set() else "length"
    for row in range(beams):
        if scores[row] > float("-inf") and history.shape[1]:
            length = history.shape[1]
            finished.append((float(scores[row]) / length ** params.length_penalty, history[row].tolist(), reason))
    best_tokens: list[int] = []
    best_reason: FinishReason = reason
    if finished:
        _, best_tokens, best_reason = max(finished, key=lambda f: f[0])
    output = OutputText(engine.tokenizer, params)
    for token in best_tokens:
        output.push(token)
    output.finish(best_reason)
    result = output.result(prompt_len)
    result.generated_tokens = steps
    return result
