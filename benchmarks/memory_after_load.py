"""The server's resident memory (RSS) before, at its peak under, and for a minute after a burst of mixed traffic:
16 clients on loopback, half asking (/v1/ask, not streamed), half searching (/v1/search), for 60 s; then RSS every
5 s for 60 s. Against the real service (`python -m app`, benchmarks/service.py `served`).

    python -m benchmarks.memory_after_load --index var/index --clients 16 --duration 60 --label after-60s
    python -m benchmarks.memory_after_load --clients 16 --duration 45 --label before
    python -m benchmarks.memory_after_load --repo /tmp/base --label baseline   # serve another checkout's app/

Per kind of traffic it records the statuses, the p50/p95/max time of the admitted (200) requests, how many 429s
came without a Retry-After header, and every answer other than 200 or 429; for the admitted asks also the p95 of
their generate stage and of the time outside every stage the answer reports (timings_ms: waiting to be prepared,
HTTP); and the service's max_wait_s (issue 37's targets: only 200 and 429, every 429 with Retry-After, the asks'
p95 within max_wait_s).

Writes benchmarks/results/memory_after_load.json (one row per label; earlier rows of other labels are kept).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from app.config import Settings
from benchmarks.common import REPO_ROOT, RESULTS_DIR, git_commit, machine, relative, write_results
from benchmarks.search_burst import RssSampler, rss_mb
from benchmarks.service import percentile, served
from benchmarks.service_benchmark import search_query


def burst(base: str, clients: int, duration_s: float, timeout_s: float) -> dict[str, dict]:
    """Even-numbered clients ask, odd ones search, each in a loop until the deadline (requests bounded by
    timeout_s; a 429 waits a tenth of its Retry-After). Per kind: the statuses, how many 429s came without
    Retry-After, and any answer other than 200 or 429 (a status, or the client's error)."""
    statuses: dict[str, Counter] = {"ask": Counter(), "search": Counter()}
    no_retry_after: Counter = Counter()
    latencies: dict[str, list[float]] = {"ask": [], "search": []}
    stages: list[tuple[float, float]] = []  # each admitted answer's generate stage, and all its stages, in s
    lock = threading.Lock()
    deadline = time.monotonic() + duration_s

    def client(number: int) -> None:
        kind = "ask" if number % 2 == 0 else "search"
        i = number * 1000
        with httpx.Client(base_url=base, timeout=timeout_s) as http:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                retry = 1.0
                header: str | None = None
                try:
                    if kind == "ask":
                        response = http.post("/v1/ask", json={"query": search_query(i)})
                    else:
                        response = http.post("/v1/search", json={"query": search_query(i), "top_k": 10})
                    status: int | str = response.status_code
                    header = response.headers.get("retry-after")
                    retry = float(header or "1")
                except httpx.HTTPError as error:
                    status = type(error).__name__
                elapsed = time.perf_counter() - started
                with lock:
                    statuses[kind][str(status)] += 1
                    if status == 429 and not header:
                        no_retry_after[kind] += 1
                    if status == 200:
                        latencies[kind].append(elapsed)
                        if kind == "ask":
                            timings = response.json()["timings_ms"]
                            stages.append((timings.get("generate", 0.0) / 1000, sum(timings.values()) / 1000))
                if status == 429:
                    time.sleep(retry / 10)
                i += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    waits = [total - staged for total, (_, staged) in zip(latencies["ask"], stages, strict=True)]
    answers = {"p95_generate_s": round(percentile([g for g, _ in stages], 0.95), 3) if stages else None,
               "p95_outside_stages_s": round(percentile(waits, 0.95), 3) if waits else None}  # fmt: skip
    return {
        kind: {"statuses": dict(sorted(statuses[kind].items())), "admitted": len(latencies[kind]),
               "p50_s": round(percentile(latencies[kind], 0.5), 3) if latencies[kind] else None,
               "p95_s": round(percentile(latencies[kind], 0.95), 3) if latencies[kind] else None,
               "max_s": round(max(latencies[kind]), 3) if latencies[kind] else None,
               "429_without_retry_after": no_retry_after[kind],
               "other_than_200_429": {s: n for s, n in sorted(statuses[kind].items()) if s not in ("200", "429")},
               **(answers if kind == "ask" else {})}
        for kind in statuses
    }  # fmt: skip


def run(index: Path, label: str, clients: int, duration_s: float, after_s: float, every_s: float,
        timeout_s: float, repo: Path | None = None) -> dict:  # fmt: skip
    with served(index, "cpu", repo=repo) as (server, base):
        httpx.post(f"{base}/v1/search", json={"query": "warm-up"}, timeout=120)  # first-call costs
        httpx.post(f"{base}/v1/ask", json={"query": "Does the minimum wage reduce employment?"}, timeout=300)
        time.sleep(2)
        before_mb = rss_mb(server.pid)
        sampler = RssSampler(server.pid)
        sampler.start()
        started = time.monotonic()
        traffic = burst(base, clients, duration_s, timeout_s)
        ended = time.monotonic()
        after: list[tuple[float, float]] = []
        while (elapsed := time.monotonic() - ended) < after_s + 0.01:
            after.append((round(elapsed), round(rss_mb(server.pid))))
            time.sleep(every_s)
        sampler.stop.set()
        sampler.join()
    peak_mb = sampler.peak(started, ended + 1)
    after_mb = after[-1][1]
    return {
        "label": label, **({"commit": git_commit(repo)} if repo else {}), "clients": clients, "duration_s": duration_s,
        "burst_s": round(ended - started, 1),
        "max_wait_s": Settings().generation.max_wait_s,
        **({} if repo else {"wait_margin_s": Settings().generation.wait_margin_s}), "traffic": traffic,
        "rss_before_mb": round(before_mb), "rss_peak_mb": round(peak_mb),
        "rss_after_mb": after_mb, "after_over_before": round(after_mb / before_mb, 3),
        "rss_after_every_s": [{"s": s, "mb": mb} for s, mb in after],
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--label", default="current")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--after", type=float, default=60.0, help="seconds of RSS readings after the burst")
    parser.add_argument("--every", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=60.0, help="each request's client-side limit")
    parser.add_argument("--repo", type=Path, help="serve this checkout (e.g. the commit before a change) instead")
    args = parser.parse_args(argv)
    row = run(args.index, args.label, args.clients, args.duration, args.after, args.every, args.timeout, args.repo)
    print(json.dumps({k: v for k, v in row.items() if k != "rss_after_every_s"}, indent=1))
    print("RSS after (s: MB):", ", ".join(f"{p['s']}: {p['mb']}" for p in row["rss_after_every_s"]))
    previous = RESULTS_DIR / "memory_after_load.json"
    kept = [r for r in json.loads(previous.read_text())["rows"] if r["label"] != args.label] \
        if previous.is_file() else []  # fmt: skip
    write_results("memory_after_load", {"machine": machine(), "index": relative(args.index), "rows": [*kept, row]})


if __name__ == "__main__":
    main()
