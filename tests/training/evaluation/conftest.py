import json
from pathlib import Path

import pytest

TINY_CORPUS = [
    {"_id": "d1", "title": "Minimum wages and employment",
     "text": "We study minimum wage increases. Employment falls little."},
    {"_id": "d2", "title": "", "text": "Monetary policy shocks move long-term interest rates."},
    {"_id": "d3", "title": "Trade, \"gravity\", and distance",
     "text": "Trade flows decline with distance, even online."},
]


@pytest.fixture
def tiny_beir(tmp_path: Path) -> Path:
    """A three-document BEIR dataset with two test queries and one train query."""
    root = tmp_path / "tinybeir"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({**row, "metadata": {}}) + "\n" for row in TINY_CORPUS))
    queries = [{"_id": "q1", "text": "Do minimum wages cost jobs?"}, {"_id": "q2", "text": "distance and trade"},
               {"_id": "q3", "text": "interest rates"}]  # fmt: skip
    (root / "queries.jsonl").write_text("".join(json.dumps(row) + "\n" for row in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t2\nq2\td1\t0\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq3\td2\t1\n")
    return root
