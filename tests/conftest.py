"""Fixtures shared across packages: the real AER corpus, ingested once per test session (slow tests only)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from indexing.pipeline import IngestionPipeline, IngestionSettings, IngestionSummary

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every model is local; never reach for a hub

REPO_ROOT = Path(__file__).resolve().parent.parent
REAL_CORPUS = REPO_ROOT.parent / "shared" / "data" / "aer_abstracts.csv"


@pytest.fixture(scope="session")
def real_corpus() -> Path:
    if not REAL_CORPUS.is_file():
        pytest.fail(f"The real corpus is expected at {REAL_CORPUS} (../shared beside the repository).")
    return REAL_CORPUS


@pytest.fixture(scope="session")
def real_index_build(tmp_path_factory: pytest.TempPathFactory, real_corpus: Path) -> IngestionSummary:
    """The real corpus ingested by the real job (about a minute on 2 cores), shared by every slow test."""
    out = tmp_path_factory.mktemp("real-index") / "index"
    return IngestionPipeline(IngestionSettings(corpus=real_corpus, out_dir=out, device="cpu")).run()


@pytest.fixture(scope="session")
def real_index_dir(real_index_build: IngestionSummary) -> Path:
    return real_index_build.index_dir.parent / "index"  # the published symlink, as a reader sees it
