"""Verify the written unanswerable questions with the project's retrievers: a question stays unanswerable only if
none of the abstracts the service would retrieve for it answers it.

    python -m training.questions.verify retrieve   # var/questions/review/review_NN.json: each question with the
                                                    # top hybrid abstracts of the training corpus, for a reader
    (readers write var/questions/review/verdict_NN.jsonl: {"id", "answered_by": [doc_id, ...], "reason"})
    python -m training.questions.verify collect    # training/data/questions/unanswerable_verification.jsonl

The retrieved abstracts stay under var/ (the publishers' text); the committed verification holds ids only.
"""

from __future__ import annotations

import argparse
import json

from indexing.local_backend import LocalIndexBackend
from retrieval.hybrid import HybridRetriever
from training.corpus import REPO_ROOT, training_index
from training.questions.checks import read_records

QUESTIONS = REPO_ROOT / "training" / "data" / "questions"
REVIEW = REPO_ROOT / "var" / "questions" / "review"
VERIFICATION = QUESTIONS / "unanswerable_verification.jsonl"
RETRIEVED_PER_QUESTION = 5


def top_documents(retriever: HybridRetriever, query: str, count: int) -> list[str]:
    doc_ids: list[str] = []
    for hit in retriever.retrieve(query, count * 4):
        if hit.chunk.doc_id not in doc_ids:
            doc_ids.append(hit.chunk.doc_id)
        if len(doc_ids) == count:
            break
    return doc_ids


def retrieve(batch_size: int) -> None:
    index = training_index()
    retriever = HybridRetriever(LocalIndexBackend(index), index.embedder)
    records = read_records(sorted((QUESTIONS / "unanswerable").glob("batch_*.jsonl")))
    REVIEW.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(records), batch_size):
        items = []
        for record in records[start : start + batch_size]:
            retrieved = top_documents(retriever, record["question"], RETRIEVED_PER_QUESTION)
            items.append({
                "id": record["id"], "question": record["question"], "note": record.get("note", ""),
                "retrieved": [{"doc_id": d, "title": index.documents[d].title,
                               "abstract": index.documents[d].abstract} for d in retrieved],
            })  # fmt: skip
        path = REVIEW / f"review_{start // batch_size + 1:02d}.json"
        path.write_text(json.dumps(items, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"{path.relative_to(REPO_ROOT)}: {len(items)} questions")


def collect() -> None:
    reviews = {
        item["id"]: item for path in sorted(REVIEW.glob("review_*.json")) for item in json.loads(path.read_text())
    }
    verdicts = {}
    for path in sorted(REVIEW.glob("verdict_*.jsonl")):
        for record in read_records([path]):
            verdicts[record["id"]] = record
    missing = sorted(set(reviews) - set(verdicts))
    if missing:
        raise SystemExit(f"{len(missing)} questions have no verdict yet, e.g. {missing[:3]}")
    lines = []
    for question_id, item in reviews.items():
        verdict = verdicts[question_id]
        retrieved = [r["doc_id"] for r in item["retrieved"]]
        answered_by = [d for d in verdict.get("answered_by", []) if d in retrieved]
        lines.append(json.dumps({
            "id": question_id, "retrieved": retrieved, "answered_by": answered_by,
            "unanswerable": not answered_by, "reason": verdict.get("reason", ""),
        }, ensure_ascii=False))  # fmt: skip
    VERIFICATION.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kept = sum('"unanswerable": true' in line for line in lines)
    print(f"{VERIFICATION.relative_to(REPO_ROOT)}: {kept} of {len(lines)} questions verified unanswerable")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.questions.verify", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("step", choices=("retrieve", "collect"))
    parser.add_argument("--batch-size", type=int, default=62, help="questions per review file")
    args = parser.parse_args(argv)
    retrieve(args.batch_size) if args.step == "retrieve" else collect()


if __name__ == "__main__":
    main()
