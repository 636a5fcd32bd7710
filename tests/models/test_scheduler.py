"""Continuous batching on tiny models: requests join and leave the running batch, each with its own parameters,
and get exactly what they would get alone; slots are freed at once; a long prompt does not stall the others."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from models import Generator, SamplingParams
from models.scheduler import EngineFullError, SchedulerSettings

LONG = SamplingParams(max_new_tokens=40, ignore_eos=True)


def engine(tiny_gguf, weights: str = "auto", **settings) -> Generator:
    return Generator.from_pretrained(tiny_gguf, device="cpu", weights=weights, scheduler=SchedulerSettings(**settings))


def test_a_request_that_joins_a_running_batch_gets_what_it_gets_alone(tiny_gguf) -> None:
    generator = engine(tiny_gguf, slots=4)
    alone_first = generator.generate(["hello there"], LONG)[0]
    alone_second = generator.generate(["the quick brown fox"], SamplingParams(max_new_tokens=12, ignore_eos=True))[0]
    first = generator.stream("hello there", LONG)
    received = [next(first) for _ in range(3)]  # the first request is decoding ...
    second = generator.generate(["the quick brown fox"], SamplingParams(max_new_tokens=12, ignore_eos=True))[0]
    received += list(first)  # ... and went on while the second joined and left
    assert second.token_ids == alone_second.token_ids
    assert "".join(received) == alone_first.text and first.generated_tokens == 40


def test_each_request_keeps_its_own_sampling_state(tiny_gguf) -> None:
    generator = engine(tiny_gguf, slots=4)
    requests = {
        "a": SamplingParams(max_new_tokens=15, temperature=0.9, seed=1, ignore_eos=True),
        "b": SamplingParams(max_new_tokens=15, temperature=1.3, top_k=5, seed=2, ignore_eos=True),
        "c": SamplingParams(max_new_tokens=15, no_repeat_ngram_size=2, ignore_eos=True),
        "d": SamplingParams(max_new_tokens=15, repetition_penalty=1.5, ignore_eos=True),
    }
    alone = {prompt: generator.generate([prompt], params)[0].token_ids for prompt, params in requests.items()}
    streams = {prompt: generator.stream(prompt, params) for prompt, params in requests.items()}  # together
    together = {prompt: stream.wait().token_ids for prompt, stream in streams.items()}
    assert together == alone


def test_cancelling_frees_the_slot_at_once(tiny_gguf) -> None:
    generator = engine(tiny_gguf, slots=1, max_waiting=4)
    runaway = generator.stream("hello", SamplingParams(max_new_tokens=200, ignore_eos=True))
    next(runaway)
    waiting = generator.stream("a", SamplingParams(max_new_tokens=3, ignore_eos=True))  # no slot for it yet
    runaway.close()
    assert runaway.finish_reason == "cancelled" and runaway.generated_tokens < 200
    assert waiting.wait().generated_tokens == 3
    assert generator.scheduler.running == 0 and not any(slot.busy for slot in generator.scheduler.slots)


def test_a_long_prompt_does_not_stall_running_streams(tiny_gguf) -> None:
    generator = engine(tiny_gguf, slots=2, prefill_chunk=8)
    running = generator.stream("hello", SamplingParams(max_new_tokens=120, ignore_eos=True))
    next(running)
    arrivals: list[float] = []
    thread = threading.Thread(target=lambda: arrivals.extend(time.perf_counter() for _ in running))
    thread.start()
    started = time.perf_counter()
    long_prompt = " ".join(["word"] * 40)  # ~25 prefill chunks of 8 tokens
    generator.generate([long_prompt], SamplingParams(max_new_tokens=1))
    prefilled = time.perf_counter()
    thread.join()
    during = [t for t in arrivals if started <= t <= prefilled]
    assert len(during) >= 10, "the running stream got tokens between the long prompt's prefill chunks"


def test_a_full_engine_refuses_at_once(tiny_gguf) -> None:
    generator = engine(tiny_gguf, slots=1, max_waiting=1)
    params = SamplingParams(max_new_tokens=200, ignore_eos=True)
    busy = generator.stream("hello", params)
    next(busy)  # decoding: its slot is taken
    queued = generator.stream("a", params)
    with pytest.raises(EngineFullError):
        generator.stream("b", params)
    busy.close()
    queued.close()


def test_prefix_reuse_skips_the_shared_prompt(tiny_gguf) -> None:
    generator = engine(tiny_gguf, slots=2)
    params = SamplingParams(max_new_tokens=6, ignore_eos=True)
    first = generator.generate(["system: be brief. user: hi"], params)[0]
    second = generator.generate(["system: be brief. user: bye"], params)[0]
    assert generator.scheduler.reused_tokens >= len(generator.tokenizer.encode("system: be brief. user:")) - 1
    fresh = engine(tiny_gguf, slots=2, reuse_prefix=False)
    assert fresh.generate(["system: be brief. user: bye"], params)[0].token_ids == second.token_ids
    assert first.token_ids == fresh.generate(["system: be brief. user: hi"], params)[0].token_ids


def test_shutdown_ends_every_request_with_the_error(tiny_gguf) -> None:
    generator = engine(tiny_gguf, slots=1, max_waiting=2)
    params = SamplingParams(max_new_tokens=200, ignore_eos=True)
    running, waiting = generator.stream("hello", params), generator.stream("a", params)
    next(running)
    generator.shutdown(RuntimeError("going away"))
    for stream in (running, waiting):
        with pytest.raises(RuntimeError, match="going away"):
            list(stream)
    assert generator.generate(["hello"], SamplingParams(max_new_tokens=2))[0].generated_tokens == 2  # restarts


def test_a_waiting_request_that_is_cancelled_leaves_at_once(tiny_gguf) -> None:
    generator = engine(tiny_gguf, slots=1, max_waiting=4)
    busy = generator.stream("hello", SamplingParams(max_new_tokens=200, ignore_eos=True))
    next(busy)
    waiting = generator.stream("a", SamplingParams(max_new_tokens=5))
    waiting.close()  # returns when the request is done: it must not wait for the slot
    assert waiting.finish_reason == "cancelled" and waiting.generated_tokens == 0
    assert busy.finish_reason is None and generator.scheduler.waiting == 0
    busy.close()


def record_forwards(generator: Generator) -> list[list[tuple[int, ...]]]:
    """The segment shapes of every model.forward_segments call from now on."""
    forwards: list[list[tuple[int, ...]]] = []
    forward_segments = generator.model.forward_segments

    def recording(segments, *args, **kwargs):
        forwards.append([tuple(segment.tokens.shape) for segment in segments])
        return forward_segments(segments, *args, **kwargs)

    generator.model.forward_segments = recording
    return forwards


def test_a_prompt_chunk_and_the_decode_step_share_one_forward(tiny_gguf) -> None:
    """While answers decode, each forward holds a chunk of the new prompt and the running rows' next tokens
    (float32 weights: the decode step is the model's own arithmetic)."""
    generator = engine(tiny_gguf, weights="float32", slots=2, prefill_chunk=8)
    forwards = record_forwards(generator)
    running = generator.stream("hello", SamplingParams(max_new_tokens=200, ignore_eos=True))
    next(running)
    forwards.clear()
    long_prompt = " ".join(["word"] * 40)
    joined = generator.generate([long_prompt], SamplingParams(max_new_tokens=1))[0]
    running.close()
    with_chunk = [shapes for shapes in forwards if shapes[0][1] > 1]  # a chunk comes first, (1, n)
    assert joined.generated_tokens == 1
    assert sum(shapes[0][1] for shapes in with_chunk) == generator.count_tokens(long_prompt)
    assert len(with_chunk) > 10 and all(shapes[0][1] <= 12 for shapes in with_chunk)  # chunks of 8, a rest <= 12
    assert all(shapes[1:] == [(1, 1)] for shapes in with_chunk)  # every chunk rode with the decode step


@pytest.mark.parametrize("weights", ["float32", "q4_1"])
def test_prompts_waiting_together_are_read_in_one_forward(tiny_gguf, weights: str) -> None:
    """With no answer streaming, the waiting prompts go into one forward while they fit prefill_batch_tokens (the
    oldest first, whole), and each gets what it gets alone."""
    prompts = ["hello there", "the quick brown fox", "ab", " ".join(["word"] * 30)]
    params = SamplingParams(max_new_tokens=6, ignore_eos=True)
    alone = [engine(tiny_gguf, weights).generate([prompt], params)[0].token_ids for prompt in prompts]
    generator = engine(tiny_gguf, weights, slots=4, prefill_batch_tokens=40)
    lengths = [generator.count_tokens(prompt) for prompt in prompts]
    assert sum(lengths[:3]) <= 40 < sum(lengths)  # the first three fit, the fourth does not
    forwards = record_forwards(generator)
    together = [result.token_ids for result in generator.generate(prompts, params)]
    assert together == alone
    reads = [[shape for shape in shapes if shape[1] > 1] for shapes in forwards]
    assert [n for _, n in reads[0]] == lengths[:3]  # read together, the oldest first
    assert [len(read) for read in reads].count(1) == 1 and sum(map(len, reads)) == 4  # the fourth alone, later


def test_with_quantized_weights_the_decode_step_runs_apart_from_prompt_chunks(tiny_gguf) -> None:
    """The quantized step is other arithmetic than the float32 forward: the running rows always go through it (an
    answer does not depend on what else runs), and the prompt chunks through the model, one forward each."""
    generator = engine(tiny_gguf, weights="q4_1", slots=2, prefill_chunk=8)
    assert generator.weights.startswith("q4_1")
    forwards = record_forwards(generator)
    params = SamplingParams(max_new_tokens=30, ignore_eos=True)
    alone = generator.generate(["hello"], params)[0]
    running = generator.stream("hello", params)
    received = [next(running)]
    forwards.clear()
    generator.generate([" ".join(["word"] * 40)], SamplingParams(max_new_tokens=1))
    received += list(running)
    assert len(forwards) > 5 and all(len(shapes) == 1 and shapes[0][1] > 1 for shapes in forwards)
    assert "".join(received) == alone.text


def test_a_process_exiting_mid_answer_exits_cleanly(tiny_gguf) -> None:
    """Exiting while the loop is inside a forward used to abort the process (torch's threads torn down)."""
    script = (
        "import sys, time\n"
        "from models import Generator, SamplingParams\n"
        f"generator = Generator.from_pretrained({str(tiny_gguf)!r}, device='cpu')\n"
        "stream = generator.stream(' '.join(['word'] * 10), SamplingParams(max_new_tokens=150, ignore_eos=True))\n"
        "next(iter(stream)); time.sleep(0.05)\n"
        "print('exiting', flush=True)\n"
    )
    for _ in range(3):  # the abort came on most exits, not all
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                              cwd=Path(__file__).resolve().parents[2])  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert "exiting" in done.stdout
