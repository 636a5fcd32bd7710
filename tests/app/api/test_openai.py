"""The OpenAI-compatible endpoint, driven by the `openai` client package against a real server."""

from __future__ import annotations

import openai
import pytest

from answering.prompt import NOT_COVERED_ANSWER

QUESTION = "Did the minimum wage increase reduce teenage employment in fast food restaurants?"
OFF_TOPIC = "How long should sourdough bread bake, and at what oven temperature?"


def client_for(base: str, key: str = "no-key-needed") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=60)


def test_models_lists_the_service(live_server) -> None:
    base, _ = live_server()
    assert [model.id for model in client_for(base).models.list()] == ["aer-rag"]


def test_a_completion_answers_the_last_user_message_with_passages(live_server) -> None:
    base, _ = live_server()
    completion = client_for(base).chat.completions.create(
        model="aer-rag",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"},
                  {"role": "assistant", "content": "Hi."}, {"role": "user", "content": QUESTION}],
        max_tokens=12,
    )  # fmt: skip
    choice = completion.choices[0]
    assert choice.message.role == "assistant" and choice.message.content
    assert choice.finish_reason in ("stop", "length")
    assert completion.usage.completion_tokens > 0 and completion.usage.total_tokens > completion.usage.prompt_tokens
    extra = completion.model_extra["aer_rag"]
    assert extra["coverage"] == "covered" and extra["passages"][0]["document"]["doi"] == "10.1257/test.1"
    assert isinstance(extra["citations"], list)


def test_streamed_chunks_carry_the_answer_and_end_with_the_passages(live_server) -> None:
    base, _ = live_server()
    stream = client_for(base).chat.completions.create(
        model="aer-rag", messages=[{"role": "user", "content": QUESTION}], max_tokens=10, stream=True,
        stream_options={"include_usage": True},
    )  # fmt: skip
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert text and len(finishing) == 1
    assert finishing[0].model_extra["aer_rag"]["passages"]
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_an_uncovered_question_gets_the_plain_statement(live_server) -> None:
    base, _ = live_server()
    completion = client_for(base).chat.completions.create(model="aer-rag",
                                                          messages=[{"role": "user", "content": OFF_TOPIC}])
    assert completion.choices[0].message.content == NOT_COVERED_ANSWER
    assert completion.model_extra["aer_rag"]["coverage"] == "not_covered" and completion.usage.completion_tokens == 0


def test_bad_requests_are_clear_errors(live_server) -> None:
    base, _ = live_server()
    client = client_for(base)
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(openai.UnprocessableEntityError, match="no user message"):
        client.chat.completions.create(model="aer-rag", messages=[{"role": "system", "content": "Only a system."}])
    with pytest.raises(openai.UnprocessableEntityError):
        client.chat.completions.create(model="aer-rag", messages=[{"role": "user", "content": QUESTION}], n=2)


def test_the_api_key_applies(live_server) -> None:
    base, _ = live_server(api_key="s3cret-key")
    with pytest.raises(openai.AuthenticationError):
        client_for(base, "wrong").models.list()
    assert client_for(base, "s3cret-key").models.list().data[0].id == "aer-rag"
