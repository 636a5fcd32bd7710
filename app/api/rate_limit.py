"""A per-client rate limit on /v1/*: a token bucket per client, keyed by its API key when it sent the right one,
else by its address (a wrong or made-up key cannot buy a fresh bucket). Beyond it: 429 with Retry-After.

Plain ASGI middleware, so refused requests cost no body reading, routing or key check. Off by default (one local
user); the compose files turn it on. Behind a reverse proxy the address is the proxy's unless uvicorn trusts its
X-Forwarded-For (uvicorn's --forwarded-allow-ips; 127.0.0.1 by default).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import time
from collections import OrderedDict
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.errors import error_body
from app.limits import RateLimitSettings
from app.metrics import ServiceMetrics

LIMITED_PREFIX = "/v1/"


class TokenBuckets:
    """`burst` requests at once per client, refilled at `per_minute`; the least recent clients are forgotten
    beyond `max_clients` (a forgotten client starts with a full bucket, so memory stays bounded)."""

    def __init__(self, settings: RateLimitSettings, clock: Callable[[], float] = time.monotonic):
        self.rate = settings.per_minute / 60.0
        self.burst = float(settings.burst)
        self.max_clients = settings.max_clients
        self.clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client -> (tokens, at)

    def take(self, client: str) -> float:
        """Take one token: 0.0 when allowed, else the seconds until one is there."""
        now = self.clock()
        tokens, at = self._buckets.pop(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        wait = 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate
        self._buckets[client] = (tokens - 1.0 if wait == 0.0 else tokens, now)
        while len(self._buckets) > self.max_clients:
            self._buckets.popitem(last=False)
        return wait


def _presented_keys(scope: Scope) -> list[bytes]:
    keys = []
    for name, value in scope.get("headers") or []:
        if name == b"x-api-key":
            keys.append(value)
        elif name == b"authorization" and value[:7].lower() == b"bearer ":
            keys.append(value[7:].strip())
    return keys


class RateLimit:
    def __init__(self, app: ASGIApp, settings: RateLimitSettings, api_key: str | None, metrics: ServiceMetrics):
        self.app = app
        self.buckets = TokenBuckets(settings)
        self.api_key = api_key.encode() if api_key else None
        self.metrics = metrics

    def client_of(self, scope: Scope) -> str:
        if self.api_key is not None and any(hmac.compare_digest(k, self.api_key) for k in _presented_keys(scope)):
            return "key:" + hashlib.sha256(self.api_key).hexdigest()[:16]
        client = scope.get("client")
        return f"address:{client[0] if client else 'unknown'}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope.get("path", "").startswith(LIMITED_PREFIX):
            await self.app(scope, receive, send)
            return
        wait = self.buckets.take(self.client_of(scope))
        if wait == 0.0:
            await self.app(scope, receive, send)
            return
        self.metrics.rate_limited.inc()
        retry_after = str(max(1, math.ceil(wait)))
        request_id = scope.get("state", {}).get("request_id")
        payload = json.dumps(error_body("rate_limited", f"Too many requests from this client; retry in "
                                        f"{retry_after} s.", request_id)).encode()  # fmt: skip
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                   (b"retry-after", retry_after.encode())]  # fmt: skip
        await send({"type": "http.response.start", "status": 429, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
