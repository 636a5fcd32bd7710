"""Prompt construction: a grounding instruction, numbered passages and the question, within a token budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from corpus.documents import Chunk

# The one sentence the service (and the fine-tuned generator) uses when the passages do not answer.
NOT_COVERED_ANSWER = "The indexed abstracts do not answer this question."
# What precedes an answer from the closest papers when they may not answer the question directly.
PARTIAL_ANSWER_PREFACE = "The indexed abstracts do not address this question directly; the closest papers find this."

_COUNTS = ("One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten")


def opening_line(papers: int) -> str:
    """The first sentence of an answer from `papers` papers (the service's own: never a claim to support)."""
    if papers == 1:
        return "One paper in the indexed abstracts addresses this."
    count = _COUNTS[papers - 1] if 1 <= papers <= len(_COUNTS) else str(papers)
    return f"{count} papers in the indexed abstracts address this."


OPENING_PATTERN = (
    r"^(one|two|three|four|five|six|seven|eight|nine|ten|\d+) papers? in the indexed abstracts address(es)? this\.?$"
)

SYSTEM_INSTRUCTION = (
    "You answer questions about economics research using only the numbered passages, which are "
    "abstracts from the American Economic Review. Write a few plain sentences. After each sentence, "
    "cite the passage that supports it, like [1] or [2]. Do not use outside knowledge. If the passages "
    f'do not answer the question, reply exactly: "{NOT_COVERED_ANSWER}"'
)


class ChatTokenizer(Protocol):
    """What the prompt builder needs from the generator's tokenizer."""

    def encode(self, text: str) -> list[int]: ...

    def apply_chat_template(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str: ...


class PromptTooLongError(ValueError):
    """The question alone (with the instruction) leaves no room for an answer."""


@dataclass(frozen=True)
class Passage:
    """One retrieved chunk as the model sees it; `number` is what citations like [1] refer to."""

    number: int
    doc_id: str
    chunk_id: str
    title: str
    year: int | None
    text: str

    @classmethod
    def from_chunk(cls, number: int, chunk: Chunk, year: int | None) -> Passage:
        """Passage `number` of a prompt, showing `chunk` (year: its document's)."""
        return cls(number, chunk.doc_id, chunk.chunk_id, chunk.title, year, chunk.text)

    def render(self) -> str:
        heading = self.title or "Untitled"
        if self.year:
            heading += f" ({self.year})"
        return f"[{self.number}] {heading}\n{self.text}"


@dataclass(frozen=True)
class BuiltPrompt:
    text: str  # rendered with the chat template, ending where the assistant's answer starts
    passages: list[Passage]  # the passages that fit, numbered 1..n
    dropped_passages: int  # passages left out (from the bottom) so that prompt + answer fit the context
    prompt_tokens: int


def render_user_message(question: str, passages: Sequence[Passage]) -> str:
    blocks = "\n\n".join(passage.render() for passage in passages)
    return f"Passages:\n\n{blocks}\n\nQuestion: {question}"


class PromptBuilder:
    """Builds the chat prompt; drops whole passages from the bottom rather than cutting text mid-sentence."""

    def __init__(self, tokenizer: ChatTokenizer, max_context: int, system_instruction: str = SYSTEM_INSTRUCTION):
        if max_context < 64:
            raise ValueError(f"max_context must be at least 64 tokens, got {max_context}")
        self.tokenizer = tokenizer
        self.max_context = max_context
        self.system_instruction = system_instruction

    def refusal_opening(self) -> tuple[int, ...]:
        """The first two tokens of NOT_COVERED_ANSWER: banning this opening stops the generator from declining
        (one token would not do: "The" starts honest answers too)."""
        return tuple(self.tokenizer.encode(NOT_COVERED_ANSWER)[:2])

    def render(self, question: str, passages: Sequence[Passage]) -> str:
        messages = [
            {"role": "system", "content": self.system_instruction},
            {"role": "user", "content": render_user_message(question, passages)},
        ]
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True)

    def build(self, question: str, passages: Sequence[Passage], max_new_tokens: int) -> BuiltPrompt:
        budget = self.max_context - max_new_tokens
        kept = list(passages)
        while True:
            text = self.render(question, kept)
            n_tokens = len(self.tokenizer.encode(text))
            if n_tokens <= budget:
                return BuiltPrompt(text, kept, len(passages) - len(kept), n_tokens)
            if not kept:
                raise PromptTooLongError(
                    f"The question needs {n_tokens} prompt tokens, which leaves no room for "
                    f"{max_new_tokens} answer tokens in the model's {self.max_context}-token context; "
                    "shorten the question or ask for fewer new tokens."
                )
            kept.pop()
