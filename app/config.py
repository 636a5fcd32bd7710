"""Service settings: one pydantic-settings class, read from `AER_RAG_*` environment variables."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent
# The project's own cross-encoder, trained by `python -m indexing.train_reranker` and shipped in the repo.
DEFAULT_RERANKER_DIR = REPO_ROOT / "models" / "weights" / "reranker"
# The in-repo LoRA adapter that teaches the 135M generator to answer from passages with [n] citations.
DEFAULT_ADAPTER_DIR = REPO_ROOT / "models" / "weights" / "smollm2-grounded-lora"


class Settings(BaseSettings):
    """Everything an operator can set. Each field maps to `AER_RAG_<NAME>` (e.g. AER_RAG_API_KEY)."""

    model_config = SettingsConfigDict(env_prefix="AER_RAG_", env_file=".env", extra="ignore")

    # --- server ------------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    api_key: SecretStr | None = Field(
        None, description="When set, every /v1/* call needs it (Authorization: Bearer … or X-API-Key)."
    )
    cors_origins: list[str] = Field(default_factory=list, description="CORS is off unless origins are listed.")
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    # --- index and models --------------------------------------------------------------------
    index_dir: Path = REPO_ROOT / "var" / "index"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    # On by default: merged with the hybrid order it beats hybrid alone on 375 held-out economics titles
    # (nDCG@10 0.842 vs 0.803; see its MODEL_CARD.md). AER_RAG_RERANKER_DIR= (empty) turns it off.
    reranker_dir: Path | None = Field(
        DEFAULT_RERANKER_DIR, description="Cross-encoder model directory; reranking is off when empty or missing."
    )
    generator_path: Path | None = Field(
        None, description="A .gguf file or a Hugging Face style directory; default: SmolLM2-135M-Instruct."
    )
    # On by default, together with the reranker-based coverage gate below: alone the adapter declines most
    # paraphrased AER questions; with the gate it answers them, supported and cited (ADAPTER_CARD.md).
    # AER_RAG_GENERATOR_ADAPTER= (empty) runs the base model. It belongs to the default generator only.
    generator_adapter: Path | None = Field(
        DEFAULT_ADAPTER_DIR,
        description="LoRA adapter merged into the generator at load; default: the shipped one, unless "
        "generator_path names another model.",
    )
    generator_dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"

    # --- retrieval ---------------------------------------------------------------------------
    retrieval_candidates: int = Field(100, ge=1, le=1000, description="Top N from each retriever.")
    rrf_k: int = Field(60, ge=1, le=1000)
    bm25_weight: float = Field(1.0, ge=0.0, le=10.0)
    dense_weight: float = Field(1.0, ge=0.0, le=10.0)
    rerank_top_m: int = Field(30, ge=1, le=200, description="How many fused candidates the reranker scores.")
    rerank_first_stage_weight: float | None = Field(
        None, ge=0.0, le=100.0,
        description="Say of the hybrid order in the reranked order (0: the cross-encoder's order alone); "
        "default: the value chosen on validation data and stored with the model (reranker.json).",
    )  # fmt: skip

    # --- answering ---------------------------------------------------------------------------
    # 3 passages: the format the grounded adapter was trained on, and a short prompt (fast first token).
    answer_top_k: int = Field(3, ge=1, le=20, description="Passages put into the prompt by default.")
    # Calibrated by benchmarks/calibrate_thresholds.py on non-AER economics abstracts
    # (benchmarks/results/calibration.json).
    support_threshold: float = Field(0.56, ge=-1.0, le=1.0)
    coverage_check: bool = Field(True, description="Refuse to generate when the corpus does not cover the question.")
    coverage_min_dense: float = Field(0.389, ge=-1.0, le=1.0)
    # Cross-encoder thresholds for the shipped reranker (app/answering/coverage.py); recalibrate with a new one.
    coverage_min_rerank: float | None = Field(
        4.81, description="Decline without generating when the best reranked passage scores below this (empty: off)."
    )
    answer_min_rerank: float | None = Field(
        5.87, description="From this best reranker score up, the generator may not decline (empty: off)."
    )
    # Chosen on the grounded validation split (benchmarks/grounded_eval.py): greedy with no repeated
    # 4-grams stops loops; a repetition penalty would punish re-citing [1].
    default_max_new_tokens: int = Field(160, ge=1, le=1024)
    default_repetition_penalty: float = Field(1.0, ge=1.0, le=2.0)
    default_no_repeat_ngram_size: int = Field(4, ge=0, le=10)

    # --- generation queue --------------------------------------------------------------------
    generation_workers: int = Field(1, ge=1, le=8, description="Answers generated at once.")
    generation_queue_size: int = Field(8, ge=0, le=1000, description="Answers waiting beyond the workers.")
    generation_timeout_s: float = Field(120.0, gt=0, le=3600)
    retry_after_s: int = Field(5, ge=1, le=600)

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        # Accept "a,b" from the environment as well as a JSON list.
        if isinstance(value, str) and not value.strip().startswith("["):
            return [origin.strip() for origin in value.split(",") if origin.strip()]
        return value

    @field_validator(
        "reranker_dir", "generator_path", "generator_adapter", "coverage_min_rerank", "answer_min_rerank", mode="before"
    )
    @classmethod
    def _empty_means_none(cls, value: object) -> object:
        # AER_RAG_RERANKER_DIR= (empty) switches the reranker off rather than meaning the current directory.
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _empty_key_means_none(self) -> Settings:
        if self.api_key is not None and not self.api_key.get_secret_value():
            self.api_key = None
        return self

    @model_validator(mode="after")
    def _default_adapter_only_for_the_default_generator(self) -> Settings:
        if self.generator_path is not None and "generator_adapter" not in self.model_fields_set:
            self.generator_adapter = None
        return self

    @model_validator(mode="after")
    def _rerank_thresholds_in_order(self) -> Settings:
        low, high = self.coverage_min_rerank, self.answer_min_rerank
        if low is not None and high is not None and high < low:
            raise ValueError(f"answer_min_rerank ({high}) must not be below coverage_min_rerank ({low}).")
        return self


@lru_cache
def get_settings() -> Settings:
    return Settings()
