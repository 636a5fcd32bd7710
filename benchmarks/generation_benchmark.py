"""Generation speed, side by side: our engine (its default, and its reference path: float32 on CPU, the decode
step without our fused kernels on a GPU) against llama.cpp and transformers' generate(), the same GGUF, threads and
prompts, in one run.

Measures batch-1 decode tokens/s, time to first token (TTFT) for a ~1,500-token RAG prompt (cold, and with the
system-message prefix already cached), batch-16 throughput, and the continuous-batching engine's decode-only
aggregate tokens/s with 8 streams running at once; and the quality bar of the quantized default: greedy tokens
against llama.cpp's on the same GGUF (the first 32 of 20 prompts). Prints a table and writes
benchmarks/results/generation_<device>.json.

    .venv/bin/python -m benchmarks.generation_benchmark --device cpu --threads 2   # ~12 minutes
    .venv/bin/python -m benchmarks.generation_benchmark --device cuda         # bfloat16
    .venv/bin/python -m benchmarks.generation_benchmark --device cuda --random-weights \
        --gguf var/smollm2-metadata.gguf  # no weights needed: shapes and tokenizer (benchmarks/gguf_metadata.py)

The llama.cpp column needs llama-cpp-python (the optional `bench` extra, built from source); without it the column
is skipped with a note. llama.cpp runs in a process of its own, as its users run it (benchmarks/llama_cpp_baseline.py
says why). Engines are timed in alternating rounds (medians): these shared machines drift by 10-25%
within minutes. Decode speed depends on shapes, not weight values, so --random-weights (SmolLM2 shapes) gives the
same speeds; the transformers baseline may decode fewer tokens (it is slow on CPU): rates are per token.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from benchmarks import llama_cpp_baseline
from benchmarks.common import relative, write_results
from benchmarks.transformers_baseline import reference_model, synchronize, time_reference
from models import Generator, SamplingParams
from models.loading import build_model, default_gguf_path, load_gguf
from models.model import ModelConfig
from models.quantized import WEIGHT_CHOICES, gguf_blocks
from models.scheduler import SchedulerSettings
from models.tokenizer import Tokenizer
from runtime.device import resolve_device, resolve_dtype
from runtime.memory import retain_freed_memory
from runtime.openmp import openmp_settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "data" / "aer_abstracts.csv"
SYSTEM = ("You are a research assistant for American Economic Review abstracts. Answer only from the "
          "numbered passages below and cite them like [1]. If they do not contain the answer, say so.")
QUESTIONS = [
    "What is the effect of storm warnings on shipping losses?", "How do minimum wages affect employment?",
    "What explains the gender pay gap?", "Do trade shocks change local labor markets?",
    "How does monetary policy affect inflation expectations?", "What drives housing prices?",
    "Are school vouchers effective?", "How do auctions allocate spectrum?",
    "What is the role of social networks in job search?", "Does microcredit reduce poverty?",
    "How do firms set prices under uncertainty?", "What causes bank runs?",
    "How does immigration affect native wages?", "What is the equity premium puzzle?",
    "Do conditional cash transfers improve health?", "How do tariffs affect consumer prices?",
    "Why do firms export?", "What is the effect of class size on test scores?",
    "How do credit constraints affect entrepreneurship?", "Does foreign aid promote growth?",
]


@dataclass(frozen=True)
class BenchmarkSettings:
    device: str = "cpu"
    new_tokens: int = 64  # ours, batch 1
    baseline_new_tokens: int = 16  # transformers, batch 1 (rates are per token)
    prompt_tokens: int = 1500  # the RAG prompt for TTFT
    batch: int = 16
    batch_new_tokens: int = 32
    streams: int = 8  # concurrent streams for the continuous-batching row
    baseline_batch_new_tokens: int = 8
    threads: int | None = None
    random_weights: bool = False  # SmolLM2's shapes from the GGUF's metadata, random values
    gguf: str | None = None  # default: the shipped SmolLM2 GGUF
    skip_baseline: bool = False  # transformers
    skip_llama_cpp: bool = False
    weights: str = "auto"  # our engine's decode weights (models/quantized.py); CPU also runs the float32 reference
    ttft_rounds: int = 9  # cold time-to-first-token rounds, the engines in turn (medians)
    decode_rounds: int = 5  # batch-1 decode rounds, the engines in turn (medians)
    quality_prompts: int = 20  # greedy tokens against llama.cpp's
    quality_tokens: int = 32

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be cpu or cuda, got {self.device!r}.")
        if min(self.new_tokens, self.baseline_new_tokens, self.batch_new_tokens, self.baseline_batch_new_tokens) < 2:
            raise ValueError("every new-token count must be at least 2 (one to time the first token).")
        if self.prompt_tokens < 100 or min(self.batch, self.ttft_rounds, self.decode_rounds) < 1:
            raise ValueError("prompt_tokens must be >= 100, batch and the round counts >= 1.")
        if self.weights not in WEIGHT_CHOICES:
            raise ValueError(f"weights must be one of {WEIGHT_CHOICES}, got {self.weights!r}.")


def random_tensors(config: ModelConfig, seed: int = 0) -> dict[str, torch.Tensor]:
    """Hugging Face-named weights of the config's shapes: speeds depend on shapes, not values."""
    rng = torch.Generator().manual_seed(seed)
    hidden, inter = config.hidden_size, config.intermediate_size
    q_rows, kv_rows = config.num_heads * config.head_dim, config.num_kv_heads * config.head_dim
    shapes = {"model.embed_tokens.weight": (config.vocab_size, hidden), "model.norm.weight": (hidden,)}
    if not config.tie_embeddings:
        shapes["lm_head.weight"] = (config.vocab_size, hidden)
    for i in range(config.num_layers):
        layer = f"model.layers.{i}."
        attn, mlp = layer + "self_attn.", layer + "mlp."
        shapes |= {layer + "input_layernorm.weight": (hidden,), layer + "post_attention_layernorm.weight": (hidden,),
                   attn + "q_proj.weight": (q_rows, hidden), attn + "o_proj.weight": (hidden, q_rows),
                   attn + "k_proj.weight": (kv_rows, hidden), attn + "v_proj.weight": (kv_rows, hidden),
                   mlp + "gate_proj.weight": (inter, hidden), mlp + "up_proj.weight": (inter, hidden),
                   mlp + "down_proj.weight": (hidden, inter)}  # fmt: skip
        if config.attention_bias:
            shapes |= {layer + f"self_attn.{p}_proj.bias": (rows,) for p, rows in (("q", q_rows), ("k", kv_rows),
                                                                                 ("v", kv_rows))}  # fmt: skip
    return {name: (torch.ones(shape) if name.endswith("norm.weight") else torch.randn(shape, generator=rng) * 0.02)
            for name, shape in shapes.items()}  # fmt: skip


def rag_prompt(tokenizer: Tokenizer, target_tokens: int, question: str, offset: int = 0) -> str:
    """System message + numbered AER abstracts + question, about target_tokens long."""
    abstracts: list[str] = []
    if CORPUS.is_file():
        with CORPUS.open(newline="", encoding="utf-8") as handle:
            abstracts = [row["abstract"] for row in csv.DictReader(handle) if row["abstract"]]
    abstracts = abstracts[offset:] or [f"Passage about economics number {i}. " * 12 for i in range(200)]
    passages: list[str] = []
    for abstract in abstracts:
        candidate = [*passages, f"[{len(passages) + 1}] {abstract}"]
        user = "\n\n".join(candidate) + f"\n\nQuestion: {question}"
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
        if len(tokenizer.encode(tokenizer.apply_chat_template(messages))) > target_tokens:
            break
        passages = candidate
    user = "\n\n".join(passages) + f"\n\nQuestion: {question}"
    return tokenizer.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}])


def short_prompts(tokenizer: Tokenizer, count: int) -> list[str]:
    questions = (QUESTIONS * (count // len(QUESTIONS) + 1))[:count]
    return [tokenizer.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}])
            for q in questions]


def weight_bytes(config: ModelConfig, dtype: torch.dtype) -> int:
    """Bytes of weights read per decode step: every projection plus the (tied) LM head."""
    hidden, inter = config.hidden_size, config.intermediate_size
    qkv = hidden * (config.num_heads + 2 * config.num_kv_heads) * config.head_dim
    per_layer = qkv + config.num_heads * config.head_dim * hidden + 3 * hidden * inter + 2 * hidden
    return (config.num_layers * per_layer + config.vocab_size * hidden + hidden) * dtype.itemsize


def memory_bandwidth(device: torch.device) -> float:
    """Measured copy bandwidth (bytes read and written per second): the roofline for batch-1 decode."""
    source = torch.ones((1024 if device.type == "cuda" else 128) * 1024 * 1024 // 4, device=device)  # beyond caches
    target = torch.empty_like(source)
    best = float("inf")
    for _ in range(5):
        synchronize(device)
        started = time.perf_counter()
        target.copy_(source)
        synchronize(device)
        best = min(best, time.perf_counter() - started)
    return 2 * source.numel() * 4 / best


# ----------------------------------------------------------------------------------------- our engine


def time_ours_stream(generator: Generator, prompt: str, new_tokens: int) -> tuple[float, float]:
    """(TTFT seconds, decode tokens/s after the first token) for one streamed request."""
    params = SamplingParams(max_new_tokens=new_tokens, ignore_eos=True)
    started = time.perf_counter()
    first = None
    stream = generator.stream(prompt, params)
    for _ in stream:
        first = first or time.perf_counter()
    synchronize(generator.device)
    ended = time.perf_counter()
    assert stream.generated_tokens == new_tokens
    assert first is not None
    return first - started, (new_tokens - 1) / (ended - first)


def time_ours_concurrent(generator: Generator, prompts: list[str], new_tokens: int) -> float:
    """Decode-only aggregate tokens/s of streams running at once: tokens decoded between the moment the last
    stream got its first token and the moment the first stream finished, over that time."""
    params = SamplingParams(max_new_tokens=new_tokens, ignore_eos=True)
    arrivals: list[list[float]] = [[] for _ in prompts]

    def consume(stream, times: list[float]) -> None:
        for _ in stream:
            times.append(time.perf_counter())

    streams = [generator.stream(prompt, params) for prompt in prompts]
    threads = [threading.Thread(target=consume, args=(s, t)) for s, t in zip(streams, arrivals, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    start, end = max(times[0] for times in arrivals), min(times[-1] for times in arrivals)
    decoded = sum(start < t <= end for times in arrivals for t in times)
    return decoded / (end - start)


def time_ours_first_token(generator: Generator, prompt: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) to the first token."""
    started, cpu_started = time.perf_counter(), time.process_time()
    generator.generate([prompt], SamplingParams(max_new_tokens=1, ignore_eos=True))
    synchronize(generator.device)
    return time.perf_counter() - started, time.process_time() - cpu_started


def time_ours_batch(generator: Generator, prompts: list[str], new_tokens: int) -> float:
    started = time.perf_counter()
    results = generator.generate(prompts, SamplingParams(max_new_tokens=new_tokens, ignore_eos=True))
    synchronize(generator.device)
    assert all(r.generated_tokens == new_tokens for r in results)
    return len(prompts) * new_tokens / (time.perf_counter() - started)


# -------------------------------------------------------------------------------------------- main


def alternate(rounds: int, measures: dict[str, Callable[[], object]]) -> dict[str, list]:
    """Every measure once a round, the order rotating each round; each one's results in a list."""
    results: dict[str, list] = {name: [] for name in measures}
    names = list(measures)
    for round_number in range(rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            results[name].append(measures[name]())
    return results


def run(settings: BenchmarkSettings) -> dict:
    if settings.threads:
        torch.set_num_threads(settings.threads)
    threads = torch.get_num_threads()
    device = resolve_device(settings.device)
    dtype = resolve_dtype(None, device, auto="exact")
    gguf_path = Path(settings.gguf) if settings.gguf else default_gguf_path()
    config, tensors, reader = load_gguf(gguf_path)
    tokenizer = Tokenizer.from_gguf(reader)
    blocks = gguf_blocks(reader) if device.type == "cpu" and not settings.random_weights else None
    if settings.random_weights:
        tensors = random_tensors(config)

    def engine(weights: str, fused_kernels: bool = True) -> Generator:
        return Generator(build_model(config, tensors, device=device, dtype=dtype), tokenizer,
                         model_name="SmolLM2-135M-Instruct" + (" (random)" if settings.random_weights else ""),
                         scheduler=SchedulerSettings(slots=max(settings.batch, settings.streams)), weights=weights,
                         blocks=blocks, fused_kernels=fused_kernels)  # type: ignore[arg-type]  # fmt: skip

    ours = {"ours": engine(settings.weights)}
    if ours["ours"]._quantized is not None:
        ours["ours_float32"] = engine("float32")  # the reference path, timed beside the default
    elif ours["ours"].fused_kernels:
        ours["ours_unfused"] = engine(settings.weights, fused_kernels=False)  # the GPU's reference path
    llm = None if settings.skip_llama_cpp or settings.random_weights or device.type != "cpu" else (
        llama_cpp_baseline.start(gguf_path, threads, context=settings.prompt_tokens + 512))
    hf = None if settings.skip_baseline else reference_model(config, tensors, device, dtype)
    long_prompt = rag_prompt(tokenizer, settings.prompt_tokens, QUESTIONS[0])
    other_long_prompt = rag_prompt(tokenizer, settings.prompt_tokens, QUESTIONS[1], offset=40)
    short = short_prompts(tokenizer, max(settings.batch, settings.quality_prompts))
    encode = tokenizer.encode
    rows: dict[str, dict[str, float]] = {}

    for generator in ours.values():  # warm-ups: allocations, kernels, this prompt length
        time_ours_stream(generator, short[0], 4)
        time_ours_first_token(generator, other_long_prompt)
    if llm is not None:
        llm.stream(encode(short[0]), 4)
    decode: dict[str, Callable[[], object]] = {
        name: (lambda g=g: time_ours_stream(g, short[1], settings.new_tokens)[1]) for name, g in ours.items()}
    if llm is not None:
        decode["llama_cpp"] = lambda: llm.stream(encode(short[1]), settings.new_tokens)[1]
    decode_rounds = alternate(settings.decode_rounds, decode)
    rows["decode_tokens_per_s_batch1"] = {name: statistics.median(v) for name, v in decode_rounds.items()}

    prefix_rounds = []
    for _ in range(settings.ttft_rounds):
        ours["ours"].scheduler.forget_prefixes()
        time_ours_first_token(ours["ours"], long_prompt)  # leaves the shared system-message prefix cached
        prefix_rounds.append(time_ours_first_token(ours["ours"], other_long_prompt)[0])
    rows["ttft_s_rag_prompt_system_prefix_cached"] = {"ours": statistics.median(prefix_rounds)}

    batch_key = f"throughput_tokens_per_s_batch{settings.batch}"
    streams_key = f"decode_tokens_per_s_{settings.streams}_concurrent_streams"
    for generator in ours.values():
        time_ours_batch(generator, short[: settings.batch], 2)  # warm-up at this batch size
    batch_rounds = alternate(3, {name: lambda g=g: time_ours_batch(g, short[: settings.batch],
                                                                   settings.batch_new_tokens)
                                 for name, g in ours.items()})  # fmt: skip
    stream_rounds = alternate(3, {name: lambda g=g: time_ours_concurrent(g, short[: settings.streams],
                                                                         settings.new_tokens)
                                  for name, g in ours.items()})  # fmt: skip
    rows[batch_key] = {name: statistics.median(v) for name, v in batch_rounds.items()}
    rows[streams_key] = {name: statistics.median(v) for name, v in stream_rounds.items()}

    # Time to first token, cold (no cached prefix), every engine in turn.
    if hf is not None:
        time_reference(hf, [encode(other_long_prompt)], 2, device)  # warm-up at this length
    cold: dict[str, Callable[[], object]] = {}
    for name, generator in ours.items():
        def ours_cold(generator: Generator = generator) -> tuple[float, float]:
            generator.scheduler.forget_prefixes()
            return time_ours_first_token(generator, long_prompt)
        cold[name] = ours_cold
    if hf is not None:
        cold["transformers"] = lambda: time_reference(hf, [encode(long_prompt)], 2, device)[::2]  # (wall, CPU)
    if llm is not None:
        cold["llama_cpp"] = lambda: (llm.first_token(encode(long_prompt)), float("nan"))
    ttft_pairs = alternate(settings.ttft_rounds, cold)
    ttft = {name: [wall for wall, _ in pairs] for name, pairs in ttft_pairs.items()}
    rows["ttft_s_rag_prompt"] = {name: statistics.median(v) for name, v in ttft.items()}
    rows["ttft_cpu_seconds_rag_prompt"] = {name: statistics.median(cpu for _, cpu in pairs)
                                           for name, pairs in ttft_pairs.items() if name != "llama_cpp"}  # fmt: skip

    if hf is not None:
        time_reference(hf, [encode(short[0])], 2, device)  # warm-up
        rows["decode_tokens_per_s_batch1"]["transformers"] = time_reference(
            hf, [encode(short[1])], settings.baseline_new_tokens, device)[1]
        rows[batch_key]["transformers"] = time_reference(
            hf, [encode(p) for p in short[: settings.batch]], settings.baseline_batch_new_tokens, device)[1]

    quality = None
    if llm is not None:  # the quality bar: greedy tokens equal llama.cpp's on the same GGUF
        prompts = short[: settings.quality_prompts]
        theirs = [llm.greedy(encode(p), settings.quality_tokens) for p in prompts]
        params = SamplingParams(max_new_tokens=settings.quality_tokens, ignore_eos=True)
        quality = {"prompts": len(prompts), "tokens": settings.quality_tokens}
        for name, generator in ours.items():
            mine = [result.token_ids for result in generator.generate(prompts, params)]
            agree = [next((i for i, (a, b) in enumerate(zip(m, t, strict=True)) if a != b), len(t))
                     for m, t in zip(mine, theirs, strict=True)]  # fmt: skip
            quality[name] = {"prompts_equal": sum(a == settings.quality_tokens for a in agree),
                             "first_difference_at": agree}  # fmt: skip
        llm.close()

    bandwidth = memory_bandwidth(device)
    decoder = ours["ours"]._quantized
    bytes_per_token = decoder.weight_bytes if decoder is not None else weight_bytes(config, dtype)
    roofline = bandwidth / bytes_per_token
    decode_rates = rows["decode_tokens_per_s_batch1"]

    reference = next((name for name in ours if name != "ours"), "ours_float32")

    def paired(name: str, other: str) -> float:  # each round's ratio (run back to back), then the median
        if other not in ttft:
            return float("nan")
        return statistics.median(o / m for o, m in zip(ttft[other], ttft[name], strict=True))

    return {
        "settings": asdict(settings),
        "reference": reference,  # the column "ours" is compared with: ours_float32 (CPU) or ours_unfused (GPU)
        "environment": {
            "device": torch.cuda.get_device_name() if device.type == "cuda" else platform.processor() or "cpu",
            "dtype": str(dtype), "torch": torch.__version__, "threads": threads,
            "weights": {name: g.weights for name, g in ours.items()},
            "llama_cpp_python": llm.version if llm is not None else None,
            "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
            # process-wide (runtime/memory.py), so the other engines run with it too
            "retain_freed_memory": device.type == "cpu" and retain_freed_memory(),
            # process-wide too (runtime/openmp.py); llama.cpp's process inherits them
            "openmp": openmp_settings(),
        },
        "ttft_rounds_s": ttft,
        "decode_rounds_tokens_per_s": decode_rounds,
        "prompt_tokens": {"rag": len(encode(long_prompt)),
                          "short_mean": sum(len(encode(p)) for p in short) / len(short)},
        "results": rows,
        "quality_greedy_vs_llama_cpp": quality,
        "roofline": {
            "weight_bytes_per_token": bytes_per_token,
            "memory_bandwidth_bytes_per_s": bandwidth,
            "bandwidth_limit_tokens_per_s": roofline,
            "achieved_fraction_batch1": decode_rates["ours"] / roofline,
        },
        "ratios": {
            "decode_batch1_ours_over_llama_cpp": decode_rates["ours"] / decode_rates.get("llama_cpp", float("nan")),
            "decode_batch1_ours_over_reference": decode_rates["ours"] / decode_rates.get(reference, float("nan")),
            "decode_batch1_ours_over_transformers": decode_rates["ours"] / decode_rates.get("transformers",
                                                                                              float("nan")),
            # time to first token: ours over theirs (lower is better), median of the rounds' ratios
            "ttft_ours_over_llama_cpp_paired": 1 / paired("ours", "llama_cpp"),
            "ttft_ours_over_reference_paired": 1 / paired("ours", reference),
            "ttft_transformers_over_ours_paired": paired("ours", "transformers"),
            f"concurrent_{settings.streams}_over_llama_cpp_batch1": rows[streams_key]["ours"] / decode_rates.get(
                "llama_cpp", float("nan")),
            f"concurrent_{settings.streams}_over_batch1": rows[streams_key]["ours"] / decode_rates["ours"],
        },
    }


def print_report(report: dict) -> None:
    env = report["environment"]
    print(f"\nDevice {env['device']} ({env['dtype']}, {env['threads']} threads), weights {env['weights']}, "
          f"llama-cpp-python {env['llama_cpp_python']}, RAG prompt {report['prompt_tokens']['rag']} tokens")
    reference = report["reference"]
    columns = ("ours", reference, "llama_cpp", "transformers")
    print(f"{'metric':<42}" + "".join(f"{c:>14}" for c in columns) + f"{'ours/llama':>12}{'ours/ref':>10}")
    for metric, values in report["results"].items():
        cells = "".join(f"{values[c]:>14.3f}" if c in values else f"{'':>14}" for c in columns)
        ratios = "".join(f"{values['ours'] / values[c]:>{w}.2f}x" if c in values else f"{'':>{w + 1}}"
                         for c, w in (("llama_cpp", 11), (reference, 9)))  # fmt: skip
        print(f"{metric:<42}{cells}{ratios}")
    for name, value in report["ratios"].items():
        print(f"  {name}: {value:.2f}x")
    quality = report["quality_greedy_vs_llama_cpp"]
    if quality is not None:
        for name in ("ours", reference):
            if name in quality:
                print(f"greedy, first {quality['tokens']} tokens equal to llama.cpp's: "
                      f"{quality[name]['prompts_equal']} of {quality['prompts']} prompts ({name})")
    roof = report["roofline"]
    print(f"\nBatch-1 decode reads {roof['weight_bytes_per_token'] / 1e6:.0f} MB of weights per token; memory "
          f"bandwidth {roof['memory_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s -> limit "
          f"{roof['bandwidth_limit_tokens_per_s']:.0f} tokens/s; "
          f"achieved {100 * roof['achieved_fraction_batch1']:.0f}%.")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = BenchmarkSettings()
    parser.add_argument("--device", choices=["cpu", "cuda"], default=defaults.device)
    for name in ("new_tokens", "baseline_new_tokens", "prompt_tokens", "batch", "batch_new_tokens",
                 "baseline_batch_new_tokens", "streams", "threads", "ttft_rounds", "decode_rounds",
                 "quality_prompts", "quality_tokens"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    parser.add_argument("--weights", choices=WEIGHT_CHOICES, default=defaults.weights)
    parser.add_argument("--random-weights", action="store_true")
    parser.add_argument("--gguf", default=None, help="the model file (default: the shipped SmolLM2 GGUF)")
    parser.add_argument("--skip-baseline", action="store_true", help="no transformers column")
    parser.add_argument("--skip-llama-cpp", action="store_true", help="no llama.cpp column")
    args = parser.parse_args(argv)
    settings = BenchmarkSettings(**vars(args))
    report = run(settings)
    print_report(report)
    out = write_results(f"generation_{settings.device}", report)
    print(f"wrote {relative(out)}")


if __name__ == "__main__":
    main()
