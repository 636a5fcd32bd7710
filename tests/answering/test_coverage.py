"""The coverage gate: off-topic (dense), not answered by any passage (reranker), or confidently answerable."""

from __future__ import annotations

import pytest

from answering.coverage import CoverageGate

GATE = CoverageGate(min_dense_score=0.4, min_rerank_score=5.0, answer_rerank_score=9.0)


def test_off_topic_is_declined_on_the_dense_score_whatever_the_reranker_says() -> None:
    verdict = GATE.assess([0.2, 0.35], [12.0, 3.0])
    assert not verdict.covered and not verdict.must_answer
    assert verdict.dense_score == 0.35 and "below the calibrated threshold 0.400" in verdict.explain()


def test_related_passages_that_do_not_answer_are_declined_on_the_reranker_score() -> None:
    verdict = GATE.assess([0.7, 0.6], [4.9, 1.0])
    assert not verdict.covered and verdict.rerank_score == 4.9
    assert "none that answers it" in verdict.explain()


def test_between_the_thresholds_the_generator_decides_and_above_it_must_answer() -> None:
    between = GATE.assess([0.7], [5.0])
    assert between.covered and not between.must_answer
    confident = GATE.assess([0.7, 0.5], [2.0, 9.0])
    assert confident.covered and confident.must_answer and "may not decline" in confident.explain()


def test_without_rerank_scores_only_the_dense_check_applies() -> None:
    for rerank_scores in ([], [None, None], [11.0, None]):  # not reranked, or only partly: no reranker verdict
        verdict = GATE.assess([0.7, 0.5], rerank_scores)
        assert verdict.covered and not verdict.must_answer and verdict.rerank_score is None
    assert not GATE.assess([], []).covered


def test_reranker_checks_can_be_off_and_must_be_ordered() -> None:
    dense_only = CoverageGate(min_dense_score=0.4)
    assert dense_only.assess([0.5], [-3.0]).covered and not dense_only.assess([0.5], [99.0]).must_answer
    with pytest.raises(ValueError, match="must not be below"):
        CoverageGate(min_dense_score=0.4, min_rerank_score=5.0, answer_rerank_score=4.0)


def test_the_gate_takes_its_thresholds_from_the_settings() -> None:
    from answering.coverage import CoverageSettings

    settings = CoverageSettings(min_dense=0.3, min_rerank=4.0, answer_min_rerank=8.0)
    assert CoverageGate.from_settings(settings) == CoverageGate(0.3, 4.0, 8.0)
