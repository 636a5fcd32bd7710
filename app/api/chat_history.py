"""An OpenAI chat's messages as a question and its history, and the numbered source list the chat's text ends with.

Earlier user/assistant pairs become the history's turns (the last 10, text cut to the API's bounds); an assistant
message's cited papers are read back from the source list this service appended to it ("[2] Title (2004).
https://doi.org/…"): by DOI, else by title, else none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from answering.answerer import Answer
from answering.conversation import CitedPaper, Turn
from app.openai_schemas import ChatMessage
from corpus.search_backend import SearchBackend

MAX_TURNS, MAX_QUESTION, MAX_ANSWER, MAX_CITED = 10, 1000, 8000, 10
HEADING = "Sources:"
_SOURCE = re.compile(r"^\s*\[(\d+)\]\s+(.+?)(?:\s+\((\d{4})\))?\.?(?:\s+(?:https?://(?:dx\.)?doi\.org/)?(10\.\S+?))?"
                     r"[.\s]*$")  # fmt: skip


def source_list(answer: Answer) -> str:
    """The papers the answer cites, by their [n], as text to append ("" when it cites none)."""
    lines = []
    for finding in answer.findings:
        document = finding.hit.document
        year = f" ({document.year})" if document.year else ""
        link = f" https://doi.org/{document.doi}" if document.doi else (f" {document.url}" if document.url else "")
        lines.append(f"[{finding.passage}] {document.title}{year}.{link}")
    return f"\n\n{HEADING}\n" + "\n".join(lines) if lines else ""


def history_of(messages: Sequence[ChatMessage], backend: SearchBackend) -> tuple[Turn, ...]:
    """The turns before the last user message: each user message with the assistant's reply after it (blocking:
    the cited papers are looked up)."""
    last = max((i for i, message in enumerate(messages) if message.role == "user" and message.text.strip()), default=0)
    turns: list[Turn] = []
    for index, message in enumerate(messages[:last]):
        if message.role != "user" or not message.text.strip():
            continue
        reply = next((m for m in messages[index + 1 : last] if m.role in ("assistant", "user")), None)
        answer, cited = _read_sources(reply.text if reply is not None and reply.role == "assistant" else "", backend)
        turns.append(Turn(message.text.strip()[:MAX_QUESTION], answer[:MAX_ANSWER], cited[:MAX_CITED]))
    return tuple(turns[-MAX_TURNS:])


def _read_sources(text: str, backend: SearchBackend) -> tuple[str, tuple[CitedPaper, ...]]:
    """The answer without its source list, and the papers the list names (those found in the index)."""
    head, found, tail = text.rpartition(f"\n{HEADING}\n")
    if not found:
        return text.strip(), ()
    cited = []
    for line in tail.splitlines():
        match = _SOURCE.match(line)
        if match is None:
            continue
        _, title, _, doi = match.groups()
        paper = _by_doi(doi, backend) if doi else None
        paper = paper or _by_title(title, backend)
        if paper is not None and paper.doc_id not in {p.doc_id for p in cited}:
            cited.append(paper)
    return head.strip(), tuple(cited)


def _by_doi(doi: str, backend: SearchBackend) -> CitedPaper | None:
    found = backend.document(doi.rstrip(".,;)"))  # a document's id is its DOI where it has one
    return None if found is None else CitedPaper(found[0].doc_id, found[0].title, found[0].year)


def _by_title(title: str, backend: SearchBackend) -> CitedPaper | None:
    """The paper whose title is exactly this one (case and spacing aside), among the keyword search's best."""
    wanted = _normal(title)
    hits = backend.keyword_search(title, 5)
    for stored in backend.chunks([hit.chunk_id for hit in hits]).values():
        if _normal(stored.document.title) == wanted:
            return CitedPaper(stored.document.doc_id, stored.document.title, stored.document.year)
    return None


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())
