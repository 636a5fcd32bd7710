"""Continuous batching on tiny models: requests join and leave the running batch, each with its own parameters,
and get exactly what they would get alone; slots are freed at once; what a turn does is planned (models.planning)
and checked as a plan: a long prompt is read in chunks beside the running answers' decode steps."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from models import Generator, SamplingParams
from models.planning import Admission, DecodeRow, Plan, Planner, Run, Slot
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


@dataclass
class Pending:
    """A request as the planner reads it (models.planning.PlannedRequest)."""

    request_id: int
    prompt_ids: list[int]
    submitted: float = 0.0
    filled: int = 0
    next_token: int | None = None
    slot: Slot | None = None


def decoding(request_id: int, slot: Slot, filled: int) -> Pending:
    slot.busy = True
    return Pending(request_id, [1] * filled, submitted=-1.0, filled=filled, next_token=7, slot=slot)


def follow(planner: Planner, waiting: list[Pending], running: list[Pending], slots: list[Slot]) -> list[Plan]:
    """Plans turn after turn, applying each as the scheduler does (decode rows never finish here), until nothing
    is left to read."""
    plans = []
    while waiting or any(r.next_token is None for r in running):
        plan = planner.schedule(waiting, running, slots)
        plans.append(plan)
        for admission in plan.admitted:
            request = waiting.pop(0)
            request.slot, request.filled = slots[admission.slot], admission.reused
            request.slot.busy = True
            running.append(request)
        requests = {r.request_id: r for r in running}
        for chunk in plan.prefill:
            request = requests[chunk.request_id]
            assert (chunk.slot, chunk.start) == (request.slot.index, request.filled)
            request.filled = chunk.stop
            if request.filled == len(request.prompt_ids):
                request.next_token = 0
        for row in plan.decode:
            requests[row.request_id].filled += 1
    return plans


@pytest.mark.parametrize("joins_prefill", [True, False])
def test_a_long_prompt_is_read_in_chunks_beside_every_decode_step(joins_prefill: bool) -> None:
    """While an answer decodes, each turn reads one chunk of a new long prompt (8 tokens, a last rest of up to 12)
    and decodes the running answer: in the same forward where the step is the model's arithmetic, else apart."""
    slots = [Slot(0), Slot(1)]
    running = [decoding(1, slots[0], filled=5)]
    waiting = [Pending(2, list(range(100, 136)))]  # 3 chunks of 8, then a rest of 12
    plans = follow(Planner(prefill_chunk=8, prefill_batch_tokens=0, joins_prefill=joins_prefill), waiting,
                   running, slots)  # fmt: skip
    assert plans[0].admitted == (Admission(2, slot=1, reused=0),)
    assert [(c.start, c.stop) for p in plans for c in p.prefill] == [(0, 8), (8, 16), (16, 24), (24, 36)]
    assert plans[0].prefill[0].tokens == tuple(range(100, 108))
    assert [p.decode for p in plans] == [(DecodeRow(1, slot=0, position=5 + turn, token=7),) for turn in range(4)]
    assert {p.run for p in plans} == {Run.FORWARD if joins_prefill else Run.FORWARD_THEN_STEP}
    assert (plans[0].decode_rows, plans[0].attend_len) == (1, 6)
    after = Planner(8, 0).schedule([], running, slots)  # both decoding now: rows 0 and 1, one step
    assert after.run is Run.STEP and not after.prefill and after.decode_rows == 2


def test_with_no_answer_decoding_prompts_are_read_whole_the_oldest_first() -> None:
    """Nothing decoding: the oldest prompt goes whole (no chunking), then the next ones while they fit the batch
    budget; a younger prompt that would fit never overtakes an older one that does not."""
    slots = [Slot(i) for i in range(4)]
    waiting = [Pending(1, [1] * 300, 1.0), Pending(2, [2] * 20, 2.0), Pending(3, [3] * 50, 3.0),
               Pending(4, [4] * 5, 4.0)]  # fmt: skip
    plan = Planner(prefill_chunk=8, prefill_batch_tokens=340).schedule(waiting, [], slots)
    assert [(c.request_id, c.start, c.stop) for c in plan.prefill] == [(1, 0, 300), (2, 0, 20)]
    assert plan.run is Run.FORWARD and not plan.decode and len(plan.admitted) == 4
    alone = Planner(prefill_chunk=8, prefill_batch_tokens=0).schedule(waiting, [], slots)  # the CPU's default
    assert [(c.request_id, c.stop) for c in alone.prefill] == [(1, 300)]


def test_admission_is_limited_by_free_slots_in_arrival_order_and_prefers_a_shared_prefix() -> None:
    slots = [Slot(0), Slot(1, token_ids=[5, 6, 7, 8]), Slot(2, token_ids=[5, 6, 9])]
    running = [decoding(1, slots[2], filled=3)]  # slot 2 is taken, whatever it holds
    waiting = [Pending(2, [5, 6, 9, 1], 1.0), Pending(3, [5, 6, 7, 2], 2.0), Pending(4, [3], 3.0)]
    plan = Planner(prefill_chunk=8, prefill_batch_tokens=0).schedule(waiting, running, slots)
    assert plan.admitted == (Admission(2, slot=1, reused=2), Admission(3, slot=0, reused=0))  # request 4 waits
    assert [(c.request_id, c.start) for c in plan.prefill] == [(2, 2), (3, 0)]  # both fit one chunk's budget
    assert Planner(8, 0, reuse_prefix=False).schedule(waiting, running, slots).admitted[0].reused == 0
    assert Planner(8, 0).schedule(waiting, [*running, decoding(5, slots[0], 1), decoding(6, slots[1], 1)],
                                  slots).admitted == ()  # fmt: skip
    assert Planner(8, 0).schedule([], [], slots) == Plan()  # nothing to do: an idle plan


def test_the_engine_plans_with_its_decode_step(tiny_gguf) -> None:
    """The float32 step is the model: its rows join the prompt's forward; the quantized step runs apart."""
    generator = engine(tiny_gguf, weights="float32", slots=2)
    assert generator.scheduler.step.joins_prefill and generator.scheduler.schedule() == Plan()
    assert not engine(tiny_gguf, weights="q4_1", slots=2).scheduler.planner.joins_prefill
    stats = generator.scheduler.stats()
    assert (stats.slots, stats.running, stats.waiting, stats.capacity) == (2, 0, 0, 2 + stats.max_waiting)


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
