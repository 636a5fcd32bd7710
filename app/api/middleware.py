"""Request ids and per-route metrics, as plain ASGI middleware (it does not buffer streamed answers)."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.errors import INTERNAL_ERROR_MESSAGE, error_body
from app.metrics import ServiceMetrics

log = logging.getLogger(__name__)

REQUEST_ID_HEADER = "x-request-id"
# A client-sent id is echoed only when it is short and plain, so logs and headers stay safe.
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, metrics: ServiceMetrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = dict(scope.get("headers") or []).get(REQUEST_ID_HEADER.encode(), b"").decode("latin-1")
        request_id = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500
        response_started = False
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status, response_started = message["status"], True
                message.setdefault("headers", [])
                # nosniff: a browser must not guess a type other than the one declared (JSON stays JSON).
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode()),
                                      (b"x-content-type-options", b"nosniff")]  # fmt: skip
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            # Anything unhandled: the traceback goes to the log, the client gets JSON with the request id.
            log.exception("unhandled error in %s %s [%s]", scope.get("method"), scope.get("path"), request_id)
            if response_started:
                raise
            body = json.dumps(error_body("internal_error", INTERNAL_ERROR_MESSAGE, request_id)).encode()
            await send_with_id({
                "type": "http.response.start", "status": 500,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            })
            await send_with_id({"type": "http.response.body", "body": body})
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = scope.get("method", "")
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.request_latency.labels(method, route).observe(time.perf_counter() - started)
