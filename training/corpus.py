"""The training corpus: non-AER economics abstracts (../shared/data/econ_other_abstracts.csv), never AER rows."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from corpus.documents import Document
from indexing.index import PublishedIndex
from indexing.loader import CorpusLoader

REPO_ROOT = Path(__file__).resolve().parents[1]
TRAINING_CORPUS = REPO_ROOT.parent / "shared" / "data" / "econ_other_abstracts.csv"
TRAINING_INDEX = REPO_ROOT / "var" / "questions" / "econ_index"
AER_JOURNAL = "american economic review"


@lru_cache(maxsize=2)
def load_training_corpus(path: Path = TRAINING_CORPUS) -> dict[str, Document]:
    """Documents by doc_id; raises ValueError if any row is from the AER (training must never see one)."""
    documents = CorpusLoader().load(path).documents
    aer = [d.row_number for d in documents if d.journal.strip().lower() == AER_JOURNAL]
    if aer:
        raise ValueError(f"{path} holds American Economic Review rows (e.g. row {aer[0]}); never train on them.")
    return {document.doc_id: document for document in documents}


def training_index(device: str = "cpu") -> PublishedIndex:
    """The training corpus ingested by the real job, titles and all, as the service would index it (cached)."""
    from training.evaluation.harness import ingest_csv

    return ingest_csv(TRAINING_CORPUS, TRAINING_INDEX, device)
