"""Automatic checks of the written sentence labels (training/data/sentences/batch_NN.jsonl) against the batches
they were written from (var/sentences/batches, made by training.sentences.prepare):

- every pair of the batch labelled once, nothing else;
- `finding` non-empty, `best` one of them, `method` disjoint from `finding`, every index inside the abstract;
- `n_sentences` equal to the abstract's sentence count as the project splits it (so labels and text line up).

    python -m training.sentences.checks training/data/sentences/batch_*.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from training.sentences.prepare import BATCHES_DIR


def problems_of(labels: list[dict], batch: list[dict]) -> list[str]:
    expected = {record["pair"]: record for record in batch}
    problems, seen = [], set()
    for label in labels:
        pair = label.get("pair")
        if pair not in expected:
            problems.append(f"{pair}: not a pair of this batch")
            continue
        if pair in seen:
            problems.append(f"{pair}: labelled twice")
        seen.add(pair)
        count = len(expected[pair]["sentences"])
        finding, method, best = label.get("finding"), label.get("method"), label.get("best")
        if label.get("n_sentences") != count:
            problems.append(f"{pair}: n_sentences {label.get('n_sentences')} but the abstract has {count}")
        if not isinstance(finding, list) or not finding:
            problems.append(f"{pair}: finding must list at least one sentence")
            continue
        if not isinstance(method, list):
            problems.append(f"{pair}: method must be a list")
            continue
        if any(not isinstance(i, int) or not 0 <= i < count for i in [*finding, *method]):
            problems.append(f"{pair}: an index outside 0..{count - 1}")
        if best not in finding:
            problems.append(f"{pair}: best {best} is not one of the finding sentences {finding}")
        if set(finding) & set(method):
            problems.append(f"{pair}: sentences {sorted(set(finding) & set(method))} both finding and method")
    problems += [f"{pair}: not labelled" for pair in expected if pair not in seen]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.sentences.checks", description=__doc__)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--batches", type=Path, default=BATCHES_DIR)
    args = parser.parse_args(argv)
    failed = 0
    for path in args.files:
        labels = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        batch = json.loads((args.batches / path.name.replace(".jsonl", ".json")).read_text(encoding="utf-8"))
        problems = problems_of(labels, batch)
        failed += bool(problems)
        print(f"{path}: {len(labels)} labelled, {len(problems)} problem(s)")
        for problem in problems[:50]:
            print(f"  {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
