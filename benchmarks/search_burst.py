"""16 clients on /v1/search for 60 s against the real service (`python -m app`), then 60 s idle: status codes,
latency of the admitted searches, and the server's resident memory (RSS) at ready, at its peak under the burst,
and after the idle minute.

    python -m benchmarks.search_burst --index var/index                 # the service's defaults
    python -m benchmarks.search_burst --index var/index --config unbounded
        # as before admission: 40 search threads, no line limit, glibc's default arenas, no trim

Writes benchmarks/results/search_burst.json (one row per configuration run; earlier rows of other configurations
are kept).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from benchmarks.common import REPO_ROOT, RESULTS_DIR, machine, relative, write_results
from benchmarks.service import percentile, served
from benchmarks.service_benchmark import search_query

CONFIGS: dict[str, dict[str, str]] = {
    "default": {},
    # The first defaults of the admission (a worker per core, 4 waiting up to 0.5 s).
    "two-workers": {
        "AER_RAG_SEARCH__WORKERS": "2", "AER_RAG_SEARCH__QUEUE_SIZE": "4", "AER_RAG_SEARCH__MAX_WAIT_S": "0.5",
    },
    "unbounded": {
        "AER_RAG_SEARCH__WORKERS": "40", "AER_RAG_SEARCH__QUEUE_SIZE": "1000", "AER_RAG_SEARCH__MAX_WAIT_S": "60",
        "AER_RAG_MEMORY__MALLOC_ARENAS": "0", "AER_RAG_MEMORY__TRIM_AFTER_IDLE_S": "0",
    },
}  # fmt: skip


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


class RssSampler(threading.Thread):
    def __init__(self, pid: int, every_s: float = 0.25):
        super().__init__(daemon=True)
        self.pid, self.every_s = pid, every_s
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append((time.monotonic(), rss_mb(self.pid)))
            self.stop.wait(self.every_s)

    def peak(self, start: float, end: float) -> float:
        return max(mb for at, mb in self.samples if start <= at <= end)


def burst(base: str, clients: int, duration_s: float) -> tuple[Counter, list[float]]:
    statuses: Counter = Counter()
    latencies: list[float] = []
    lock = threading.Lock()
    deadline = time.monotonic() + duration_s

    def client(number: int) -> None:
        i = number * 1000
        with httpx.Client(base_url=base, timeout=60) as http:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    response = http.post("/v1/search", json={"query": search_query(i), "top_k": 10})
                    status = response.status_code
                except httpx.HTTPError as error:
                    status = type(error).__name__
                elapsed = time.perf_counter() - started
                with lock:
                    statuses[status] += 1
                    if status == 200:
                        latencies.append(elapsed)
                if status == 429:  # a polite client waits as told (Retry-After), a careless one does not
                    time.sleep(float(response.headers.get("retry-after", "1")) / 10)
                i += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses, latencies


def run(index: Path, config: str, clients: int, duration_s: float, idle_s: float) -> dict:
    with served(index, "cpu", CONFIGS[config]) as (server, base):
        for i in range(4):  # warm-up: first-call costs are not the burst's
            httpx.post(f"{base}/v1/search", json={"query": f"warm-up {i}"}, timeout=60)
        time.sleep(2)
        sampler = RssSampler(server.pid)
        sampler.start()
        ready_mb = rss_mb(server.pid)
        started = time.monotonic()
        statuses, latencies = burst(base, clients, duration_s)
        ended = time.monotonic()
        time.sleep(idle_s)
        after_mb = rss_mb(server.pid)
        sampler.stop.set()
        sampler.join()
        return {
            "config": config, "settings": CONFIGS[config], "clients": clients, "duration_s": duration_s,
            "idle_s": idle_s, "statuses": {str(k): v for k, v in sorted(statuses.items(), key=str)},
            "admitted": len(latencies), "admitted_per_s": round(len(latencies) / (ended - started), 2),
            "p50_s": round(percentile(latencies, 0.5), 3) if latencies else None,
            "p95_s": round(percentile(latencies, 0.95), 3) if latencies else None,
            "max_s": round(max(latencies), 3) if latencies else None,
            "rss_ready_mb": round(ready_mb), "rss_peak_mb": round(sampler.peak(started, ended + 1)),
            "rss_after_idle_mb": round(after_mb),
        }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--config", choices=sorted(CONFIGS), action="append")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--idle", type=float, default=60.0)
    args = parser.parse_args(argv)
    rows = [run(args.index, config, args.clients, args.duration, args.idle) for config in args.config or ["default"]]
    previous = RESULTS_DIR / "search_burst.json"
    run_now = {row["config"] for row in rows}
    kept = [row for row in json.loads(previous.read_text())["rows"] if row["config"] not in run_now] \
        if previous.is_file() else []  # fmt: skip
    print("| config | clients × s | 200 | 429 | other | admitted/s | p50 s | p95 s | RSS ready MB | peak MB | "
          f"after {args.idle:g} s idle MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        statuses = row["statuses"]
        other = sum(v for k, v in statuses.items() if k not in ("200", "429"))
        print(f"| {row['config']} | {row['clients']} × {row['duration_s']:g} | {statuses.get('200', 0)} | "
              f"{statuses.get('429', 0)} | {other} | {row['admitted_per_s']} | {row['p50_s']} | {row['p95_s']} | "
              f"{row['rss_ready_mb']} | {row['rss_peak_mb']} | {row['rss_after_idle_mb']} |")  # fmt: skip
    write_results("search_burst", {"machine": machine(), "index": relative(args.index), "rows": kept + rows})


if __name__ == "__main__":
    main()
