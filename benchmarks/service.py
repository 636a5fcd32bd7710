"""The real service for benchmarks: `python -m app` in a subprocess on loopback, and a streaming /v1/ask client."""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from benchmarks.common import REPO_ROOT

READY_TIMEOUT_S = 300


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 1])."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


@dataclass
class ServiceConfig:
    """One configuration of the service a benchmark serves: its settings as AER_RAG_* variables, from this checkout
    or another (`--config LABEL:AER_RAG_X=V,…`)."""

    label: str
    env: dict[str, str] = field(default_factory=dict)
    repo: Path | None = None  # another checkout to serve from (None: this one)

    @classmethod
    def parse(cls, spec: str) -> ServiceConfig:
        """"label" or "label:AER_RAG_X=1,AER_RAG_Y=2"."""
        label, _, settings = spec.partition(":")
        env = dict(item.split("=", 1) for item in settings.split(",") if item)
        if not label or any(not key.startswith("AER_RAG_") for key in env):
            raise SystemExit(f"--config {spec!r}: use LABEL or LABEL:AER_RAG_NAME=VALUE,…")
        return cls(label, env)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """`--config LABEL[:AER_RAG_X=V,…]` and `--repo LABEL=PATH`, both repeatable (read back by `configs_from`)."""
    parser.add_argument("--config", action="append", type=ServiceConfig.parse,
                        help="LABEL[:AER_RAG_X=V,…] (repeatable)")  # fmt: skip
    parser.add_argument("--repo", action="append", default=[], help="LABEL=PATH: serve that configuration from "
                        "another checkout (its own code and weights, this run's index)")  # fmt: skip


def configs_from(args: argparse.Namespace) -> list[ServiceConfig]:
    """The configurations `add_config_arguments` read (the default settings when none), each `--repo` set on its
    label's configuration."""
    configs = args.config or [ServiceConfig("default")]
    for spec in args.repo:
        label, _, path = spec.partition("=")
        matching = [config for config in configs if config.label == label]
        if not matching or not path:
            raise SystemExit(f"--repo {spec!r}: use LABEL=PATH with the LABEL of a --config")
        matching[0].repo = Path(path).resolve()
    return configs


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time a process has used so far (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def served(index: Path, device: str = "cpu", env: Mapping[str, str] | None = None,
           repo: Path | None = None) -> Iterator[tuple[subprocess.Popen, str]]:  # fmt: skip
    """Serve `index` on a free loopback port with extra AER_RAG_* settings, from this checkout or `repo`, until it
    is ready; yields the server's process and its base URL, and stops it on exit."""
    port = free_port()
    environment = {**os.environ, "AER_RAG_LOG_LEVEL": "warning", **(env or {})}
    if repo is not None:  # its packages first on the path, whatever this environment installed
        environment["PYTHONPATH"] = str(repo)
    command = [sys.executable, "-m", "app", "--index", str(index), "--device", device, "--port", str(port)]
    server = subprocess.Popen(command, cwd=repo or REPO_ROOT, env=environment)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if server.poll() is not None:
                raise SystemExit(f"the server exited with {server.returncode}")
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"the server did not become ready in {READY_TIMEOUT_S} s")
            time.sleep(0.5)
        yield server, base
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


@contextmanager
def running_service(index: Path, device: str = "cpu", env: Mapping[str, str] | None = None,
                    repo: Path | None = None) -> Iterator[str]:  # fmt: skip
    """As `served`, yielding the base URL only."""
    with served(index, device, env, repo) as (_, base):
        yield base


@dataclass
class StreamedAnswer:
    status: int
    first_token_s: float | None  # time to the first delta (None: nothing was generated)
    total_s: float
    done: dict = field(default_factory=dict)  # the final SSE event: answer, covered, citations, usage, …
    passages: list[dict] = field(default_factory=list)
    error: dict | None = None


async def ask_streamed(client: httpx.AsyncClient, base: str, body: dict) -> StreamedAnswer:
    """POST /v1/ask with stream: true and time it as a user sees it."""
    started = time.perf_counter()
    first_token = None
    answer = StreamedAnswer(0, None, 0.0)
    async with client.stream("POST", f"{base}/v1/ask", json={**body, "stream": True}) as response:
        answer.status = response.status_code
        if response.status_code != 200:
            await response.aread()
            answer.error = response.json().get("error") if response.content else None
        else:
            event = None
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                    if event == "delta" and first_token is None:
                        first_token = time.perf_counter() - started
                elif line.startswith("data: "):
                    data = json.loads(line.removeprefix("data: "))
                    if event == "done":
                        answer.done = data
                    elif event == "passages":
                        answer.passages = data["passages"]
                    elif event == "error":
                        answer.error = data
    answer.first_token_s = first_token
    answer.total_s = time.perf_counter() - started
    return answer
