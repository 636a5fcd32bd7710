"""An answer from several papers: one short finding per paper, then the answer composed from them.

The 135M generator states one passage's finding well and confuses two passages when it reads them together, so
each answering passage gets a prompt of its own (its finding is generated from it alone, all of them at once by
the continuous-batching engine). The answer is then composed: an opening line that says how many papers answer,
then one finding per paper, most relevant first, each cited with its passage's number. Papers that disagree stay
separate sentences, never merged.

`AnswerComposer` does this incrementally, so the answer streams as it is composed: findings arrive interleaved
from the engine, and it emits the first paper's text as it is generated while holding the others back until
their turn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from answering.citations import CITATION_MARKER
from answering.prompt import PARTIAL_ANSWER_PREFACE, opening_line
from corpus.sentences import split_sentences

# A finding is the first sentence of its generation: the focused passage puts the sentence closest to the question
# first, and the fine-tuned generator states it first; later sentences drift to the paper's other results.
FINDING_SENTENCES = 1
# A trailing "[", "[1" or "[1," may still become a citation marker: hold it back until it is complete.
_OPEN_MARKER = re.compile(r"\[[\d,\s]*$")


@dataclass
class FindingStream:
    """One paper's finding as it is generated: its markers renumbered to the paper's passage number, cut after
    `max_sentences` sentences (then `complete` is set and its generation can stop)."""

    passage: int
    max_sentences: int = FINDING_SENTENCES
    raw: str = ""
    emitted: int = 0  # characters of `text` already handed out
    complete: bool = False
    finished: bool = False  # its generation ended (or was stopped)

    def feed(self, delta: str) -> None:
        if not self.complete:
            self.raw += delta
            self.complete = len(split_sentences(self._renumbered())) > self.max_sentences

    def _renumbered(self) -> str:
        return CITATION_MARKER.sub(f"[{self.passage}]", self.raw.lstrip())

    @property
    def text(self) -> str:
        """The finding so far, renumbered and cut to its sentences; a half-written marker is held back until the
        generation ends. Only ever grows (what was shown stays): the cut drops only the first characters of the
        sentence after the last one kept, which were never shown (a sentence ends before the next one begins)."""
        text = self._renumbered()
        if self.complete:
            return self._cited(text[: split_sentences(text)[self.max_sentences - 1][1]])
        text = _OPEN_MARKER.sub("", text)
        return self._cited(text) if self.finished else text

    def _cited(self, text: str) -> str:
        """A finding the model left uncited is still its passage's: its number is appended (the support check
        then verifies it like any other sentence)."""
        text = text.rstrip()
        if not text or CITATION_MARKER.search(text):
            return text
        return f"{text} [{self.passage}]"


@dataclass
class AnswerComposer:
    """Feed each finding's deltas (`feed(i, delta)`, `finish(i)`); each call returns the answer text that may be
    shown now, in order. `text` is the whole answer so far."""

    opening: str
    passages: Sequence[int]  # passage numbers of the findings, most relevant first
    findings: list[FindingStream] = field(init=False)
    parts: list[str] = field(default_factory=list)
    _current: int = 0
    _opened: bool = False

    def __post_init__(self) -> None:
        self.findings = [FindingStream(number) for number in self.passages]

    def start(self) -> str:
        """The opening line (sent before any finding is generated)."""
        self._opened = True
        self.parts.append(self.opening)
        return self.opening

    def feed(self, index: int, delta: str) -> str:
        self.findings[index].feed(delta)
        return self._drain()

    def finish(self, index: int) -> str:
        self.findings[index].finished = True
        return self._drain()

    def wants_more(self, index: int) -> bool:
        """False once finding `index` has its sentences: its generation may stop."""
        return not self.findings[index].complete

    @property
    def done(self) -> bool:
        return self._current >= len(self.findings)

    @property
    def text(self) -> str:
        """The answer as streamed so far (the same text, whitespace aside, as the final answer)."""
        return "".join(self.parts)

    def finding_texts(self) -> list[str]:
        return [finding.text for finding in self.findings]

    def _drain(self) -> str:
        out = "" if self._opened else self.start()
        while self._current < len(self.findings):
            finding = self.findings[self._current]
            first = finding.emitted == 0
            new = _appended(finding)
            if new:
                if first:  # a finding's first text: a separating space
                    new = " " + new
                self.parts.append(new)
                out += new
            if not (finding.finished or finding.complete):
                break
            self._current += 1
        return out


def _appended(finding: FindingStream) -> str:
    """What the finding's text adds to what was already shown."""
    text = finding.text
    new = text[finding.emitted :] if len(text) > finding.emitted else ""
    finding.emitted = max(finding.emitted, len(text))
    return new


def compose_opening(papers: int, partial: bool) -> str:
    return PARTIAL_ANSWER_PREFACE if partial else opening_line(papers)
