"""Questions the base model writes from a finding (few-shot), kept only when they pass a filter.

Measured: written questions did not lower false refusals on AER questions (they mostly copy the finding's
words; see the adapter card), so the shipped recipe uses titles only and these stay optional.
"""

from __future__ import annotations

import logging
import re

from models import Generator, SamplingParams

log = logging.getLogger(__name__)

# Few-shot examples for the question writer (invented findings, not from any corpus).
QUESTION_EXAMPLES = (
    (
        "The authors find that minimum wage increases reduce teen employment only slightly.",
        "How do minimum wage increases affect teen employment?",
    ),
    (
        "Results show that firms with more independent boards pay their CEOs less.",
        "Does board independence affect CEO pay?",
    ),
    (
        "The authors show that remittances smooth household consumption after droughts.",
        "How do remittances help households cope with droughts?",
    ),
)
QUESTION_WRITER_SYSTEM = "You write one short question that a given finding answers."
# A written question naming the source gives the answer away ("What does this paper find?").
_SOURCE_WORDS = re.compile(r"\b(paper|article|study|studies|authors?|abstract|passage|finding|findings)\b", re.I)

def _content_stems(text: str) -> set[str]:
    """Crude stems of the content words (5-letter prefixes of words of 4+ letters), for overlap tests."""
    return {word[:5] for word in re.findall(r"[a-z]{4,}", text.lower())}


def accept_question(question: str, finding: str) -> bool:
    """Whether a written question is usable: one short question, about the finding's content, that does
    not point at its source."""
    words = question.split()
    return (
        question.endswith("?")
        and question.count("?") == 1
        and 4 <= len(words) <= 30
        and "[" not in question
        and not _SOURCE_WORDS.search(question)
        and len(_content_stems(question) & _content_stems(finding)) >= 2
    )


class QuestionWriter:
    """Has the generator write a question that a finding answers (greedy, few-shot); rejects bad ones."""

    def __init__(self, generator: Generator, batch_size: int = 16, max_new_tokens: int = 40) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
        self.generator = generator
        self.batch_size = batch_size
        self.params = SamplingParams(max_new_tokens=max_new_tokens, stop=("\n",))

    def prompt(self, finding: str) -> str:
        messages = [{"role": "system", "content": QUESTION_WRITER_SYSTEM}]
        for example_finding, example_question in QUESTION_EXAMPLES:
            messages.append({"role": "user", "content": f"Finding: {example_finding}\nQuestion:"})
            messages.append({"role": "assistant", "content": example_question})
        messages.append({"role": "user", "content": f"Finding: {finding}\nQuestion:"})
        return self.generator.tokenizer.apply_chat_template(messages, add_generation_prompt=True)

    def write(self, findings: list[str]) -> list[str | None]:
        """One question per finding, or None where the written question fails accept_question (or the
        prompt would not fit the model's context)."""
        budget = self.generator.max_context - self.params.max_new_tokens
        prompts = [self.prompt(finding) for finding in findings]
        fits = [i for i, prompt in enumerate(prompts) if self.generator.count_tokens(prompt) <= budget]
        questions: list[str | None] = [None] * len(findings)
        for start in range(0, len(fits), self.batch_size):
            batch = fits[start : start + self.batch_size]
            results = self.generator.generate([prompts[i] for i in batch], self.params)
            for i, result in zip(batch, results, strict=True):
                question = " ".join(result.text.split())
                questions[i] = question if accept_question(question, findings[i]) else None
            log.info("wrote questions for %d of %d findings", start + len(batch), len(fits))
        return questions
