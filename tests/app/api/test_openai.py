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


def test_a_two_turn_conversation_is_resolved_in_context_with_sources_in_the_text(live_server) -> None:
    base, _ = live_server()
    client = client_for(base)
    first = client.chat.completions.create(model="aer-rag", messages=[{"role": "user", "content": QUESTION}],
                                           max_tokens=10)  # fmt: skip
    text = first.choices[0].message.content
    cited = first.model_extra["aer_rag"]["findings"]
    assert cited and "\n\nSources:\n" in text
    for finding in cited:
        source = f"[{finding['passage']}] {finding['title']} ({finding['year']}). https://doi.org/{finding['doi']}"
        assert source in text
    followup = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": text},
                {"role": "user", "content": "Which of those is most recent?"}]  # fmt: skip
    second = client.chat.completions.create(model="aer-rag", messages=followup, max_tokens=10)
    extra = second.model_extra["aer_rag"]
    assert extra["resolved_query"].startswith("Which of those is most recent? (")
    assert any(note.startswith("Read as a follow-up to:") for note in extra["notes"])
    # The earlier answer's papers, read back from its source list, are among the passages judged.
    assert {f["doi"] for f in cited} <= {p["document"]["doi"] for p in extra["passages"]}
    stream = client.chat.completions.create(model="aer-rag", messages=followup, max_tokens=10, stream=True)
    chunks = list(stream)
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    final = next(c for c in chunks if c.choices and c.choices[0].finish_reason).model_extra["aer_rag"]
    assert final["resolved_query"] == extra["resolved_query"]
    if final["findings"]:
        assert streamed.split("\n\nSources:\n")[1].startswith(f"[{final['findings'][0]['passage']}] ")


def test_the_source_list_can_be_switched_off(live_server) -> None:
    base, _ = live_server(openai_source_list=False)
    completion = client_for(base).chat.completions.create(model="aer-rag", max_tokens=10,
                                                          messages=[{"role": "user", "content": QUESTION}])
    assert "Sources:" not in completion.choices[0].message.content


def test_cited_papers_are_read_back_by_doi_or_title(make_services) -> None:
    from app.api.chat_history import history_of
    from app.openai_schemas import ChatMessage

    backend = make_services().backend
    reply = ("Two papers answer [1][3].\n\nSources:\n[1] Minimum Wages and Teen Employment (1999). "
             "https://doi.org/10.1257/test.1\n[3] trade shocks and local labor markets (2012).\n[4] No Such Paper.")
    messages = [ChatMessage(role="user", content=QUESTION), ChatMessage(role="assistant", content=reply),
                ChatMessage(role="user", content="Which of those is most recent?")]  # fmt: skip
    (turn,) = history_of(messages, backend)
    assert turn.question == QUESTION and turn.answer == "Two papers answer [1][3]."
    assert [paper.doc_id for paper in turn.cited] == ["10.1257/test.1", "10.1257/test.3"]
