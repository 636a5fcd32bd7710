"""Whether a question is about economics at all, read from the question's own embedding before any passage.

The passage judges read (question, passage) pairs, so a question outside economics that shares a word with the
corpus ("the cosmic inflation period", "the elasticity modulus of steel", "how long a blood bank stores
platelets") can reach a passage the judges pass, and the service would answer it from a paper about price
inflation. The domain gate is a logistic model over the question's all-MiniLM-L6-v2 vector (the one retrieval
computes anyway, so it costs a dot product): P(the question is about economics). Below `decline_from` the
question is declined, saying why, before the judges run.

Fitted on written questions only (python -m training.domain): the project's economics questions over non-AER
abstracts (training/data/questions/) against 600 written questions from outside economics, a third of them
using an economics word in another sense (training/data/questions/offdomain/). Its bar is chosen on the
development questions' calibration half and stored in the model file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from answering.logits import sigmoid

DEFAULT_DOMAIN_PATH = Path(__file__).resolve().parents[1] / "models" / "weights" / "domain.json"


@dataclass(frozen=True)
class DomainGate:
    """Entry point: `decline_reason(vector)` -> why the question is declined as outside economics, or None."""

    weights: np.ndarray  # over the question's unit vector
    bias: float
    decline_from: float  # P(economics) below this: declined
    encoder: str  # the sentence encoder whose vectors the weights read

    def __post_init__(self) -> None:
        if not 0.0 <= self.decline_from <= 1.0:
            raise ValueError(f"The domain gate's bar must lie in [0, 1], not {self.decline_from}.")

    @classmethod
    def load(cls, path: Path, decline_from: float | None = None) -> DomainGate:
        try:
            data = json.loads(Path(path).read_text())
            weights = np.asarray(data["weights"], dtype=np.float32)
            return cls(weights, float(data["bias"]),
                       float(data["decline_from"] if decline_from is None else decline_from),
                       str(data["encoder"]))  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"Cannot read the domain gate {path}: {error}") from None

    def probability(self, vector: np.ndarray) -> float:
        """P(the question whose unit vector this is asks about economics)."""
        if vector.shape != self.weights.shape:
            raise ValueError(f"The domain gate reads {self.weights.shape[0]}-d vectors of {self.encoder}, "
                             f"not {vector.shape}.")  # fmt: skip
        return sigmoid(float(self.weights @ vector) + self.bias)

    def decline_reason(self, vector: np.ndarray) -> str | None:
        probability = self.probability(vector)
        if probability >= self.decline_from:
            return None
        return (f"the question does not read as one about economics (P {probability:.2f} is below "
                f"{self.decline_from:.2f}), and the index holds economics abstracts only")  # fmt: skip
