"""Time to first token under load, against issue 15's bound: no request's time to first token exceeds twice its
unloaded value plus the prefills queued ahead of it.

The continuous-batching engine itself (no retrieval, no HTTP), one process, the shipped weights, RAG prompts of
the service's size (system message, numbered AER abstracts, question; about 400 tokens):
- alone: each prompt on an idle engine, cold (no cached prefix).
- join: one prompt submitted while --streams answers are decoding (their prefills done): nothing is queued
  ahead of it, so its bound is 2 x its time alone.
- burst: --burst prompts submitted at once to an idle engine, prefilled oldest first; request j's bound is
  2 x its own time alone + the times alone of the requests before it.
Every time is the median of --rounds runs (this machine's speed drifts by 10-25% within minutes); the worst run
is reported beside it.

    python -m benchmarks.first_token_under_load [--device cpu] [--prompt-tokens 400] [--streams 7] [--burst 8]

Prints a table and writes benchmarks/results/first_token_under_load_<device>.json.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from dataclasses import asdict, dataclass

import torch

from benchmarks.common import machine, relative, write_results
from benchmarks.generation_benchmark import QUESTIONS, rag_prompt, short_prompts
from models import Generator, SamplingParams
from models.detokenize import GenerationResult
from models.loading import build_model, default_gguf_path, load_gguf
from models.scheduler import SchedulerSettings
from models.tokenizer import Tokenizer
from runtime.device import resolve_device, resolve_dtype


@dataclass(frozen=True)
class LoadSettings:
    device: str = "cpu"
    prompt_tokens: int = 400  # the service's default prompt (one passage) is about this long
    streams: int = 7  # answers decoding when the joining request arrives (8 slots: 7 + the newcomer)
    burst: int = 8  # prompts submitted at once
    new_tokens: int = 8  # per measured request (only its first token is timed)
    rounds: int = 5

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be cpu or cuda, got {self.device!r}.")
        if self.prompt_tokens < 100 or min(self.streams, self.burst, self.rounds) < 1 or self.new_tokens < 1:
            raise ValueError("prompt_tokens must be >= 100; streams, burst, rounds and new_tokens >= 1.")


class FirstTokenClock:
    """A request sink that notes when the first text and the end arrive (called on the scheduler's thread)."""

    def __init__(self) -> None:
        self.submitted = time.perf_counter()
        self.first: float | None = None
        self.done = threading.Event()
        self.error: BaseException | None = None

    def on_delta(self, text: str) -> None:
        if self.first is None:
            self.first = time.perf_counter()

    def on_finish(self, result: GenerationResult) -> None:
        self.done.set()

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self.done.set()

    def wait(self) -> float:
        """Seconds from submission to the first text."""
        self.done.wait()
        if self.error is not None or self.first is None:
            raise RuntimeError(f"request failed: {self.error!r}")
        return self.first - self.submitted


def submit(generator: Generator, prompt: str, new_tokens: int,
           cancel: threading.Event | None = None) -> FirstTokenClock:  # fmt: skip
    clock = FirstTokenClock()
    ids = generator.tokenizer.encode(prompt)
    params = SamplingParams(max_new_tokens=new_tokens, ignore_eos=True)
    generator.scheduler.submit(ids, params, new_tokens, clock, cancel)
    return clock


def alone(generator: Generator, prompt: str, settings: LoadSettings) -> float:
    generator.scheduler.forget_prefixes()
    return submit(generator, prompt, settings.new_tokens).wait()


def joining(generator: Generator, prompt: str, background: list[str], settings: LoadSettings) -> float:
    """Time to first token of `prompt` submitted once every background answer is decoding."""
    generator.scheduler.forget_prefixes()
    stop = threading.Event()
    running = [submit(generator, p, 1000, stop) for p in background]
    while any(clock.first is None for clock in running):
        time.sleep(0.005)
    measured = submit(generator, prompt, settings.new_tokens).wait()
    stop.set()  # the background answers end at the next step
    for clock in running:
        clock.done.wait()
    return measured


def burst(generator: Generator, prompts: list[str], settings: LoadSettings) -> list[float]:
    generator.scheduler.forget_prefixes()
    clocks = [submit(generator, p, settings.new_tokens) for p in prompts]
    return [clock.wait() for clock in clocks]


def run(settings: LoadSettings) -> dict:
    device = resolve_device(settings.device)
    config, tensors, reader = load_gguf(default_gguf_path())
    tokenizer = Tokenizer.from_gguf(reader)
    model = build_model(config, tensors, device=device, dtype=resolve_dtype(None, device, auto="exact"))
    slots = max(settings.streams + 1, settings.burst)
    generator = Generator(model, tokenizer, scheduler=SchedulerSettings(slots=slots))
    prompts = [rag_prompt(tokenizer, settings.prompt_tokens, QUESTIONS[i % len(QUESTIONS)], offset=25 * i)
               for i in range(settings.burst)]  # fmt: skip
    background = short_prompts(tokenizer, settings.streams)

    submit(generator, prompts[0], 2).wait()  # warm-up
    alone_runs, join_runs, burst_runs = [], [], []
    for _ in range(settings.rounds):  # the cases in turn, so that the machine's drift touches each alike
        alone_runs.append([alone(generator, p, settings) for p in prompts])
        join_runs.append(joining(generator, prompts[0], background, settings))
        burst_runs.append(burst(generator, prompts, settings))
    unloaded = [statistics.median(run[j] for run in alone_runs) for j in range(settings.burst)]
    rows = [{"case": f"join {settings.streams} decoding", "alone_s": unloaded[0], "ahead_s": 0.0,
             "loaded_s": statistics.median(join_runs), "worst_s": max(join_runs), "runs_s": join_runs}]
    for j in range(settings.burst):
        runs = [run[j] for run in burst_runs]
        rows.append({"case": f"burst of {settings.burst}, #{j + 1}", "alone_s": unloaded[j],
                     "ahead_s": sum(unloaded[:j]), "loaded_s": statistics.median(runs), "worst_s": max(runs),
                     "runs_s": runs})  # fmt: skip
    for row in rows:
        row["bound_s"] = 2 * row["alone_s"] + row["ahead_s"]
        row["within_bound"] = row["loaded_s"] <= row["bound_s"]
    return {
        "settings": asdict(settings),
        "machine": machine(),
        "prompt_tokens": [len(tokenizer.encode(p)) for p in prompts],
        "rows": rows,
        "all_within_bound": all(row["within_bound"] for row in rows),
        "worst_fraction_of_bound": max(row["loaded_s"] / row["bound_s"] for row in rows),
    }


def print_report(report: dict) -> None:
    print(f"\nTime to first token under load ({report['machine']['cpu_model']}, "
          f"{report['machine']['torch_threads']} threads; prompts of {min(report['prompt_tokens'])}-"
          f"{max(report['prompt_tokens'])} tokens; medians of {report['settings']['rounds']} rounds)")
    print(f"{'case':<24} {'alone s':>8} {'loaded s':>9} {'worst s':>8} {'bound s':>8} {'of bound':>9}")
    for row in report["rows"]:
        print(f"{row['case']:<24} {row['alone_s']:>8.3f} {row['loaded_s']:>9.3f} {row['worst_s']:>8.3f} "
              f"{row['bound_s']:>8.3f} {row['loaded_s'] / row['bound_s']:>8.0%}")
    verdict = "every request within" if report["all_within_bound"] else "SOME REQUEST OVER"
    print(f"{verdict} its bound (worst {report['worst_fraction_of_bound']:.0%} of it).")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = LoadSettings()
    parser.add_argument("--device", choices=["cpu", "cuda"], default=defaults.device)
    for name in ("prompt_tokens", "streams", "burst", "new_tokens", "rounds"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    settings = LoadSettings(**vars(parser.parse_args(argv)))
    torch.set_grad_enabled(False)
    report = run(settings)
    print_report(report)
    print(f"wrote {relative(write_results(f'first_token_under_load_{settings.device}', report))}")


if __name__ == "__main__":
    main()
