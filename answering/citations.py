"""Citations you can trust: measure which passage supports each answer sentence.

The model's own [n] markers are kept, but checked: a sentence counts as supported only when its
embedding is close enough (cosine >= a calibrated threshold) to a sentence of some passage.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from answering.prompt import NOT_COVERED_ANSWER, OPENING_PATTERN, PARTIAL_ANSWER_PREFACE, Passage
from corpus.sentences import split_sentences

CITATION_MARKER = re.compile(r"\[(\d{1,2}(?:\s*,\s*\d{1,2})*)\]")
# Fragments shorter than this (e.g. "Yes.") carry no claim worth checking.
MIN_CLAIM_WORDS = 3

Encoder = Callable[[Sequence[str]], np.ndarray]  # texts -> (n, d) L2-normalised float32


@dataclass(frozen=True)
class Citation:
    passage: int  # the passage number, as in [n]
    answer_sentence: int  # index into SupportReport.sentences
    supporting_sentence: str  # the passage sentence closest to the answer sentence
    similarity: float


@dataclass
class AnswerSentence:
    text: str
    markers: list[int]  # the [n] the model wrote
    supported_by: list[int] = field(default_factory=list)  # passages whose sentences support it, best first
    similarity: float | None = None  # best similarity to any passage sentence
    is_claim: bool = True  # False for short fragments and the not-covered sentence

    @property
    def supported(self) -> bool:
        return not self.is_claim or bool(self.supported_by)

    @property
    def correct_markers(self) -> list[int]:
        return [marker for marker in self.markers if marker in self.supported_by]


@dataclass
class SupportReport:
    sentences: list[AnswerSentence]
    citations: list[Citation]

    @property
    def unsupported(self) -> list[int]:
        return [i for i, sentence in enumerate(self.sentences) if not sentence.supported]

    @property
    def supported_share(self) -> float | None:
        claims = [s for s in self.sentences if s.is_claim]
        return sum(s.supported for s in claims) / len(claims) if claims else None

    @property
    def marker_precision(self) -> float | None:
        markers = sum(len(s.markers) for s in self.sentences)
        return sum(len(s.correct_markers) for s in self.sentences) / markers if markers else None


def strip_markers(text: str) -> str:
    return re.sub(r"\s+", " ", CITATION_MARKER.sub("", text)).strip()


def parse_markers(text: str) -> list[int]:
    numbers: list[int] = []
    for group in CITATION_MARKER.findall(text):
        for number in group.split(","):
            if int(number) not in numbers:
                numbers.append(int(number))
    return numbers


# The fine-tuned generator sometimes wraps the not-covered sentence ("The authors show that the indexed
# abstracts do not answer this question."): that declines too.
REFUSAL_PHRASE = "do not answer this question"
assert REFUSAL_PHRASE in NOT_COVERED_ANSWER


def normalized(text: str) -> str:
    return " ".join(strip_markers(text).lower().split())


def is_refusal(text: str) -> bool:
    return REFUSAL_PHRASE in normalized(text)


_OPENING = re.compile(OPENING_PATTERN)


def is_service_sentence(text: str) -> bool:
    """The service's own sentences (the refusal, the partial answer's preface, the opening line that counts the
    papers): never a claim to support."""
    text = normalized(text)
    return is_refusal(text) or normalized(PARTIAL_ANSWER_PREFACE) in text or bool(_OPENING.match(text))


class SupportChecker:
    """Attach supporting passages to each answer sentence by sentence-embedding similarity."""

    def __init__(self, encode: Encoder, threshold: float):
        if not -1.0 <= threshold <= 1.0:
            raise ValueError(f"threshold is a cosine similarity in [-1, 1], got {threshold}")
        self.encode = encode
        self.threshold = threshold

    def for_one_answer(self) -> SupportChecker:
        """A checker whose encoder embeds each text once across its checks (the whole answer's, then each
        finding's against its own passage, which reread the same sentences); it lives as long as one answer."""
        embedded: dict[str, np.ndarray] = {}

        def encode(texts: Sequence[str]) -> np.ndarray:
            missing = [text for text in dict.fromkeys(texts) if text not in embedded]
            if missing:
                embedded.update(zip(missing, self.encode(missing), strict=True))
            return np.stack([embedded[text] for text in texts]) if texts else self.encode(texts)

        return SupportChecker(encode, self.threshold)

    def check(self, answer: str, passages: Sequence[Passage]) -> SupportReport:
        sentences = [
            AnswerSentence(text=text, markers=parse_markers(text)) for text in self._answer_sentences(answer)
        ]
        for sentence in sentences:
            claim = strip_markers(sentence.text)
            sentence.is_claim = len(claim.split()) >= MIN_CLAIM_WORDS and not is_service_sentence(claim)
        claim_indices = [i for i, s in enumerate(sentences) if s.is_claim]
        claims = [sentences[i] for i in claim_indices]
        if not claims or not passages:
            return SupportReport(sentences, [])

        evidence = [(p.number, text) for p in passages for text in sentences_of(p.text)]
        vectors = self.encode([strip_markers(s.text) for s in claims] + [text for _, text in evidence])
        similarity = vectors[: len(claims)] @ vectors[len(claims) :].T  # (claims, evidence sentences)
        evidence_passage = np.array([number for number, _ in evidence])

        citations: list[Citation] = []
        for row, index in zip(similarity, claim_indices, strict=True):
            sentence = sentences[index]
            sentence.similarity = float(row.max())
            best_per_passage = []
            for number in dict.fromkeys(evidence_passage.tolist()):
                columns = np.flatnonzero(evidence_passage == number)
                best = columns[row[columns].argmax()]
                best_per_passage.append((float(row[best]), number, int(best)))
            best_per_passage.sort(reverse=True)
            for score, number, column in best_per_passage:
                if score < self.threshold:
                    break
                sentence.supported_by.append(number)
                citations.append(Citation(number, index, evidence[column][1], round(score, 4)))
        return SupportReport(sentences, citations)

    def _answer_sentences(self, answer: str) -> list[str]:
        # Markers written after the full stop ("… growth. [2]") belong to the sentence before them.
        text = re.sub(r"([.!?])\s+(\[\d{1,2}(?:\s*,\s*\d{1,2})*\])", r" \2\1", answer.strip())
        return sentences_of(text)


def sentences_of(text: str) -> list[str]:
    # The same sentence splitter that chunks the abstracts at ingestion.
    return [text[start:end] for start, end in split_sentences(text)]
