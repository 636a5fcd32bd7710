"""An answer from several papers: one short finding per paper, then the answer composed from them.

The 135M generator states one passage's finding well and confuses two passages when it reads them together, so
each answering passage gets a prompt of its own (its finding is generated from it alone, all of them at once by
the continuous-batching engine). The answer is then composed: an opening line that says how many papers answer,
then one finding per paper, most relevant first, each cited with its passage's number. Papers that disagree stay
separate sentences, never merged.

`AnswerComposer` does this incrementally, so the answer streams as it is composed: findings arrive interleaved
from the engine, and it emits the first paper's text as it is generated while holding the others back until
their turn.

Once the decision has chosen a passage, its finding may not decline; the fine-tuned generator still does now and
then, in words a banned opening does not catch ("In this study the indexed abstracts do not answer this
question."), always within its first words. Such a finding gets a fallback (the passage's sentence closest to the
question, in the third person): its first HOLD_WORDS words are held back, and a finding that declines there is
replaced by the fallback, so no decline is ever shown in the middle of an answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from answering.citations import CITATION_MARKER
from answering.prompt import PARTIAL_ANSWER_PREFACE, opening_line
from corpus.sentences import split_sentences

# A finding is the first sentence of its generation: the focused passage puts the sentence closest to the question
# first, and the fine-tuned generator states it first; later sentences drift to the paper's other results.
FINDING_SENTENCES = 1
# A trailing "[", "[1" or "[1," may still become a citation marker: hold it back until it is complete.
_OPEN_MARKER = re.compile(r"\[[\d,\s]*$")
HOLD_WORDS = 10  # a finding with a fallback is shown once its first HOLD_WORDS words are known not to decline
# "indexed" alone at the window's end: its "abstracts" may be the first word after it.
_DECLINE = re.compile(r"\bindexed( abstracts?\b|$)|\bdo not answer this question\b")
# A base-form verb as a single author's, where it is no "-s" form ("We have" -> "Lee has", "I am" -> "the author is").
SINGULAR_FORMS = {"am": "is", "are": "is", "have": "has", "do": "does", "were": "was"}
# "I" opening a sentence, or later before a verb of research ("while I find"): elsewhere it may be a numeral
# ("Type I errors", "World War I").
_FIRST_PERSON = ((re.compile(r"^(We|I)\b"), "The authors"), (re.compile(r"^Our\b"), "Their"),
                 (re.compile(r"\bwe\b"), "the authors"), (re.compile(r"\bour\b"), "their"),
                 (re.compile(r"\bus\b"), "them"),
                 (re.compile(r"\bI ((?:also |then |further )?)(find|show|estimate|argue|document|use|develop|study|"
                             r"exploit|provide|examine|test|present|propose|construct|compare|identify|explore|"
                             r"investigate|measure|consider|demonstrate|conclude|assume|illustrate|derive|analyze|"
                             r"characterize|model|focus|discuss|describe|introduce|evaluate|call|hope|comment|"
                             r"review|survey|offer|suggest|emphasize|highlight|explain|extend|build|quantify|"
                             r"calibrate|simulate|establish|obtain|report|trace|combine|apply|uncover)\b"),
                  lambda m: f"the author {m[1]}{third_singular(m[2])}"),
                 # after a comma or a conjunction, "I" is the author whatever the verb ("because I had been
                 # trained"), where "World War I had" is not
                 (re.compile(r"([,;:] |\b(?:and|but|because|as|while|that|when|if|since|where|so|why|how|what|"
                             r"whether) )"
                             r"I (am|have|had|was|can|could|will|would|may|might|must|should|did|do)\b"),
                  lambda m: f"{m[1]}the author {SINGULAR_FORMS.get(m[2], m[2])}"),
                 (re.compile(r"\bmy\b"), "the author's"))  # fmt: skip


# Past tenses that do not end in "-ed": a verb in the past agrees with any subject ("We found" -> "Lee found").
_IRREGULAR_PAST = frozenset(("found", "made", "took", "saw", "thought", "had", "did", "was", "were", "got", "gave",
                             "went", "came", "became", "began", "wrote", "knew", "felt", "led", "left", "kept",
                             "met", "paid", "said", "sent", "spent", "told", "won", "built", "brought", "chose",
                             "drew", "fell", "grew", "held", "lost", "meant", "rose", "sought", "taught",
                             "understood", "ran"))  # fmt: skip


def is_past_tense(verb: str) -> bool:
    """'conducted', 'found' (not 'need', 'embed'): a form that stays whoever its subject."""
    lower = verb.lower()
    return lower in _IRREGULAR_PAST or (lower.endswith("ed") and not lower.endswith("eed") and lower != "embed")


def third_singular(verb: str) -> str:
    """'find' -> 'finds', 'study' -> 'studies', 'establish' -> 'establishes'."""
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + ("es" if verb.endswith(("s", "sh", "ch")) else "s")


def third_person(sentence: str) -> str:
    """An abstract's sentence as a finding about the paper: "We find" -> "The authors find"."""
    for pattern, replacement in _FIRST_PERSON:
        sentence = pattern.sub(replacement, sentence)
    return sentence


def lead_sentence(text: str) -> str:
    """A passage's first sentence (a focused passage puts the one closest to the question first), third person."""
    spans = split_sentences(text)
    return third_person(text[spans[0][0] : spans[0][1]].strip() if spans else text.strip())


# A complete finding (markers and all) -> the finding shown, checked against its abstract (answering/faithful.py).
Finisher = Callable[[str], str]


@dataclass
class FindingStream:
    """One paper's finding as it is generated: its markers renumbered to the paper's passage number, cut after
    `max_sentences` sentences (then `complete` is set and its generation can stop).

    With a `finisher` the finding is shown only once it is complete, as the finisher returns it (checked against
    its abstract, its fallback where it is not faithful, opened by who found it): nothing unchecked is ever shown.
    """

    passage: int
    max_sentences: int = FINDING_SENTENCES
    fallback: str | None = None  # what stands in for a finding that declines (None: a decline stays)
    finisher: Finisher | None = None
    _shown: str | None = None  # the finisher's text, once made
    raw: str = ""
    emitted: int = 0  # characters of `text` already handed out
    complete: bool = False
    finished: bool = False  # its generation ended (or was stopped)
    declined: bool = False  # it declined within its first words and shows the fallback instead

    def feed(self, delta: str) -> None:
        if not self.complete:
            self.raw += delta
            opening = " ".join(self.raw.split()[:HOLD_WORDS])
            if self.fallback is not None and _DECLINE.search(opening.lower()):
                self.declined = self.complete = True
            else:
                self.complete = len(split_sentences(self._renumbered())) > self.max_sentences

    def _renumbered(self) -> str:
        return CITATION_MARKER.sub(f"[{self.passage}]", self.raw.lstrip())

    @property
    def text(self) -> str:
        """The finding so far, renumbered and cut to its sentences; a half-written marker is held back until the
        generation ends. Only ever grows (what was shown stays): the cut drops only the first characters of the
        sentence after the last one kept, which were never shown (a sentence ends before the next one begins)."""
        if self.finisher is not None:
            if not (self.complete or self.finished):
                return ""
            if self._shown is None:
                shown = self.finisher("" if self.declined else self._sentences()).rstrip()
                self._shown = marked(shown, self.passage)
            return self._shown
        if self.declined:
            return self._cited(self.fallback or "")
        if self.fallback is not None and not (self.complete or self.finished) and len(self.raw.split()) <= HOLD_WORDS:
            return ""  # it may still decline
        if self.complete:
            return self._cited(self._sentences())
        text = _OPEN_MARKER.sub("", self._renumbered())
        return self._cited(text) if self.finished else text

    def _sentences(self) -> str:
        """The finding's text cut after its sentences (all of it while it is not complete)."""
        text = self._renumbered()
        if self.complete:
            return text[: split_sentences(text)[self.max_sentences - 1][1]]
        return _OPEN_MARKER.sub("", text)

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
    fallbacks: Sequence[str | None] = ()  # per finding, what stands in for it if it declines (empty: none)
    finishers: Sequence[Finisher | None] = ()  # per finding, its check (empty: none; see FindingStream)
    findings: list[FindingStream] = field(init=False)
    parts: list[str] = field(default_factory=list)
    _current: int = 0
    _opened: bool = False

    def __post_init__(self) -> None:
        fallbacks = list(self.fallbacks) or [None] * len(self.passages)
        finishers = list(self.finishers) or [None] * len(self.passages)
        if not len(fallbacks) == len(finishers) == len(self.passages):
            raise ValueError(f"{len(fallbacks)} fallbacks and {len(finishers)} finishers for {len(self.passages)} "
                             "findings.")  # fmt: skip
        self.findings = [FindingStream(number, fallback=fallback, finisher=finisher)
                         for number, fallback, finisher in zip(self.passages, fallbacks, finishers, strict=True)]

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


def marked(finding: str, passage: int) -> str:
    """Each sentence of a finding cited, its marker inside the sentence before the closing punctuation: "… fell
    [2]." (a finding shown after the sentence it leans on has two)."""
    parts = []
    for start, end in split_sentences(finding):
        sentence = finding[start:end].rstrip()
        stop = len(sentence) - len(sentence.rstrip(".!?"))
        parts.append(f"{sentence[: len(sentence) - stop]} [{passage}]{sentence[len(sentence) - stop:]}")
    return " ".join(parts)


def compose_opening(papers: int, partial: bool) -> str:
    return PARTIAL_ANSWER_PREFACE if partial else opening_line(papers)
