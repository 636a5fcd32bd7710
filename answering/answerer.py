"""Answering: search, decide whether the passages answer at all, build the prompt, then (after generation)
measure what supports each answer sentence. Generation itself is the caller's (the service's queue, or a
benchmark's generator): `prepare` says what to generate, `finish` turns the generated text into an Answer."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pydantic import BaseModel, ConfigDict, Field

from answering.citations import SupportChecker, SupportReport
from answering.coverage import CoverageGate, CoverageVerdict
from answering.prompt import NOT_COVERED_ANSWER, BuiltPrompt, Passage, PromptBuilder
from models import SamplingParams
from retrieval.search import SearchOutcome, SearchPipeline, StageTimer
from retrieval.types import RetrievedChunk, SearchFilters


class AnsweringSettings(BaseModel):
    """How answers are written: passages in the prompt, decoding defaults, and the citation check's threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # 3 passages: the format the grounded adapter was trained on, and a short prompt (fast first token).
    top_k: int = Field(3, ge=1, le=20, description="Passages put into the prompt by default.")
    # Calibrated by benchmarks/calibrate_thresholds.py on non-AER economics abstracts.
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
    verdict: CoverageVerdict | None
    timer: StageTimer
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    generated_tokens: int
    tokens_per_second: float | None


@dataclass
class Answer:
    """The finished answer; app/api/presenters.py maps it to the API's schemas."""

    text: str
    covered: bool
    finish_reason: str
    report: SupportReport
    prepared: PreparedAnswer
    usage: Usage
    notes: list[str]

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
        coverage_check: bool,
        search: SearchPipeline,
        prompts: PromptBuilder,
        checker: SupportChecker,
        gate: CoverageGate,
        model_name: str,
    ):
        self.settings = settings
        self.coverage_check = coverage_check
        self.search = search
        self.prompts = prompts
        self.checker = checker
        self.gate = gate
        self.model_name = model_name

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
        top_k = question.top_k or self.settings.top_k
        outcome = self.search.run(question.query, top_k, question.mode, question.filters, question.rerank, timer)
        params = self.sampling_params(question.generation)
        passages = to_passages(outcome.hits)
        prepared = PreparedAnswer(question.query, outcome, passages, outcome.hits, None, params, None, timer)
        if not outcome.hits:
            prepared.notes.append("No passage matched the question and filters.")
            return prepared

        check = self.coverage_check if question.coverage_check is None else question.coverage_check
        if check:
            with timer.stage("coverage"):
                dense = self.search.dense_similarities(question.query, outcome.hits)
                prepared.verdict = self.gate.assess(dense, [hit.rerank_score for hit in outcome.hits])
            if not prepared.verdict.covered:
                prepared.notes.append(
                    "The indexed abstracts do not appear to cover this question "
                    f"({prepared.verdict.explain()}); the closest passages are listed instead of an answer."
                )
                return prepared
            if prepared.verdict.must_answer:
                prepared.params = replace(params, banned_openings=(self.prompts.refusal_opening(),))

        with timer.stage("prompt"):
            prepared.prompt = self.prompts.build(question.query, passages, prepared.params.max_new_tokens)
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
            with timer.stage("citations"):
                report = self.checker.check(text, prepared.prompt.passages)
            speed = outcome.generated_tokens / outcome.seconds if outcome.seconds > 0 else None
            usage = Usage(outcome.prompt_tokens, outcome.generated_tokens, round(speed, 2) if speed else None)
        notes = list(prepared.notes)
        if report.unsupported:
            notes.append(f"{len(report.unsupported)} answer sentence(s) are not supported by any passage.")
        if not prepared.search.reranked:
            notes.append("Reranking was off for this answer.")
        return Answer(text, prepared.prompt is not None, finish_reason, report, prepared, usage, notes)
