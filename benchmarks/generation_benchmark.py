"""Generation speed, side by side: our engine vs transformers' generate() with the same weights and dtype.

Measures batch-1 decode tokens/s, time to first token (TTFT) for a ~1,500-token RAG prompt (cold, and
with the system-message prefix already cached), batch-16 throughput, and the continuous-batching engine's
decode-only aggregate tokens/s with 8 streams running at once. Prints a table and writes
benchmarks/results/generation_<device>.json.

    .venv/bin/python -m benchmarks.generation_benchmark --device cpu          # float32, ~8 minutes
    .venv/bin/python -m benchmarks.generation_benchmark --device cuda         # bfloat16
    .venv/bin/python -m benchmarks.generation_benchmark --device cuda --random-weights  # no GGUF needed

Decode speed depends on shapes and dtype, not weight values, so --random-weights (SmolLM2 shapes) gives
the same speeds; the transformers baseline may decode fewer tokens (it is slow on CPU): rates are per
token, so the comparison stays fair.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from benchmarks.common import relative, write_results
from models import Generator, SamplingParams
from models.loading import build_model, default_gguf_path, load_gguf
from models.model import ModelConfig
from models.quantize import quantize_int8
from models.scheduler import SchedulerSettings
from models.tokenizer import Tokenizer
from runtime.device import resolve_device, resolve_dtype
from runtime.memory import retain_freed_memory

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "data" / "aer_abstracts.csv"
H100_BANDWIDTH = 3.35e12  # bytes/s, HBM3 (SXM)
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
    random_weights: bool = False
    skip_baseline: bool = False
    skip_int8: bool = False  # CPU only: also time our engine with weight-only int8 (models/quantize.py)
    ttft_rounds: int = 9  # cold time-to-first-token rounds, ours and transformers' alternately (medians)

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be cpu or cuda, got {self.device!r}.")
        if min(self.new_tokens, self.baseline_new_tokens, self.batch_new_tokens, self.baseline_batch_new_tokens) < 2:
            raise ValueError("every new-token count must be at least 2 (one to time the first token).")
        if self.prompt_tokens < 100 or self.batch < 1 or self.ttft_rounds < 1:
            raise ValueError("prompt_tokens must be >= 100, batch and ttft_rounds >= 1.")


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


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def weight_bytes(config: ModelConfig, dtype: torch.dtype) -> int:
    """Bytes of weights read per decode step: every projection plus the (tied) LM head."""
    hidden, inter = config.hidden_size, config.intermediate_size
    qkv = hidden * (config.num_heads + 2 * config.num_kv_heads) * config.head_dim
    per_layer = qkv + config.num_heads * config.head_dim * hidden + 3 * hidden * inter + 2 * hidden
    return (config.num_layers * per_layer + config.vocab_size * hidden + hidden) * dtype.itemsize


def memory_bandwidth(device: torch.device) -> float:
    """Measured copy bandwidth (bytes/s): the roofline for batch-1 decode."""
    if device.type == "cuda":
        return H100_BANDWIDTH if "H100" in torch.cuda.get_device_name() else float("nan")
    source = torch.ones(128 * 1024 * 1024 // 4)  # 128 MiB, far beyond the caches
    target = torch.empty_like(source)
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        target.copy_(source)
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


# ------------------------------------------------------------------------------------ transformers


class _TimingStreamer:
    """transformers calls put() with the prompt, then with every new token: we keep the times."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def put(self, value: torch.Tensor) -> None:
        self.times.append(time.perf_counter())

    def end(self) -> None:
        pass


def reference_model(config: ModelConfig, tensors: dict[str, torch.Tensor], device: torch.device,
                    dtype: torch.dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    hf_config = LlamaConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers, num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_kv_heads, head_dim=config.head_dim, rms_norm_eps=config.rms_norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": config.rope_theta},
        max_position_embeddings=config.max_seq_len, tie_word_embeddings=config.tie_embeddings,
        bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )
    model = LlamaForCausalLM(hf_config)
    model.load_state_dict(tensors, strict=False)
    model.tie_weights()
    return model.to(device=device, dtype=dtype).eval()


def time_reference(model, ids: list[list[int]], new_tokens: int,
                   device: torch.device) -> tuple[float, float, float]:
    """(TTFT seconds, tokens/s after the first, summed over the batch; CPU seconds of the whole call) for
    a left-padded batch."""
    longest = max(map(len, ids))
    input_ids = torch.full((len(ids), longest), 2, dtype=torch.long)
    mask = torch.zeros((len(ids), longest), dtype=torch.long)
    for row, row_ids in enumerate(ids):
        input_ids[row, longest - len(row_ids):] = torch.tensor(row_ids)
        mask[row, longest - len(row_ids):] = 1
    streamer = _TimingStreamer() if len(ids) == 1 else None
    started, cpu_started = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        model.generate(input_ids.to(device), attention_mask=mask.to(device), max_new_tokens=new_tokens,
                       min_new_tokens=new_tokens, do_sample=False, streamer=streamer, pad_token_id=2)
    synchronize(device)
    ended = time.perf_counter()
    if streamer is None:
        return float("nan"), len(ids) * new_tokens / (ended - started), time.process_time() - cpu_started
    first = streamer.times[1]  # times[0] is the prompt
    return first - started, (new_tokens - 1) / (ended - first), time.process_time() - cpu_started


# -------------------------------------------------------------------------------------------- main


def run(settings: BenchmarkSettings) -> dict:
    if settings.threads:
        torch.set_num_threads(settings.threads)
    device = resolve_device(settings.device)
    dtype = resolve_dtype(None, device, auto="exact")
    config, tensors, reader = load_gguf(default_gguf_path())
    tokenizer = Tokenizer.from_gguf(reader)
    if settings.random_weights:
        generator_rng = torch.Generator().manual_seed(0)
        tensors = {name: torch.randn(t.shape, generator=generator_rng) * 0.02 for name, t in tensors.items()}
    generator = Generator(build_model(config, tensors, device=device, dtype=dtype), tokenizer,
                          model_name="SmolLM2-135M-Instruct" + (" (random)" if settings.random_weights else ""),
                          scheduler=SchedulerSettings(slots=max(settings.batch, settings.streams)))  # fmt: skip
    long_prompt = rag_prompt(tokenizer, settings.prompt_tokens, QUESTIONS[0])
    other_long_prompt = rag_prompt(tokenizer, settings.prompt_tokens, QUESTIONS[1], offset=40)
    short = short_prompts(tokenizer, settings.batch)
    rows: dict[str, dict[str, float]] = {}

    hf = None if settings.skip_baseline else reference_model(config, tensors, device, dtype)
    encode = tokenizer.encode

    # ours -------------------------------------------------------------------------------------------
    time_ours_stream(generator, short[0], 4)  # warm-up (allocations, CUDA graph capture)
    _, ours_decode = time_ours_stream(generator, short[1], settings.new_tokens)
    time_ours_first_token(generator, other_long_prompt)  # warm-up at this length
    prefix_rounds = []
    for _ in range(settings.ttft_rounds):
        generator.scheduler.forget_prefixes()
        time_ours_first_token(generator, long_prompt)  # leaves the shared system-message prefix cached
        prefix_rounds.append(time_ours_first_token(generator, other_long_prompt)[0])
    ours_ttft_prefix = statistics.median(prefix_rounds)
    time_ours_batch(generator, short, 2)  # warm-up at this batch size
    ours_batch = time_ours_batch(generator, short, settings.batch_new_tokens)
    ours_streams = time_ours_concurrent(generator, short[: settings.streams], settings.new_tokens)

    # Time to first token, cold (no cached prefix), ours and transformers' in turn: these machines' speed drifts
    # by up to 10% within minutes, so alternating rounds and taking medians keeps the comparison fair.
    if hf is not None:
        time_reference(hf, [encode(other_long_prompt)], 2, device)  # warm-up at this length
    ttft: dict[str, list[float]] = {"ours": [], "ours_cpu": [], "transformers": [], "transformers_cpu": []}
    def ours_cold() -> None:
        generator.scheduler.forget_prefixes()
        wall, cpu = time_ours_first_token(generator, long_prompt)
        ttft["ours"].append(wall)
        ttft["ours_cpu"].append(cpu)

    def theirs_cold() -> None:
        wall, _, cpu = time_reference(hf, [encode(long_prompt)], 2, device)
        ttft["transformers"].append(wall)
        ttft["transformers_cpu"].append(cpu)  # (includes one decode step)

    measures = [ours_cold] if hf is None else [ours_cold, theirs_cold]
    for round_number in range(settings.ttft_rounds):  # who goes first alternates too
        for measure in measures if round_number % 2 == 0 else measures[::-1]:
            measure()
    ours_ttft_cold = statistics.median(ttft["ours"])
    rows["decode_tokens_per_s_batch1"] = {"ours": ours_decode}
    rows["ttft_s_rag_prompt"] = {"ours": ours_ttft_cold}
    rows["ttft_cpu_seconds_rag_prompt"] = {"ours": statistics.median(ttft["ours_cpu"])}
    rows["ttft_s_rag_prompt_system_prefix_cached"] = {"ours": ours_ttft_prefix}
    rows[f"throughput_tokens_per_s_batch{settings.batch}"] = {"ours": ours_batch}
    rows[f"decode_tokens_per_s_{settings.streams}_concurrent_streams"] = {"ours": ours_streams}

    if device.type == "cpu" and not settings.skip_int8:
        int8 = Generator(quantize_int8(build_model(config, tensors)), tokenizer,
                         scheduler=SchedulerSettings(slots=settings.batch, reuse_prefix=False))  # fmt: skip
        time_ours_stream(int8, short[0], 4)  # warm-up
        rows["decode_tokens_per_s_batch1"]["ours_int8"] = time_ours_stream(int8, short[1], settings.new_tokens)[1]
        time_ours_first_token(int8, other_long_prompt)
        rows["ttft_s_rag_prompt"]["ours_int8"], rows["ttft_cpu_seconds_rag_prompt"]["ours_int8"] = (
            time_ours_first_token(int8, long_prompt))
        rows[f"throughput_tokens_per_s_batch{settings.batch}"]["ours_int8"] = time_ours_batch(
            int8, short, settings.batch_new_tokens)
        del int8

    # transformers -----------------------------------------------------------------------------------
    if hf is not None:
        time_reference(hf, [encode(short[0])], 2, device)  # warm-up
        _, hf_decode, _ = time_reference(hf, [encode(short[1])], settings.baseline_new_tokens, device)
        _, hf_batch, _ = time_reference(hf, [encode(p) for p in short], settings.baseline_batch_new_tokens, device)
        rows["decode_tokens_per_s_batch1"]["transformers"] = hf_decode
        rows["ttft_s_rag_prompt"]["transformers"] = statistics.median(ttft["transformers"])
        rows["ttft_cpu_seconds_rag_prompt"]["transformers"] = statistics.median(ttft["transformers_cpu"])
        rows[f"throughput_tokens_per_s_batch{settings.batch}"]["transformers"] = hf_batch

    bandwidth = memory_bandwidth(device)
    bytes_per_token = weight_bytes(config, dtype)
    roofline = bandwidth / bytes_per_token
    return {
        "settings": asdict(settings),
        "environment": {
            "device": torch.cuda.get_device_name() if device.type == "cuda" else platform.processor() or "cpu",
            "dtype": str(dtype), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
            # process-wide (runtime/memory.py), so transformers runs with it too
            "retain_freed_memory": device.type == "cpu" and retain_freed_memory(),
        },
        "ttft_rounds_s": ttft,
        "prompt_tokens": {"rag": len(tokenizer.encode(long_prompt)),
                          "short_mean": sum(len(tokenizer.encode(p)) for p in short) / len(short)},
        "results": rows,
        "roofline": {
            "weight_bytes_per_token": bytes_per_token,
            "memory_bandwidth_bytes_per_s": bandwidth,
            "bandwidth_limit_tokens_per_s": roofline,
            "achieved_fraction_batch1": ours_decode / roofline,
        },
        "ratios": {
            "ttft_transformers_over_ours": (rows["ttft_s_rag_prompt"].get("transformers", float("nan"))
                                            / ours_ttft_cold),
            # each round's ratio (ours and transformers' run back to back), then the median: the machine's drift
            # over minutes cancels within a round
            "ttft_transformers_over_ours_paired": statistics.median(
                [theirs / ours for theirs, ours in zip(ttft["transformers"], ttft["ours"], strict=True)]
            ) if ttft["transformers"] else float("nan"),
            "decode_batch1_ours_over_transformers": ours_decode / rows["decode_tokens_per_s_batch1"].get(
                "transformers", float("nan")),
            f"concurrent_{settings.streams}_over_batch1": ours_streams / ours_decode,
        },
    }


def print_report(report: dict) -> None:
    print(f"\nDevice {report['environment']['device']} ({report['environment']['dtype']}, "
          f"{report['environment']['threads']} threads), RAG prompt {report['prompt_tokens']['rag']} tokens")
    print(f"{'metric':<42} {'ours':>10} {'transformers':>13} {'ratio':>7} {'ours int8':>10}")
    for metric, values in report["results"].items():
        ours, ref, int8 = values["ours"], values.get("transformers"), values.get("ours_int8")
        ratio = "" if ref is None else f"{(ref / ours if metric.startswith('ttft') else ours / ref):.2f}x"
        ref_text = "" if ref is None else f"{ref:.3f}"
        int8_text = "" if int8 is None else f"{int8:.3f}"
        print(f"{metric:<42} {ours:>10.3f} {ref_text:>13} {ratio:>7} {int8_text:>10}")
    paired = report["ratios"]["ttft_transformers_over_ours_paired"]
    print(f"time to first token, transformers' over ours, median of the paired rounds: {paired:.2f}x")
    roof = report["roofline"]
    achieved = 100 * roof["achieved_fraction_batch1"]
    print(f"\nBatch-1 decode reads {roof['weight_bytes_per_token'] / 1e6:.0f} MB of weights per token; memory "
          f"bandwidth {roof['memory_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s -> limit "
          f"{roof['bandwidth_limit_tokens_per_s']:.0f} tokens/s; achieved {achieved:.0f}%.")
    if roof["achieved_fraction_batch1"] > 0.5:
        print("Bound: memory bandwidth (every decode step streams all weights once).")
    else:
        print("Bound: per-step overhead (Python, kernel launches, small-matmul efficiency), not bandwidth.")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = BenchmarkSettings()
    parser.add_argument("--device", choices=["cpu", "cuda"], default=defaults.device)
    for name in ("new_tokens", "baseline_new_tokens", "prompt_tokens", "batch", "batch_new_tokens",
                 "baseline_batch_new_tokens", "streams", "threads", "ttft_rounds"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    parser.add_argument("--random-weights", action="store_true")
    parser.add_argument("--skip-baseline", action="store_true", help="only our engine")
    parser.add_argument("--skip-int8", action="store_true", help="no int8 run of our engine on CPU")
    args = parser.parse_args(argv)
    settings = BenchmarkSettings(**vars(args))
    report = run(settings)
    print_report(report)
    out = write_results(f"generation_{settings.device}", report)
    print(f"wrote {relative(out)}")


if __name__ == "__main__":
    main()
