"""How soon the real service stops generating an answer whose client hangs up: a POST /v1/ask whose connection is
closed 1.0 s after the request was sent, N times non-streamed (the target: generation stopped within 2 s of the
close) and N times streamed (for comparison: Starlette cancels a streaming body itself). Against `python -m app`
with its default settings and the real model (benchmarks/service.py `served`), warmed by one full answer to the
same question first (which also gives the answer's uninterrupted length).

    python -m benchmarks.abandoned_ask --index var/index
    python -m benchmarks.abandoned_ask --index var/index --close-after 2.0 --label close-after-2s

The question asks for up to 10 papers (top_k 10, a request's field; the service's settings are its defaults): a
long answer of one finding per paper, decoded together.

The signal is the engine's own state, read from /metrics every 50 ms by a second client:
aer_rag_engine_running and aer_rag_engine_waiting (the generations holding a slot or waiting for one, read live
from the scheduler) and aer_rag_engine_decode_steps (the scheduler's step counter). Generation has stopped at the
first reading after the close from which the engine holds nothing and takes no further decode step for the rest of
a settling window (3 s); the stop time is that reading's arrival less the moment of the close (so it includes one
scrape: an upper bound within about 50 ms). That is where decoding actually ends, which the other signals are not:
aer_rag_generation_cancelled_total{reason="disconnect"} counts when the service asks the engine to cancel (also
recorded, as cancel_counted_s), and aer_rag_generated_tokens_total moves only when each generation ends.
Tokens generated after the close are estimated as the sum, over the readings after it, of the decode steps taken
since the previous reading times the generations the previous reading saw running (each decode step gives each running
generation one token; a first token, given by a prompt's last chunk, is not counted); the decode steps
themselves are recorded too. `cancelled` counts the asks the service cancelled (an answer complete before the
close is not; generating_at_close: the engine was reading the prompts or decoding at the last reading before it).

Writes benchmarks/results/abandoned_ask.json (one row per label; earlier rows of other labels are kept).
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from benchmarks.common import REPO_ROOT, RESULTS_DIR, git_commit, machine, relative, write_results
from benchmarks.service import median, served

QUESTION = "What explains differences in economic growth across countries?"  # 9 findings, ~300 tokens at top_k 10
TOP_K = 10
TARGET_S = 2.0
WATCHED = {
    "aer_rag_engine_running": "running",
    "aer_rag_engine_waiting": "waiting",
    "aer_rag_engine_decode_steps": "steps",
    "aer_rag_generated_tokens_total": "tokens",
    'aer_rag_generation_cancelled_total{reason="disconnect"}': "disconnects",
    "aer_rag_generation_queue_depth": "depth",
}


@dataclass(frozen=True)
class Reading:
    at: float  # time.monotonic() when the reading arrived
    running: int
    waiting: int
    steps: int
    tokens: int
    disconnects: int
    depth: int

    @property
    def idle(self) -> bool:
        return self.running == 0 and self.waiting == 0


def read_metrics(http: httpx.Client) -> Reading:
    values: dict[str, int] = {}
    for line in http.get("/metrics").text.splitlines():
        name, _, value = line.rpartition(" ")
        if name in WATCHED:
            values[WATCHED[name]] = int(float(value))
    return Reading(at=time.monotonic(), **values)


class MetricsWatch(threading.Thread):
    """Reads /metrics every `every_s` seconds until stopped; `readings` in order of arrival."""

    def __init__(self, base: str, every_s: float) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.every_s = every_s
        self.readings: list[Reading] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=30) as http:
            while not self.stop.is_set():
                self.readings.append(read_metrics(http))
                self.stop.wait(self.every_s)


def request_bytes(port: int, body: dict) -> bytes:
    payload = json.dumps(body).encode()
    head = (f"POST /v1/ask HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n")  # fmt: skip
    return head.encode() + payload


def ask_and_hang_up(port: int, body: dict, close_after_s: float) -> tuple[float, float, int]:
    """Send the ask on a plain socket, read whatever comes for close_after_s seconds, then close the connection
    (as a client that gives up does). Returns (sent, closed) as time.monotonic() and the bytes received."""
    received = 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request_bytes(port, body))
        sent = time.monotonic()
        while (left := sent + close_after_s - time.monotonic()) > 0:
            connection.settimeout(left)
            try:
                chunk = connection.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            received += len(chunk)
    closed = time.monotonic()
    return sent, closed, received


def measure(readings: list[Reading], sent: float, closed: float) -> dict:
    """One abandoned ask from the readings around it (see the module's docstring)."""
    before = [r for r in readings if r.at <= sent]
    during = [r for r in readings if sent < r.at <= closed]
    after = [r for r in readings if r.at > closed]
    start = before[-1]
    at_close = during[-1] if during else start
    stop_index = len(after)  # the first reading of the final run: idle, and no decode step from it on
    while stop_index and after[stop_index - 1].idle and after[stop_index - 1].steps == after[-1].steps:
        stop_index -= 1
    stopped = after[stop_index] if stop_index < len(after) else None
    tokens_after = 0
    previous = at_close
    for reading in after[: stop_index + 1]:
        tokens_after += (reading.steps - previous.steps) * previous.running
        previous = reading
    first_step = next((r.at - sent for r in readings if r.at > sent and r.steps > start.steps), None)
    counted = next((r.at - closed for r in after if r.disconnects > start.disconnects), None)
    return {
        "stop_s": round(stopped.at - closed, 3) if stopped else None,
        "generating_at_close": not at_close.idle,  # reading its prompts or decoding
        "running_at_close": at_close.running,
        "first_decode_step_s": round(first_step, 3) if first_step is not None else None,
        "cancel_counted_s": round(counted, 3) if counted is not None else None,
        "disconnect_cancels": after[-1].disconnects - start.disconnects,
        "decode_steps_after_close": (stopped or after[-1]).steps - at_close.steps,
        "tokens_after_close": tokens_after,
        "tokens_in_all": after[-1].tokens - start.tokens,
        "queue_depth_after": after[-1].depth,
    }  # fmt: skip


def abandon(base: str, port: int, body: dict, close_after_s: float, settle_s: float, every_s: float) -> dict:
    """One ask abandoned after close_after_s, watched from an idle engine until settle_s after it is idle again."""
    watch = MetricsWatch(base, every_s)
    watch.start()
    while not watch.readings:
        time.sleep(every_s / 5)
    time.sleep(every_s * 2)
    sent, closed, received = ask_and_hang_up(port, body, close_after_s)
    deadline = closed + 120  # a generation that never stops is reported, not waited for
    while time.monotonic() < deadline:
        time.sleep(settle_s)
        recent = [r for r in watch.readings if r.at > time.monotonic() - settle_s]
        if recent and all(r.idle and r.steps == recent[0].steps for r in recent):
            break
    watch.stop.set()
    watch.join()
    return {**measure(watch.readings, sent, closed), "closed_after_s": round(closed - sent, 3),
            "bytes_received": received}  # fmt: skip


def summary(runs: list[dict]) -> dict:
    stops = [r["stop_s"] for r in runs if r["stop_s"] is not None]
    return {
        "runs": len(runs), "generating_at_close": sum(r["generating_at_close"] for r in runs),
        "cancelled": sum(r["disconnect_cancels"] > 0 for r in runs),
        "stop_p50_s": median(stops), "stop_max_s": max(stops) if len(stops) == len(runs) else None,
        "all_within_target": len(stops) == len(runs) and max(stops) <= TARGET_S,
        "cancel_counted_p50_s": median([r["cancel_counted_s"] for r in runs if r["cancel_counted_s"] is not None]),
        "tokens_after_close_p50": median([r["tokens_after_close"] for r in runs]),
        "tokens_after_close_max": max(r["tokens_after_close"] for r in runs),
        "decode_steps_after_close_max": max(r["decode_steps_after_close"] for r in runs),
    }  # fmt: skip


def run(index: Path, label: str, query: str, top_k: int, runs: int, close_after_s: float, settle_s: float,
        every_s: float) -> dict:  # fmt: skip
    with served(index, "cpu") as (_, base):
        port = int(base.rsplit(":", 1)[1])
        started = time.perf_counter()
        ask = {"query": query, "top_k": top_k}
        full = httpx.post(f"{base}/v1/ask", json=ask, timeout=600)  # warm, and the whole answer
        full.raise_for_status()
        uninterrupted = {"total_s": round(time.perf_counter() - started, 2),
                         "generated_tokens": full.json()["usage"]["generated_tokens"],
                         "findings": len(full.json().get("findings") or [])}  # fmt: skip
        print(f"uninterrupted: {uninterrupted}", flush=True)
        rows: dict[str, list[dict]] = {"not streamed": [], "streamed": []}
        for i in range(runs):
            for kind, streamed in (("not streamed", False), ("streamed", True)):
                one = abandon(base, port, {**ask, "stream": streamed}, close_after_s, settle_s, every_s)
                rows[kind].append(one)
                print(f"{kind} #{i + 1}: {one}", flush=True)
    return {
        "label": label, "commit": git_commit(), "query": query, "top_k": top_k, "close_after_s": close_after_s,
        "poll_every_s": every_s, "target_s": TARGET_S, "uninterrupted": uninterrupted,
        "kinds": {kind: {**summary(each), "each": each} for kind, each in rows.items()},
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--label", default="current")
    parser.add_argument("--query", default=QUESTION)
    parser.add_argument("--top-k", type=int, default=TOP_K, help="papers the answer is written from (1-10)")
    parser.add_argument("--runs", type=int, default=5, help="abandoned asks of each kind")
    parser.add_argument("--close-after", type=float, default=1.0, help="seconds from sending to closing")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds the engine must stay idle")
    parser.add_argument("--every", type=float, default=0.05, help="seconds between /metrics readings")
    args = parser.parse_args(argv)
    row = run(args.index, args.label, args.query, args.top_k, args.runs, args.close_after, args.settle, args.every)
    for kind, result in row["kinds"].items():
        print(kind, json.dumps({k: v for k, v in result.items() if k != "each"}))
    previous = RESULTS_DIR / "abandoned_ask.json"
    kept = [r for r in json.loads(previous.read_text())["rows"] if r["label"] != args.label] \
        if previous.is_file() else []  # fmt: skip
    write_results("abandoned_ask", {"machine": machine(), "index": relative(args.index), "rows": [*kept, row]})


if __name__ == "__main__":
    main()
