"""Answering: search, check coverage, build the prompt, generate, then measure what supports each sentence."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from app.answering.citations import SupportChecker, SupportReport
from app.answering.coverage import CoverageGate, CoverageVerdict
from app.answering.prompt import NOT_COVERED_ANSWER, BuiltPrompt, Passage, PromptBuilder
from app.answering.queue import GenerationOutcome, GenerationQueue
from app.config import Settings
from app.metrics import ServiceMetrics
from app.retrieval.types import RetrievedChunk, SearchFilters
from app.schemas import AskRequest, AskResult, CitationOut, SentenceOut, Usage
from app.services import SearchOutcome, SearchPipeline, StageTimer
from models import SamplingParams


@dataclass
class PreparedAnswer:
    """Everything decided before generation starts; `prompt` is None when nothing will be generated."""

    query: str
    search: SearchOutcome
    passages: list[Passage]
    hits: list[RetrievedChunk]  # hits[i] is passage number i + 1
    prompt: BuiltPrompt | None
    params: SamplingParams
    verdict: CoverageVerdict | None
    timer: StageTimer
    notes: list[str] = field(default_factory=list)


def to_passages(hits: list[RetrievedChunk]) -> list[Passage]:
    return [
        Passage(
            number=i,
            doc_id=hit.document.doc_id,
            chunk_id=hit.chunk.chunk_id,
            title=hit.document.title,
            year=hit.document.year,
            text=hit.chunk.text,
        )
        for i, hit in enumerate(hits, start=1)
    ]


class Answerer:
    def __init__(
        self,
        settings: Settings,
        metrics: ServiceMetrics,
        search: SearchPipeline,
        prompts: PromptBuilder,
        checker: SupportChecker,
        gate: CoverageGate,
        queue: GenerationQueue,
        model_name: str,
    ):
        self.settings = settings
        self.metrics = metrics
        self.search = search
        self.prompts = prompts
        self.checker = checker
        self.gate = gate
        self.queue = queue
        self.model_name = model_name

    def sampling_params(self, request: AskRequest) -> SamplingParams:
        options = request.generation
        return SamplingParams(
            max_new_tokens=options.max_new_tokens or self.settings.default_max_new_tokens,
            temperature=options.temperature,
            top_k=options.top_k,
            top_p=options.top_p,
            repetition_penalty=options.repetition_penalty or self.settings.default_repetition_penalty,
            no_repeat_ngram_size=self.settings.default_no_repeat_ngram_size,
            seed=options.seed,
        )

    def prepare(self, request: AskRequest) -> PreparedAnswer:
        """Retrieve and decide; blocking (embedding, reranking), so callers run it in a thread."""
        timer = StageTimer()
        filters = SearchFilters(**request.filters.model_dump()) if request.filters else None
        top_k = request.top_k or self.settings.answer_top_k
        outcome = self.search.run(request.query, top_k, request.mode, filters, request.rerank, timer)
        params = self.sampling_params(request)
        passages = to_passages(outcome.hits)
        prepared = PreparedAnswer(request.query, outcome, passages, outcome.hits, None, params, None, timer)
        if not outcome.hits:
            prepared.notes.append("No passage matched the question and filters.")
            return prepared

        check = self.settings.coverage_check if request.coverage_check is None else request.coverage_check
        if check:
            with timer.stage("coverage"):
                dense = self.search.dense_similarities(request.query, outcome.hits)
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
            prepared.prompt = self.prompts.build(request.query, passages, prepared.params.max_new_tokens)
        if prepared.prompt.dropped_passages:
            prepared.notes.append(
                f"{prepared.prompt.dropped_passages} passage(s) were left out of the prompt so that it and "
                "the answer fit the model's context."
            )
        return prepared

    def finish(self, prepared: PreparedAnswer, outcome: GenerationOutcome | None) -> AskResult:
        """Check support for each answer sentence and assemble the result; blocking (embedding)."""
        timer = prepared.timer
        if prepared.prompt is None or outcome is None:
            answer, finish_reason = NOT_COVERED_ANSWER, "not_covered"
            report = SupportReport([], [])
            usage = Usage(prompt_tokens=0, generated_tokens=0, tokens_per_second=None)
        else:
            timer.timings_ms["generate"] = round(outcome.seconds * 1000, 3)
            answer, finish_reason = outcome.text.strip(), outcome.finish_reason
            with timer.stage("citations"):
                report = self.checker.check(answer, prepared.prompt.passages)
            speed = outcome.generated_tokens / outcome.seconds if outcome.seconds > 0 else None
            usage = Usage(
                prompt_tokens=outcome.prompt_tokens,
                generated_tokens=outcome.generated_tokens,
                tokens_per_second=round(speed, 2) if speed else None,
            )
        self.metrics.observe_stages(timer.timings_ms)
        notes = list(prepared.notes)
        if report.unsupported:
            notes.append(f"{len(report.unsupported)} answer sentence(s) are not supported by any passage.")
        if not prepared.search.reranked:
            notes.append("Reranking was off for this answer.")
        hits_by_number = {p.number: hit for p, hit in zip(prepared.passages, prepared.hits, strict=True)}
        return AskResult(
            answer=answer,
            covered=prepared.prompt is not None,
            finish_reason=finish_reason,
            citations=[
                CitationOut(
                    passage=c.passage,
                    doc_id=hits_by_number[c.passage].document.doc_id,
                    doi=hits_by_number[c.passage].document.doi,
                    title=hits_by_number[c.passage].document.title,
                    answer_sentence=c.answer_sentence,
                    supporting_sentence=c.supporting_sentence,
                    similarity=c.similarity,
                )
                for c in report.citations
            ],
            sentences=[
                SentenceOut(
                    text=s.text,
                    markers=s.markers,
                    supported_by=s.supported_by,
                    supported=s.supported,
                    similarity=None if s.similarity is None else round(s.similarity, 4),
                )
                for s in report.sentences
            ],
            unsupported_sentences=report.unsupported,
            dropped_passages=prepared.prompt.dropped_passages if prepared.prompt else 0,
            notes=notes,
            usage=usage,
            timings_ms=timer.timings_ms,
        )


def build_answerer(settings: Settings, metrics: ServiceMetrics, search: SearchPipeline, generator) -> Answerer:
    embedder = search.index.embedder
    return Answerer(
        settings=settings,
        metrics=metrics,
        search=search,
        prompts=PromptBuilder(generator.tokenizer, generator.max_context),
        checker=SupportChecker(embedder.encode, settings.support_threshold),
        gate=CoverageGate.from_settings(settings),
        queue=GenerationQueue(
            generator,
            workers=settings.generation_workers,
            max_waiting=settings.generation_queue_size,
            timeout_s=settings.generation_timeout_s,
            metrics=metrics,
        ),
        model_name=generator.model_name,
    )
