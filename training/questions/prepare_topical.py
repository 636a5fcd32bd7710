"""Draw seed abstracts for topical questions (ones that several papers answer in part) and, for each, the
neighbourhood a writer reads: the seed's nearest abstracts by MiniLM cosine and by BM25 on its title. Written as
batches under var/ (never committed: the abstracts are the publishers' text).

    python -m training.questions.prepare_topical --batches 6 --seeds 540

A writer reads every candidate of a seed, writes one broad question ("What does research find about ...") that
2-6 of them answer in part, and lists as `relevant` exactly the candidates whose stated findings answer part of it
(training/data/questions/README.md). Candidates the writer read and left out are clean negatives.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

from training.corpus import REPO_ROOT, training_index
from training.questions.dataset import load_paraphrases, load_unanswerables
from training.questions.prepare import describe, usable

DENSE_NEIGHBOURS = 8
TITLE_NEIGHBOURS = 3


def neighbourhood(index, seed_id: str, vectors: np.ndarray, doc_rows: dict[str, list[int]]) -> list[str]:
    """The seed first, then its nearest documents by cosine (best chunk pair) and by BM25 on its title."""
    seed_vector = vectors[doc_rows[seed_id]].mean(axis=0)
    similarities = vectors @ seed_vector
    found: list[str] = [seed_id]
    for row in np.argsort(-similarities):
        doc_id = index.chunks[row].doc_id
        if doc_id not in found:
            found.append(doc_id)
        if len(found) > DENSE_NEIGHBOURS:
            break
    by_title = 0
    for row, _ in index.search_bm25(index.documents[seed_id].title, 40):
        doc_id = index.chunks[row].doc_id
        if doc_id not in found:
            found.append(doc_id)
            by_title += 1
        if by_title == TITLE_NEIGHBOURS:
            break
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.questions.prepare_topical", description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "var" / "questions" / "topical")
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--seeds", type=int, default=540)
    parser.add_argument("--seed", type=int, default=2027)
    args = parser.parse_args(argv)
    index = training_index()
    used = {q.doc_id for q in load_paraphrases()} | {q.source_doc_id for q in load_unanswerables()}
    seeds = sorted(d.doc_id for d in index.documents.values() if usable(d) and d.doc_id not in used)
    random.Random(args.seed).shuffle(seeds)
    vectors = np.asarray(index.dense.vectors, dtype=np.float32)
    doc_rows: dict[str, list[int]] = {}
    for row, chunk in enumerate(index.chunks):
        doc_rows.setdefault(chunk.doc_id, []).append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    for batch in range(args.batches):
        items = []
        for seed_id in seeds[batch : args.seeds : args.batches]:
            candidates = [describe(index.documents[d]) for d in neighbourhood(index, seed_id, vectors, doc_rows)]
            items.append({"seed_doc_id": seed_id, "candidates": candidates})
        path = args.out / f"batch_{batch + 1:02d}.json"
        path.write_text(json.dumps({"batch": batch + 1, "seeds": items}, ensure_ascii=False, indent=1) + "\n",
                        encoding="utf-8")  # fmt: skip
        print(f"{path.relative_to(REPO_ROOT)}: {len(items)} seeds")


if __name__ == "__main__":
    main()
