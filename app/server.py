"""The HTTP server: uvicorn with connection hygiene in its protocol, so that one client cannot hold the process.

uvicorn's httptools protocol has no limit on header size or count and no timeout while a request is read: a
connection that sends half its headers, or a body that stalls, is held for as long as the client likes
(slowloris). `GuardedHttpToolsProtocol` adds, per connection:
  * a deadline for the request line and headers (from the connection's start, or the previous response): 408;
  * a deadline for the body (from the end of the headers): 408;
  * a bound on header bytes and header fields: 431;
  * a bound on open connections from one address: 503 at once, before anything is read, so that one client
    cannot hold the pool (the API key and rate limit come later, in the app);
  * a bound on open connections in the process: 503 at once, except a small reserve past it that is served
    for the health probes only (/healthz, /readyz), so that a full pool never fails the checks.
`build_config` is the one place the server is configured: `python -m app` and the tests' live servers use it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from app.config import Settings
from app.limits import ConnectionSettings
from app.services import Services

log = logging.getLogger(__name__)


class _Refused(Exception):
    """Raised inside the parser's callback; the parser reports it as a callback error (see send_400_response),
    which answers the protocol's `_refusal` instead of 400."""


HEALTH_PATHS = (b"/healthz", b"/readyz")


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    limits: ConnectionSettings = ConnectionSettings()  # set per server by protocol_for()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._refusal: tuple[int, str] | None = None  # what a callback that raised _Refused answers
        self._health_only = False  # a connection of the reserve past max_connections

    # --- connection --------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        limits = self.limits
        if self._from_client_count() > limits.max_connections_per_client:
            self._send_and_close(503, "This address has too many open connections; close some and retry.")
            return
        if len(self.connections) > limits.max_connections + limits.health_reserve:
            self._send_and_close(503, "The server has too many open connections; retry shortly.")
            return
        self._health_only = len(self.connections) > limits.max_connections
        self._arm(self.limits.header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    # --- parser callbacks --------------------------------------------------------------------
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        if self._health_only and url.split(b"?", 1)[0] not in HEALTH_PATHS:
            self._refuse(503, "The server has too many open connections; retry shortly.")
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)  # ": " and CRLF
        if len(self.headers) >= self.limits.max_headers:
            self._refuse(431, "The request's headers are too large.")
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._arm(self.limits.body_timeout_s)  # until on_message_complete (at once for a request without body)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline:
            self._arm(self.limits.header_timeout_s)  # the next request (keep-alive closes an idle one sooner)

    def send_400_response(self, msg: str) -> None:
        # uvicorn answers every parser error 400; a callback that refused the request says what it means.
        if self._refusal is not None:
            self._send_and_close(*self._refusal)
        else:
            super().send_400_response(msg)

    # --- helpers -----------------------------------------------------------------------------
    def _from_client_count(self) -> int:
        """Open connections from this connection's address (itself included); 0 for an unlimited client."""
        host = self.client[0] if self.client else None
        if host is None or host in self.limits.unlimited_clients:
            return 0
        return sum(1 for connection in self.connections
                   if connection.client is not None and connection.client[0] == host)  # fmt: skip

    def _refuse(self, status: int, message: str) -> None:
        self._refusal = (status, message)
        raise _Refused

    def _count(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > self.limits.max_header_bytes:
            self._refuse(431, "The request's headers are too large.")

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._timed_out)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and cycle.response_started:
            self.transport.close()  # a response is under way: nothing more can be said on this connection
            return
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the app waiting for the body sees the client gone
            cycle.message_event.set()
        self._send_and_close(408, "The request was not received in time.")

    def _send_and_close(self, status: int, message: str) -> None:
        body = message.encode()
        head = b"".join([
            STATUS_LINE[status], b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: ", str(len(body)).encode(), b"\r\n", b"connection: close\r\n\r\n",
        ])  # fmt: skip
        self.transport.write(head + body)
        self.transport.close()


def protocol_for(limits: ConnectionSettings) -> type[GuardedHttpToolsProtocol]:
    return type("ConfiguredHttpToolsProtocol", (GuardedHttpToolsProtocol,), {"limits": limits})


def build_config(app: FastAPI, settings: Settings, **overrides: Any) -> uvicorn.Config:
    """The server's configuration from the settings: the guarded protocol, no `server` banner."""
    options: dict[str, Any] = {
        "host": settings.host, "port": settings.port, "log_level": settings.log_level,
        "http": protocol_for(settings.connections), "timeout_keep_alive": settings.connections.keep_alive_s,
        "server_header": False, "timeout_graceful_shutdown": int(settings.generation.shutdown_grace_s) + 5,
    }  # fmt: skip
    return uvicorn.Config(app, **{**options, **overrides})


class Server(uvicorn.Server):
    """uvicorn, whose exit on a signal stops generating answers after the grace period instead of waiting for
    every one to finish (a long answer could otherwise hold the process for minutes)."""

    def __init__(self, config: uvicorn.Config, services: Services) -> None:
        super().__init__(config)
        self.services = services

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.should_exit:
            self.services.queue.stop_after(self.services.settings.generation.shutdown_grace_s)
        super().handle_exit(sig, frame)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def exposure_warning(settings: Settings) -> str | None:
    """A warning when the API can be reached beyond this machine and needs no key."""
    reachable_on = settings.published_address or settings.host
    if settings.api_key is not None or is_loopback(reachable_on):
        return None
    return (f"the API is reachable on {reachable_on} and needs no key: anyone who can reach it can use it. "
            "Set AER_RAG_API_KEY, or serve on 127.0.0.1.")  # fmt: skip
