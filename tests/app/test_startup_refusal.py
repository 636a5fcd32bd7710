"""`python -m app` reachable beyond loopback without a key refuses to start (one line, exit 2), before any model is
loaded, unless AER_RAG_ALLOW_NO_KEY=true says an open API is meant; with that opt-out, or with a key, it serves.

What is "reachable" is AER_RAG_PUBLISHED_ADDRESS when set (a container binds 0.0.0.0 in its own network and
compose publishes it on the host's 127.0.0.1), else the bind address: the compose default starts, and
AER_RAG_PUBLISH_ADDRESS=0.0.0.0 without a key does not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
REFUSAL = "aer-rag cannot start: the API is reachable on {address} and needs no key"
OPT_OUT = "AER_RAG_ALLOW_NO_KEY=true"
# The settings this file decides; the caller's own environment must not decide them instead.
DECIDING = ("AER_RAG_API_KEY", "AER_RAG_ALLOW_NO_KEY", "AER_RAG_PUBLISHED_ADDRESS", "AER_RAG_HOST")
# A quick start: the tiny index, no reranker, judges or answerability model (the generator is still loaded).
LIGHT = {"AER_RAG_RERANKER__MODEL_DIR": "", "AER_RAG_JUDGE__MODEL_DIRS": "", "AER_RAG_ANSWERABILITY__MODEL_PATH": ""}


def environment(**settings: str) -> dict[str, str]:
    base = {name: value for name, value in os.environ.items() if name not in DECIDING}
    return {**base, **LIGHT, **settings}


def run_app(index_dir: Path, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """A run that is expected to end by itself (a refusal): never reaches the bind, so any port will do."""
    command = [sys.executable, "-m", "app", "--index", str(index_dir), "--port", str(free_port()), "--device", "cpu"]
    return subprocess.run([*command, *args], cwd=ROOT, env=environment(**settings), capture_output=True, text=True,
                          timeout=120)  # fmt: skip


@pytest.mark.parametrize(("args", "settings", "address"), [
    (["--host", "0.0.0.0"], {}, "0.0.0.0"),
    (["--host", "0.0.0.0"], {"AER_RAG_API_KEY": ""}, "0.0.0.0"),  # an empty key is no key
    (["--host", "0.0.0.0"], {"AER_RAG_PUBLISHED_ADDRESS": "0.0.0.0"}, "0.0.0.0"),  # compose, published everywhere
    (["--host", "0.0.0.0"], {"AER_RAG_ALLOW_NO_KEY": "false"}, "0.0.0.0"),
    ([], {"AER_RAG_HOST": "::"}, "::"),
    (["--host", "example.org"], {}, "example.org"),  # a name may resolve to anything
])  # fmt: skip
def test_reachable_beyond_loopback_without_a_key_refuses_to_start(
    index_dir: Path, args: list[str], settings: dict[str, str], address: str
) -> None:
    started = time.monotonic()
    result = run_app(index_dir, *args, **settings)
    assert result.returncode == 2, result.stderr[-2000:]
    (line,) = result.stderr.strip().splitlines()  # one line, no traceback, no log before it
    assert line.startswith(REFUSAL.format(address=address)), line
    assert "AER_RAG_API_KEY" in line and OPT_OUT in line
    assert time.monotonic() - started < 60  # refused before the models are loaded


def serves(index_dir: Path, host: str, **settings: str) -> str:
    """`python -m app --host HOST` until /readyz answers on 127.0.0.1; its log (stdout and stderr)."""
    port = free_port()
    command = [sys.executable, "-m", "app", "--host", host, "--port", str(port), "--index", str(index_dir),
               "--device", "cpu"]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, env=environment(**settings), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while True:
            assert process.poll() is None, f"exited {process.returncode}: {process.stdout.read()[-2000:]}"
            assert time.monotonic() < deadline, "the server did not become ready"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
    finally:
        process.terminate()
        try:
            output, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
    return output


def test_with_the_opt_out_it_starts_and_still_warns(index_dir: Path) -> None:
    log = serves(index_dir, "0.0.0.0", AER_RAG_ALLOW_NO_KEY="true")
    assert "the API is reachable on 0.0.0.0 and needs no key" in log and OPT_OUT in log
    assert "cannot start" not in log


def test_with_a_key_it_starts_without_a_warning(index_dir: Path) -> None:
    log = serves(index_dir, "0.0.0.0", AER_RAG_API_KEY="a-key")
    assert "needs no key" not in log and "cannot start" not in log


def test_published_on_the_hosts_loopback_it_starts_without_a_key(index_dir: Path) -> None:
    # The compose default: 0.0.0.0 in the container, published on the host's 127.0.0.1 (docker-compose.override.yml).
    log = serves(index_dir, "0.0.0.0", AER_RAG_PUBLISHED_ADDRESS="127.0.0.1")
    assert "needs no key" not in log and "cannot start" not in log
