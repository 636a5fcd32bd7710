"""The weights calibration recombines stored scores the way the service ranks."""

import numpy as np

from training.reranker.calibrate import QuestionScores, top1_rates


def question(pool_scores: list[float], pool_cosines: list[float], hard_scores: list[float],
             hard_cosines: list[float]) -> QuestionScores:  # fmt: skip
    return QuestionScores(
        pool_relevant=np.array([False, True, False]),  # the second hybrid candidate is the relevant one
        pool_scores=np.array(pool_scores), pool_cosines=np.array(pool_cosines),
        hard_owners=[0, 1, 2], hard_scores=np.array(hard_scores), hard_cosines=np.array(hard_cosines),
        hard_doc_count=3,
    )  # fmt: skip


def test_the_cosine_term_can_flip_both_top1_rates() -> None:
    # The cross-encoder prefers a wrong candidate by 1.0; the bi-encoder prefers the right one by 0.2.
    scores = [question([2.0, 1.0, 0.0], [0.1, 0.3, 0.0], [1.0, 2.0, 0.0], [0.5, 0.3, 0.0])]
    assert top1_rates(scores, 0.0, 0.0) == {"service_top1": 0.0, "hard_top1": 0.0}
    assert top1_rates(scores, 10.0, 0.0) == {"service_top1": 1.0, "hard_top1": 1.0}
    # A heavy first stage keeps the hybrid order, whose leader is wrong.
    assert top1_rates(scores, 10.0, 1e6)["service_top1"] == 0.0
