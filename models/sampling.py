"""Choosing the next token from logits: penalties, temperature, top-k, top-p, greedy or seeded sampling.

All functions work on a batch: logits (B, V) float32, history (B, N) of the tokens generated so far.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

MIN_TEMPERATURE = 1e-4  # below this, sampling is greedy (the schema lets clients send 1e-40)


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 256
    temperature: float = 0.0  # 0 = greedy
    top_k: int = 0  # 0 = off
    top_p: float = 1.0
    repetition_penalty: float = 1.0  # > 1 discourages repeating tokens already generated
    no_repeat_ngram_size: int = 0  # 0 = off; n bans any n-gram from occurring twice in the answer
    seed: int | None = None
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False  # keep going past EOS (benchmarks: a fixed number of new tokens)
    # Token sequences the answer may not begin with (e.g. a refusal once retrieval has decided the
    # question is answerable); each is cut off at its last token.
    banned_openings: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        checks = [
            (self.max_new_tokens >= 1, f"max_new_tokens must be at least 1, got {self.max_new_tokens}."),
            (self.temperature >= 0.0, f"temperature must be >= 0 (0 = greedy), got {self.temperature}."),
            (self.top_k >= 0, f"top_k must be >= 0 (0 = off), got {self.top_k}."),
            (0.0 < self.top_p <= 1.0, f"top_p must be in (0, 1], got {self.top_p}."),
            (self.repetition_penalty > 0.0, f"repetition_penalty must be > 0, got {self.repetition_penalty}."),
            (self.no_repeat_ngram_size >= 0, f"no_repeat_ngram_size must be >= 0, got {self.no_repeat_ngram_size}."),
            (all(isinstance(s, str) and s for s in self.stop), "stop strings must be non-empty strings."),
            (all(len(opening) > 0 for opening in self.banned_openings), "banned openings must not be empty."),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        if not isinstance(self.stop, tuple):
            object.__setattr__(self, "stop", tuple(self.stop))
        object.__setattr__(self, "banned_openings", tuple(tuple(int(t) for t in o) for o in self.banned_openings))

    @property
    def greedy(self) -> bool:
        # A temperature this small is greedy in effect, and dividing by it would overflow float32 logits.
        return self.temperature < MIN_TEMPERATURE

    @property
    def plain_greedy(self) -> bool:
        """Greedy with no history-dependent rule: a whole batch of such rows is one argmax."""
        return (self.greedy and self.repetition_penalty == 1.0 and self.no_repeat_ngram_size == 0
                and not self.banned_openings)  # fmt: skip


def apply_repetition_penalty(logits: Tensor, history: Tensor, penalty: float) -> Tensor:
    """CTRL-style penalty on tokens in `history`: positive logits divided by it, negative multiplied.

    Only generated tokens count, not the prompt: a RAG answer should be free to reuse the context's words.
    """
    if penalty == 1.0 or history.shape[1] == 0:
        return logits
    seen = logits.gather(1, history)
    logits = logits.clone()
    logits.scatter_(1, history, torch.where(seen > 0, seen / penalty, seen * penalty))
    return logits


def banned_ngram_tokens(history: list[int], n: int) -> set[int]:
    """Tokens that would complete an n-gram already present in `history`."""
    if n <= 0 or len(history) < n:
        return set()
    prefix = tuple(history[len(history) - n + 1:])
    return {
        history[i + n - 1] for i in range(len(history) - n + 1) if tuple(history[i:i + n - 1]) == prefix
    }


def apply_no_repeat_ngram(logits: Tensor, histories: list[list[int]], n: int) -> Tensor:
    if n <= 0:
        return logits
    for row, history in enumerate(histories):
        banned = banned_ngram_tokens(history, n)
        if banned:
            logits[row, list(banned)] = float("-inf")
    return logits


def apply_banned_openings(logits: Tensor, histories: list[list[int]], openings: tuple[tuple[int, ...], ...]) -> Tensor:
    """Ban the last token of each opening in rows whose answer so far is the rest of that opening."""
    for row, history in enumerate(histories):
        for opening in openings:
            if len(history) == len(opening) - 1 and tuple(history) == opening[:-1]:
                logits[row, opening[-1]] = float("-inf")
    return logits


def top_k_mask(logits: Tensor, k: int) -> Tensor:
    """Keep the k largest logits per row (ties at the k-th value kept), the rest -inf."""
    if k <= 0 or k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_mask(logits: Tensor, p: float) -> Tensor:
    """Nucleus: keep the smallest set of most likely tokens whose probability reaches p (at least one)."""
    if p >= 1.0:
        return logits
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    probs = torch.softmax(sorted_logits, dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs  # probability of the tokens ranked above
    drop_sorted = mass_before >= p
    drop_sorted[..., 0] = False  # the most likely token always stays (p may be tiny, even 0 in float32)
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def adjust_logits(logits: Tensor, params: SamplingParams, history: Tensor) -> Tensor:
    """Penalties that apply to greedy, sampling and beam search alike."""
    logits = apply_repetition_penalty(logits, history, params.repetition_penalty)
    if params.no_repeat_ngram_size or params.banned_openings:
        histories = history.tolist()
        logits = apply_no_repeat_ngram(logits, histories, params.no_repeat_ngram_size)
        logits = apply_banned_openings(logits, histories, params.banned_openings)
    return logits


def choose_next_tokens(logits: Tensor, params: SamplingParams, history: Tensor,
                       generator: torch.Generator | None = None) -> Tensor:
    """The next token per row (B,) for greedy decoding or sampling."""
    logits = adjust_logits(logits, params, history)
    if params.greedy:
        return logits.argmax(dim=-1)
    logits = top_p_mask(top_k_mask(logits / params.temperature, params.top_k), params.top_p)
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def make_generator(seed: int | None, device: torch.device) -> torch.Generator | None:
    """A seeded generator makes sampling reproducible; None uses torch's global RNG."""
    if seed is None:
        return None
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator
