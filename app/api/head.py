"""HEAD wherever GET is served (RFC 9110): FastAPI's routes declare GET only, so HEAD / or /healthz got 405.

The request goes to the app as a GET; the headers are sent as they are and the body is dropped (uvicorn drops it
too for its own HEAD scope, but the TestClient and other servers may not)."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGet:
    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]):
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return
        as_get = {**scope, "method": "GET"}
        if not any(route.matches(as_get)[0] is Match.FULL for route in self.routes):
            await self.app(scope, receive, send)  # nothing serves GET here either: the router's 404 or 405
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {**message, "body": b""}
            await send(message)

        await self.app(as_get, receive, headers_only)
