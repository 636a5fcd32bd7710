"""Decide, before generating anything, which retrieved passages answer the question.

Each passage the decision weighs (the top `evidence_k` of the search) gets P(this passage answers the question)
from a small logistic model over its own signals:

  answer_logit        the reranker's answer head: reads question and passage together (retrieval/answer_head.py)
  relevance           the reranker's score of the passage (its cross-encoder plus bi-encoder term)
  relevance_gap       the best relevance among the reranked candidates minus this passage's
  dense               the passage's bi-encoder cosine to the question
  rank_weight         1 / log2(1 + its rank after reranking)
  specifics_unmatched share of the question's named specifics (places, programmes, years) that the passage never
                      mentions: the mark of a near miss (answering/specifics.py)

It is fitted on the project's written training questions (python -m training.answerability): positives are
the abstracts that answer them, negatives the retrieved neighbours that do not and the passages retrieved for
verified-unanswerable questions. Its three thresholds are chosen on the development set's calibration half:
  * covered      the best passage has P >= answer_from: it answers, and so does every other passage with
                 P >= also_from (a lower bar: once the question is answerable, a second paper needs less
                 evidence), up to the answer's paper limit, in rank order;
  * partial      the best has decline_below <= P < answer_from: answer from it alone, saying plainly first that
                 it may not address the question directly;
  * not_covered  otherwise: decline without generating.
When the passages were not reranked, a model over the dense and BM25 signals alone decides.

With the passage judge (retrieval/judge.py: a cross-encoder trained on what is asked against what one abstract
answers, python -m training.judge), whether the question is answered at all is the judge's call: covered when its
best passage has P_judge >= judge_from, the answer then written from that passage and every passage whose P (the
model above) reaches the gate's also_from and lies within also_within of the best P (a paper far behind the best
one is more often on the topic than on the question); otherwise partial or not_covered as above. The gate's three
bars are chosen on the calibration half by python -m training.judge_gate and stored in the model file ("judge").
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from answering.domain import DEFAULT_DOMAIN_PATH
from answering.logits import sigmoid
from answering.specifics import unmatched_specifics
from retrieval.types import RetrievedChunk

DEFAULT_MODEL_PATH = Path(__file__).resolve().parents[1] / "models" / "weights" / "answerability.json"
FEATURES = ("answer_logit", "relevance", "relevance_gap", "dense", "rank_weight", "specifics_unmatched")
DENSE_FEATURES = ("dense", "dense_gap", "bm25_weight", "specifics_unmatched")
Coverage = Literal["covered", "partial", "not_covered"]


class AnswerabilitySettings(BaseModel):
    """The answerability decision: its fitted model and the probability thresholds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    check: bool = Field(True, description="Decide answerability before generating (off: the generator decides).")
    model_path: Path | None = Field(DEFAULT_MODEL_PATH, description="Fitted model (JSON); empty: no decision.")
    decline_below: float | None = Field(None, ge=0.0, le=1.0, description="Default: the model file's.")
    answer_from: float | None = Field(None, ge=0.0, le=1.0, description="Default: the model file's.")
    also_from: float | None = Field(None, ge=0.0, le=1.0, description="Default: the model file's.")
    judge_from: float | None = Field(None, ge=0.0, le=1.0, description="The passage judge's bar for answering "
                                     "(when the model file has a judge gate). Default: the model file's.")  # fmt: skip
    domain_path: Path | None = Field(DEFAULT_DOMAIN_PATH, description="The domain gate (JSON, answering/domain.py): "
                                     "a question outside economics is declined first; empty: off.")  # fmt: skip
    domain_from: float | None = Field(None, ge=0.0, le=1.0, description="The domain gate's bar on P(economics). "
                                      "Default: the model file's.")  # fmt: skip

    @field_validator("model_path", "domain_path", mode="before")
    @classmethod
    def _empty_means_off(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _in_order(self) -> AnswerabilitySettings:
        low, high = self.decline_below, self.answer_from
        if low is not None and high is not None and high < low:
            raise ValueError(f"answer_from ({high}) must not be below decline_below ({low}).")
        if self.also_from is not None and high is not None and self.also_from > high:
            raise ValueError(f"also_from ({self.also_from}) must not be above answer_from ({high}).")
        return self


@dataclass(frozen=True)
class LogisticModel:
    """P = sigmoid(bias + sum_i weight_i * (x_i - mean_i) / scale_i)."""

    features: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def probability(self, values: dict[str, float]) -> float:
        z = self.bias + sum(
            w * (values[name] - m) / s
            for name, m, s, w in zip(self.features, self.means, self.scales, self.weights, strict=True)
        )
        return sigmoid(z)

    def to_json(self) -> dict:
        return {"features": list(self.features), "means": list(self.means), "scales": list(self.scales),
                "weights": list(self.weights), "bias": self.bias}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict) -> LogisticModel:
        return cls(tuple(data["features"]), tuple(data["means"]), tuple(data["scales"]), tuple(data["weights"]),
                   float(data["bias"]))  # fmt: skip


@dataclass(frozen=True)
class JudgeGate:
    """With the passage judge: answer when its best passage has P_judge >= judge_from; other papers join at
    P >= also_from and P >= the best P - also_within (1.0: no relative bar)."""

    judge_from: float
    also_from: float
    also_within: float = 1.0
    calibrated_for: str = field(default="", compare=False)  # the judge the bars were chosen for (its name)

    def __post_init__(self) -> None:
        if not all(0.0 <= bar <= 1.0 for bar in (self.judge_from, self.also_from, self.also_within)):
            raise ValueError(f"The judge gate's bars must lie in [0, 1]: {self}.")

    def describe(self) -> str:
        within = f" within {self.also_within:.2f} of the best" if self.also_within < 1.0 else ""
        return f"others from P {self.also_from:.2f}{within}"


@dataclass(frozen=True)
class PassageJudgement:
    position: int  # 0-based, into the passages judged (the search's order)
    probability: float  # P(this passage answers the question)
    features: dict[str, float]


@dataclass(frozen=True)
class AnswerabilityVerdict:
    coverage: Coverage
    probability: float  # the best passage's
    reason: str
    judgements: tuple[PassageJudgement, ...] = ()
    answering: tuple[int, ...] = ()  # positions of the passages the answer is written from, in rank order

    @property
    def covered(self) -> bool:
        return self.coverage == "covered"

    @property
    def answers(self) -> bool:
        """Whether an answer is generated (fully, or from the closest paper)."""
        return self.coverage != "not_covered"


def published_before(verdict: AnswerabilityVerdict, years: Sequence[int | None], named_year: int | None,
                     texts: Sequence[str] = ()) -> AnswerabilityVerdict:  # fmt: skip
    """The decision less the papers published before the earliest year the question names: a 2013 paper on the 2008
    tax rebates does not report what households did with the 2020 stimulus checks. `years`: each judged passage's
    publication year (None: unknown, kept); `texts`: each one's title and abstract, where a paper that names the year
    itself speaks of it and is kept (a 2024 paper on leases that end "after 2047"). With no answering paper left,
    the question is declined."""
    if named_year is None or not verdict.answers:
        return verdict
    names_it = re.compile(rf"(?<!\d){named_year}(?!\d)")
    kept = tuple(p for p in verdict.answering if years[p] is None or years[p] >= named_year
                 or (p < len(texts) and names_it.search(texts[p])))  # fmt: skip
    if kept == verdict.answering:
        return verdict
    if not kept:
        return replace(verdict, coverage="not_covered", answering=(),
                       reason=f"the question names {named_year}, and the papers that come closest were published "
                              "before it")  # fmt: skip
    return replace(verdict, answering=kept)


def _weight_of_rank(rank: int | None) -> float:
    return 1.0 / math.log2(1 + rank) if rank else 0.0


def passage_signals(question: str, passages: Sequence[RetrievedChunk], dense_scores: Sequence[float],
                    pool: Sequence[RetrievedChunk]) -> list[dict[str, float]]:  # fmt: skip
    """Each passage's features: `passages` are the ones judged, dense_scores their cosines to the question, `pool`
    the last stage's candidates best first (the reranked ones when the reranker ran)."""
    best_dense = max(dense_scores, default=0.0)
    relevances = [hit.rerank_score for hit in pool if hit.rerank_score is not None]
    best_relevance = max(relevances, default=None)
    rows = []
    for hit, dense in zip(passages, dense_scores, strict=True):
        row = {
            "dense": float(dense),
            "dense_gap": float(best_dense - dense),
            "bm25_weight": _weight_of_rank(hit.ranks.get("bm25")),
            "specifics_unmatched": unmatched_specifics(question, [f"{hit.chunk.title} {hit.chunk.text}"]),
        }
        if hit.rerank_score is not None and best_relevance is not None:
            row["relevance"] = hit.rerank_score
            row["relevance_gap"] = best_relevance - hit.rerank_score
            row["rank_weight"] = _weight_of_rank(hit.rerank_rank)
        if hit.answer_logit is not None:
            row["answer_logit"] = hit.answer_logit
        rows.append(row)
    return rows


def select_with_judge(judge_probabilities: Sequence[float], probabilities: Sequence[float], doc_ids: Sequence[str],
                      gate: JudgeGate, max_papers: int) -> list[int]:  # fmt: skip
    """Positions of the passages an answer is written from under the judge's gate: none unless the judge's best
    passage reaches judge_from; then it and every passage whose P reaches also_from and the best P minus
    also_within, as select_answering."""
    if not probabilities:
        return []
    best = max(range(len(judge_probabilities)), key=lambda i: judge_probabilities[i])
    if judge_probabilities[best] < gate.judge_from:
        return []
    forced = [1.0 + p if i == best else p for i, p in enumerate(probabilities)]  # the judge's best goes first
    also_from = max(gate.also_from, max(probabilities) - gate.also_within)
    return select_answering(forced, doc_ids, 0.0, also_from, max_papers)


def select_answering(probabilities: Sequence[float], doc_ids: Sequence[str], answer_from: float, also_from: float,
                     max_papers: int) -> list[int]:  # fmt: skip
    """Positions of the passages an answer is written from: none unless the best reaches answer_from; then it and
    every passage reaching also_from, one per paper (its first, or the best), the most probable kept past
    max_papers, in rank order."""
    if not probabilities:
        return []
    best = max(range(len(probabilities)), key=lambda i: probabilities[i])
    if probabilities[best] < answer_from:
        return []
    chosen: dict[str, int] = {}
    for position, (probability, doc_id) in enumerate(zip(probabilities, doc_ids, strict=True)):
        if (position == best or probability >= also_from) and (doc_id not in chosen or position == best):
            chosen[doc_id] = position
    kept = sorted(chosen.values(), key=lambda i: (i != best, -probabilities[i]))[:max_papers]
    return sorted(kept)


@dataclass(frozen=True)
class SentenceBars:
    """The sentence judge's bars on the decision (answering/evidence.py; None: that rule off): an answering paper
    needs a sentence with P >= sentence_from; a hedged question is answered when its closest paper has one with
    P >= rescue_from, else declined."""

    sentence_from: float | None = None
    rescue_from: float | None = None
    calibrated_for: str = ""  # the sentence judge they were chosen for


class AnswerabilityModel:
    """Entry point: `assess(question, passages, dense_scores, pool, max_papers)` -> AnswerabilityVerdict."""

    def __init__(self, reranked: LogisticModel, dense_only: LogisticModel, decline_below: float, answer_from: float,
                 also_from: float | None = None, source: str = "", judge_gate: JudgeGate | None = None,
                 sentence_bars: SentenceBars | None = None) -> None:  # fmt: skip
        """also_from None: the same bar as answer_from; judge_gate: the passage judge decides whether the question
        is answered (used when `assess` is given the judge's logits)."""
        also_from = answer_from if also_from is None else also_from
        if not 0.0 <= decline_below <= answer_from <= 1.0 or not 0.0 <= also_from <= answer_from:
            raise ValueError(f"Need 0 <= decline_below ({decline_below}) <= answer_from ({answer_from}) <= 1 and "
                             f"0 <= also_from ({also_from}) <= answer_from.")  # fmt: skip
        self.reranked = reranked
        self.dense_only = dense_only
        self.decline_below = decline_below
        self.answer_from = answer_from
        self.also_from = also_from
        self.source = source
        self.judge_gate = judge_gate
        self.sentence_bars = sentence_bars or SentenceBars()

    @classmethod
    def load(cls, path: Path, decline_below: float | None = None, answer_from: float | None = None,
             also_from: float | None = None, judge_from: float | None = None) -> AnswerabilityModel:  # fmt: skip
        try:
            data = json.loads(Path(path).read_text())
            reranked = LogisticModel.from_json(data["reranked"])
            dense_only = LogisticModel.from_json(data["dense_only"])
            thresholds = data["thresholds"]
            gate = thresholds.get("judge")
            judge_gate = None if gate is None else JudgeGate(
                float(gate["judge_from"] if judge_from is None else judge_from), float(gate["also_from"]),
                float(gate.get("also_within", 1.0)), str(gate.get("judge", "")))
            bars = thresholds.get("sentence") or {}
            sentence_bars = SentenceBars(bars.get("sentence_from"), bars.get("rescue_from"),
                                         str(bars.get("sentence_judge", "")))  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"Cannot read the answerability model {path}: {error}") from None
        return cls(
            reranked, dense_only,
            thresholds["decline_below"] if decline_below is None else decline_below,
            thresholds["answer_from"] if answer_from is None else answer_from,
            thresholds.get("also_from") if also_from is None else also_from,
            data.get("reranker", ""), judge_gate, sentence_bars,
        )  # fmt: skip

    @classmethod
    def from_settings(cls, settings: AnswerabilitySettings) -> AnswerabilityModel | None:
        if settings.model_path is None:
            return None
        return cls.load(settings.model_path, settings.decline_below, settings.answer_from, settings.also_from,
                        settings.judge_from)  # fmt: skip

    @property
    def reads_judge(self) -> bool:
        """Whether this decision asks the passage judge (its logit of each passage, given to `assess`) whether the
        question is answered."""
        return self.judge_gate is not None

    def probabilities(self, question: str, passages: Sequence[RetrievedChunk], dense_scores: Sequence[float],
                      pool: Sequence[RetrievedChunk]) -> list[PassageJudgement]:  # fmt: skip
        """P(answers) of each passage (the reranked model where every passage has its signals)."""
        rows = passage_signals(question, passages, dense_scores, pool)
        reranked = bool(rows) and all(set(self.reranked.features) <= set(row) for row in rows)
        model = self.reranked if reranked else self.dense_only
        return [PassageJudgement(i, model.probability(row), row) for i, row in enumerate(rows)]

    def assess(self, question: str, passages: Sequence[RetrievedChunk], dense_scores: Sequence[float],
               pool: Sequence[RetrievedChunk], max_papers: int = 5, judge_logits: Sequence[float] | None = None
               ) -> AnswerabilityVerdict:  # fmt: skip
        """Judge each passage (as passage_signals); the answer is written from at most max_papers of them, one
        passage per paper. judge_logits: the passage judge's logit of each passage (None: the judge did not run,
        and the decision gates on its own model)."""
        if not pool or not passages:
            return AnswerabilityVerdict("not_covered", 0.0, "no passage matched the question")
        judgements = tuple(self.probabilities(question, passages, dense_scores, pool))
        best = max(judgements, key=lambda j: j.probability)
        probabilities = [j.probability for j in judgements]
        doc_ids = [passages[j.position].chunk.doc_id for j in judgements]
        gate = self.judge_gate
        missed = f"no passage reaches P(answers) {self.answer_from:.2f}"
        if gate is not None and judge_logits is not None:
            if len(judge_logits) != len(passages):
                raise ValueError(f"{len(judge_logits)} judge logits for {len(passages)} passages.")
            judged = [sigmoid(logit) for logit in judge_logits]
            answering = select_with_judge(judged, probabilities, doc_ids, gate, max_papers)
            if answering:
                reason = (f"{len(answering)} passage(s) answer it (the judge's best P(answers) {max(judged):.2f} is "
                          f"at least {gate.judge_from:.2f}; {gate.describe()})")  # fmt: skip
                return AnswerabilityVerdict("covered", max(judged), reason, judgements, tuple(answering))
            missed = f"the judge's best P(answers) {max(judged):.2f} is below {gate.judge_from:.2f}"
        else:
            answering = select_answering(probabilities, doc_ids, self.answer_from, self.also_from, max_papers)
        if answering:
            coverage: Coverage = "covered"
            reason = (f"{len(answering)} passage(s) answer it (the best's P(answers) {best.probability:.2f} is at "
                      f"least {self.answer_from:.2f}; others from {self.also_from:.2f})")  # fmt: skip
        elif best.probability >= self.decline_below:
            coverage, answering = "partial", [best.position]
            reason = (f"{missed}; the closest ({best.probability:.2f}) is a related paper that may not answer it "
                      "directly")  # fmt: skip
        else:
            coverage = "not_covered"
            reason = f"no passage reaches P(answers) {self.decline_below:.2f} (best {best.probability:.2f})"
        return AnswerabilityVerdict(coverage, best.probability, reason, judgements, tuple(answering))
