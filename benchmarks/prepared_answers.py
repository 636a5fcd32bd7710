"""What the answerer decides for every development question, without generating: a cheap, exact check that a
refactoring (or another backend) changes nothing. Greedy generation is deterministic given the prompt, so equal
prompts mean equal answers.

    python -m benchmarks.prepared_answers --out var/prepared/after.json            # this checkout, local index
    AER_RAG_BACKEND__KIND=postgres AER_RAG_BACKEND__DSN=postgresql://… python -m benchmarks.prepared_answers --out …
    python -m benchmarks.prepared_answers --compare var/prepared/before.json var/prepared/after.json

Per question: the hits (chunk ids), fused and reranker scores, the decision's coverage and per-passage
probabilities, and a hash of each finding's prompt. Run from another checkout (its directory as the working
directory) for a "before".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from answering.answerer import Question
from app.config import Settings
from app.services import load_services
from benchmarks.common import REPO_ROOT
from training.evaluation.dev_questions import load_dev_questions

TOLERANCE = {"fused": 1e-9, "rerank": 1e-4, "probabilities": 1e-4}  # float rounding, not a decision


def dump(index: Path, out: Path) -> None:
    services = load_services(Settings(index_dir=index, device="cpu"))
    prepared = {}
    try:
        for question in load_dev_questions():
            answer = services.answerer.prepare(Question(question.question))
            prepared[question.question_id] = {
                "hits": [hit.chunk.chunk_id for hit in answer.hits],
                "fused": [hit.fused_score for hit in answer.hits],
                "rerank": [hit.rerank_score for hit in answer.hits],
                "coverage": answer.coverage,
                "probabilities": [j.probability for j in answer.verdict.judgements] if answer.verdict else None,
                "prompts": [hashlib.sha256(f.prompt.text.encode()).hexdigest()[:16] for f in answer.findings],
            }
    finally:
        services.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(prepared, indent=1) + "\n")
    print(f"{len(prepared)} questions -> {out}")


def differences(before: dict, after: dict) -> list[str]:
    found = []
    for question_id in sorted(set(before) | set(after)):
        old, new = before.get(question_id), after.get(question_id)
        if old is None or new is None:
            found.append(f"{question_id}: only in one file")
            continue
        for field, value in old.items():
            tolerance = TOLERANCE.get(field)
            if tolerance is None or value is None or new[field] is None:
                same = value == new[field]
            else:
                same = len(value) == len(new[field]) and all(
                    abs((a or 0.0) - (b or 0.0)) <= tolerance for a, b in zip(value, new[field], strict=True)
                )
            if not same:
                found.append(f"{question_id}: {field} {value} -> {new[field]}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index")
    parser.add_argument("--out", type=Path, help="write this checkout's decisions here")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(path.read_text()) for path in args.compare)
        found = differences(before, after)
        print("\n".join(found[:50]) or f"identical: {len(before)} questions (scores within {TOLERANCE})")
        return 1 if found else 0
    if args.out is None:
        parser.error("give --out or --compare")
    dump(args.index, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
