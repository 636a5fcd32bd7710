from pathlib import Path

import pytest

from retrieval.hybrid import HybridSettings
from retrieval.reranker import RerankerSettings
from training.evaluation.beir import BeirDataset
from training.evaluation.harness import EvalConfig, RetrievalEvaluator, ingest_beir


@pytest.mark.slow
def test_harness_runs_the_real_pipeline_end_to_end(tiny_beir: Path, tmp_path: Path) -> None:
    dataset = BeirDataset.load(tiny_beir)
    index = ingest_beir(dataset, tmp_path / "work", device="cpu")
    assert len(index.documents) == 3

    evaluator = RetrievalEvaluator(dataset, index)
    for mode in ("bm25", "dense", "hybrid"):
        result = evaluator.run(EvalConfig(mode, HybridSettings(mode=mode)))
        # Each query has one obviously matching document, and the ranking is mapped back to BEIR ids.
        assert result.metrics["mrr@10"] == 1.0, mode
        assert result.metrics["recall@100"] == 1.0, mode
        assert result.latency_ms["retrieve_mean"] > 0
    # A second ingest of the unchanged corpus reuses the published index.
    assert ingest_beir(dataset, tmp_path / "work", device="cpu").directory == index.directory


def test_eval_config_is_validated() -> None:
    with pytest.raises(ValueError, match="mode"):
        EvalConfig("x", HybridSettings(mode="splade"))
    with pytest.raises(ValueError, match="model_dir"):
        EvalConfig("x", reranker=RerankerSettings(model_dir=None))
    assert EvalConfig("deep", HybridSettings(candidates=50), depth=100).hybrid_settings().candidates == 100
