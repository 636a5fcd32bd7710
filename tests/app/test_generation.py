import asyncio
import threading
import traceback

import pytest

from answering.ports import GenerationOutcome, SamplingParams
from app.config import GenerationQueueSettings
from app.generation import GenerationQueue, GenerationTimeoutError, QueueFullError, ShuttingDownError
from app.metrics import ServiceMetrics
from runtime.arenas import IdleTrim

PROMPT = "<|im_start|>user\nSay something about wages.<|im_end|>\n<|im_start|>assistant\n"


def make_queue(generator, **overrides) -> GenerationQueue:
    settings = GenerationQueueSettings(**({"slots": 1, "queue_size": 0, "timeout_s": 30.0} | overrides))
    return GenerationQueue(generator, settings, ServiceMetrics())


def test_generate_runs_to_the_end_and_counts_tokens(tiny_generator) -> None:
    queue = make_queue(tiny_generator)

    async def run() -> GenerationOutcome:
        queue.reserve()
        return await queue.generate(PROMPT, SamplingParams(max_new_tokens=5))

    outcome = asyncio.run(run())
    assert outcome.generated_tokens == 5 and outcome.finish_reason == "length" and outcome.text
    assert outcome.prompt_tokens == len(tiny_generator.tokenizer.encode(PROMPT))
    assert queue.depth == 0
    assert "aer_rag_generated_tokens_total 5.0" in queue.metrics.render().decode()


def test_closing_the_stream_cancels_decoding_and_frees_the_slot(tiny_generator) -> None:
    queue = make_queue(tiny_generator)

    async def run() -> None:
        queue.reserve()
        with pytest.raises(QueueFullError):
            queue.reserve()  # capacity is one
        stream = queue.stream_many([PROMPT], SamplingParams(max_new_tokens=1000))
        await stream.__aiter__().__anext__()
        await stream.aclose()  # what the server does when the client goes away
        for _ in range(200):  # the worker notices the cancel flag at its next token
            if queue.depth == 0:
                break
            await asyncio.sleep(0.01)

    asyncio.run(run())
    assert queue.depth == 0
    assert 'aer_rag_generation_cancelled_total{reason="disconnect"} 1.0' in queue.metrics.render().decode()


def test_a_request_past_its_timeout_is_stopped(tiny_generator) -> None:
    queue = make_queue(tiny_generator, timeout_s=0.05)

    async def run() -> None:
        queue.reserve()
        await queue.generate(PROMPT, SamplingParams(max_new_tokens=2000))

    with pytest.raises(GenerationTimeoutError, match=r"longer than 0\.05 s"):
        asyncio.run(run())


def test_settings_are_validated(tiny_generator) -> None:
    with pytest.raises(ValueError):
        make_queue(tiny_generator, slots=0)


def test_one_answers_generations_run_together_in_one_place(tiny_generator) -> None:
    queue = make_queue(tiny_generator, slots=3)

    async def run() -> list[tuple[int, str | GenerationOutcome]]:
        queue.reserve()  # one answer, three generations
        params = SamplingParams(max_new_tokens=4)
        return [event async for event in queue.stream_many([PROMPT, PROMPT + "Well", PROMPT], params)]

    events = asyncio.run(run())
    for index in range(3):  # each one's deltas, then its outcome, interleaved with the others'
        mine = [item for i, item in events if i == index]
        outcome = mine[-1]
        assert isinstance(outcome, GenerationOutcome) and all(isinstance(delta, str) for delta in mine[:-1])
        assert "".join(mine[:-1]) == outcome.text and outcome.generated_tokens == 4
    assert queue.depth == 0  # the answer's place came back once, after the last of them


def test_stopping_one_generation_leaves_the_others_and_closing_cancels_the_rest(tiny_generator) -> None:
    queue = make_queue(tiny_generator, slots=2)

    async def run() -> list[tuple[int, GenerationOutcome]]:
        queue.reserve()
        streams = queue.stream_many([PROMPT, PROMPT], SamplingParams(max_new_tokens=1000))
        ended: list[tuple[int, GenerationOutcome]] = []
        async for index, item in streams:
            if isinstance(item, GenerationOutcome):
                ended.append((index, item))
                break
            if index == 0:
                streams.stop(0)  # its finding is complete: the first generation ends at once
        await streams.aclose()  # the client went away: the second one is cancelled too
        for _ in range(300):
            if queue.depth == 0:
                break
            await asyncio.sleep(0.01)
        return ended

    ended = asyncio.run(run())
    assert [(index, outcome.finish_reason) for index, outcome in ended] == [(0, "cancelled")]
    shown = queue.metrics.render().decode()  # one normal early stop, one cancelled by the client going away
    assert 'aer_rag_generation_cancelled_total{reason="stopped"} 1.0' in shown
    assert 'aer_rag_generation_cancelled_total{reason="disconnect"} 1.0' in shown
    assert queue.depth == 0


def test_shutdown_ends_every_stream_with_its_own_short_error(tiny_generator) -> None:
    """One error object re-raised into every stream gathered each stream's traceback (the log grew per stream)."""
    queue = make_queue(tiny_generator, slots=3)

    async def one(started: asyncio.Event) -> BaseException:
        queue.reserve()
        stream = queue.stream_many([PROMPT], SamplingParams(max_new_tokens=1000))
        try:
            async for _ in stream:
                started.set()
        except ShuttingDownError as error:
            return error
        raise AssertionError("the stream ended without the shutdown error")

    async def run() -> list[BaseException]:
        events = [asyncio.Event() for _ in range(3)]
        tasks = [asyncio.create_task(one(event)) for event in events]
        await asyncio.wait_for(asyncio.gather(*(event.wait() for event in events)), timeout=60)
        await asyncio.to_thread(queue.shutdown)
        return await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)

    errors = asyncio.run(run())
    assert len({id(error) for error in errors}) == 3
    depths = {len(traceback.extract_tb(error.__traceback__)) for error in errors}
    assert len(depths) == 1  # the same short traceback for each, not one growing with every stream
    assert queue.depth == 0


def test_a_stream_ended_by_shutdown_or_timeout_logs_one_warning_line(caplog) -> None:
    import logging

    from app.api.errors import log_stream_failure

    logger = logging.getLogger("test.streams")
    with caplog.at_level(logging.WARNING, logger="test.streams"):
        log_stream_failure(logger, "streamed answer", ShuttingDownError("the server is shutting down"))
        log_stream_failure(logger, "streamed answer", GenerationTimeoutError("took too long"))
        log_stream_failure(logger, "streamed answer", RuntimeError("a bug"))
    levels = [(record.levelname, record.exc_info is not None) for record in caplog.records]
    assert levels == [("WARNING", False), ("WARNING", False), ("ERROR", True)]


def test_the_queue_refuses_once_an_answers_expected_time_is_over_its_limit(tiny_generator) -> None:
    queue = make_queue(tiny_generator, slots=1, queue_size=8, max_wait_s=0.001, retry_after_s=2)

    async def run() -> None:
        queue.reserve()
        assert queue.expected_wait_s() == 0  # nothing measured yet: no estimate, no refusal
        await queue.generate(PROMPT, SamplingParams(max_new_tokens=3))
        assert queue.depth == 0 and queue.expected_wait_s() > 0
        queue.reserve()  # an idle server always admits
        with pytest.raises(QueueFullError, match=r"over the 0\.001 s limit, behind 1 others") as refused:
            queue.reserve()
        assert refused.value.retry_after_s is not None and refused.value.retry_after_s >= 2
        queue.cancel_reservation()

    asyncio.run(run())
    assert queue.depth == 0
    assert "aer_rag_generation_rejected_total 1.0" in queue.metrics.render().decode()


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_nth_waiting_answer_is_refused_by_the_p90_of_recorded_answers(tiny_generator, monkeypatch) -> None:
    """Issue 37: with the average, answers were admitted that the slow ones among recent answers showed would end
    past the limit; the estimate reads their p90."""
    monkeypatch.setattr("app.generation.time.perf_counter", FakeClock())
    queue = make_queue(tiny_generator, slots=8, queue_size=16, max_wait_s=30, wait_margin_s=5, retry_after_s=2,
                       timeout_s=120)  # fmt: skip
    for seconds in [2.0] * 17 + [5.0] * 3:  # 20 answers, each alone (one place): mean 2.45 s, p90 5 s
        queue._measured(seconds, seconds)
    admitted = 0
    with pytest.raises(QueueFullError, match=r"about 30 s \(\+ 5 s margin\), over the 30 s limit, behind 5") as refused:
        for _ in range(10):
            queue.reserve()
            admitted += 1
    # (in flight + 1) x 5 s + 5 s stays within 30 s up to 4 ahead; the average (2.45 s) would have let 9 ahead in
    assert admitted == 5 and queue.depth == 5
    assert refused.value.retry_after_s == 5  # the excess: about one place's p90 until a place frees
    assert queue.expected_wait_s() == 30.0
    assert "aer_rag_generation_rejected_total 1.0" in queue.metrics.render().decode()


def test_retry_after_is_at_least_the_setting_and_at_most_the_timeout(tiny_generator) -> None:
    queue = make_queue(tiny_generator, slots=8, queue_size=16, max_wait_s=30, wait_margin_s=0, retry_after_s=3,
                       timeout_s=60)  # fmt: skip
    queue._measured(16.0, 16.0)  # one answer of 16 s alone: the second would take 32 s, 2 s over
    queue.reserve()  # an idle server always admits, however slow the answers were
    with pytest.raises(QueueFullError) as small:
        queue.reserve()
    assert small.value.retry_after_s == 3  # the 2 s excess, raised to the setting
    for seconds in [400.0] * 20:  # answers far slower than the timeout: a place frees within 60 s at the latest
        queue._measured(seconds, seconds)
    with pytest.raises(QueueFullError) as large:
        queue.reserve()
    assert large.value.retry_after_s == 60


def test_seconds_per_place_count_the_answers_generating_beside_it_for_its_whole_generation(
    tiny_generator, monkeypatch
) -> None:
    clock = FakeClock()
    monkeypatch.setattr("app.generation.time.perf_counter", clock)
    queue = make_queue(tiny_generator, slots=8, queue_size=16, max_wait_s=0)
    queue.reserve()
    queue._count_generating(+1)  # the answer itself (stream_many), alone for 4 s
    start = queue.generating_seconds()
    clock.now += 4
    queue.reserve()  # another admitted: while it is prepared (often to be declined) it does not share the engine
    clock.now += 2
    queue._count_generating(+1)  # then it generates beside the first for the first one's last 6 s
    clock.now += 6
    used = queue.generating_seconds() - start
    assert used == 6 * 1 + 6 * 2  # 18 answer-seconds over 12 s: 1.5 answers generating on average
    queue._measured(12.0, used)
    assert queue._seconds_per_place[-1] == pytest.approx(8.0)  # 12 s over 1.5, not 12 (alone at its start)
    assert queue.expected_wait_s() == pytest.approx(3 * 8.0)  # two in flight, plus the new one


def test_an_answer_that_has_generated_is_measured_once_its_place_is_back(tiny_generator) -> None:
    queue = make_queue(tiny_generator, slots=1, queue_size=4, max_wait_s=30)

    async def run() -> None:
        for _ in range(2):
            queue.reserve()
            await queue.generate(PROMPT, SamplingParams(max_new_tokens=2))

    asyncio.run(run())
    assert len(queue._seconds_per_place) == 2 and all(s > 0 for s in queue._seconds_per_place)
    assert queue.depth == 0


def test_the_wait_margin_is_validated() -> None:
    assert GenerationQueueSettings().wait_margin_s == 5.0
    with pytest.raises(ValueError):
        GenerationQueueSettings(wait_margin_s=-1)


def test_a_queue_without_a_wait_limit_refuses_only_when_full(tiny_generator) -> None:
    queue = make_queue(tiny_generator, slots=1, queue_size=1, max_wait_s=0)

    async def run() -> None:
        queue.reserve()
        await queue.generate(PROMPT, SamplingParams(max_new_tokens=3))
        queue.reserve()
        queue.reserve()
        with pytest.raises(QueueFullError, match="places for answers are taken"):
            queue.reserve()

    asyncio.run(run())


def test_a_generation_timeout_is_counted_as_such(tiny_generator) -> None:
    queue = make_queue(tiny_generator, timeout_s=0.05)

    async def run() -> None:
        queue.reserve()
        await queue.generate(PROMPT, SamplingParams(max_new_tokens=2000))

    with pytest.raises(GenerationTimeoutError):
        asyncio.run(run())
    shown = queue.metrics.render().decode()
    assert 'aer_rag_generation_cancelled_total{reason="timeout"} 1.0' in shown
    assert 'aer_rag_generation_cancelled_total{reason="disconnect"} 0.0' in shown


def test_freed_memory_is_trimmed_once_answers_go_idle_too(tiny_generator) -> None:
    idle = IdleTrim(0.05)
    queue = GenerationQueue(tiny_generator, GenerationQueueSettings(slots=1, queue_size=0), ServiceMetrics(), idle)

    async def run() -> None:
        queue.reserve()
        await queue.generate(PROMPT, SamplingParams(max_new_tokens=2))

    try:
        asyncio.run(run())
        for _ in range(200):  # the timer's own thread runs it; bounded only so a broken timer cannot hang
            if idle.trims:
                break
            threading.Event().wait(0.05)
    finally:
        idle.close()
    assert idle.trims == 1 and queue.depth == 0
