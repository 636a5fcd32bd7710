"""Probabilities and their logits, clamped so that no score overflows (shared by the decision and the domain gate)."""

from __future__ import annotations

import math


def sigmoid(logit: float) -> float:
    """1 / (1 + e^-logit), clamped so that no logit overflows."""
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


def logit(probability: float) -> float:
    """The inverse of sigmoid (a probability of exactly 0 or 1 as about +-34.5)."""
    clamped = min(max(probability, 1e-15), 1.0 - 1e-15)
    return math.log(clamped / (1.0 - clamped))
