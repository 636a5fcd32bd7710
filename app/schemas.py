"""Request and response bodies of the REST API, with limits and the examples shown in Swagger."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, model_validator

# Whitespace as the spec's regular expressions (ECMA-262 \s) know it, so that what the spec allows and what the
# server accepts are the same strings.
SPACES = "".join(["\t\n\v\f\r \u00a0\u1680", *map(chr, range(0x2000, 0x200B)), "\u2028\u2029\u202f\u205f\u3000\ufeff"])


def _trimmed_text(value: str) -> str:
    trimmed = value.strip(SPACES)
    if not trimmed:
        raise ValueError("The text is empty: write at least one character other than spaces.")
    return trimmed


Query = Annotated[
    str,
    StringConstraints(min_length=1, max_length=1000),
    AfterValidator(_trimmed_text),
    Field(description="The question or search text, 1–1,000 characters, not only spaces.",
          json_schema_extra={"pattern": "\\S"}),
]
RetrievalMode = Literal["hybrid", "bm25", "dense"]


def _json_integer(value: object) -> object:
    """A JSON integer: 5, or 5.0 (JSON Schema's integers include numbers with a zero fraction); never "5" or true."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("Input should be a valid integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("Input should be a valid integer, without a fractional part")
        return int(value)
    return value


JsonInt = Annotated[int, BeforeValidator(_json_integer)]


def bounded_int(ge: int, le: int) -> Any:
    """A JsonInt in [ge, le]; the bounds come first so the OpenAPI spec states them (also when optional)."""
    return Annotated[int, Field(ge=ge, le=le), BeforeValidator(_json_integer)]


Year = bounded_int(1800, 2100)


class StrictModel(BaseModel):
    """Unknown fields are an error, so a typo ("topk") is reported instead of silently ignored; values are not
    coerced ("top_k": "5" and "rerank": 0 are errors, not 5 and false)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Filters(StrictModel):
    """Search filters, applied before any result list is cut. year_min must not be after year_max: otherwise 422,
    saying so in words ("year_min (2020) is after year_max (2010)"). A paper without a year never passes a year
    filter, and one without JEL codes never passes a JEL filter (the answer's notes say how many that leaves out)."""

    year_min: Year | None = Field(None, description="Earliest publication year, inclusive; not after year_max (422).")
    year_max: Year | None = Field(None, description="Latest publication year, inclusive.")
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
        strict=True,
        json_schema_extra={
            "examples": [{"query": "minimum wage effects on employment", "top_k": 5, "mode": "hybrid"}]
        },
    )

    query: Query
    top_k: JsonInt = Field(10, ge=1, le=50, description="How many chunks to return.")
    mode: RetrievalMode = Field("hybrid", description="hybrid = BM25 and dense fused by reciprocal rank.")
    rerank: bool | None = Field(
        None, description="Rerank with the cross-encoder. Default: when a reranker is loaded. "
        "true when none is loaded is an error (409)."
    )
    filters: Filters | None = None


class GenerationOptions(StrictModel):
    max_new_tokens: bounded_int(1, 1024) | None = Field(
        None, description="Tokens generated at most per paper's finding; default from the server settings."
    )
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="0 decodes greedily.")
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    top_k: JsonInt = Field(0, ge=0, le=1000, description="0 turns top-k sampling off.")
    repetition_penalty: float | None = Field(None, ge=1.0, le=2.0)
    seed: bounded_int(0, 2**31 - 1) | None = None


class HistoryTurn(StrictModel):
    """One earlier turn of the conversation."""

    question: Query
    answer: str = Field("", max_length=8000, description="The earlier answer's text, at most 8,000 characters.")
    doc_ids: list[Annotated[str, StringConstraints(min_length=1, max_length=300)]] = Field(
        default_factory=list, max_length=10,
        description="The doc_ids the earlier answer cited, in its order ([1], [2], …; its `findings`), at most 10: "
        "\"which of those …\" and \"the second paper\" refer to them.",
    )  # fmt: skip


class AskRequest(StrictModel):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {"query": "Does raising the minimum wage reduce employment?", "stream": False},
                {
                    "query": "How do banks respond to monetary policy?",
                    "filters": {"year_min": 2010, "jel_prefix": "E5"},
                    "stream": True,
                    "generation": {"max_new_tokens": 80, "temperature": 0.0},
                },
                {
                    "query": "What about developing countries?",
                    "history": [{"question": "Does microcredit raise household investment?",
                                 "answer": "Two papers answer this question. ...",
                                 "doc_ids": ["10.1257/app.20130533", "10.1257/aer.20110914"]}],
                },
            ]
        },
    )

    query: Query
    top_k: bounded_int(1, 10) | None = Field(
        None, description="Papers the answer is written from at most: each passage that answers the question, in "
        "rank order, gives one finding. Default from the settings (5)."
    )
    mode: RetrievalMode = "hybrid"
    rerank: bool | None = None
    filters: Filters | None = None
    stream: bool = Field(
        False, description="Server-Sent Events: passages, then the answer's text as it is composed, then citations "
        "and findings."
    )
    coverage_check: bool | None = Field(
        None, description="Decide which passages answer before generating (decline when none does, or answer from "
        "the closest paper). Default from the settings."
    )
    generation: GenerationOptions = Field(default_factory=GenerationOptions)
    history: list[HistoryTurn] = Field(
        default_factory=list, max_length=10,
        description="The earlier turns, oldest first, at most 10: a follow-up (\"What about developing countries?\", "
        "\"Which of those used an experiment?\") is answered as the self-contained question it stands for "
        "(`resolved_query` in the response).",
    )  # fmt: skip


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
    model: str | None = Field(description="The cross-encoder's name, when one is loaded")
    precision: str | None = Field(description="How it runs: int8 (CPU default), float16, bfloat16 or float32")
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


class FindingOut(BaseModel):
    """One paper's finding in the answer."""

    passage: int = Field(description="The passage the finding comes from (its [n] in the answer).")
    doc_id: str
    doi: str
    title: str
    year: int | None
    text: str = Field(description="The finding as it stands in the answer, with its citation.")
    probability: float | None = Field(description="The decision's probability that the passage answers the question.")
    supported: bool = Field(description="Whether a sentence of the finding is close to a sentence of its passage.")
    supporting_sentence: str | None = Field(description="The passage sentence closest to the finding.")
    similarity: float | None

    model_config = {
        "json_schema_extra": {
            "examples": [{
                "passage": 2, "doc_id": "10.1257/aer.20191823", "doi": "10.1257/aer.20191823",
                "title": "Minimum Wages and Employment", "year": 2021,
                "text": "Raising the minimum wage had small effects on teen employment [2].", "probability": 0.91,
                "supported": True, "supporting_sentence": "We find small effects on teen employment.",
                "similarity": 0.83,
            }]
        }
    }  # fmt: skip


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


class AppliedFiltersOut(BaseModel):
    """The filters the answer's search used, and where each came from."""

    year_min: int | None = None
    year_max: int | None = None
    jel_prefix: str | None = None
    sources: dict[str, Literal["request", "question words"]] = Field(
        default_factory=dict, description="For each filter set: from the request's `filters`, or read from the "
        "question's words (a time window such as \"since 2015\"); the request's win.",
    )  # fmt: skip
    meaning: str | None = Field(None, description="The time window read from the question, in a sentence.")

    model_config = {"json_schema_extra": {"examples": [{
        "year_min": 2015, "year_max": None, "jel_prefix": "E5",
        "sources": {"year_min": "question words", "jel_prefix": "request"},
        "meaning": "since 2015: papers from 2015 or later.",
    }]}}  # fmt: skip


class AskResult(BaseModel):
    """The part of an answer known only after generation (also the final SSE event)."""

    answer: str
    covered: bool = Field(description="False when the indexed abstracts do not answer the question directly.")
    coverage: Literal["covered", "partial", "not_covered", "unchecked"] = Field(
        description="covered: answered from the passages that answer it; partial: answered from the closest "
        "paper, which may not address the question directly (the answer says so first); not_covered: declined; "
        "unchecked: the decision was switched off."
    )
    confidence: float | None = Field(
        description="The decision's probability that the best retrieved passage answers the question."
    )
    finish_reason: str
    citations: list[CitationOut]
    findings: list[FindingOut] = Field(
        description="One entry per paper the answer is written from, most relevant first (empty when declined)."
    )
    sentences: list[SentenceOut]
    unsupported_sentences: list[int] = Field(description="Indices of answer sentences no passage supports.")
    dropped_passages: int = Field(description="Passages left out so that prompt and answer fit the context.")
    notes: list[str]
    usage: Usage
    timings_ms: dict[str, float]
    resolved_query: str = Field(description="The self-contained question answered: a follow-up resolved against "
                                "the history; the query itself otherwise.")  # fmt: skip
    applied_filters: AppliedFiltersOut


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


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorResponse, "description": description}


# Declared on every route that takes a JSON body (app/api/body_guard.py and the validation handler send them).
BODY_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _error("The body is not valid JSON (empty, cut short, or not UTF-8)"),
    413: _error("The body is larger than the server accepts"),
    415: _error("The body is not sent as application/json"),
    422: _error("The body is JSON but not a valid request; `details` names each field"),
}
# Declared on every /v1 route: the API key (when the server sets one) and startup.
PROTECTED_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: _error("An API key is needed, or the one sent is not valid"),
    503: _error("The service is still loading its index and models"),
}
