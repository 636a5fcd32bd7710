"""OpenAI-compatible request and response bodies (/v1/chat/completions, /v1/models), as OpenAI's clients send and
read them. Unknown request fields are ignored rather than refused: clients (the openai package, Open WebUI,
LangChain) send many options this service has no use for."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from app.schemas import JsonInt, bounded_int

MODEL_ID = "aer-rag"


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "tool", "developer", "function"]
    content: str | list[ContentPart] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, list):
            return " ".join(part.text for part in self.content if part.type == "text" and part.text)
        return self.content or ""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    include_usage: StrictBool = False


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(
        extra="ignore",
        json_schema_extra={
            "examples": [{"model": MODEL_ID, "messages": [{"role": "user", "content": "Do minimum wages cut jobs?"}]}]
        },
    )

    model: str = Field(description=f"The model id from GET /v1/models ({MODEL_ID!r}).")
    messages: list[ChatMessage] = Field(
        min_length=1,
        description="The last user message is the question: at least one message must have role 'user' and text, "
        "of at most 1,000 characters (otherwise 422).",
    )
    stream: StrictBool = False
    stream_options: StreamOptions | None = None
    max_tokens: bounded_int(1, 1024) | None = None
    max_completion_tokens: bounded_int(1, 1024) | None = None
    temperature: float | None = Field(None, ge=0.0, le=2.0, description="Default: 0 (greedy, reproducible).")
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    seed: bounded_int(0, 2**31 - 1) | None = None
    n: JsonInt = Field(1, ge=1, le=1, description="One answer per request.")

    @field_validator("temperature", "top_p", mode="before")
    @classmethod
    def _numbers_only(cls, value: object) -> object:
        if isinstance(value, bool) or (value is not None and not isinstance(value, int | float)):
            raise ValueError("must be a number")
        return value

    @property
    def question(self) -> str:
        users = [message.text.strip() for message in self.messages if message.role == "user"]
        return users[-1] if users else ""


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "aer-rag"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop", "length"]


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage
    aer_rag: dict[str, Any] = Field(
        description="The passages, the verified citations and the answerability decision (this service's own)."
    )
