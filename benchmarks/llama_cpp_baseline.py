"""llama.cpp as the generation benchmark's anchor, through llama-cpp-python (the optional `bench` extra, built from
source: `CMAKE_ARGS="-DGGML_NATIVE=ON" pip install -e '.[bench]'`, about 20 minutes on two cores; never needed to
run or test the service).

Both engines get the same GGUF, the same threads and the same prompt token ids (ours; the tokenizer is the file's
in both), and decode greedily with no penalties, so their tokens can be compared one for one.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

# llama.cpp's sampler, reduced to greedy: the largest logit, no repetition penalty.
GREEDY = {"top_k": 1, "top_p": 1.0, "min_p": 0.0, "temp": 0.0, "repeat_penalty": 1.0}


def load(path: Path, threads: int, context: int) -> Any | None:
    """A llama_cpp.Llama on the GGUF, or None (with a printed note) where llama-cpp-python is not installed."""
    try:
        import llama_cpp
    except ImportError:
        print("llama-cpp-python is not installed (the `bench` extra): the llama.cpp column is skipped.")
        return None
    return llama_cpp.Llama(model_path=str(path), n_ctx=context, n_threads=threads, n_threads_batch=threads,
                           verbose=False)  # fmt: skip


def version() -> str | None:
    try:
        import llama_cpp
    except ImportError:
        return None
    return llama_cpp.__version__


def tokens(llm: Any, prompt_ids: list[int], count: int) -> tuple[list[int], list[float], float]:
    """Greedy continuation of prompt_ids, cold (nothing reused from the last call): (token ids, the time each
    arrived, the start time)."""
    llm.reset()  # the next generate() cannot reuse a cached prefix
    out, arrivals = [], []
    started = time.perf_counter()
    for token in llm.generate(prompt_ids, reset=True, **GREEDY):
        arrivals.append(time.perf_counter())
        out.append(int(token))
        if len(out) == count:
            break
    return out, arrivals, started


def stream(llm: Any, prompt_ids: list[int], new_tokens: int) -> tuple[float, float]:
    """(time to first token in seconds, decode tokens/s after the first), as time_ours_stream measures ours."""
    _, arrivals, started = tokens(llm, prompt_ids, new_tokens)
    return arrivals[0] - started, (new_tokens - 1) / (arrivals[-1] - arrivals[0])


def first_token(llm: Any, prompt_ids: list[int]) -> float:
    _, arrivals, started = tokens(llm, prompt_ids, 1)
    return arrivals[0] - started


def greedy(llm: Any, prompt_ids: list[int], count: int) -> list[int]:
    return tokens(llm, prompt_ids, count)[0]
