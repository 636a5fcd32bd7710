"""Fitting the answerability model and choosing its thresholds (training/answerability.py)."""

import numpy as np
import pytest

from training.answerability import DevJudgement, choose_thresholds, fit_logistic, fitted_model, outcome_at, roc_auc
from training.evaluation.dev_questions import DevQuestion


def test_the_logistic_fit_finds_the_informative_feature() -> None:
    rng = np.random.default_rng(0)
    informative = np.concatenate([rng.normal(2.0, 1.0, 300), rng.normal(-2.0, 1.0, 100)])  # imbalanced classes
    noise = rng.normal(0.0, 1.0, 400)
    labels = np.array([1] * 300 + [0] * 100)
    weights, bias = fit_logistic(np.column_stack([informative, noise]), labels)
    assert weights[0] > 1.0 and abs(weights[1]) < 0.2 * weights[0]
    assert abs(bias / weights[0]) < 0.25  # class-balanced: the boundary stays near the midpoint, 0

    rows = [{"signal": float(x), "noise": float(n)} for x, n in zip(informative, noise, strict=True)]
    model = fitted_model(rows, labels, ("signal", "noise"))
    assert model.probability({"signal": 3.0, "noise": 0.0}) > 0.95
    assert model.probability({"signal": -3.0, "noise": 0.0}) < 0.05


def dev(question_id: str, kind: str, relevant: set[str], passages: list[tuple[str, float]]) -> DevJudgement:
    return DevJudgement(DevQuestion(question_id, "q", tuple(relevant), kind, ""), frozenset(relevant), passages)


JUDGED = [
    dev("d0-01", "paraphrase", {"a"}, [("a", 0.9), ("b", 0.5)]),
    dev("d0-03", "paraphrase", {"c"}, [("c", 0.62), ("d", 0.3)]),
    dev("dt-01", "topical", {"e", "f"}, [("e", 0.95), ("f", 0.45), ("g", 0.41)]),
    dev("du-01", "unanswerable", set(), [("h", 0.6), ("i", 0.2)]),
]


def test_question_figures_follow_the_services_selection() -> None:
    # answer_from 0.7: the second paraphrase (best 0.62) is declined; also_from 0.44 adds f but not g.
    figures = outcome_at(JUDGED, answer_from=0.7, also_from=0.44, max_papers=5)
    assert figures == {"answered_with_relevant": pytest.approx(2 / 3), "unanswerable_declined": 1.0,
                       "topical_recall": 1.0, "topical_precision": 1.0}  # fmt: skip
    loose = outcome_at(JUDGED, answer_from=0.5, also_from=0.4, max_papers=5)
    assert loose["unanswerable_declined"] == 0.0 and loose["topical_precision"] == pytest.approx(2 / 3)


def test_thresholds_maximise_the_four_figures_and_bare_refusals_stay_rare() -> None:
    chosen = choose_thresholds(JUDGED, max_papers=5, max_outright_decline=0.0)
    # Everything right needs answer_from in (0.6, 0.62] and also_from in (0.41, 0.45]: the highest such bars.
    assert (chosen["answer_from"], chosen["also_from"]) == (0.62, 0.44)
    assert chosen["calibration_half"] == {"answered_with_relevant": 1.0, "unanswerable_declined": 1.0,
                                          "topical_recall": 1.0, "topical_precision": 1.0}  # fmt: skip
    assert chosen["decline_below"] <= 0.62  # no answerable question's best passage falls below it


def test_roc_auc() -> None:
    assert roc_auc([0.9, 0.8, 0.1], [1, 1, 0]) == 1.0
    assert roc_auc([0.1, 0.8, 0.9], [1, 1, 0]) == 0.0
    assert roc_auc([0.5, 0.5], [1, 0]) == 0.5
