"""Against a real uvicorn server on 127.0.0.1: streaming over a socket, disconnects, startup refusal."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Did the minimum wage increase reduce teenage employment in fast food restaurants?"


@pytest.fixture
def server(live_server) -> tuple[str, object]:
    return live_server()


def metric(base: str, name: str) -> float:
    for line in httpx.get(f"{base}/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_search_and_streamed_answer_over_http(server, sse) -> None:
    base, _ = server
    assert httpx.get(f"{base}/readyz").status_code == 200
    hits = httpx.post(f"{base}/v1/search", json={"query": "carbon tax"}).json()["results"]
    assert hits[0]["document"]["doi"] == "10.1257/test.5"
    body = {"query": QUESTION, "stream": True, "generation": {"max_new_tokens": 12}}
    with httpx.stream("POST", f"{base}/v1/ask", json=body, timeout=60) as response:
        events = sse(response.read().decode())
    assert events[0][0] == "passages" and events[-1][0] == "done"


def test_client_disconnect_cancels_generation(server) -> None:
    base, services = server
    body = {"query": QUESTION, "stream": True, "generation": {"max_new_tokens": 1024}}
    with httpx.stream("POST", f"{base}/v1/ask", json=body, timeout=60) as response:
        lines = response.iter_lines()
        while next(lines) != "event: delta":
            pass  # read up to the first token, then hang up
    deadline = time.monotonic() + 20
    while metric(base, 'aer_rag_generation_cancelled_total{reason="disconnect"}') < 1:
        assert time.monotonic() < deadline, "generation was not cancelled after the client left"
        time.sleep(0.05)
    while services.queue.depth:
        assert time.monotonic() < deadline, "the generation slot was not freed"
        time.sleep(0.05)
    assert metric(base, "aer_rag_generated_tokens_total") < 1024


@pytest.fixture
def slow_engine(monkeypatch: pytest.MonkeyPatch, tiny_generator) -> None:
    """The tiny engine at 20 ms a step, so that a long answer is still generating when its client leaves."""
    runner = tiny_generator.scheduler.runner
    execute = runner.execute

    def slowly(plan):
        time.sleep(0.02)
        return execute(plan)

    monkeypatch.setattr(runner, "execute", slowly)


def post_then_hang_up_while_generating(base: str, path: str, body: dict, engine) -> None:
    """POST a JSON body and close the connection once its answer is generating (not after a fixed wait, which on
    a busy machine can end while the question is still being retrieved)."""
    url = httpx.URL(base)
    payload = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n")  # fmt: skip
    with socket.create_connection((url.host, url.port), timeout=10) as connection:
        connection.sendall(head.encode() + payload)
        deadline = time.monotonic() + 30
        while not engine.running:
            assert time.monotonic() < deadline, "the answer never started generating"
            time.sleep(0.01)


NOT_STREAMED = {
    "/v1/ask": {"query": QUESTION, "generation": {"max_new_tokens": 1024}},
    "/v1/chat/completions": {"model": "aer-rag", "messages": [{"role": "user", "content": QUESTION}],
                             "max_tokens": 1024},
}  # fmt: skip


@pytest.mark.parametrize("path", sorted(NOT_STREAMED))
def test_a_non_streamed_answer_whose_client_disconnects_stops_generating(server, slow_engine, path) -> None:
    base, services = server
    engine = services.queue.generator.scheduler
    post_then_hang_up_while_generating(base, path, NOT_STREAMED[path], engine)
    deadline = time.monotonic() + 20  # bounded only so that a broken cancel cannot hang the test
    while engine.running or engine.waiting or services.queue.depth:
        assert time.monotonic() < deadline, "generation went on after the client left"
        time.sleep(0.05)
    tokens = metric(base, "aer_rag_generated_tokens_total")
    time.sleep(0.5)
    assert metric(base, "aer_rag_generated_tokens_total") == tokens  # nothing is generating any more
    assert tokens < 1024  # not one finding ran to its end
    assert metric(base, 'aer_rag_generation_cancelled_total{reason="disconnect"}') >= 1
    assert metric(base, 'aer_rag_generation_cancelled_total{reason="stopped"}') == 0
    assert metric(base, 'aer_rag_requests_total{method="POST",route="' + path + '",status="499"}') == 1


def test_generation_is_refused_with_retry_after_once_the_expected_wait_is_too_long(live_server, slow_engine,
                                                                                    sse) -> None:  # fmt: skip
    base, services = live_server(generation={"max_wait_s": 0.001})
    quick = {"query": QUESTION, "generation": {"max_new_tokens": 2}}
    assert httpx.post(f"{base}/v1/ask", json=quick, timeout=60).status_code == 200  # an idle server admits
    assert services.queue.expected_wait_s() > 0  # and has measured an answer
    long = {"query": QUESTION, "stream": True, "generation": {"max_new_tokens": 1024}}
    with httpx.stream("POST", f"{base}/v1/ask", json=long, timeout=60) as streaming:
        lines = streaming.iter_lines()
        while next(lines) != "event: delta":
            pass  # one answer in flight: the next one's expected time is over the (tiny) limit
        refused = httpx.post(f"{base}/v1/ask", json=quick, timeout=60)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "busy"
    assert int(refused.headers["Retry-After"]) >= 1
    assert "over the 0.001 s limit" in refused.json()["error"]["message"]
    assert metric(base, "aer_rag_generation_rejected_total") == 1


def run_app(*args: str) -> subprocess.CompletedProcess[str]:
    # These runs refuse to start before binding, so the port is never used.
    return subprocess.run([sys.executable, "-m", "app", "--port", "8999", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_refuses_to_start_on_a_missing_index(tmp_path: Path) -> None:
    result = run_app("--index", str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert "cannot start" in result.stderr and "nowhere" in result.stderr
    assert "Traceback" not in result.stderr


def test_refuses_to_start_on_a_corrupt_index(index_dir: Path, tmp_path: Path) -> None:
    corrupt = tmp_path / "index"
    shutil.copytree(index_dir.resolve(), corrupt)
    victim = max((p for p in corrupt.iterdir() if p.name != "manifest.json"), key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[:-10])
    result = run_app("--index", str(corrupt))
    assert result.returncode == 2 and "cannot start" in result.stderr
    assert victim.name in result.stderr and "Traceback" not in result.stderr


def test_refuses_an_index_built_with_another_embedding_model(index_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("AER_RAG_EMBEDDING_MODEL", "sentence-transformers/some-other-model")
    result = run_app("--index", str(index_dir))
    assert result.returncode == 2 and "some-other-model" in result.stderr


@pytest.mark.slow
def test_sigterm_stops_a_long_answer_after_the_grace_period(real_index_dir: Path, app_process) -> None:
    """`python -m app` with the real generator: SIGTERM while a 1,024-token answer streams ends that stream with
    an error event after the grace period (1 s here), and the process exits within seconds, not minutes."""
    import signal

    env = {"AER_RAG_GENERATION__SHUTDOWN_GRACE_S": "1"}
    with app_process(real_index_dir, env, ready_timeout_s=180) as (process, base):
        body = {"query": QUESTION, "stream": True, "coverage_check": False,
                "generation": {"max_new_tokens": 1024, "temperature": 1.0, "seed": 1}}  # fmt: skip
        with httpx.stream("POST", f"{base}/v1/ask", json=body, timeout=120) as response:
            lines = response.iter_lines()
            while next(lines) != "event: delta":
                pass
            process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            events = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
        assert events[-1] == "error", events[-3:]
        process.wait(timeout=30)
        assert time.monotonic() - signalled < 20
