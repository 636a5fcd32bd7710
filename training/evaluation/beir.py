"""BEIR datasets: load corpus/queries/qrels, and convert the corpus into the ingestion job's CSV.

The converted CSV goes through the same IngestionPipeline as the AER corpus, so an evaluation
measures the service's own chunking, BM25 and dense code. Each row carries its BEIR id in the `url`
column (``beir:<dataset>/<id>``), which survives ingestion unchanged and maps results back to qrels.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from corpus.documents import Document

# The ingestion job's input columns (see ../shared/data/README.md), in the order the data files use.
INGESTION_COLUMNS = (
    "date", "title", "abstract", "authors", "journal", "doi", "url", "jel_codes", "date_original", "source",
)  # fmt: skip
BEIR_URL_PREFIX = "beir:"


class BeirFormatError(ValueError):
    """A BEIR file is missing or malformed; the message names the file and line."""


@dataclass(frozen=True)
class BeirDocument:
    corpus_id: str
    title: str
    text: str


@dataclass(frozen=True)
class BeirDataset:
    name: str
    corpus: dict[str, BeirDocument]  # by corpus id, in file order
    queries: dict[str, str]  # query id -> text
    qrels: dict[str, dict[str, int]]  # query id -> {corpus id: grade}, for the loaded split

    @classmethod
    def load(cls, directory: Path, split: str = "test") -> BeirDataset:
        """Read corpus.jsonl, queries.jsonl and qrels/<split>.tsv; only queries with qrels are kept."""
        directory = Path(directory)
        corpus = {
            str(row["_id"]): BeirDocument(str(row["_id"]), row.get("title") or "", row.get("text") or "")
            for row in _read_jsonl(directory / "corpus.jsonl", required=("_id", "text"))
        }
        all_queries = {
            str(row["_id"]): row["text"] for row in _read_jsonl(directory / "queries.jsonl", required=("_id", "text"))
        }
        qrels = read_qrels(directory / "qrels" / f"{split}.tsv")
        missing = sorted(set(qrels) - set(all_queries))
        if missing:
            raise BeirFormatError(f"qrels/{split}.tsv names {len(missing)} unknown query ids, e.g. {missing[0]!r}.")
        queries = {qid: all_queries[qid] for qid in qrels}
        return cls(directory.name, corpus, queries, qrels)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """A BEIR qrels TSV (header `query-id  corpus-id  score`) as {query id: {corpus id: grade}}."""
    if not path.is_file():
        raise BeirFormatError(f"{path} not found.")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.rstrip("\n").split("\t")
            if line_number == 1 and fields[0] == "query-id":
                continue
            if not line.strip():
                continue
            if len(fields) != 3 or not fields[2].lstrip("-").isdigit():
                raise BeirFormatError(f"{path}, line {line_number}: expected 'query-id<TAB>corpus-id<TAB>score'.")
            qrels.setdefault(fields[0], {})[fields[1]] = int(fields[2])
    return qrels


def _read_jsonl(path: Path, required: tuple[str, ...]) -> Iterable[dict]:
    if not path.is_file():
        raise BeirFormatError(f"{path} not found.")
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise BeirFormatError(f"{path}, line {line_number}: not valid JSON ({error.msg}).") from None
            absent = [key for key in required if key not in row]
            if absent:
                raise BeirFormatError(f"{path}, line {line_number}: missing field(s) {', '.join(absent)}.")
            yield row


def write_ingestion_csv(rows: Iterable[Mapping[str, str]], path: Path) -> int:
    """Write rows (dicts keyed by INGESTION_COLUMNS; absent keys are empty) as the ingestion CSV."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=INGESTION_COLUMNS, restval="", extrasaction="raise")
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
            count += 1
    return count


def beir_url(dataset_name: str, corpus_id: str) -> str:
    return f"{BEIR_URL_PREFIX}{dataset_name}/{corpus_id}"


def corpus_id_of(document: Document) -> str | None:
    """The BEIR corpus id stored in a converted document's url, or None for other documents."""
    if not document.url.startswith(BEIR_URL_PREFIX):
        return None
    return document.url.partition("/")[2] or None


class BeirCorpusConverter:
    """Writes a BEIR corpus as the ingestion job's CSV: title → title, text → abstract, id → url."""

    def __init__(self, dataset: BeirDataset) -> None:
        self.dataset = dataset

    def write_csv(self, path: Path) -> int:
        """Write the CSV and return the number of rows; documents with empty text are left out."""
        rows = (
            {
                "title": document.title,
                "abstract": document.text,
                "url": beir_url(self.dataset.name, corpus_id),
                "source": f"BEIR {self.dataset.name}",
            }
            for corpus_id, document in self.dataset.corpus.items()
            if document.text.strip()
        )
        return write_ingestion_csv(rows, path)
