"""The domain gate: P(a question is about economics) from its embedding, and the shipped gate on real questions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from answering.domain import DEFAULT_DOMAIN_PATH, DomainGate
from indexing.embedding import Embedder


def test_the_gate_declines_below_its_bar_and_says_why(tmp_path: Path) -> None:
    gate = DomainGate(np.array([4.0, 0.0], dtype=np.float32), 0.0, 0.3, "toy")
    assert gate.decline_reason(np.array([1.0, 0.0], dtype=np.float32)) is None  # P 0.98
    reason = gate.decline_reason(np.array([-1.0, 0.0], dtype=np.float32))  # P 0.02
    assert reason is not None and "about economics" in reason and "0.02" in reason
    with pytest.raises(ValueError, match="2-d vectors"):
        gate.probability(np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="bar"):
        DomainGate(np.zeros(2, dtype=np.float32), 0.0, 1.5, "toy")
    broken = tmp_path / "domain.json"
    broken.write_text(json.dumps({"weights": [1.0], "bias": 0.0}))
    with pytest.raises(ValueError, match="Cannot read the domain gate"):
        DomainGate.load(broken)
    assert DomainGate.load(DEFAULT_DOMAIN_PATH, decline_from=0.25).decline_from == 0.25  # a setting wins


@pytest.fixture(scope="module")
def shipped() -> tuple[DomainGate, Embedder]:
    return DomainGate.load(DEFAULT_DOMAIN_PATH), Embedder(device="cpu")


@pytest.mark.parametrize(("question", "economics"), [
    ("How do I get candle wax out of a wool carpet?", False),
    ("Why does a car tyre lose inflation faster in cold weather?", False),
    ("What is the capital of Mongolia and how many people live there?", False),
    ("Explain the difference between a list and a tuple in Python.", False),
    ("Do minimum wage increases reduce employment of teenagers?", True),
    ("What explains the fall in household spending at retirement?", True),
    ("How did the 2008 financial crisis change bank lending to small firms?", True),
    ("Does a pollution tax on electricity generators lower emissions?", True),
])  # fmt: skip
def test_the_shipped_gate_declines_questions_outside_economics_only(shipped, question: str, economics: bool) -> None:
    gate, embedder = shipped
    assert gate.encoder == embedder.model_name
    assert (gate.decline_reason(embedder.encode([question])[0]) is None) == economics
