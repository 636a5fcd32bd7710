"""The written sentence labels (training/data/sentences/batch_NN.jsonl) as records.

Each labels one (written training question, non-AER abstract) pair: which of the abstract's sentences (as
`corpus.sentences.split_sentences` splits it) state a result answering the question (`finding`, `best` first), and
which only give the method or setting (`method`). The abstracts themselves are not stored (publishers' text): a
record names its abstract by doc_id and its sentence count, which the checks compare with the corpus.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from training.corpus import REPO_ROOT
from training.splits import in_validation_split

SENTENCES_DIR = REPO_ROOT / "training" / "data" / "sentences"
VALIDATION_FRACTION = 0.15


@dataclass(frozen=True)
class SentenceLabels:
    pair: str
    question_id: str
    doc_id: str
    kind: str  # "paraphrase" or "topical"
    n_sentences: int
    finding: tuple[int, ...]
    best: int
    method: tuple[int, ...]

    @property
    def is_validation(self) -> bool:
        """Held out by abstract, so the model is checked on abstracts it never read."""
        return in_validation_split(f"sentences:{self.doc_id}", VALIDATION_FRACTION)


def load_sentence_labels(directory: Path = SENTENCES_DIR) -> list[SentenceLabels]:
    records = [json.loads(line) for path in sorted(directory.glob("batch_*.jsonl"))
               for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]  # fmt: skip
    return [SentenceLabels(r["pair"], r["question_id"], r["doc_id"], r["kind"], r["n_sentences"],
                           tuple(r["finding"]), r["best"], tuple(r["method"])) for r in records]  # fmt: skip
