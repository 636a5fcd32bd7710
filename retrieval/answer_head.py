"""The reranker's second head: does this passage answer (part of) this question?

The reranker's score ranks passages against each other; it says little about whether the best one answers at all.
This head reads the same joint encoding of question and passage (the mean of all its token vectors) and gives an
answer logit. It is a linear layer fitted after the cross-encoder was trained, with the cross-encoder frozen, on
the project's written training questions (python -m training.passage_decision): positives are the abstracts that
answer them, negatives the retrieved neighbours that do not and the passages retrieved for near-miss questions.
Stored beside the cross-encoder's weights as answer_head.json; answering/passage_decision.py turns its logit and
the retrieval signals into P(the passage answers).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ANSWER_HEAD_FILE = "answer_head.json"


@dataclass(frozen=True)
class AnswerHead:
    """logit = pooled · weights + bias."""

    weights: np.ndarray  # (hidden,)
    bias: float
    info: dict

    def logits(self, pooled: np.ndarray) -> np.ndarray:
        if pooled.ndim != 2 or pooled.shape[1] != self.weights.shape[0]:
            raise ValueError(f"Expected (n, {self.weights.shape[0]}) pooled vectors, got {pooled.shape}.")
        return (pooled @ self.weights + self.bias).astype(np.float32)

    @classmethod
    def load(cls, model_dir: Path) -> AnswerHead | None:
        """The head stored with a reranker, or None when it has none."""
        path = Path(model_dir) / ANSWER_HEAD_FILE
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
            weights = np.asarray(data["weights"], dtype=np.float32)
            bias = float(data["bias"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"Cannot read the answer head {path}: {error}") from None
        if weights.ndim != 1:
            raise ValueError(f"{path}: weights must be one vector.")
        return cls(weights, bias, {k: v for k, v in data.items() if k not in ("weights", "bias")})

    def save(self, model_dir: Path) -> Path:
        path = Path(model_dir) / ANSWER_HEAD_FILE
        payload = {**self.info, "weights": [round(float(w), 7) for w in self.weights], "bias": self.bias}
        path.write_text(json.dumps(payload, indent=1) + "\n")
        return path
