"""One question's answer, from its preparation to its last event, in one place.

    session = await AnswerSession.start(answerer, generator, question)   # retrieve and decide (raises before
    async for event in session.events(): ...                             # any event: e.g. rerank unavailable)

The events come in this order: PassagesFound (the numbered passages, before anything is generated), TextDelta as
the answer is composed (the opening line, then each finding in turn; their concatenation is the answer's text,
whitespace aside), FindingGenerated as each paper's generation ends, and AnswerReady (the checked Answer) last.
Every answering paper's finding is generated at once through the Generator port; a finding's generation stops
once it has its sentences. Closing the iterator (a client gone) or `cancel()` stops generation; then no
AnswerReady comes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TypeVar

from anyio import to_thread

from answering.answerer import Answer, Answerer, PreparedAnswer, Question
from answering.compose import AnswerComposer
from answering.ports import GenerationOutcome, GenerationStreams, Generator

T = TypeVar("T")


@dataclass(frozen=True)
class PassagesFound:
    """What the answer is written from: the search's passages and every decision made before generating."""

    prepared: PreparedAnswer


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class FindingGenerated:
    """One paper's generation ended: its finding as composed, and what the generator reports."""

    index: int  # into prepared.findings
    passage: int  # the passage's number in the answer
    text: str
    outcome: GenerationOutcome


@dataclass(frozen=True)
class AnswerReady:
    answer: Answer


AnswerEvent = PassagesFound | TextDelta | FindingGenerated | AnswerReady


async def _off_the_loop(function: Callable[..., T], *args: object) -> T:
    """Blocking work (embedding, reranking) in a worker thread, so the event loop keeps serving."""
    return await to_thread.run_sync(function, *args)


class AnswerSession:
    """Entry points: `start` (prepare), `events()`, `answer()` (run to the end), `cancel()`."""

    def __init__(self, answerer: Answerer, generator: Generator, prepared: PreparedAnswer) -> None:
        """Use `start`; `prepared` is `answerer.prepare`'s (when it generates, `generator` still holds its
        reservation)."""
        self.answerer = answerer
        self.generator = generator
        self.prepared = prepared
        self._streams: GenerationStreams | None = None
        self._started = False
        self._cancelled = False
        self._holds_generator = prepared.generates  # reserved for it until it streams or cancels

    @classmethod
    async def start(cls, answerer: Answerer, generator: Generator, question: Question) -> AnswerSession:
        """Retrieve and decide. The generator's reservation is cancelled at once when nothing will be generated
        (declined, or preparing failed), so a declined question holds no place while its answer is sent."""
        try:
            prepared = await _off_the_loop(answerer.prepare, question)
        except BaseException:
            generator.cancel_reservation()
            raise
        if not prepared.generates:
            generator.cancel_reservation()
        return cls(answerer, generator, prepared)

    def cancel(self) -> None:
        """Stop generating (the generations end at the engine's next step); events() then ends, with no answer."""
        self._cancelled = True
        if self._streams is not None:
            for index in range(len(self.prepared.findings)):
                self._streams.stop(index)
        elif self._holds_generator:
            self._holds_generator = False
            self.generator.cancel_reservation()

    async def answer(self) -> Answer:
        """Run the session to its end and return the answer."""
        async for event in self.events():
            if isinstance(event, AnswerReady):
                return event.answer
        raise RuntimeError("The answer was cancelled before it was finished.")

    async def events(self) -> AsyncIterator[AnswerEvent]:
        if self._started:
            raise RuntimeError("An answer session's events can be read once.")
        self._started = True
        prepared = self.prepared
        yield PassagesFound(prepared)
        composer: AnswerComposer | None = None
        outcomes: list[GenerationOutcome] | None = None
        if prepared.generates and not self._cancelled:
            composer = prepared.composer()
            yield TextDelta(composer.start())
            if self._cancelled:
                return
            found: dict[int, GenerationOutcome] = {}
            self._holds_generator = False  # from here the streams hold it, given back when the last one ends
            streams = self._streams = self.generator.stream_many([f.prompt.text for f in prepared.findings],
                                                                 prepared.params)  # fmt: skip
            try:
                async for index, item in streams:
                    if isinstance(item, GenerationOutcome):
                        found[index] = item
                        text = composer.finish(index)
                    else:
                        text = composer.feed(index, item)
                        if not composer.wants_more(index):
                            streams.stop(index)
                    if text:
                        yield TextDelta(text)
                    if isinstance(item, GenerationOutcome):
                        yield FindingGenerated(index, prepared.findings[index].passage,
                                               composer.findings[index].text, item)  # fmt: skip
                    if self._cancelled:
                        return
            finally:
                self._streams = None
                await streams.aclose()
            outcomes = [found[index] for index in range(len(prepared.findings))]
        elif self._cancelled:
            return
        answer = await _off_the_loop(self.answerer.finish, prepared, composer, outcomes)
        yield AnswerReady(answer)
