"""Draw the (question, abstract) pairs whose sentences writers label (finding / best / method) and write them as
batches under var/ (never committed: the abstracts are the publishers' text).

The questions are the project's written training questions over non-AER abstracts (training/data/questions):
paraphrase questions (one abstract each) and topical questions (each relevant abstract a pair), validation split
included so that the sentence model can be checked on abstracts it never saw. Each pair lists the abstract's
sentences as `corpus.sentences.split_sentences` splits it, numbered from 0.

    python -m training.sentences.prepare --batches 4 --paraphrases 520 --topical 160
    python -m training.sentences.prepare --first 5 --batches 5 --paraphrases 970 --topical 310   # 600 more pairs

Pairs already labelled (training/data/sentences) are left out, so a larger draw with the same seed adds new pairs
only; `--first` numbers the new batches after the committed ones.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from corpus.sentences import split_sentences
from training.corpus import REPO_ROOT, load_training_corpus
from training.questions.dataset import load_paraphrases, load_reworded, load_topicals

BATCHES_DIR = REPO_ROOT / "var" / "sentences" / "batches"
LABELS_DIR = REPO_ROOT / "training" / "data" / "sentences"


def labelled_pairs() -> set[str]:
    """The pairs training/data/sentences already holds."""
    labelled = set()
    for path in sorted(LABELS_DIR.glob("batch_*.jsonl")):
        labelled |= {json.loads(line)["pair"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    return labelled


def pairs(paraphrases: int, topical: int, seed: int) -> list[dict]:
    corpus = load_training_corpus()
    rng = random.Random(seed)
    asked = [q for q in load_paraphrases() + load_reworded() if q.doc_id in corpus]
    rng.shuffle(asked)
    chosen = [(q.question_id, q.question, q.doc_id, "paraphrase") for q in asked[:paraphrases]]
    broad = [(q.question_id, q.question, doc_id, "topical") for q in load_topicals() for doc_id in q.relevant
             if doc_id in corpus]  # fmt: skip
    rng.shuffle(broad)
    chosen += broad[:topical]
    records = []
    for question_id, question, doc_id, kind in chosen:
        document = corpus[doc_id]
        sentences = [document.abstract[start:end] for start, end in split_sentences(document.abstract)]
        records.append({"pair": f"{question_id}:{doc_id}", "question_id": question_id, "kind": kind,
                        "doc_id": doc_id, "question": question, "title": document.title,
                        "sentences": sentences})  # fmt: skip
    rng.shuffle(records)
    return records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.sentences.prepare", description=__doc__)
    parser.add_argument("--out", type=Path, default=BATCHES_DIR)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--paraphrases", type=int, default=520)
    parser.add_argument("--topical", type=int, default=160)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--first", type=int, default=1, help="the number of the first batch written")
    args = parser.parse_args(argv)
    labelled = labelled_pairs()
    records = [record for record in pairs(args.paraphrases, args.topical, args.seed) if record["pair"] not in labelled]
    args.out.mkdir(parents=True, exist_ok=True)
    for batch in range(args.batches):
        path = args.out / f"batch_{batch + args.first:02d}.json"
        path.write_text(json.dumps(records[batch :: args.batches], ensure_ascii=False, indent=1) + "\n")
        print(f"{path.relative_to(REPO_ROOT)}: {len(records[batch :: args.batches])} pairs")


if __name__ == "__main__":
    main()
