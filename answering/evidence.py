"""Evidence at the level of sentences: which sentences of each answering paper state the result that answers.

The sentence judge (a SentenceScorer: retrieval/sentence_judge.py) gives each sentence of a passage P(it states a
result answering the question). Answering uses it three ways:

  * focus     each finding's prompt shows its passage's answering sentences, best first (a 135M generator copies
              what it reads first; the sentence closest to the question by cosine is usually the one that restates
              its topic, the method, not the result);
  * fallback  a generated finding must be written from the best sentence (by the result cue and the judge) and be
              faithful to its abstract; otherwise that sentence, attributed and in the third person, stands in
              for it (answering/faithful.py);
  * second    the paper's next most answering sentence follows its finding when its weight (the judge's logit
              plus the result cue), as a P, reaches AnsweringSettings.second_finding_from: an answer says more of
              what the paper found;
  * decision  a paper the passage decision passes must also have a sentence that answers (P >= sentence_from),
              and a question the decision would only hedge on is answered plainly when the closest paper has one
              (P >= rescue_from) and declined when it has none; both bars are chosen on the development set's
              calibration half (python -m training.sentence_gate) and stored in the decision's model file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from answering.answerability import AnswerabilityVerdict, SentenceBars
from answering.citations import sentences_of
from answering.faithful import is_question
from answering.logits import logit, sigmoid
from answering.ports import SentenceScorer
from answering.prompt import Passage
from answering.result_cues import CUE_WEIGHT, OPENING_WEIGHT, is_opening, result_cue
from retrieval.types import RetrievedChunk


@dataclass(frozen=True)
class PaperSentences:
    """One passage's sentences and the sentence judge's P(each states a result answering the question)."""

    sentences: tuple[str, ...]
    probabilities: tuple[float, ...]

    @property
    def ranked(self) -> list[int]:
        """Sentence indices, the most answering first by `weights` (ties: the abstract's order); the abstract's own
        questions last, whatever their score: they state no finding."""
        return self._ordered(self.weights)

    def _ordered(self, weights: Sequence[float]) -> list[int]:
        return sorted(range(len(self.sentences)), key=lambda i: (is_question(self.sentences[i]), -weights[i], i))

    @property
    def weights(self) -> list[float]:
        """Each sentence's weight as an answer: the judge's logit plus the result cue, less the opening weight for
        the abstract's first sentence (answering/result_cues.py)."""
        count = len(self.sentences)
        return [logit(p) + CUE_WEIGHT * result_cue(s) - OPENING_WEIGHT * is_opening(i, count)
                for i, (s, p) in enumerate(zip(self.sentences, self.probabilities, strict=True))]  # fmt: skip

    @property
    def best(self) -> str:
        return self.sentences[self.ranked[0]]

    @property
    def best_probability(self) -> float:
        """The highest P of any sentence (what the decision's bars read; the cue only orders)."""
        return max(self.probabilities)

    def second(self, from_probability: float | None) -> str | None:
        """The paper's second most answering sentence, when its weight reaches `from_probability` as a probability
        (None: never). Shown after the finding, it states another part of the result (the other country's tariff
        cut, how an effect varies); the weight, not the judge's P alone, so that a sentence that reads as the
        method ("We study how X affects Y") needs the judge far surer of it (python -m benchmarks.sentence_choice,
        "second sentence" rows)."""
        if from_probability is None or len(self.sentences) < 2:
            return None
        weights = self.weights  # weighed once, for the order and the bar
        index = self._ordered(weights)[1]
        if sigmoid(weights[index]) < from_probability or is_question(self.sentences[index]):
            return None
        return self.sentences[index]

    def answering(self) -> tuple[str, ...]:
        """The sentences a generated finding may be written from: the best one alone. Allowing every sentence the
        judge passes (P >= 0.5, 2.6 an abstract) let the generator write from a method sentence in 4 of 10 pairs;
        the best alone is a finding sentence in 0.88 / 0.87 of them (python -m benchmarks.sentence_choice)."""
        return (self.best,)


class SentenceEvidence:
    """Entry point: `weigh(question, hits, positions)` -> each position's PaperSentences."""

    def __init__(self, scorer: SentenceScorer, max_sentences: int = 3) -> None:
        if max_sentences < 1:
            raise ValueError(f"max_sentences must be at least 1, not {max_sentences}.")
        self.scorer = scorer
        self.max_sentences = max_sentences

    def weigh(self, question: str, hits: Sequence[RetrievedChunk], positions: Sequence[int]
              ) -> dict[int, PaperSentences]:  # fmt: skip
        unique = list(dict.fromkeys(positions))
        # The whole abstract, not the retrieved chunk: a long abstract's result may be in another chunk.
        texts = [(hits[p].chunk.title, hits[p].document.abstract or hits[p].chunk.text) for p in unique]
        return dict(zip(unique, self.weigh_texts(question, texts), strict=True))

    def weigh_texts(self, question: str, passages: Sequence[tuple[str, str]]) -> list[PaperSentences]:
        """Each (title, text) passage's sentences, weighed."""
        weighed = []
        for title, text in passages:
            sentences = tuple(passage_sentences(text))
            logits = self.scorer.score(question, title, sentences)
            weighed.append(PaperSentences(sentences, tuple(sigmoid(x) for x in logits)))
        return weighed

    def focused(self, passage: Passage, sentences: PaperSentences) -> Passage:
        """The passage as its paper's most answering sentences, best first (from the whole abstract)."""
        kept = sentences.ranked[: self.max_sentences]
        return replace(passage, text=" ".join(sentences.sentences[i] for i in kept))


def sharpened(verdict: AnswerabilityVerdict, sentences: dict[int, PaperSentences], bars: SentenceBars
              ) -> AnswerabilityVerdict:  # fmt: skip
    """The decision with the sentence bars applied: answering papers without an answering sentence dropped (all of
    them: declined); a hedged (partial) verdict answered plainly or declined."""
    if not verdict.answers:
        return verdict
    if verdict.coverage == "partial" and bars.rescue_from is not None:
        (position,) = verdict.answering[:1]
        if sentences[position].best_probability >= bars.rescue_from:
            reason = (f"the closest paper has a sentence that answers it (P {sentences[position].best_probability:.2f}"
                      f" >= {bars.rescue_from:.2f}); {verdict.reason}")  # fmt: skip
            return replace(verdict, coverage="covered", reason=reason)
        return replace(verdict, coverage="not_covered", answering=(),
                       reason=f"{verdict.reason}, and none of its sentences states a result that answers it")
    if bars.sentence_from is None:
        return verdict
    kept = tuple(p for p in verdict.answering if sentences[p].best_probability >= bars.sentence_from)
    if kept == verdict.answering:
        return verdict
    if not kept:
        return replace(verdict, coverage="not_covered", answering=(),
                       reason=f"{verdict.reason}; but no sentence of those papers states a result that answers it "
                              f"(P below {bars.sentence_from:.2f})")  # fmt: skip
    return replace(verdict, answering=kept)


def passage_sentences(text: str) -> list[str]:
    """A passage's sentences as the project splits them (the sentence judge was trained on this split)."""
    return sentences_of(text) or [text]
