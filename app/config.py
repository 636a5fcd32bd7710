"""Service settings: one pydantic-settings class, with each component's own settings nested in it.

Every field maps to an environment variable: `AER_RAG_<NAME>` for the server's own fields and
`AER_RAG_<COMPONENT>__<NAME>` for a component's (e.g. AER_RAG_API_KEY, AER_RAG_RERANKER__TOP_M).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from answering.answerability import AnswerabilitySettings
from answering.answerer import MAX_PAPERS, AnsweringSettings
from answering.focus import FocusSettings
from app.limits import ConnectionSettings, MemorySettings, RateLimitSettings, SearchAdmissionSettings
from models.scheduler import SchedulerSettings
from retrieval.hybrid import HybridSettings
from retrieval.judge import JudgeSettings
from retrieval.reranker import RerankerSettings
from retrieval.sentence_judge import SentenceJudgeSettings
from runtime.device import Precision

REPO_ROOT = Path(__file__).resolve().parent.parent
ENV_PREFIX = "AER_RAG_"
NESTED_DELIMITER = "__"
# The in-repo LoRA adapter that teaches the 135M generator to answer from passages with [n] citations.
DEFAULT_ADAPTER_DIR = REPO_ROOT / "models" / "weights" / "smollm2-grounded-lora"


def _empty_means_none(value: object) -> object:
    # An empty environment variable switches an optional component off rather than meaning "." or 0.
    return None if isinstance(value, str) and not value.strip() else value


class GeneratorSettings(BaseModel):
    """Which generator the service loads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path | None = Field(
        None, description="A .gguf file or a Hugging Face style directory; default: SmolLM2-135M-Instruct."
    )
    # On by default: it teaches the 135M model to state a passage's finding with [n] citations (ADAPTER_CARD.md).
    adapter: Path | None = Field(
        DEFAULT_ADAPTER_DIR,
        description="LoRA adapter merged into the generator at load (empty: the base model); default: the shipped "
        "one, unless `path` names another model.",
    )
    dtype: Precision = "auto"
    # The CPU decode step's weights (models/quantized.py): auto = 4-bit Q4_1 blocks and our C++ step where its
    # kernels build (float32 otherwise, said in the log); float32 = the reference path.
    weights: Literal["auto", "float32", "q4_1", "q8_0"] = "auto"

    _empty_paths = field_validator("path", "adapter", mode="before")(_empty_means_none)

    @model_validator(mode="before")
    @classmethod
    def _default_adapter_only_for_the_default_generator(cls, data: object) -> object:
        # The shipped adapter fits SmolLM2 only: another model runs without one unless one is named.
        if isinstance(data, dict) and _empty_means_none(data.get("path")) is not None and "adapter" not in data:
            return {**data, "adapter": None}
        return data


class GenerationQueueSettings(BaseModel):
    """How many answers are generated together or wait, for how long, and how the engine holds them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slots: int = Field(8, ge=1, le=64, description="Generations decoded together (continuous batching); an "
                       "answer is one per answering paper.")  # fmt: skip
    queue_size: int = Field(16, ge=0, le=1000, description="Answers waiting for a slot; beyond them, 429.")
    slot_tokens: int = Field(2048, ge=256, le=32768, description="KV cache per slot: prompt plus answer tokens.")
    prefill_chunk: int = Field(
        256, ge=16, le=4096,
        description="Prompt tokens per forward while other answers stream, which decode in the same forward "
                    "(a rest of up to half a chunk joins the last chunk; alone: the whole prompt at once).",
    )
    prefill_batch_tokens: int | None = Field(
        None, ge=0, le=32768,
        description="Prompt tokens read together in one forward when no answer is streaming, so that the prompts of "
                    "an answer's papers (and of other questions) share the forward's fixed cost; unset: 1024 on a "
                    "GPU, 0 on CPU (one prompt at a time: there a prompt's arithmetic is the cost, and batching would "
                    "hold back the first one's first token).",
    )
    timeout_s: float = Field(120.0, gt=0, le=3600)
    retry_after_s: int = Field(5, ge=1, le=600)
    max_wait_s: float = Field(
        30.0, ge=0, le=3600,
        description="An answer is refused (429 with Retry-After) when its expected time, (answers in flight + 1) x "
        "the p90 of the recent answers' seconds per place in line, plus wait_margin_s, is over this many seconds "
        "(0: only a full queue refuses).",
    )  # fmt: skip
    wait_margin_s: float = Field(
        5.0, ge=0, le=600,
        description="Seconds added to an answer's expected time before it is compared with max_wait_s: retrieving "
        "and deciding before generation starts (which the estimate does not measure) and the estimate's error.",
    )  # fmt: skip
    shutdown_grace_s: float = Field(
        5.0, ge=0, le=600,
        description="On shutdown, answers still generating after this many seconds are stopped (their streams end "
        "with an error event).",
    )  # fmt: skip

    def scheduler(self) -> SchedulerSettings:
        # The one place the engine's size is set: it holds (slots + queue_size) answers of up to MAX_PAPERS
        # generations each, and admission (app/generation.py) derives its count of answers from it.
        return SchedulerSettings(self.slots, self.slot_tokens, self.prefill_chunk,
                                 (self.queue_size + self.slots) * MAX_PAPERS - self.slots,
                                 prefill_batch_tokens=self.prefill_batch_tokens)  # fmt: skip


class BackendSettings(BaseModel):
    """Where the index lives: the published directory (`index_dir`, one machine) or PostgreSQL + pgvector (shared
    by API replicas; filled by `python -m indexing --backend postgres --dsn ...`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["local", "postgres"] = "local"
    dsn: SecretStr | None = Field(None, description="postgresql://user:password@host:port/database (kind postgres).")
    pool_size: int = Field(4, ge=1, le=64, description="Connections to PostgreSQL at most (kind postgres).")
    start_wait_s: float = Field(
        60.0, ge=0, le=3600,
        description="At start, how long to wait for PostgreSQL and a published build before giving up.",
    )  # fmt: skip

    _empty_dsn = field_validator("dsn", mode="before")(_empty_means_none)

    @model_validator(mode="after")
    def _postgres_needs_a_dsn(self) -> BackendSettings:
        if self.kind == "postgres" and self.dsn is None:
            raise ValueError("backend kind postgres needs a dsn (AER_RAG_BACKEND__DSN or --dsn).")
        return self


class Settings(BaseSettings):
    """Everything an operator can set."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter=NESTED_DELIMITER, env_file=".env", extra="ignore"
    )

    # --- server ------------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    api_key: SecretStr | None = Field(
        None, description="When set, every /v1/* call needs it (Authorization: Bearer … or X-API-Key)."
    )
    # NoDecode: the environment's value reaches the validator below as written (pydantic-settings would otherwise
    # insist on JSON for a list and fail on "" or "http://a,http://b").
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="CORS is off unless origins are listed: a comma list or a JSON list."
    )
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    max_body_bytes: int = Field(64 * 1024, ge=1024, le=16 * 1024 * 1024, description="Larger bodies get a 413.")
    max_json_depth: int = Field(32, ge=4, le=500, description="JSON bodies nested deeper than this get a 400.")
    metrics_need_key: bool = Field(
        True, description="With an API key set, /metrics needs it too (false: /metrics stays open for a scraper)."
    )
    published_address: str | None = Field(
        None,
        description="Where the port is reachable from, when that is not the bind address (a container publishes "
        "its 0.0.0.0 on the host's 127.0.0.1): decides whether the API is open beyond loopback without a key.",
    )
    allow_no_key: bool = Field(
        False,
        description="Serve without a key where the API is reachable beyond loopback (published_address, else host): "
        "by default such a server refuses to start.",
    )

    openai_source_list: bool = Field(
        True, description="/v1/chat/completions ends the answer's text with a numbered source list (title, year, "
        "DOI link), for clients that show only the text; a later turn's cited papers are read back from it.",
    )

    # --- index and devices -------------------------------------------------------------------
    index_dir: Path = REPO_ROOT / "var" / "index"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2"

    # --- components ---------------------------------------------------------------------------
    backend: BackendSettings = BackendSettings()
    retrieval: HybridSettings = HybridSettings()
    # On by default: merged with the hybrid order it beats hybrid alone on held-out economics titles
    # (see its MODEL_CARD.md). AER_RAG_RERANKER__MODEL_DIR= (empty) turns it off.
    reranker: RerankerSettings = RerankerSettings()
    answerability: AnswerabilitySettings = AnswerabilitySettings()
    judge: JudgeSettings = JudgeSettings()
    sentence_judge: SentenceJudgeSettings = SentenceJudgeSettings()
    focus: FocusSettings = FocusSettings()
    answering: AnsweringSettings = AnsweringSettings()
    generator: GeneratorSettings = GeneratorSettings()
    generation: GenerationQueueSettings = GenerationQueueSettings()
    connections: ConnectionSettings = ConnectionSettings()
    search: SearchAdmissionSettings = SearchAdmissionSettings()
    rate_limit: RateLimitSettings = RateLimitSettings()
    memory: MemorySettings = MemorySettings()

    _empty_address = field_validator("published_address", mode="before")(_empty_means_none)

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _parse_list(cls, value: object) -> object:
        """A list setting from the environment: empty, "a,b" or a JSON list."""
        if not isinstance(value, str):
            return value
        if value.strip().startswith("["):
            try:
                return json.loads(value)
            except json.JSONDecodeError as error:
                raise ValueError(f"not a valid JSON list: {error.msg}") from None
        return [item.strip() for item in value.split(",") if item.strip()]

    @model_validator(mode="after")
    def _empty_key_means_none(self) -> Settings:
        if self.api_key is not None and not self.api_key.get_secret_value():
            self.api_key = None
        return self

    def public(self) -> dict:
        """The settings as /v1/info shows them: every component's, no secret, no server path."""
        return {
            "backend": self.backend.model_dump(mode="json", exclude={"dsn"}),
            "retrieval": self.retrieval.model_dump(mode="json"),
            "reranker": self.reranker.model_dump(mode="json", exclude={"model_dir"}),
            "answerability": self.answerability.model_dump(mode="json", exclude={"model_path"}),
            "judge": self.judge.model_dump(mode="json", exclude={"model_dirs"}),
            "sentence_judge": self.sentence_judge.model_dump(mode="json", exclude={"model_dir"}),
            "focus": self.focus.model_dump(mode="json"),
            "answering": self.answering.model_dump(mode="json"),
            "generation": self.generation.model_dump(mode="json"),
            "search": self.search.model_dump(mode="json"),
            "rate_limit": self.rate_limit.model_dump(mode="json"),
            "api_key_required": self.api_key is not None,
        }


def unknown_environment_variables(environ: dict[str, str] | None = None) -> list[str]:
    """AER_RAG_* variables that name no setting (a typo, or a name from an older version): worth a warning."""
    environ = dict(os.environ) if environ is None else environ
    known = {f"{ENV_PREFIX}{name}".upper() for name in Settings.model_fields}
    for name, info in Settings.model_fields.items():
        if isinstance(info.default, BaseModel):
            prefix = f"{ENV_PREFIX}{name}{NESTED_DELIMITER}"
            known |= {f"{prefix}{field}".upper() for field in type(info.default).model_fields}
    return sorted(key for key in environ if key.upper().startswith(ENV_PREFIX) and key.upper() not in known)


@lru_cache
def get_settings() -> Settings:
    return Settings()
