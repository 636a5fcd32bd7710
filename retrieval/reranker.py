"""Cross-encoder reranking: score (query, passage) pairs jointly and reorder the fused candidates."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field, field_validator
from transformers import PreTrainedTokenizerBase

from corpus.documents import indexed_text
from retrieval.answer_head import AnswerHead
from retrieval.cross_encoder import SegmentPoolingCrossEncoder, load_tokenizer
from retrieval.fusion import DEFAULT_RRF_K, ranks_of, rrf_scores
from retrieval.types import RetrievedChunk
from runtime.device import Precision, resolve_device, resolve_dtype

log = logging.getLogger(__name__)

# Written beside the weights by the training script: the model's name, training settings and the
# first-stage weight chosen on validation data.
RERANKER_INFO_FILE = "reranker.json"
# The project's own cross-encoder, trained by `python -m training.reranker` and shipped in the repository.
DEFAULT_RERANKER_DIR = Path(__file__).resolve().parents[1] / "models" / "weights" / "reranker"
# Tokens per (query, passage) pair at inference: the shipped model's training length. 256 scored no better on
# the development questions' calibration half and cost a third more time (benchmarks/reranker_benchmark.py).
INFERENCE_MAX_LENGTH = 192


def rerank_order(scores: np.ndarray, first_stage_weight: float = 0.0) -> np.ndarray:
    """Candidate indices (candidates given in first-stage order) best first after the rerank stage.

    With first_stage_weight 0 this is the cross-encoder's order. Otherwise the cross-encoder's ranks and the
    first-stage ranks are fused by RRF (retrieval/fusion.py), the first stage with this weight: a small
    reranker and the retrievers make different mistakes, so keeping a say for the first stage is more
    accurate than either alone (the weight is chosen on validation data when the reranker is trained).
    """
    if first_stage_weight < 0:
        raise ValueError(f"first_stage_weight must not be negative, not {first_stage_weight}.")
    by_score = np.argsort(-scores, kind="stable")  # stable: equal scores keep the first-stage order
    if first_stage_weight == 0:
        return by_score
    first_stage_ranks = np.arange(1, len(scores) + 1)
    fused = rrf_scores([ranks_of(by_score), first_stage_ranks], [1.0, first_stage_weight], DEFAULT_RRF_K)
    return np.argsort(-fused, kind="stable")


def read_reranker_info(model_dir: Path) -> dict:
    """The model directory's reranker.json ({} when there is none, e.g. a plain encoder)."""
    info_path = Path(model_dir) / RERANKER_INFO_FILE
    return json.loads(info_path.read_text()) if info_path.is_file() else {}


class RerankerUnavailable(RuntimeError):
    """The reranker model directory is missing or cannot be loaded."""


def passage_text(title: str, text: str) -> str:
    """What the cross-encoder reads for a passage: the same title-above-text form the index uses."""
    return indexed_text(title, text)


def autocast_for(device: str, dtype: torch.dtype) -> AbstractContextManager[object]:
    """Mixed precision around the forward pass; weights stay float32 so small logits keep their accuracy."""
    if dtype == torch.float32:
        return nullcontext()
    return torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=dtype)


def encode_pairs(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    queries: Sequence[str],
    passages: Sequence[str],
    max_length: int,
    batch_size: int,
    device: str,
    dtype: torch.dtype = torch.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """Relevance scores (n,) and the joint encodings' mean vectors (n, hidden) of aligned (query, passage) pairs;
    shared by the service and training.

    Pairs are batched by length (shortest first), so a batch is padded only to its own longest pair."""
    if len(queries) != len(passages):
        raise ValueError(f"{len(queries)} queries but {len(passages)} passages; they must pair up.")
    hidden = int(getattr(getattr(model, "config", None), "hidden_size", 0))
    if not queries:
        return np.zeros(0, dtype=np.float32), np.zeros((0, hidden), dtype=np.float32)
    # A query may fill at most half the pair: past that, "only_second" truncation has nothing left to cut and the
    # tokenizer raises (a 1,000-character query was a 500); the passage keeps the rest.
    queries = [truncated(tokenizer, query, max_length // 2) for query in queries]
    encoded = tokenizer(list(queries), list(passages), truncation="only_second", max_length=max_length)
    order = np.argsort([len(ids) for ids in encoded["input_ids"]], kind="stable")
    scores = np.zeros(len(queries), dtype=np.float32)
    pooled = np.zeros((len(queries), hidden), dtype=np.float32)
    was_training = model.training
    model.eval()
    with torch.inference_mode(), autocast_for(device, dtype):
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            features = [{key: values[i] for key, values in encoded.items()} for i in rows]
            batch = tokenizer.pad(features, return_tensors="pt").to(device)
            batch_scores, batch_pooled = model(**batch, return_pooled=True)
            scores[rows] = batch_scores.float().cpu().numpy()
            pooled[rows] = batch_pooled.float().cpu().numpy()
    model.train(was_training)
    return scores, pooled


def truncated(tokenizer: PreTrainedTokenizerBase, text: str, max_tokens: int) -> str:
    """`text` cut to its first `max_tokens` tokens (special tokens not counted); unchanged when it fits."""
    ids = tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
    return text if len(ids) <= max_tokens else tokenizer.decode(ids[:max_tokens])


class RerankerSettings(BaseModel):
    """The rerank stage: which cross-encoder, how many fused candidates it scores, and how it reads them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_dir: Path | None = Field(
        DEFAULT_RERANKER_DIR, description="Cross-encoder model directory; reranking is off when empty or missing."
    )
    top_m: int = Field(
        20, ge=1, le=200,
        description="How many fused candidates the reranker scores (20: the 300 ms budget on 2 CPU cores).",
    )  # fmt: skip
    first_stage_weight: float | None = Field(
        None, ge=0.0, le=100.0,
        description="Say of the hybrid order in the reranked order (0: the cross-encoder's order alone); "
        "default: the value chosen on validation data and stored with the model (reranker.json).",
    )  # fmt: skip
    bi_encoder_weight: float | None = Field(
        None, ge=0.0, le=1000.0,
        description="Weight of the bi-encoder's cosine added to the cross-encoder's score (0: the cross-encoder "
        "alone); default: the value chosen on the development questions' calibration half, in reranker.json.",
    )  # fmt: skip
    max_length: int = Field(INFERENCE_MAX_LENGTH, ge=16, le=512, description="Tokens per (query, passage) pair.")
    batch_size: int = Field(
        16, ge=1, le=1024,
        description="Pairs per forward pass; pairs are batched by length, so smaller batches pad less.",
    )  # fmt: skip
    precision: Precision | Literal["int8"] = Field(
        "auto",
        description="int8: dynamically quantized linear layers (CPU only, about 1.5x faster); "
        "auto: int8 on the CPU, float16/bfloat16 on a GPU.",
    )

    @field_validator("model_dir", mode="before")
    @classmethod
    def _empty_means_off(cls, value: object) -> object:
        # AER_RAG_RERANKER__MODEL_DIR= (empty) switches reranking off rather than meaning the current directory.
        return None if isinstance(value, str) and not value.strip() else value


class CrossEncoderReranker:
    """Loads a SegmentPoolingCrossEncoder and its tokenizer from model_dir (see cross_encoder.py).

    A candidate's relevance is the cross-encoder's score plus bi_encoder_weight x the bi-encoder's cosine of the
    query and the passage: the cross-encoder reads the pair jointly, the bi-encoder was trained on far more
    paraphrase pairs, and the sum ranks the answering abstract first more often than either (see MODEL_CARD.md).
    first_stage_weight: see rerank_order. Either weight None takes the value stored with the model (0 if none is).
    """

    def __init__(
        self,
        model_dir: Path,
        device: str = "cpu",
        max_length: int = INFERENCE_MAX_LENGTH,
        batch_size: int = 16,
        precision: str = "auto",
        first_stage_weight: float | None = None,
        bi_encoder_weight: float | None = None,
    ) -> None:
        if max_length < 16:
            raise ValueError(f"max_length must be at least 16 tokens, not {max_length}.")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}.")
        model_dir = Path(model_dir)
        if not (model_dir / "config.json").is_file():
            raise RerankerUnavailable(f"No reranker model at {model_dir} (config.json is missing).")
        self.model_dir = model_dir
        self.device = device
        self.max_length = max_length
        self.batch_size = batch_size
        on_cpu = resolve_device(device).type == "cpu"
        quantized = precision == "int8" or (precision == "auto" and on_cpu)
        if quantized and not on_cpu:
            raise ValueError("int8 reranking is for the CPU.")
        self.dtype = torch.float32 if quantized else resolve_dtype(precision, resolve_device(device), auto="fast")
        self.precision = "int8" if quantized else str(self.dtype).removeprefix("torch.")
        try:
            self.tokenizer = load_tokenizer()
            # Shipped in float16 to halve the repo size; compute in float32 (plus autocast) for accuracy.
            self.model = SegmentPoolingCrossEncoder.load(model_dir).to(device)
            if quantized:
                # int8 GEMMs (fbgemm) for the linear layers. torch.ao is deprecated in favour of torchao but
                # present in the pinned torch; move when torch is bumped.
                with warnings.catch_warnings():  # its deprecation notices, once per load, say nothing new
                    warnings.simplefilter("ignore", (DeprecationWarning, UserWarning))
                    self.model = torch.ao.quantization.quantize_dynamic(
                        self.model, {torch.nn.Linear}, dtype=torch.qint8
                    )
        except (OSError, ValueError, KeyError, RuntimeError) as error:
            raise RerankerUnavailable(f"Could not load the reranker from {model_dir}: {error}") from error
        try:
            self.answer_head = AnswerHead.load(model_dir)  # None: this reranker only ranks
        except ValueError as error:
            raise RerankerUnavailable(str(error)) from error
        info = read_reranker_info(model_dir)
        self.name: str = info.get("name", model_dir.name)
        self.first_stage_weight = _weight("first_stage_weight", first_stage_weight, info)
        self.bi_encoder_weight = _weight("bi_encoder_weight", bi_encoder_weight, info)

    @classmethod
    def from_settings(cls, settings: RerankerSettings, device: str) -> CrossEncoderReranker:
        if settings.model_dir is None:
            raise RerankerUnavailable("No reranker is configured.")
        return cls(settings.model_dir, device, settings.max_length, settings.batch_size, settings.precision,
                   settings.first_stage_weight, settings.bi_encoder_weight)  # fmt: skip

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Relevance score of each passage for the query (higher is more relevant)."""
        return self.encode(query, passages)[0]

    def encode(self, query: str, passages: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The cross-encoder's scores and the joint encodings' mean vectors (see encode_pairs)."""
        return encode_pairs(self.model, self.tokenizer, [query] * len(passages), passages, self.max_length,
                            self.batch_size, self.device, self.dtype)  # fmt: skip

    def relevance(self, query: str, passages: Sequence[str], cosines: Sequence[float] | None = None) -> np.ndarray:
        """The cross-encoder's score plus bi_encoder_weight x each passage's bi-encoder cosine to the query."""
        return self.assess(query, passages, cosines)[0]

    def assess(self, query: str, passages: Sequence[str], cosines: Sequence[float] | None = None
               ) -> tuple[np.ndarray, np.ndarray | None]:  # fmt: skip
        """(relevance, answer logits) of each passage from one forward pass; the logits are None when this
        reranker has no answer head."""
        scores, pooled = self.encode(query, passages)
        answer_logits = self.answer_head.logits(pooled) if self.answer_head is not None else None
        if self.bi_encoder_weight == 0:
            return scores, answer_logits
        if cosines is None or len(cosines) != len(passages):
            raise ValueError("This reranker adds the bi-encoder's cosine: pass one cosine per passage.")
        return scores + self.bi_encoder_weight * np.asarray(cosines, dtype=np.float32), answer_logits

    def rerank(
        self,
        query: str,
        candidates: list[RetrievedChunk],
        top_m: int = 30,
        first_stage_weight: float | None = None,
        cosines: Sequence[float] | None = None,
    ) -> list[RetrievedChunk]:
        """Score the first top_m candidates and return them best first, as new hits with rerank_score (their
        relevance), rerank_rank (the position after this stage, see rerank_order) and answer_logit (the answer
        head's, when there is one); the candidates given are left as they are.

        Candidates after top_m are dropped: the caller decides how deep the reranker looks.
        first_stage_weight: this call's weight (default: the reranker's own).
        cosines: the bi-encoder's cosine of the query and each candidate (needed when bi_encoder_weight > 0).
        """
        if top_m < 1:
            raise ValueError(f"top_m must be at least 1, not {top_m}.")
        pool = candidates[:top_m]
        if not pool:
            return []
        passages = [passage_text(hit.chunk.title, hit.chunk.text) for hit in pool]
        scores, answer_logits = self.assess(query, passages, None if cosines is None else list(cosines)[:top_m])
        weight = self.first_stage_weight if first_stage_weight is None else first_stage_weight
        order = rerank_order(scores, weight)
        return [replace(pool[i], rerank_score=float(scores[i]), rerank_rank=rank,
                        answer_logit=None if answer_logits is None else float(answer_logits[i]))
                for rank, i in enumerate(order, start=1)]  # fmt: skip


def _weight(name: str, value: float | None, info: dict) -> float:
    """A weight given by the caller, else the one stored with the model, else 0."""
    weight = float(info.get(name, 0.0)) if value is None else float(value)
    if weight < 0:
        raise ValueError(f"{name} must not be negative, not {weight}.")
    return weight
