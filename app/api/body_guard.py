"""Every request body is checked once, before any route sees it: JSON only (415 otherwise), at most
`max_body_bytes` (413), and parsable (400 for any body that is not JSON: empty, cut short, not UTF-8, an integer
longer than Python converts (4,300 digits), a string holding a lone surrogate ("\ud800", which no tokenizer can
encode), or nested deeper than `max_json_depth`, which would otherwise exhaust the parser's recursion or the
validator's).

Only requests that a route takes with a body are checked: any other method or path goes on to the router, which
answers 404 or 405 (a PUT to /healthz is a wrong method, not a wrong content type).

Plain ASGI middleware: the body is read (bounded) and replayed to the app, so routes still parse it themselves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from starlette.routing import BaseRoute, Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.errors import error_body

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_SURROGATE = re.compile("[\ud800-\udfff]")
JSON_TYPES = frozenset({"application/json"})


def json_depth_exceeds(value: object, limit: int) -> bool:
    """Whether arrays and objects nest deeper than `limit` (iterative: the check itself cannot recurse too far)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def has_lone_surrogate(value: object) -> bool:
    """Whether any string (key or value) holds a UTF-16 surrogate, which JSON's \\u escapes allow and UTF-8 cannot
    encode (iterative, like the depth check)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class RequestBodyGuard:
    def __init__(self, app: ASGIApp, max_body_bytes: int, max_json_depth: int, routes: Sequence[BaseRoute]):
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_json_depth = max_json_depth
        self.routes = routes  # the app's own list: routes added after the middleware count too

    def _routed(self, scope: Scope) -> bool:
        # Routes only: a mount (static files) answers a POST 405 itself.
        return any(not isinstance(route, Mount) and route.matches(scope)[0] is Match.FULL for route in self.routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in BODY_METHODS or not self._routed(scope):
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type not in JSON_TYPES:
            shown = media_type or "none"
            await self._refuse(scope, send, 415, "unsupported_media_type",
                               f"Send the body as JSON (Content-Type: application/json), not {shown}.")  # fmt: skip
            return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._refuse_too_large(scope, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                await self._refuse_too_large(scope, send)
                return
            if not message.get("more_body", False):
                break
        try:
            parsed = json.loads(body.decode("utf-8"))
            too_deep = json_depth_exceeds(parsed, self.max_json_depth)
        except (UnicodeDecodeError, json.JSONDecodeError):
            await self._refuse(scope, send, 400, "malformed_json", "The request body is not valid JSON.")
            return
        except RecursionError:  # deeper than the parser goes
            parsed, too_deep = None, True
        except ValueError:  # an integer past Python's conversion limit (4,300 digits)
            await self._refuse(scope, send, 400, "number_too_long",
                               "The request body holds a number with more than 4,300 digits.")  # fmt: skip
            return
        if too_deep:
            message = f"The request body nests arrays or objects deeper than {self.max_json_depth} levels."
            await self._refuse(scope, send, 400, "json_too_deep", message)
            return
        if has_lone_surrogate(parsed):
            await self._refuse(scope, send, 400, "invalid_unicode", "The request body holds a lone UTF-16 surrogate "
                               "(a \\ud800-\\udfff escape not part of a pair); send valid Unicode text.")  # fmt: skip
            return

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # after the body: wait for the client to go away, as Starlette expects
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse_too_large(self, scope: Scope, send: Send) -> None:
        await self._refuse(scope, send, 413, "payload_too_large",
                           f"The request body is over {self.max_body_bytes:,} bytes.")  # fmt: skip

    @staticmethod
    async def _refuse(scope: Scope, send: Send, status: int, code: str, message: str) -> None:
        request_id = scope.get("state", {}).get("request_id")
        payload = json.dumps(error_body(code, message, request_id)).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
