"""Answering: search, decide which passages answer, build one prompt per answering paper (its sentences that
answer the question first), then (after generation) compose the answer and measure what supports each sentence.
`prepare` says what to generate (a frozen PreparedAnswer), an AnswerComposer (answering/compose.py) assembles the
findings as they come, `finish` turns the composed text into an Answer; answering/session.py runs the three for
one question, generating through the Generator port."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from answering.answerability import (
    AnswerabilityModel,
    AnswerabilityVerdict,
    Coverage,
    SentenceBars,
    published_before,
)
from answering.attribution import attribution
from answering.citations import SupportChecker, SupportReport, is_refusal
from answering.compose import AnswerComposer, Finisher, compose_opening, lead_sentence
from answering.conversation import Turn
from answering.domain import DomainGate
from answering.evidence import PaperSentences, SentenceEvidence, sharpened
from answering.faithful import finished_finding
from answering.focus import SentenceFocus
from answering.named_papers import answered_by_named, judged_question, named_positions
from answering.ports import Catalog, GenerationOutcome, PassageScorer, SamplingParams, Search
from answering.prompt import NOT_COVERED_ANSWER, BuiltPrompt, Passage, PromptBuilder
from answering.resolve import ResolvedRequest, resolve_question
from answering.specifics import earliest_named_year
from corpus.filters import SearchFilters
from retrieval.timing import StageTimer
from retrieval.types import RetrievedChunk, SearchOutcome

MAX_PAPERS = 10  # findings in one answer at most


class AnsweringSettings(BaseModel):
    """How answers are written: passages in the prompt, decoding defaults, and the citation check's threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Each answering paper gets a prompt of its own: with two or three passages in one prompt, the 135M generator
    # often states the finding of a passage that does not answer the question (calibration half: a citation of
    # the answering abstract in 0.885 of answerable questions with 1 passage, 0.654 with 2, 0.673 with 3).
    top_k: int = Field(5, ge=1, le=MAX_PAPERS, description="Papers an answer is written from at most (the "
                       "passages that answer, in rank order), one finding each.")  # fmt: skip
    evidence_k: int = Field(8, ge=1, le=20, description="Top passages the decision judges and the answer lists.")
    # Calibrated by benchmarks/calibrate_support.py on non-AER economics abstracts.
    support_threshold: float = Field(0.56, ge=-1.0, le=1.0)
    # Chosen on the grounded validation split (benchmarks/grounded_eval.py): greedy with no repeated
    # 4-grams stops loops; a repetition penalty would punish re-citing [1].
    max_new_tokens: int = Field(64, ge=1, le=1024, description="Tokens generated at most per paper's finding (it "
                                "stops at the end of its sentence).")  # fmt: skip
    repetition_penalty: float = Field(1.0, ge=1.0, le=2.0)
    no_repeat_ngram_size: int = Field(4, ge=0, le=10)
    # Chosen on the calibration half (python -m benchmarks.sentence_choice): from 0.80 (its weight as the sentences
    # are ranked, as a P) the second sentence is one a reader marked as stating the answer in 0.85 of the pairs
    # that get one (the first: 0.89), a method sentence in 0.03; the best sentence is shown in 0.61 -> 0.70.
    second_finding_from: float | None = Field(0.80, ge=0.0, le=1.0, description="A paper's second most answering "
                                              "sentence is shown after its finding when its weight (the sentence "
                                              "judge's logit plus the result cue), as a P, reaches this; empty: one "
                                              "sentence per paper.")  # fmt: skip

    @field_validator("second_finding_from", mode="before")
    @classmethod
    def _empty_means_off(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value


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
    top_k: int | None = None  # papers the answer is written from at most (None: the settings' default)
    mode: str = "hybrid"
    rerank: bool | None = None
    filters: SearchFilters | None = None
    coverage_check: bool | None = None
    generation: GenerationOptions = field(default_factory=GenerationOptions)
    history: tuple[Turn, ...] = ()  # the earlier turns, oldest first: a follow-up is resolved against them


@dataclass(frozen=True)
class FindingPrompt:
    """What one answering paper's finding is generated from: its passage alone, numbered [1] in the prompt."""

    passage: int  # the passage's number in the answer (PreparedAnswer.passages)
    prompt: BuiltPrompt
    probability: float | None  # the decision's P(this passage answers); None when no decision was made
    fallback: str | None = None  # the finding if the generator declines a passage the decision chose
    finisher: Finisher | None = None  # the complete finding -> the one shown (faithful to its abstract)


@dataclass(frozen=True)
class PreparedAnswer:
    """Everything decided before generation starts, built once; `findings` is empty when nothing will be
    generated."""

    query: str
    search: SearchOutcome
    passages: tuple[Passage, ...]  # passages[i] shows hits[i], numbered from 1
    findings: tuple[FindingPrompt, ...]  # one per answering paper, most relevant first
    params: SamplingParams
    verdict: AnswerabilityVerdict | None  # None: the decision was not made (switched off)
    timings_ms: dict[str, float]  # the search's and the decision's stages, in the order they ran
    notes: tuple[str, ...] = ()
    opening: str = ""  # the answer's first sentence: how many papers answer, or a partial answer's caveat
    dropped_passages: int = 0  # answering passages left out: with their answer, they do not fit the context
    resolved: ResolvedRequest | None = None  # how the question was read (follow-up, time window, filters)

    @property
    def hits(self) -> list[RetrievedChunk]:
        return self.search.hits

    @property
    def generates(self) -> bool:
        return bool(self.findings)

    @property
    def coverage(self) -> Coverage | Literal["unchecked"]:
        if self.verdict is not None:
            return self.verdict.coverage
        return "unchecked" if self.findings else "not_covered"

    def composer(self) -> AnswerComposer:
        """Assembles the findings, in this answer's order, as they are generated."""
        return AnswerComposer(self.opening, [finding.passage for finding in self.findings],
                              [finding.fallback for finding in self.findings],
                              [finding.finisher for finding in self.findings])  # fmt: skip


@dataclass(frozen=True)
class Finding:
    """One paper's finding in the answer, with the check of its support by its own passage."""

    passage: int
    hit: RetrievedChunk
    text: str
    probability: float | None
    supported: bool
    supporting_sentence: str | None
    similarity: float | None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    generated_tokens: int
    tokens_per_second: float | None


@dataclass(frozen=True)
class Answer:
    """The finished answer; app/api/presenters.py maps it to the API's schemas."""

    text: str
    finish_reason: str
    report: SupportReport
    prepared: PreparedAnswer
    usage: Usage
    notes: list[str]
    findings: list[Finding]
    timings_ms: dict[str, float]  # every stage's, generation and the citation check included

    @property
    def coverage(self) -> str:
        """covered | partial (answered from the closest paper, with a caveat) | not_covered | unchecked."""
        # Without the decision the generator may decline every paper, in the service's own sentence: no answer.
        if not self.prepared.generates or not self.findings:
            return "not_covered"
        return self.prepared.coverage

    @property
    def covered(self) -> bool:
        return self.coverage in ("covered", "unchecked")

    @property
    def confidence(self) -> float | None:
        """The decision's P(the best passage answers the question)."""
        return round(self.prepared.verdict.probability, 4) if self.prepared.verdict else None

    @property
    def dropped_passages(self) -> int:
        return self.prepared.dropped_passages

    def hit_for(self, passage_number: int) -> RetrievedChunk:
        return self.prepared.hits[passage_number - 1]


def declined_note(verdict: AnswerabilityVerdict) -> str:
    return (f"The indexed abstracts do not appear to cover this question ({verdict.reason}); the closest passages "
            "are listed instead of an answer.")  # fmt: skip


def to_passages(hits: list[RetrievedChunk]) -> tuple[Passage, ...]:
    return tuple(Passage.from_chunk(i, hit.chunk, hit.document.year) for i, hit in enumerate(hits, start=1))


class Answerer:
    """Entry points: `prepare(question)` (retrieve, decide, build the prompt), then `finish(prepared, outcome)`."""

    catalog: Catalog | None = None  # the index's papers for the resolve stage (None: no time windows, no titles)

    def __init__(
        self,
        settings: AnsweringSettings,
        search: Search,
        prompts: PromptBuilder,
        checker: SupportChecker,
        answerability: AnswerabilityModel | None,
        focus: SentenceFocus | None,
        model_name: str,
        check_by_default: bool = True,
        judge: PassageScorer | None = None,
        sentences: SentenceEvidence | None = None,
        sentence_bars: SentenceBars | None = None,
        domain: DomainGate | None = None,
    ):
        """answerability None: the generator decides (no decision before generating); check_by_default: whether
        a question that does not say (Question.coverage_check None) gets the decision; focus None: passages go
        into the prompt whole; judge: read by a decision with a judge gate (without it, that decision gates on its
        own model); sentences: the sentence judge's evidence (each paper's answering sentences first in its prompt,
        its best one the fallback, and the decision's sentence bars), None: the cosine focus; domain: declines
        a question outside economics first, as part of the decision (None: the judges alone decide)."""
        self.settings = settings
        self.search = search
        self.prompts = prompts
        self.checker = checker
        self.answerability = answerability
        self.focus = focus
        self.model_name = model_name
        self.check_by_default = check_by_default
        self.judge = judge
        self.sentences = sentences
        self.sentence_bars = sentence_bars or SentenceBars()
        self.domain = domain

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
        catalog = self.catalog
        lookups = (catalog.stats(), catalog.paper, catalog.papers_by_authors) if catalog else (None,) * 3
        resolved = resolve_question(question.query, question.history, question.filters, *lookups)
        question = replace(question, query=resolved.judge_query, filters=resolved.filters)
        max_papers = question.top_k or self.settings.top_k
        evidence_k = max(self.settings.evidence_k, max_papers)
        wanted = self.check_by_default if question.coverage_check is None else question.coverage_check
        query = self.search.encode(resolved.retrieval_query)
        outside: str | None = None  # outside economics: declined, not reranked (never asked of a named paper's)
        if self.answerability is not None and wanted and self.domain is not None and not resolved.named.about_economics:
            with timer.stage("domain"):
                outside = self.domain.decline_reason(query.vector)
        outcome = self.search.run(resolved.retrieval_query, evidence_k, question.mode, question.filters,
                                  question.rerank if outside is None else False, resolved.included, query)  # fmt: skip
        hits = outcome.hits
        params = self.sampling_params(question.generation)
        passages = to_passages(hits)

        def prepared(findings: tuple[FindingPrompt, ...], verdict: AnswerabilityVerdict | None, notes: tuple[str, ...],
                     opening: str = "", dropped_passages: int = 0) -> PreparedAnswer:  # fmt: skip
            timings_ms = {**outcome.timings_ms, **timer.timings_ms}
            return PreparedAnswer(resolved.question, outcome, passages, findings, params, verdict, timings_ms,
                                  (*resolved.notes, *notes), opening, dropped_passages, resolved)  # fmt: skip

        if not hits:
            return prepared(findings=(), verdict=None,
                            notes=(resolved.decline or "No passage matched the question and filters.",))

        verdict: AnswerabilityVerdict | None = None
        notes: list[str] = []
        probabilities: dict[int, float] = {}
        weighed: dict[int, PaperSentences] = {}  # the sentence judge's evidence, per passage position
        if self.answerability is not None and wanted:
            if outside is not None:
                verdict = AnswerabilityVerdict("not_covered", 0.0, outside)
                return prepared(findings=(), verdict=verdict, notes=(declined_note(verdict),))
            judge_logits = None
            if self.judge is not None and self.answerability.reads_judge:
                with timer.stage("judge"):
                    judge_logits = self.judge.score(question.query, hits)
            with timer.stage("answerability"):
                dense = self.search.dense_similarities(outcome.query, hits)
                verdict = self.answerability.assess(question.query, hits, dense, outcome.pool, max_papers,
                                                    judge_logits)  # fmt: skip
            named = named_positions(resolved.query, [hit.document for hit in hits], evidence_k, resolved.named.on_topic)
            if self.sentences is not None and (verdict.answers or named):
                with timer.stage("sentences"):
                    weighed = self.sentences.weigh(judged_question(question.query, named, hits),
                                                   hits, tuple(sorted({*verdict.answering, *named[:1]})))
                verdict = sharpened(verdict, weighed, self.sentence_bars)
            verdict = published_before(answered_by_named(verdict, named), [hit.document.year for hit in hits],
                                       earliest_named_year(resolved.retrieval_query),
                                       [f"{hit.document.title}\n{hit.document.abstract}" for hit in hits])  # fmt: skip
            if not verdict.answers:
                return prepared(findings=(), verdict=verdict, notes=(*notes, declined_note(verdict)))
            chosen = list(verdict.answering)
            probabilities = {j.position: j.probability for j in verdict.judgements}
            # The decision is made: each finding is written from its passage and may not decline.
            params = replace(params, banned_openings=(self.prompts.refusal_opening(),))
            if verdict.coverage == "partial":
                notes.append(f"The answer comes from the closest paper ({verdict.reason}).")
        else:
            chosen = first_per_paper(hits, max_papers)
            if self.sentences is not None:
                with timer.stage("sentences"):
                    weighed = self.sentences.weigh(question.query, hits, chosen)

        # Each finding's prompt shows its passage alone, as [1], its answering sentences first.
        alone = [replace(passages[position], number=1) for position in chosen]
        if self.sentences is not None:
            alone = [self.sentences.focused(passage, weighed[position]) for position, passage in zip(chosen, alone,
                                                                                                     strict=True)]
        elif self.focus is not None:
            with timer.stage("focus"):
                alone = self.focus.apply(question.query, alone)
        findings: list[FindingPrompt] = []
        with timer.stage("prompt"):
            for position, passage in zip(chosen, alone, strict=True):
                prompt = self.prompts.build(question.query, [passage], params.max_new_tokens)
                if prompt.passages:  # a passage too long for the context is left out
                    fallback = lead_sentence(passage.text) if verdict is not None else None
                    finisher = faithful_finisher(hits[position], passage, weighed.get(position),
                                                 self.settings.second_finding_from)  # fmt: skip
                    findings.append(FindingPrompt(position + 1, prompt, probabilities.get(position), fallback,
                                                  finisher))  # fmt: skip
        dropped = len(chosen) - len(findings)
        if dropped:
            notes.append(f"{dropped} answering passage(s) were left out of the prompts: with an answer, they do "
                         "not fit the model's context.")  # fmt: skip
        partial = verdict is not None and verdict.coverage == "partial"
        return prepared(findings=tuple(findings), verdict=verdict, notes=tuple(notes),
                        opening=compose_opening(len(findings), partial=partial), dropped_passages=dropped)  # fmt: skip

    def finish(self, prepared: PreparedAnswer, composer: AnswerComposer | None,
               outcomes: Sequence[GenerationOutcome] | None) -> Answer:  # fmt: skip
        """Check the composed answer's support, sentence by sentence and finding by finding, and assemble the
        Answer; blocking (embedding). composer/outcomes None: nothing was generated (declined)."""
        timer = StageTimer()
        generate_ms: dict[str, float] = {}
        findings: list[Finding] = []
        text, finish_reason = NOT_COVERED_ANSWER, "not_covered"
        report = SupportReport([], [])
        usage = Usage(prompt_tokens=0, generated_tokens=0, tokens_per_second=None)
        if prepared.generates and composer is not None and outcomes:
            seconds = max(outcome.seconds for outcome in outcomes)
            generate_ms["generate"] = round(seconds * 1000, 3)
            generated = sum(outcome.generated_tokens for outcome in outcomes)
            speed = generated / seconds if seconds > 0 else None
            usage = Usage(sum(o.prompt_tokens for o in outcomes), generated, round(speed, 2) if speed else None)
            with timer.stage("citations"):
                checker = self.checker.for_one_answer()  # the answer's sentences, then each finding's: embedded once
                shown = [(finding, finding_text)
                         for finding, finding_text in zip(prepared.findings, composer.finding_texts(), strict=True)
                         if finding_text.strip() and not is_refusal(finding_text)]  # fmt: skip
                # Every paper declined (possible only without the decision): the service's own sentence stands.
                if shown:
                    text, finish_reason = " ".join(composer.text.split()), finish_reason_of(composer, outcomes)
                    answer_passages = [checked_against(prepared, f.passage) for f in prepared.findings]
                    report = checker.check(text, answer_passages)
                findings = [self._finding(checker, finding, finding_text, prepared) for finding, finding_text in shown]
        notes = list(prepared.notes)
        if report.unsupported:
            notes.append(f"{len(report.unsupported)} answer sentence(s) are not supported by any passage.")
        if not prepared.search.reranked and prepared.generates:  # a question outside economics is never reranked
            notes.append("Reranking was off for this answer.")
        return Answer(text, finish_reason, report, prepared, usage, notes, findings,
                      {**prepared.timings_ms, **generate_ms, **timer.timings_ms})

    @staticmethod
    def _finding(checker: SupportChecker, finding: FindingPrompt, text: str, prepared: PreparedAnswer) -> Finding:
        """A finding checked against its own paper's abstract: supported when one of its sentences is."""
        report = checker.check(text, [checked_against(prepared, finding.passage)])
        best = max(report.citations, key=lambda c: c.similarity, default=None)
        similarities = [s.similarity for s in report.sentences if s.similarity is not None]
        return Finding(
            finding.passage, prepared.hits[finding.passage - 1], " ".join(text.split()), finding.probability,
            supported=best is not None, supporting_sentence=best.supporting_sentence if best else None,
            similarity=round(max(similarities), 4) if similarities else None,
        )  # fmt: skip


def faithful_finisher(hit: RetrievedChunk, focused: Passage, sentences: PaperSentences | None,
                      second_from: float | None = None) -> Finisher:  # fmt: skip
    """How one paper's generated finding is shown: checked against its whole abstract, opened by who found it,
    and replaced by the paper's best answering sentence (else its focused passage's first) when it is not
    faithful or declines; its second most answering sentence after it when that sentence's weight, as a P,
    reaches `second_from` (PaperSentences.second)."""
    document = hit.document
    best = sentences.best if sentences is not None else lead_sentence(focused.text)
    answering = sentences.answering() if sentences is not None else ()
    second = sentences.second(second_from) if sentences is not None else None
    return partial(finished_finding, abstract=document.abstract, title=document.title,
                   who=attribution(document.authors, document.year), fallback=best, answering=answering,
                   second=second)


def checked_against(prepared: PreparedAnswer, number: int) -> Passage:
    """Passage `number` as an answer's support is checked: its paper's whole abstract, which its finding is drawn
    from (a long abstract's result may lie outside the retrieved chunk; checked against the chunk alone, such a
    finding went unsupported, or was credited to another paper's passage)."""
    passage = prepared.passages[number - 1]
    abstract = prepared.hits[number - 1].document.abstract
    return replace(passage, text=abstract) if abstract else passage


def first_per_paper(hits: list[RetrievedChunk], papers: int) -> list[int]:
    """Positions of the first passage of each of the first `papers` papers."""
    seen: list[str] = []
    positions = []
    for position, hit in enumerate(hits):
        if hit.chunk.doc_id not in seen and len(seen) < papers:
            seen.append(hit.chunk.doc_id)
            positions.append(position)
    return positions


def finish_reason_of(composer: AnswerComposer, outcomes: Sequence[GenerationOutcome]) -> str:
    """stop, unless a finding's generation ended otherwise before it had its sentences (length, cancelled)."""
    for finding, outcome in zip(composer.findings, outcomes, strict=True):
        if outcome.finish_reason != "stop" and not finding.complete:
            return outcome.finish_reason
    return "stop"
