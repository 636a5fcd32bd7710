"""Fixtures for the ingestion tests: tiny CSV corpora written per test, and the real model loaded once."""

from __future__ import annotations

import copy
import csv
import os
from collections.abc import Callable
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is local; never reach for the hub

from indexing.embedding import Embedder, EmbeddingModelFiles, TokenCounter
from indexing.pipeline import IngestionPipeline, IngestionSettings, IngestionSummary

COLUMNS = ["date", "title", "abstract", "authors", "journal", "doi", "url", "jel_codes", "date_original", "source"]

# Five short abstracts on clearly different topics, in the corpus's own shape.
SAMPLE_ROWS: list[dict[str, str]] = [
    {
        "date": "2010-03",
        "title": "Minimum Wages and Teen Employment",
        "abstract": "We estimate the effect of minimum wage increases on teenage employment using state "
        "borders. Employment effects are small. Earnings of teenagers rise. (JEL J23, J38)",
        "authors": "Card, David; Krueger, Alan",
        "doi": "10.1257/test.1",
        "jel_codes": "J23",
    },
    {
        "date": "2012-06",
        "title": "Storm Warnings on the Great Lakes",
        "abstract": "The weather service issued storm warnings to ships on the Great Lakes. Cargo losses "
        "fell where warning stations opened. The social return on weather spending was high.",
        "doi": "10.1257/test.2",
    },
    {
        "date": "2015",
        "title": "Central Bank Communication &amp; Inflation Expectations",
        "abstract": "Forward guidance by the central bank moves household inflation expectations. "
        "Surveys show that &amp;quot;plain language&amp;quot; statements matter most.\nJEL: E52, E58",
        "doi": "10.1257/test.3",
    },
    {
        "date": "2001-09",
        "title": "",
        "abstract": "Farmers in rural India insure against rainfall shocks through informal credit from "
        "relatives. Monsoon failures reduce consumption of landless households the most.",
        "doi": "",
    },
    {
        "date": "2020-01",
        "title": "Carbon Taxes and <i>Power Plant</i> Emissions",
        "abstract": "A carbon tax on electricity generators lowers CO<sub>2</sub>emissions from coal "
        "plants. Natural gas plants gain market share.",
        "doi": "10.1257/test.5",
    },
]


def write_corpus(path: Path, rows: list[dict[str, str]], columns: list[str] | None = None) -> Path:
    """Write rows as the real corpus is written (csv.writer defaults: CRLF, minimal quoting)."""
    columns = columns or COLUMNS
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            full = {"journal": "American Economic Review", **row}
            writer.writerow([full.get(column, "") for column in columns])
    return path


@pytest.fixture
def sample_rows() -> list[dict[str, str]]:
    return copy.deepcopy(SAMPLE_ROWS)


@pytest.fixture
def write_csv() -> Callable[..., Path]:
    """write_csv(path, rows, columns=None) -> path, in the real corpus's CSV dialect."""
    return write_corpus


@pytest.fixture
def sample_corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus.csv", SAMPLE_ROWS)


@pytest.fixture(scope="session")
def model_files() -> EmbeddingModelFiles:
    return EmbeddingModelFiles.locate()


@pytest.fixture(scope="session")
def token_counter(model_files: EmbeddingModelFiles) -> TokenCounter:
    return TokenCounter(model_files)


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return Embedder(device="cpu", batch_size=64)


@pytest.fixture
def build(embedder: Embedder) -> Callable[..., IngestionSummary]:
    """Run the real pipeline (sharing the session's model) on a corpus into an output path."""

    def run(corpus: Path, out_dir: Path, **overrides: object) -> IngestionSummary:
        settings = IngestionSettings(corpus=corpus, out_dir=out_dir, device="cpu", **overrides)  # type: ignore[arg-type]
        return IngestionPipeline(settings, embedder=embedder).run()

    return run
