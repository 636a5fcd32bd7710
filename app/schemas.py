"""Request and response bodies of the REST API, with limits and the examples shown in Swagger."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

Query = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=1000),
    Field(description="The question or search text, 1–1,000 characters after trimming."),
]
RetrievalMode = Literal["hybrid", "bm25", "dense"]


class StrictModel(BaseModel):
    """Unknown fields are an error, so a typo ("topk") is reported instead of silently ignored."""

    model_config = ConfigDict(extra="forbid")


class Filters(StrictModel):
    year_min: int | None = Field(None, ge=1800, le=2100, description="Earliest publication year, inclusive.")
    year_max: int | None = Field(None, ge=1800, le=2100, description="Latest publication year, inclusive.")
    jel_prefix: str | None = Field(
        None, pattern=r"^[A-Za-z]\d{0,2}$", description="JEL code prefix: 'D' matches D83, 'D8' matches D81.",
        examples=["D8"],
    )

    @model_validator(mode="after")
    def _ordered_years(self) -> Filters:
        if self.year_min is not None and self.year_max is not None and self.year_min > self.year_max:
            raise ValueError(f"year_min ({self.year_min}) is after year_max ({self.year_max})")
        return self


class SearchRequest(StrictModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"query": "minimum wage effects on employment", "top_k": 5, "mode": "hybrid"}]
        },
    )

    query: Query
    top_k: int = Field(10, ge=1, le=50, description="How many chunks to return.")
    mode: RetrievalMode = Field("hybrid", description="hybrid = BM25 and dense fused by reciprocal rank.")
    rerank: bool | None = Field(
        None, description="Rerank with the cross-encoder. Default: when a reranker is loaded. "
        "true when none is loaded is an error (409)."
    )
    filters: Filters | None = None


class GenerationOptions(StrictModel):
    max_new_tokens: int | None = Field(None, ge=1, le=1024, description="Default from the server settings.")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="0 decodes greedily.")
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    top_k: int = Field(0, ge=0, le=1000, description="0 turns top-k sampling off.")
    repetition_penalty: float | None = Field(None, ge=1.0, le=2.0)
    seed: int | None = Field(None, ge=0, le=2**31 - 1)


class AskRequest(StrictModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"query": "Does raising the minimum wage reduce employment?", "top_k": 5, "stream": False},
                {
                    "query": "How do banks respond to monetary policy?",
                    "filters": {"year_min": 2010, "jel_prefix": "E5"},
                    "stream": True,
                    "generation": {"max_new_tokens": 150, "temperature": 0.0},
                },
            ]
        },
    )

    query: Query
    top_k: int | None = Field(None, ge=1, le=20, description="Passages put into the prompt; default from the settings.")
    mode: RetrievalMode = "hybrid"
    rerank: bool | None = None
    filters: Filters | None = None
    stream: bool = Field(False, description="Server-Sent Events: passages, then token deltas, then citations.")
    coverage_check: bool | None = Field(
        None, description="Refuse when the corpus does not cover the question. Default from the settings."
    )
    generation: GenerationOptions = Field(default_factory=GenerationOptions)


class DocumentOut(BaseModel):
    doc_id: str
    doi: str
    title: str
    date: str
    year: int | None
    authors: list[str]
    journal: str
    url: str
    jel_codes: list[str]


class DocumentDetail(DocumentOut):
    abstract: str = Field(description="The cleaned abstract that chunks and offsets refer to.")
    abstract_original: str = Field(description="The abstract exactly as in the corpus file.")
    chunk_ids: list[str]


class StageScores(BaseModel):
    bm25_score: float | None = None
    bm25_rank: int | None = None
    dense_score: float | None = None
    dense_rank: int | None = None
    fused_score: float | None = None
    fused_rank: int | None = None
    rerank_score: float | None = None
    rerank_rank: int | None = None


class SearchHit(BaseModel):
    rank: int
    chunk_id: str
    position: int = Field(description="Chunk number within its document.")
    text: str
    char_start: int
    char_end: int
    document: DocumentOut
    scores: StageScores


class RerankStatus(BaseModel):
    applied: bool
    available: bool
    model: str | None
    note: str


class SearchResponse(BaseModel):
    query: str
    mode: RetrievalMode
    rerank: RerankStatus
    results: list[SearchHit]
    timings_ms: dict[str, float]


class Passage(SearchHit):
    number: int = Field(description="What the answer's [n] markers refer to.")


class CitationOut(BaseModel):
    passage: int
    doc_id: str
    doi: str
    title: str
    answer_sentence: int = Field(description="Index into `sentences`.")
    supporting_sentence: str = Field(description="The abstract sentence that supports the answer sentence.")
    similarity: float


class SentenceOut(BaseModel):
    text: str
    markers: list[int] = Field(description="The [n] markers the model wrote.")
    supported_by: list[int] = Field(description="Passages measured to support the sentence.")
    supported: bool
    similarity: float | None


class Usage(BaseModel):
    prompt_tokens: int
    generated_tokens: int
    tokens_per_second: float | None


class AskResult(BaseModel):
    """The part of an answer known only after generation (also the final SSE event)."""

    answer: str
    covered: bool = Field(description="False when the indexed abstracts do not cover the question.")
    finish_reason: str
    citations: list[CitationOut]
    sentences: list[SentenceOut]
    unsupported_sentences: list[int] = Field(description="Indices of answer sentences no passage supports.")
    dropped_passages: int = Field(description="Passages left out so that prompt and answer fit the context.")
    notes: list[str]
    usage: Usage
    timings_ms: dict[str, float]


class AskResponse(AskResult):
    query: str
    model: str
    rerank: RerankStatus
    passages: list[Passage]


class InfoResponse(BaseModel):
    version: str
    index: dict[str, Any]
    embedding_model: str
    reranker: RerankStatus
    generator: dict[str, Any]
    device: str
    settings: dict[str, Any]


class ErrorBody(BaseModel):
    code: str
    message: str
    request_id: str | None = None
    details: list[dict[str, Any]] | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody
