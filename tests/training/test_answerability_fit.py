"""Fitting the answerability model and choosing its thresholds (training/answerability.py)."""

import numpy as np
import pytest

from training.answerability import choose_thresholds, fit_logistic, fitted_model, roc_auc


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


def test_thresholds_decline_at_most_the_allowed_share() -> None:
    answerable = [0.03, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.92, 0.95, 0.99]
    unanswerable = [0.01, 0.1, 0.2, 0.4, 0.55, 0.65]
    chosen = choose_thresholds(answerable, unanswerable, max_false_decline=0.1, max_outright_decline=0.1)
    # P below answer_from is declined: a cut at 0.5 declines one answerable question in ten, one above 0.5
    # would decline two; the threshold sits halfway between 0.5 and the next probability below (0.4).
    assert chosen["answer_from"] == 0.45
    assert chosen["calibration_wrongly_declined"] == 0.1
    assert chosen["calibration_unanswerable_declined"] == pytest.approx(4 / 6, abs=0.01)
    # The same rule for bare refusals, never above answer_from.
    assert chosen["decline_below"] == 0.45 and chosen["calibration_declined_outright"] == 0.1
    strict = choose_thresholds(answerable, unanswerable, max_false_decline=0.1, max_outright_decline=0.0)
    assert strict["decline_below"] == 0.02 and strict["calibration_declined_outright"] == 0.0  # (0.01 + 0.03) / 2
    looser = choose_thresholds(answerable, unanswerable, max_false_decline=0.2, max_outright_decline=0.0)
    assert looser["answer_from"] == 0.575
    assert looser["calibration_unanswerable_declined"] == pytest.approx(5 / 6, abs=0.01)


def test_roc_auc() -> None:
    assert roc_auc([0.9, 0.8, 0.1], [1, 1, 0]) == 1.0
    assert roc_auc([0.1, 0.8, 0.9], [1, 1, 0]) == 0.0
    assert roc_auc([0.5, 0.5], [1, 0]) == 0.5
