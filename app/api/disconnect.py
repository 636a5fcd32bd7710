"""A non-streamed answer whose client goes away is cancelled, as a streamed one is (Starlette cancels a streaming
response's body when the client disconnects; nothing does it for a handler still awaiting its answer)."""

from __future__ import annotations

import asyncio

from fastapi import Request
from fastapi.responses import Response

from answering.answerer import Answer
from answering.session import AnswerSession

# What a handler returns for a client that has gone: nobody reads it, but the request's log line and
# aer_rag_requests_total{status="499"} (nginx's "client closed request") show it.
CLIENT_GONE = 499


def client_gone() -> Response:
    return Response(status_code=CLIENT_GONE)


async def _disconnected(request: Request) -> None:
    """Return once the client has gone (the request's body is read already: the next message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def answer_unless_gone(request: Request, session: AnswerSession) -> Answer | None:
    """Run `session` to its answer while watching the connection; None when the client went away first. Then the
    answer is cancelled (its generations end at the engine's next step: /metrics counts them as
    reason="disconnect") and a place it had not used yet is given back."""
    answering = asyncio.ensure_future(session.answer())
    watching = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait((answering, watching), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
        if not answering.done():  # the client went away (or this handler was cancelled)
            answering.cancel()
            await asyncio.gather(answering, return_exceptions=True)  # the streams are closed when this returns
            session.cancel()
        await asyncio.gather(watching, return_exceptions=True)
    if answering.cancelled():
        return None
    return answering.result()
