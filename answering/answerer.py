"""Answering: search, decide whether the passages answer at all, put each passage's answering sentences first,
build the prompt, then (after generation) measure what supports each answer sentence. Generation itself is the
caller's (the service's queue, or a benchmark's generator): `prepare` says what to generate, `finish` turns the
generated text into an Answer."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from answering.answerability import AnswerabilityModel, AnswerabilityVerdict, Coverage
from answering.citations import SupportChecker, SupportReport, is_refusal
from answering.focus import SentenceFocus
from answering.prompt import NOT_COVERED_ANSWER, PARTIAL_ANSWER_PREFACE, BuiltPrompt, Passage, PromptBuilder
from models import SamplingParams
from retrieval.search import SearchOutcome, SearchPipeline, StageTimer
from retrieval.types import RetrievedChunk, SearchFilters


class AnsweringSettings(BaseModel):
    """How answers are written: passages in the prompt, decoding defaults, and the citation check's threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # One passage, the reranker's best: with two or three, the 135M generator often states the finding of a
    # passage that does not answer the question (benchmarks/aer_dev.py, calibration half: a citation of the
    # answering abstract in 0.885 of answerable questions with 1 passage, 0.654 with 2, 0.673 with 3).
    top_k: int = Field(1, ge=1, le=20, description="Passages put into the prompt by default.")
    # The answerability model was fitted on the top 3 passages' signals: it weighs them whatever top_k is.
    evidence_k: int = Field(3, ge=1, le=20, description="Top passages the answerability decision weighs.")
    # Calibrated by benchmarks/calibrate_support.py on non-AER economics abstracts.
    support_threshold: float = Field(0.56, ge=-1.0, le=1.0)
    # Chosen on the grounded validation split (benchmarks/grounded_eval.py): greedy with no repeated
    # 4-grams stops loops; a repetition penalty would punish re-citing [1].
    max_new_tokens: int = Field(160, ge=1, le=1024)
    repetition_penalty: float = Field(1.0, ge=1.0, le=2.0)
    no_repeat_ngram_size: int = Field(4, ge=0, le=10)


@dataclass(frozen=True)
class GenerationOptions:
    """A caller's decoding choices; None takes the settings' default."""

    max_new_tokens: int | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    repetition_penalty: float | None = None
    seed: int | None = None


@dataclass(frozen=True)
class Question:
    query: str
    top_k: int | None = None  # passages in the prompt (None: the settings' default)
    mode: str = "hybrid"
    rerank: bool | None = None
    filters: SearchFilters | None = None
    coverage_check: bool | None = None
    generation: GenerationOptions = field(default_factory=GenerationOptions)


@dataclass
class GenerationOutcome:
    """What the generator produced for a prepared answer (filled in by whoever runs the generation)."""

    text: str = ""
    prompt_tokens: int = 0
    generated_tokens: int = 0
    finish_reason: str = "stop"
    seconds: float = 0.0


@dataclass
class PreparedAnswer:
    """Everything decided before generation starts; `prompt` is None when nothing will be generated."""

    query: str
    search: SearchOutcome
    passages: list[Passage]  # passages[i] shows hits[i], numbered from 1
    hits: list[RetrievedChunk]
    prompt: BuiltPrompt | None
    params: SamplingParams
    verdict: AnswerabilityVerdict | None  # None: the decision was not made (switched off)
    timer: StageTimer
    notes: list[str] = field(default_factory=list)
    preface: str | None = None  # said before the generated text (a partial answer's caveat)

    @property
    def coverage(self) -> Coverage | Literal["unchecked"]:
        if self.verdict is not None:
            return self.verdict.coverage
        return "unchecked" if self.prompt is not None else "not_covered"


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    generated_tokens: int
    tokens_per_second: float | None


@dataclass
class Answer:
    """The finished answer; app/api/presenters.py maps it to the API's schemas."""

    text: str
    finish_reason: str
    report: SupportReport
    prepared: PreparedAnswer
    usage: Usage
    notes: list[str]

    @property
    def coverage(self) -> str:
        """covered | partial (answered from the closest papers, with a caveat) | not_covered | unchecked."""
        coverage = self.prepared.coverage
        # Without the decision the generator may still decline, in the service's own sentence: that is no answer.
        if coverage == "unchecked" and is_refusal(self.text):
            return "not_covered"
        return coverage

    @property
    def covered(self) -> bool:
        return self.coverage in ("covered", "unchecked")

    @property
    def confidence(self) -> float | None:
        """The answerability model's P(a retrieved passage answers the question)."""
        return round(self.prepared.verdict.probability, 4) if self.prepared.verdict else None

    @property
    def timings_ms(self) -> dict[str, float]:
        return self.prepared.timer.timings_ms

    @property
    def dropped_passages(self) -> int:
        return self.prepared.prompt.dropped_passages if self.prepared.prompt else 0

    def hit_for(self, passage_number: int) -> RetrievedChunk:
        return self.prepared.hits[passage_number - 1]


def to_passages(hits: list[RetrievedChunk]) -> list[Passage]:
    return [Passage.from_chunk(i, hit.chunk, hit.document.year) for i, hit in enumerate(hits, start=1)]


class Answerer:
    """Entry points: `prepare(question)` (retrieve, decide, build the prompt), then `finish(prepared, outcome)`."""

    def __init__(
        self,
        settings: AnsweringSettings,
        search: SearchPipeline,
        prompts: PromptBuilder,
        checker: SupportChecker,
        answerability: AnswerabilityModel | None,
        focus: SentenceFocus | None,
        model_name: str,
        check_by_default: bool = True,
    ):
        """answerability None: the generator decides (no decision before generating); check_by_default: whether
        a question that does not say (Question.coverage_check None) gets the decision; focus None: passages go
        into the prompt whole."""
        self.settings = settings
        self.search = search
        self.prompts = prompts
        self.checker = checker
        self.answerability = answerability
        self.focus = focus
        self.model_name = model_name
        self.check_by_default = check_by_default

    def sampling_params(self, options: GenerationOptions) -> SamplingParams:
        return SamplingParams(
            max_new_tokens=options.max_new_tokens or self.settings.max_new_tokens,
            temperature=options.temperature,
            top_k=options.top_k,
            top_p=options.top_p,
            repetition_penalty=options.repetition_penalty or self.settings.repetition_penalty,
            no_repeat_ngram_size=self.settings.no_repeat_ngram_size,
            seed=options.seed,
        )

    def prepare(self, question: Question) -> PreparedAnswer:
        """Retrieve and decide; blocking (embedding, reranking), so async callers run it in a thread."""
        timer = StageTimer()
        top_k, evidence_k = question.top_k or self.settings.top_k, self.settings.evidence_k
        outcome = self.search.run(question.query, max(top_k, evidence_k), question.mode, question.filters,
                                  question.rerank, timer)  # fmt: skip
        hits, evidence = outcome.hits[:top_k], outcome.hits[:evidence_k]
        params = self.sampling_params(question.generation)
        passages = to_passages(hits)
        prepared = PreparedAnswer(question.query, outcome, passages, hits, None, params, None, timer)
        if not hits:
            prepared.notes.append("No passage matched the question and filters.")
            return prepared

        wanted = self.check_by_default if question.coverage_check is None else question.coverage_check
        check = self.answerability is not None and wanted
        if check:
            assert self.answerability is not None
            with timer.stage("answerability"):
                dense = self.search.dense_similarities(question.query, evidence)
                prepared.verdict = self.answerability.assess(question.query, evidence, dense, outcome.pool)
            if not prepared.verdict.answers:
                prepared.notes.append(
                    "The indexed abstracts do not appear to cover this question "
                    f"({prepared.verdict.reason}); the closest passages are listed instead of an answer."
                )
                return prepared
            # The decision is made: the generator answers from the passages and may not decline.
            prepared.params = replace(params, banned_openings=(self.prompts.refusal_opening(),))
            if prepared.verdict.coverage == "partial":
                prepared.preface = PARTIAL_ANSWER_PREFACE
                prepared.notes.append(f"The answer comes from the closest papers ({prepared.verdict.reason}).")

        prompt_passages = passages
        if self.focus is not None:
            with timer.stage("focus"):
                prompt_passages = self.focus.apply(question.query, passages)
        with timer.stage("prompt"):
            prepared.prompt = self.prompts.build(question.query, prompt_passages, prepared.params.max_new_tokens)
        if prepared.prompt.dropped_passages:
            prepared.notes.append(
                f"{prepared.prompt.dropped_passages} passage(s) were left out of the prompt so that it and "
                "the answer fit the model's context."
            )
        return prepared

    def finish(self, prepared: PreparedAnswer, outcome: GenerationOutcome | None) -> Answer:
        """Check support for each answer sentence and assemble the answer; blocking (embedding)."""
        timer = prepared.timer
        if prepared.prompt is None or outcome is None:
            text, finish_reason = NOT_COVERED_ANSWER, "not_covered"
            report = SupportReport([], [])
            usage = Usage(prompt_tokens=0, generated_tokens=0, tokens_per_second=None)
        else:
            timer.timings_ms["generate"] = round(outcome.seconds * 1000, 3)
            text, finish_reason = outcome.text.strip(), outcome.finish_reason
            if prepared.preface:
                text = f"{prepared.preface} {text}"
            with timer.stage("citations"):
                report = self.checker.check(text, prepared.prompt.passages)
            speed = outcome.generated_tokens / outcome.seconds if outcome.seconds > 0 else None
            usage = Usage(outcome.prompt_tokens, outcome.generated_tokens, round(speed, 2) if speed else None)
        notes = list(prepared.notes)
        if report.unsupported:
            notes.append(f"{len(report.unsupported)} answer sentence(s) are not supported by any passage.")
        if not prepared.search.reranked:
            notes.append("Reranking was off for this answer.")
        return Answer(text, finish_reason, report, prepared, usage, notes)
