"""How far the 4-bit delta files (retrieval/weight_deltas.py) move each shipped cross-encoder's scores from the
float16 files they replaced, read back from git history. Pairs: each development question (calibration half)
with abstracts of the corpus (a fixed random sample), as reranking and judging see them.

    python -m benchmarks.stored_weights --reference-commit 6e78135

Per model: bytes on disk, and the mean/max absolute score difference in float32 and through the served int8
path, beside int8's own difference from float32 (the rounding the service already lives with).
Writes benchmarks/results/stored_weights.json.
"""

from __future__ import annotations

import argparse
import csv
import random
import subprocess
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import REPO_ROOT, SHARED, git_commit, machine, write_results
from retrieval.cross_encoder import FLOAT_WEIGHTS_FILE, SegmentPoolingCrossEncoder, load_tokenizer, weights_file
from retrieval.reranker import encode_pairs
from training.evaluation.dev_questions import load_dev_questions

MODELS = ("reranker", "judge", "judge-reworded", "sentence-judge")
MAX_LENGTH = 192


def reference_dir(commit: str, name: str, into: Path) -> Path:
    """models/weights/NAME as it was at `commit` (config and float16 weights), written under `into`."""
    out = into / name
    out.mkdir(parents=True)
    for file in ("config.json", FLOAT_WEIGHTS_FILE):
        blob = subprocess.run(["git", "show", f"{commit}:models/weights/{name}/{file}"], cwd=REPO_ROOT,
                              capture_output=True, check=True).stdout  # fmt: skip
        (out / file).write_bytes(blob)
    return out


def pairs(per_question: int, seed: int) -> tuple[list[str], list[str]]:
    questions = load_dev_questions(halves=("calibration",))
    with (SHARED / "data" / "aer_abstracts.csv").open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("abstract")]
    rng = random.Random(seed)
    queries, passages = [], []
    for question in questions:
        for row in rng.sample(rows, per_question):
            queries.append(question.question)
            passages.append(f"{row.get('title') or ''}\n{row['abstract']}")
    return queries, passages


def int8(model: SegmentPoolingCrossEncoder) -> torch.nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def compare(name: str, reference: Path, queries: list[str], passages: list[str]) -> dict:
    tokenizer = load_tokenizer()
    shipped_dir = REPO_ROOT / "models" / "weights" / name

    def scores(model: torch.nn.Module) -> np.ndarray:
        return encode_pairs(model, tokenizer, queries, passages, MAX_LENGTH, 16, "cpu")[0]

    old, new = SegmentPoolingCrossEncoder.load(reference), SegmentPoolingCrossEncoder.load(shipped_dir)
    old32, new32, old8, new8 = scores(old), scores(new), scores(int8(old)), scores(int8(new))
    return {
        "model": name,
        "float16_bytes": (reference / FLOAT_WEIGHTS_FILE).stat().st_size,
        "delta_bytes": weights_file(shipped_dir).stat().st_size,
        "score_std": round(float(old32.std()), 3),
        "float32_mean_abs_diff": round(float(np.abs(old32 - new32).mean()), 4),
        "float32_max_abs_diff": round(float(np.abs(old32 - new32).max()), 4),
        "int8_mean_abs_diff": round(float(np.abs(old8 - new8).mean()), 4),
        "int8_vs_float32_mean_abs_diff": round(float(np.abs(old8 - old32).mean()), 4),
        "float32_same_top_of_each_question": same_top(old32, new32, len(queries) // len(set(queries))),
    }


def same_top(old: np.ndarray, new: np.ndarray, per_question: int) -> float:
    old_top = old.reshape(-1, per_question).argmax(axis=1)
    new_top = new.reshape(-1, per_question).argmax(axis=1)
    return round(float((old_top == new_top).mean()), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference-commit", default="6e78135", help="a commit whose models/weights hold float16")
    parser.add_argument("--per-question", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    queries, passages = pairs(args.per_question, args.seed)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in MODELS:
            row = compare(name, reference_dir(args.reference_commit, name, Path(scratch)), queries, passages)
            print(row)
            rows.append(row)
    write_results("stored_weights", {"machine": machine(), "commit": git_commit(), "pairs": len(queries),
                                     "reference_commit": args.reference_commit, "rows": rows})  # fmt: skip


if __name__ == "__main__":
    main()
