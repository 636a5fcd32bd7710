"""llama.cpp as the generation benchmark's anchor, through llama-cpp-python (the optional `bench` extra, built from
source: `CMAKE_ARGS="-DGGML_NATIVE=ON" pip install -e '.[bench]'`, about 20 minutes on two cores; never needed to
run or test the service).

Both engines get the same GGUF, the same threads and the same prompt token ids (ours; the tokenizer is the file's
in both), and decode greedily with no penalties, so their tokens can be compared one for one.

llama.cpp runs in a process of its own (`LlamaProcess`, this module run with `--serve`), as its users run it. In
the benchmark's process, beside torch and our engine, its OpenMP threads were throttled: libgomp spins only ~100
times before sleeping once it manages more threads than there are cores, and ggml synchronises its threads after
every node of the graph, so its batch-1 decode fell from ~90 to ~35 tokens/s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT

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


class LlamaProcess:
    """llama.cpp in a child process: the functions above, called over a pipe (one JSON line each way)."""

    def __init__(self, path: Path, threads: int, context: int) -> None:
        command = [sys.executable, "-m", "benchmarks.llama_cpp_baseline", "--serve", str(path), str(threads),
                   str(context)]  # fmt: skip
        self._child = subprocess.Popen(command, cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True)  # fmt: skip
        self.version: str | None = self._read()["version"]

    def stream(self, prompt_ids: list[int], new_tokens: int) -> tuple[float, float]:
        return tuple(self._call("stream", prompt_ids, new_tokens))  # type: ignore[return-value]

    def first_token(self, prompt_ids: list[int]) -> float:
        return self._call("first_token", prompt_ids)

    def greedy(self, prompt_ids: list[int], count: int) -> list[int]:
        return self._call("greedy", prompt_ids, count)

    def close(self) -> None:
        if self._child.poll() is None:
            self._child.stdin.close()  # type: ignore[union-attr]
            self._child.wait(timeout=30)

    def _call(self, method: str, *args: object) -> Any:
        self._child.stdin.write(json.dumps([method, *args]) + "\n")  # type: ignore[union-attr]
        self._child.stdin.flush()  # type: ignore[union-attr]
        return self._read()["result"]

    def _read(self) -> dict[str, Any]:
        line = self._child.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise RuntimeError(f"the llama.cpp process ended (exit code {self._child.wait()})")
        return json.loads(line)


def start(path: Path, threads: int, context: int) -> LlamaProcess | None:
    """llama.cpp on the GGUF in a process of its own, or None (with a printed note) where llama-cpp-python is not
    installed."""
    if importlib.util.find_spec("llama_cpp") is None:  # not imported here: its threads belong in the child
        print("llama-cpp-python is not installed (the `bench` extra): the llama.cpp column is skipped.")
        return None
    return LlamaProcess(path, threads, context)


def _serve(path: Path, threads: int, context: int) -> None:
    """The child's side: load the model, answer calls until stdin closes. Only JSON lines go to stdout."""
    llm = load(path, threads, context)
    calls = {"stream": stream, "first_token": first_token, "greedy": greedy}
    print(json.dumps({"version": version()}), flush=True)
    for line in sys.stdin:
        method, *args = json.loads(line)
        print(json.dumps({"result": calls[method](llm, *args)}), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="llama.cpp for the generation benchmark, in its own process.")
    parser.add_argument("--serve", nargs=3, metavar=("GGUF", "THREADS", "CONTEXT"), required=True)
    arguments = parser.parse_args()
    _serve(Path(arguments.serve[0]), int(arguments.serve[1]), int(arguments.serve[2]))
