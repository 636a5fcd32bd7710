"""Ingestion benchmark: full ingest of the real corpus, an unchanged re-run, and an incremental re-run.

Each run is `python -m indexing` in a fresh process (so start-up and model loading count), into a
temporary directory with a fresh embedding cache. The incremental run appends 50 rows: copies of
AER rows with new DOIs and a sentence added, as a journal issue's worth of new abstracts would be.

    .venv/bin/python -m benchmarks.ingest_benchmark [--device cpu|cuda] [--precision auto|float32|bfloat16]

Targets on the 2-core development machine: full ingest < 90 s, unchanged re-run < 3 s.
Prints a table and writes benchmarks/results/ingest.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "aer_abstracts.csv"
RESULTS = REPO / "benchmarks" / "results" / "ingest.json"
TARGETS_S = {"full": 90.0, "unchanged": 3.0}
APPENDED_ROWS = 50


def run_ingest(corpus: Path, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "indexing", "--corpus", str(corpus), "--out", str(out),
        "--device", args.device, "--precision", args.precision, "--batch-size", str(args.batch_size),
        "--no-progress",
    ]  # fmt: skip
    environment = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cpu_before = _children_cpu_seconds()
    started = time.perf_counter()
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=environment)
    wall = time.perf_counter() - started
    cpu = _children_cpu_seconds() - cpu_before
    if result.returncode != 0:
        raise SystemExit(f"ingest failed ({result.returncode}):\n{result.stderr}")
    manifest = json.loads((out / "manifest.json").read_text())
    unchanged = result.stdout.startswith("Index unchanged")
    return {
        "wall_s": round(wall, 2),
        # CPU seconds (user + system) of the run: on a shared machine this, divided by the cores, is
        # what the wall time would be without other load.
        "cpu_s": round(cpu, 2),
        "status": "unchanged" if unchanged else "built",
        "stages_s": {} if unchanged else manifest["timings_s"],
        "documents": manifest["counts"]["documents"],
        "chunks": manifest["counts"]["chunks"],
        "embedded": 0 if unchanged else manifest["counts"]["embedded_this_build"],
        "embedded_with": manifest["embedding"]["embedded_with"],
    }


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def append_rows(source: Path, target: Path, count: int) -> None:
    """Copy `source` to `target` plus `count` altered copies of evenly spaced rows (new DOIs, new text)."""
    with source.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        fieldnames = list(reader.fieldnames or [])
        rows = list(reader)
    step = len(rows) // count
    extra = []
    for number, row in enumerate(rows[::step][:count]):
        extra.append(
            {
                **row,
                "doi": f"10.1257/bench.{number}",
                "url": f"https://doi.org/10.1257/bench.{number}",
                "abstract": row["abstract"] + " We also revisit these findings with newly released data.",
            }
        )
    with target.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows + extra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="cpu")
    parser.add_argument("--precision", choices=("auto", "float32", "bfloat16"), default="auto")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ingest-bench-") as scratch:
        work = Path(scratch)
        corpus = work / "corpus.csv"
        corpus.write_bytes(args.corpus.read_bytes())
        out = work / "index"
        runs = {"full": run_ingest(corpus, out, args), "unchanged": run_ingest(corpus, out, args)}
        append_rows(args.corpus, corpus, APPENDED_ROWS)
        runs["incremental (+50 rows)"] = run_ingest(corpus, out, args)

    header = f"{'run':<24}{'wall s':>8}{'cpu s':>8}{'target':>8}  {'docs':>5}{'chunks':>7}{'embedded':>9}"
    print(f"{header}  stages (s)")
    for name, run in runs.items():
        target = TARGETS_S.get(name)
        stages = ", ".join(f"{stage} {seconds:.2f}" for stage, seconds in run["stages_s"].items()) or "-"
        print(
            f"{name:<24}{run['wall_s']:>8.2f}{run['cpu_s']:>8.2f}{(f'<{target:.0f}' if target else '-'):>8}  "
            f"{run['documents']:>5}{run['chunks']:>7}{run['embedded']:>9}  {stages}"
        )
    load = os.getloadavg()
    print(f"embedded with: {runs['full']['embedded_with']}; load average at the end: {load[0]:.1f}")
    report = {
        "benchmark": "ingest",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_1m_at_end": round(load[0], 2),
        },
        "settings": {"device": args.device, "precision": args.precision, "batch_size": args.batch_size},
        "targets_s": TARGETS_S,
        "runs": runs,
        "targets_met": {name: runs[name]["wall_s"] < target for name, target in TARGETS_S.items()},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output.relative_to(REPO) if args.output.is_relative_to(REPO) else args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
