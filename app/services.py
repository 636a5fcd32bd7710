"""The service's components, loaded once at startup from the settings, and wired together."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from answering.answerability import AnswerabilityModel, AnswerabilitySettings
from answering.answerer import Answerer, Question
from answering.citations import SupportChecker
from answering.domain import DomainGate
from answering.evidence import SentenceEvidence
from answering.focus import SentenceFocus
from answering.prompt import PromptBuilder
from answering.session import AnswerSession
from app.backends import open_backend
from app.config import GenerationQueueSettings, GeneratorSettings, Settings
from app.generation import GenerationQueue
from app.metrics import ServiceMetrics
from app.search_admission import SearchAdmission
from corpus.documents import Document
from corpus.search_backend import CorpusStats, SearchBackend
from indexing.embedding import Embedder
from models import Generator
from retrieval.judge import PassageJudge
from retrieval.search import RerankState, SearchPipeline, build_search, load_reranker
from retrieval.sentence_judge import SentenceJudge
from runtime.arenas import IdleTrim
from runtime.device import resolve_device

log = logging.getLogger(__name__)


@dataclass
class Services:
    """Everything a request handler needs; built once by `load_services` (or by tests, with tiny parts)."""

    settings: Settings
    metrics: ServiceMetrics
    backend: SearchBackend  # the index, wherever it lives; routes ask it, never its internals
    embedder: Embedder  # encodes queries (once per request) and answer sentences
    search: SearchPipeline
    answerer: Answerer
    queue: GenerationQueue
    device: str
    searches: SearchAdmission
    # Answers retrieve and decide (the embedding, rerank and judge models) as many at once as searches do: each
    # more at once only queues inside torch with its own thread's OpenMP team and buffers resident (the peak RSS).
    preparing: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self.preparing = asyncio.Semaphore(self.searches.workers)

    async def start_answer(self, question: Question) -> AnswerSession:
        """Admit the answer (QueueFullError, a 429, before any retrieval), then retrieve and decide."""
        self.queue.reserve()
        try:
            await self.preparing.acquire()
        except BaseException:  # the client went away while waiting
            self.queue.cancel_reservation()
            raise
        try:
            return await AnswerSession.start(self.answerer, self.queue, question)
        finally:
            self.preparing.release()

    def close(self) -> None:
        self.queue.shutdown()
        self.searches.close()
        self.backend.close()


@dataclass(frozen=True)
class BackendCatalog:
    """answering.ports.Catalog over the search backend: the served build's papers by year, a paper's title, the
    papers of named authors."""

    backend: SearchBackend

    def stats(self) -> CorpusStats | None:
        return self.backend.info().stats

    def paper(self, doc_id: str) -> tuple[str, int | None] | None:
        found = self.backend.document(doc_id)
        return None if found is None else (found[0].title, found[0].year)

    def papers_by_authors(self, surnames: Sequence[str], year: int | None, limit: int) -> list[Document]:
        return self.backend.papers_by_authors(surnames, year, limit)


def load_generator(settings: GeneratorSettings, generation: GenerationQueueSettings, device: str) -> Generator:
    if settings.adapter is not None and not settings.adapter.is_dir():
        raise FileNotFoundError(f"No generator adapter at {settings.adapter} (AER_RAG_GENERATOR__ADAPTER).")
    return Generator.from_pretrained(settings.path, device=device, dtype=settings.dtype, adapter=settings.adapter,
                                     weights=settings.weights, scheduler=generation.scheduler())  # fmt: skip


def load_services(settings: Settings, metrics: ServiceMetrics | None = None) -> Services:
    """Open the index's backend, load the reranker and generator; raise IndexLoadError etc. with a clear message."""
    device = str(resolve_device(settings.device))
    embedder = Embedder(device=device)
    backend = open_backend(settings, embedder)
    rerank = load_reranker(settings.reranker, device)
    log.info("reranker: %s", rerank.reason)
    generator = load_generator(settings.generator, settings.generation, device)
    return build_services(settings, metrics or ServiceMetrics(), backend, embedder, rerank, generator, device)


def domain_gate(settings: AnswerabilitySettings, embedder: Embedder) -> DomainGate | None:
    """The domain gate, when the decision has one; it must read the vectors of the encoder that embeds queries."""
    if settings.domain_path is None:
        return None
    gate = DomainGate.load(settings.domain_path, settings.domain_from)
    if gate.encoder != embedder.model_name:
        raise ValueError(f"The domain gate {settings.domain_path} reads {gate.encoder} vectors; queries are "
                         f"encoded by {embedder.model_name}.")  # fmt: skip
    log.info("domain gate: declines below P(economics) %.2f", gate.decline_from)
    return gate


def build_services(
    settings: Settings,
    metrics: ServiceMetrics,
    backend: SearchBackend,
    embedder: Embedder,
    rerank: RerankState,
    generator: Generator,
    device: str,
) -> Services:
    search = build_search(backend, embedder, settings.retrieval, rerank, settings.reranker.top_m)
    encode = embedder.encode
    answerability = AnswerabilityModel.from_settings(settings.answerability)
    reads_judge = answerability is not None and answerability.reads_judge
    judge = PassageJudge.load(settings.judge, device) if reads_judge else None
    if reads_judge:
        log.info("passage judge: %s", f"{judge.name} ({judge.precision})" if judge else "none (the decision gates "
                 "on its own model)")  # fmt: skip
        calibrated_for = answerability.judge_gate.calibrated_for  # reads_judge: the model has a gate
        if judge and calibrated_for and judge.name != calibrated_for:
            log.warning("the judge gate's bars were chosen for %s, not %s: rerun python -m training.judge_gate",
                        calibrated_for, judge.name)  # fmt: skip
    sentence_judge = SentenceJudge.load(settings.sentence_judge, device)
    log.info("sentence judge: %s", f"{sentence_judge.name}" if sentence_judge else "none (findings are focused by "
             "cosine)")  # fmt: skip
    bars = answerability.sentence_bars if answerability is not None else None
    if sentence_judge and bars and bars.calibrated_for and bars.calibrated_for != sentence_judge.name:
        log.warning("the sentence bars were chosen for %s, not %s: rerun python -m training.sentence_gate --write",
                    bars.calibrated_for, sentence_judge.name)  # fmt: skip
    answerer = Answerer(
        settings=settings.answering,
        search=search,
        prompts=PromptBuilder(generator.tokenizer, generator.max_context),
        checker=SupportChecker(encode, settings.answering.support_threshold),
        answerability=answerability,
        focus=SentenceFocus(encode, settings.focus.max_sentences) if settings.focus.enabled else None,
        model_name=generator.model_name,
        check_by_default=settings.answerability.check,
        judge=judge,
        sentences=SentenceEvidence(sentence_judge, settings.focus.max_sentences) if sentence_judge else None,
        sentence_bars=bars,
        domain=domain_gate(settings.answerability, embedder),
    )
    answerer.catalog = BackendCatalog(backend)
    idle = IdleTrim(settings.memory.trim_after_idle_s)  # freed memory goes back once searches and answers stop
    queue = GenerationQueue(generator, settings.generation, metrics, idle)
    searches = SearchAdmission(settings.search, metrics, idle=idle)
    return Services(settings, metrics, backend, embedder, search, answerer, queue, device, searches)
