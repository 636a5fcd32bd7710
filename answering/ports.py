"""What answering needs from the pieces it does not own, as small protocols: the search, the passage scorers (the
judge) and the generator. The service (app/) and the offline jobs plug their implementations in; answering never
imports the engine (models/, torch) or a concrete scorer.

A generator runs one answer's prompts together (`stream_many`): its streams yield (index, text delta) as the
generations go, then (index, GenerationOutcome) once generation `index` has ended, its outcome a value.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from corpus.documents import Document
from corpus.filters import SearchFilters
from corpus.search_backend import CorpusStats
from retrieval.query import Query
from retrieval.types import RetrievedChunk, SearchOutcome


@dataclass(frozen=True)
class SamplingParams:
    """How one answer's findings are decoded; the engine's own parameters (models.SamplingParams, which checks
    them) are built from these by the generator's adapter."""

    max_new_tokens: int = 64
    temperature: float = 0.0  # 0 = greedy
    top_k: int = 0  # 0 = off
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    seed: int | None = None
    # Token sequences a finding may not begin with (the refusal, once the decision has chosen its passage).
    banned_openings: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class GenerationOutcome:
    """What one generation produced, when it ended (finished, stopped or cancelled)."""

    text: str = ""
    prompt_tokens: int = 0
    generated_tokens: int = 0
    finish_reason: str = "stop"  # stop | length | cancelled
    seconds: float = 0.0


GenerationEvent = tuple[int, str | GenerationOutcome]  # (prompt index, a text delta or, last, its outcome)


class GenerationStreams(Protocol):
    """One answer's generations as one async iterator of GenerationEvents; an error of any generation is raised
    from the iteration."""

    def __aiter__(self) -> AsyncIterator[GenerationEvent]: ...

    def stop(self, index: int) -> None:
        """End generation `index` now (its outcome still comes)."""

    async def aclose(self) -> None:
        """Cancel the generations still running."""


class Generator(Protocol):
    def stream_many(self, prompts: Sequence[str], params: SamplingParams) -> GenerationStreams:
        """Start every prompt's generation at once."""
        ...

    def cancel_reservation(self) -> None:
        """This answer will generate nothing (declined, cancelled, or preparing it failed): whatever was reserved
        for it (the service's place in its queue) goes back. Called at most once, and never after stream_many."""


class PassageScorer(Protocol):
    """A cross-encoder's view of passages: one score per passage for the query (the judge: its logit of P(the
    passage answers the question))."""

    name: str

    def score(self, query: str, passages: Sequence[RetrievedChunk]) -> list[float]: ...


class Search(Protocol):
    """The search stage (retrieval.search.SearchPipeline)."""

    def run(self, query: str, top_k: int, mode: str = "hybrid", filters: SearchFilters | None = None,
            rerank: bool | None = None, include: Sequence[str] = (), encoded: Query | None = None
            ) -> SearchOutcome: ...  # fmt: skip

    def encode(self, query: str) -> Query: ...

    def dense_similarities(self, query: Query, hits: list[RetrievedChunk]) -> list[float]: ...


class SentenceScorer(Protocol):
    """A cross-encoder's view of one passage's sentences: one score per sentence for the query, each read under
    the passage's title (the sentence judge: its logit of P(the sentence states a result answering the query))."""

    name: str

    def score(self, query: str, title: str, sentences: Sequence[str]) -> list[float]: ...


class Catalog(Protocol):
    """The index's papers as the resolve stage reads them (answering/resolve.py)."""

    def stats(self) -> CorpusStats | None:
        """Papers by year and without JEL codes; None when the index does not say."""
        ...

    def paper(self, doc_id: str) -> tuple[str, int | None] | None:
        """A paper's title and year, or None when no paper has that id."""
        ...

    def papers_by_authors(self, surnames: Sequence[str], year: int | None, limit: int) -> list[Document]:
        """The papers with an author of every surname given (plain), of `year` when given; newest first."""
        ...
