"""The generation engine on tiny models: batching, stops, streaming, cancellation, limits."""

from __future__ import annotations

import asyncio
import itertools
import threading

import pytest

from models import ContextLengthError, Generator, SamplingParams


def test_batched_generation_equals_one_by_one(tiny_generator: Generator) -> None:
    prompts = ["hello there", "a", "the quick brown fox jumps"]
    params = SamplingParams(max_new_tokens=12)
    batched = tiny_generator.generate(prompts, params)
    for prompt, result in zip(prompts, batched, strict=True):
        (alone,) = tiny_generator.generate([prompt], params)
        assert result.token_ids == alone.token_ids
        assert result.prompt_tokens == tiny_generator.count_tokens(prompt)


def test_prefix_reuse_gives_the_same_answer(tiny_gguf) -> None:
    reusing = Generator.from_pretrained(tiny_gguf, device="cpu")
    fresh = Generator.from_pretrained(tiny_gguf, device="cpu", reuse_prefix=False)
    params = SamplingParams(max_new_tokens=10)
    for prompt in ["system: be nice. user: hi", "system: be nice. user: bye", "system: be nice. user: hi"]:
        assert reusing.generate([prompt], params)[0].token_ids == fresh.generate([prompt], params)[0].token_ids
    assert reusing.scheduler.reused_tokens > 0 and fresh.scheduler.reused_tokens == 0


def test_stop_string_truncates(tiny_generator: Generator) -> None:
    prompt = "hello"
    (free,) = tiny_generator.generate([prompt], SamplingParams(max_new_tokens=20))
    assert len(free.text) >= 6, "the tiny model should produce some text"
    stop = free.text[3:5]
    (stopped,) = tiny_generator.generate([prompt], SamplingParams(max_new_tokens=20, stop=(stop,)))
    assert stopped.finish_reason == "stop"
    assert stopped.text == free.text[: free.text.find(stop)]
    streamed = "".join(tiny_generator.stream(prompt, SamplingParams(max_new_tokens=20, stop=(stop,))))
    assert streamed == stopped.text


def test_eos_stops_and_is_not_in_the_text(make_bigram_generator, tiny_tokenizer, char_token) -> None:
    s, a, b = (char_token(tiny_tokenizer, c) for c in "Sab")
    generator = make_bigram_generator(tiny_tokenizer, {s: {a: 0.9, b: 0.1}, a: {b: 0.9}, b: {2: 0.99}})
    (result,) = generator.generate(["S"], SamplingParams(max_new_tokens=10))
    assert (result.text, result.finish_reason, result.generated_tokens) == ("ab", "stop", 3)
    (short,) = generator.generate(["S"], SamplingParams(max_new_tokens=1))
    assert (short.text, short.finish_reason) == ("a", "length")


def test_banned_opening_steers_greedy_decoding(make_bigram_generator, tiny_tokenizer, char_token) -> None:
    s, a, b, c, x = (char_token(tiny_tokenizer, ch) for ch in "Sabcx")
    generator = make_bigram_generator(tiny_tokenizer, {s: {a: 0.9, b: 0.1}, a: {b: 0.6, c: 0.4}, b: {x: 1.0}})
    assert generator.generate(["S"], SamplingParams(max_new_tokens=5))[0].text == "abx"
    banned = SamplingParams(max_new_tokens=5, banned_openings=((a, b),))
    assert generator.generate(["S"], banned)[0].text == "ac"


def test_stream_deltas_respect_multibyte_characters(make_bigram_generator, tiny_tokenizer) -> None:
    """Byte tokens of "é🤖" come one at a time; no delta may contain a broken character."""
    text = "é🤖!"
    byte_ids = tiny_tokenizer.encode(text)
    assert len(byte_ids) == len(text.encode())  # the tiny vocabulary has no merges for these bytes
    start = tiny_tokenizer.encode("S")[0]
    transitions = {start: {byte_ids[0]: 1.0}} | {cur: {nxt: 1.0} for cur, nxt in itertools.pairwise(byte_ids)}
    generator = make_bigram_generator(tiny_tokenizer, transitions)
    deltas = list(generator.stream("S", SamplingParams(max_new_tokens=20)))
    assert deltas == ["é", "🤖", "!"]
    assert generator.generate(["S"], SamplingParams(max_new_tokens=20))[0].text == text


def test_streaming_equals_non_streaming(tiny_generator: Generator) -> None:
    params = SamplingParams(max_new_tokens=15, temperature=0.9, top_p=0.95, seed=7)
    (result,) = tiny_generator.generate(["the quick"], params)
    stream = tiny_generator.stream("the quick", params)
    assert stream.finish_reason is None
    assert "".join(stream) == result.text
    assert (stream.finish_reason, stream.generated_tokens, stream.prompt_tokens) == (
        result.finish_reason, result.generated_tokens, result.prompt_tokens)


def test_stream_close_and_cancel_event_stop_it(tiny_generator: Generator) -> None:
    params = SamplingParams(max_new_tokens=40)
    stream = tiny_generator.stream("hello", params)
    next(stream)
    stream.close()
    assert stream.finish_reason == "cancelled"
    assert list(stream) == []
    cancel = threading.Event()
    # A budget the engine cannot spend before the reader sees its first token, even on a busy machine.
    stream = tiny_generator.stream("hello", SamplingParams(max_new_tokens=240), cancel=cancel)
    at_cancel = None
    for _ in stream:
        if at_cancel is None:
            cancel.set()
            at_cancel = stream.generated_tokens  # the engine's live count, read after the cancel is set
    # Cancellation takes effect at the next step boundary: only the step under way when it was set may still
    # finish, however far the engine had run ahead of this reader (a busy machine delays the reader, not it).
    assert stream.finish_reason == "cancelled"
    assert at_cancel is not None and stream.generated_tokens <= at_cancel + 1
    # the engine is free again afterwards
    assert tiny_generator.generate(["hello"], SamplingParams(max_new_tokens=3))[0].generated_tokens == 3


def test_async_stream_and_cancellation(tiny_generator: Generator) -> None:
    params = SamplingParams(max_new_tokens=12)
    (expected,) = tiny_generator.generate(["hello"], params)

    async def collect() -> str:
        return "".join([delta async for delta in tiny_generator.astream("hello", params)])

    assert asyncio.run(collect()) == expected.text

    async def cancel_midway() -> str | None:
        stream = tiny_generator.astream("hello", SamplingParams(max_new_tokens=200))
        async for _ in stream:
            break
        await stream.aclose()
        return stream.finish_reason

    assert asyncio.run(cancel_midway()) == "cancelled"


def test_context_length_guard(tiny_gguf) -> None:
    strict = Generator.from_pretrained(tiny_gguf, device="cpu", max_context=32)
    prompt = "x" * 30
    with pytest.raises(ContextLengthError, match="30 tokens"):
        strict.generate([prompt], SamplingParams(max_new_tokens=5))
    with pytest.raises(ContextLengthError):
        strict.stream(prompt, SamplingParams(max_new_tokens=5))
    clipping = Generator.from_pretrained(tiny_gguf, device="cpu", max_context=32, context_policy="clip_new_tokens")
    (result,) = clipping.generate([prompt], SamplingParams(max_new_tokens=5))
    assert result.generated_tokens <= 2
    with pytest.raises(ContextLengthError):
        clipping.generate(["x" * 40], SamplingParams(max_new_tokens=5))
    with pytest.raises(ValueError, match="empty"):
        strict.generate([""], SamplingParams())
