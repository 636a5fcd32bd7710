"""One answer through AnswerSession, with a stand-in generator behind the port: the events in order, the streamed
text equal to the answer's, findings stopped once they have their sentences, the reservation given back when
nothing is generated, and cancel."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence

import pytest

from answering.answerer import Question
from answering.ports import GenerationEvent, GenerationOutcome, SamplingParams
from answering.session import AnswerReady, AnswerSession, FindingGenerated, PassagesFound, TextDelta
from retrieval.search import RerankNotAvailableError

COVERED = "Did the minimum wage increase reduce teenage employment in fast food restaurants?"
OFF_TOPIC = "How long should sourdough bread bake?"
EVERY_PASSAGE_PASSES = {"answerability": {"decline_below": 0.0, "answer_from": 0.0}}


class ScriptedStreams:
    """Each prompt's text a word at a time, round robin; a stopped one ends at once with its outcome."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.pieces = {i: re.findall(r"\S+\s*", text) for i, text in enumerate(texts)}
        self.stopped: set[int] = set()
        self.closed = False

    def __aiter__(self) -> AsyncIterator[GenerationEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[GenerationEvent]:
        sent = dict.fromkeys(self.pieces, "")
        while self.pieces:
            for index in list(self.pieces):
                if index in self.stopped or not self.pieces[index]:
                    reason = "cancelled" if index in self.stopped else "stop"
                    yield index, GenerationOutcome(sent[index], 10, len(sent[index].split()), reason, 0.1)
                    del self.pieces[index]
                    continue
                piece = self.pieces[index].pop(0)
                sent[index] += piece
                yield index, piece
                await asyncio.sleep(0)

    def stop(self, index: int) -> None:
        self.stopped.add(index)

    async def aclose(self) -> None:
        self.closed = True


class ScriptedGenerator:
    def __init__(self, texts: Sequence[str] = ()) -> None:
        self.texts = list(texts)
        self.streams: ScriptedStreams | None = None
        self.cancelled_reservations = 0

    def stream_many(self, prompts: Sequence[str], params: SamplingParams) -> ScriptedStreams:
        self.streams = ScriptedStreams(self.texts[: len(prompts)])
        return self.streams

    def cancel_reservation(self) -> None:
        self.cancelled_reservations += 1


async def all_events(session: AnswerSession) -> list:
    return [event async for event in session.events()]


def test_a_covered_answer_streams_the_text_it_ends_with(make_services) -> None:
    answerer = make_services(**EVERY_PASSAGE_PASSES).answerer
    generator = ScriptedGenerator(["Teen employment did not fall [1]. A second sentence is cut.",
                                   "Prices rose after the increase [1]."])  # fmt: skip

    async def run() -> list:
        session = await AnswerSession.start(answerer, generator, Question(query=COVERED, top_k=2))
        return await all_events(session)

    events = asyncio.run(run())
    assert isinstance(events[0], PassagesFound) and isinstance(events[-1], AnswerReady)
    answer = events[-1].answer
    streamed = "".join(event.text for event in events if isinstance(event, TextDelta))
    assert " ".join(streamed.split()) == answer.text and answer.covered
    found = [event for event in events if isinstance(event, FindingGenerated)]
    assert sorted(event.index for event in found) == [0, 1]
    assert {event.passage for event in found} == {f.passage for f in events[0].prepared.findings}
    assert generator.streams is not None and generator.streams.closed and 0 in generator.streams.stopped
    assert "A second sentence" not in answer.text and generator.cancelled_reservations == 0
    assert {"retrieve", "answerability", "prompt", "generate", "citations"} <= set(answer.timings_ms)


def test_a_declined_question_gives_its_reservation_back_and_generates_nothing(make_services) -> None:
    generator = ScriptedGenerator()

    async def run() -> list:
        session = await AnswerSession.start(make_services().answerer, generator, Question(query=OFF_TOPIC))
        assert generator.cancelled_reservations == 1  # at once, before any event
        return await all_events(session)

    events = asyncio.run(run())
    assert [type(event) for event in events] == [PassagesFound, AnswerReady]
    assert events[-1].answer.coverage == "not_covered" and generator.streams is None


def test_a_failed_preparation_gives_the_reservation_back(make_services) -> None:
    generator = ScriptedGenerator()
    with pytest.raises(RerankNotAvailableError):
        asyncio.run(AnswerSession.start(make_services().answerer, generator, Question(query=COVERED, rerank=True)))
    assert generator.cancelled_reservations == 1


@pytest.mark.parametrize("cancel_at", [1, 2])
def test_cancel_stops_every_generation_and_no_answer_comes(make_services, cancel_at: int) -> None:
    """Cancelled after the opening line (nothing generating yet: the reservation goes back), or mid-stream."""
    answerer = make_services(**EVERY_PASSAGE_PASSES).answerer
    generator = ScriptedGenerator(["Teen employment did not fall after the increase at all [1]."] * 2)

    async def run() -> list:
        session = await AnswerSession.start(answerer, generator, Question(query=COVERED, top_k=2))
        events = []
        async for event in session.events():
            events.append(event)
            if sum(isinstance(e, TextDelta) for e in events) == cancel_at:
                session.cancel()
        return events

    events = asyncio.run(run())
    assert not any(isinstance(event, AnswerReady) for event in events)
    if cancel_at == 1:
        assert generator.streams is None and generator.cancelled_reservations == 1
    else:
        assert generator.streams is not None and generator.streams.closed and generator.streams.stopped == {0, 1}
        assert generator.cancelled_reservations == 0


def test_the_events_are_read_once(make_services) -> None:
    async def run() -> None:
        session = await AnswerSession.start(make_services().answerer, ScriptedGenerator(), Question(query=OFF_TOPIC))
        await all_events(session)
        await all_events(session)

    with pytest.raises(RuntimeError, match="read once"):
        asyncio.run(run())
