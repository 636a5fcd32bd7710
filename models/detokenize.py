"""Incremental detokenizing of one output: token ids in, text out, with stop strings and safe streaming deltas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from models.sampling import SamplingParams
from models.tokenizer import Tokenizer

FinishReason = Literal["stop", "length", "cancelled"]


@dataclass
class GenerationResult:
    text: str
    token_ids: list[int]  # generated tokens, without the final EOS
    prompt_tokens: int
    generated_tokens: int  # decode steps taken (counts a final EOS)
    finish_reason: FinishReason


class OutputText:
    """One output row: incremental detokenization, stop detection, and the text that is safe to emit.

    Text is held back while it ends in an incomplete UTF-8 sequence (decoded as U+FFFD) or could be the
    beginning of a stop string, so streamed deltas always concatenate to the final text.

    Each token decodes a short window, not the whole output (which made a long answer quadratic): the tokens
    since the last complete text (`_read`) after a few tokens of context (`_prefix`, which decoders that strip or
    merge at a boundary need), keeping the difference, as text-generation-inference does.
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
        self._prefix = self._read = 0  # token_ids[_prefix:_read]: context; token_ids[_read:]: not in text yet
        self._pending = ""  # the decoded tail of token_ids[_read:] while it ends in an incomplete sequence

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
        context = self.tokenizer.decode(self.token_ids[self._prefix : self._read])
        window = self.tokenizer.decode(self.token_ids[self._prefix :])
        self.text = self.text[: len(self.text) - len(self._pending)]
        stable = len(self.text)  # the text before this can no longer change
        self._pending = window[len(context) :]
        self.text += self._pending
        if self._pending and not self._pending.endswith("\ufffd"):  # complete: the window moves on
            self._pending = ""
            self._prefix, self._read = self._read, len(self.token_ids)
        if self.stop:
            # Only the new tail can contain a stop string that was not there before.
            search_from = max(0, stable - max(map(len, self.stop)) + 1)
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
