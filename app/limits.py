"""Settings of the service's defences against careless and hostile clients: how long a connection may take to
send its request, how large its headers may be, how many connections and searches are served at once, and how
often one client may call. Nested in app.config.Settings (AER_RAG_CONNECTIONS__…, AER_RAG_SEARCH__…,
AER_RAG_RATE_LIMIT__…)."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field


class ConnectionSettings(BaseModel):
    """Enforced by the server's protocol (app/server.py), before any request reaches the app."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    header_timeout_s: float = Field(
        10.0, gt=0, le=300,
        description="A request's line and headers must arrive within this many seconds of the connection opening "
                    "(or of the previous response): else 408 and the connection is closed (slowloris).",
    )  # fmt: skip
    body_timeout_s: float = Field(
        10.0, gt=0, le=300, description="A request's body must arrive within this many seconds of its headers."
    )
    keep_alive_s: int = Field(5, ge=1, le=300, description="An idle keep-alive connection is closed after this.")
    max_connections: int = Field(
        256, ge=1, le=100_000, description="Open connections beyond this are answered 503 and closed at once."
    )
    # One address must not hold the whole pool (a client holding 256 idle sockets made every other client's
    # probe a 503): its connections beyond this share are refused at once, whatever its key.
    max_connections_per_client: int = Field(
        32, ge=1, le=100_000,
        description="Open connections from one address beyond this are answered 503 and closed at once.",
    )  # fmt: skip
    unlimited_clients: tuple[str, ...] = Field(
        (), description="Addresses the per-client share does not apply to: a trusted reverse proxy in front, whose "
        "connections carry many clients.",
    )  # fmt: skip
    health_reserve: int = Field(
        16, ge=0, le=10_000,
        description="Connections past max_connections still served for /healthz and /readyz only (a full pool must "
                    "not fail the health checks that would restart the service).",
    )  # fmt: skip
    max_header_bytes: int = Field(
        16 * 1024, ge=1024, le=1024 * 1024, description="Request line plus headers beyond this: 431."
    )
    max_headers: int = Field(100, ge=8, le=10_000, description="More header fields than this: 431.")


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class SearchAdmissionSettings(BaseModel):
    """Admission for /v1/search, like generation's: a few searches run at once (each one's models already use
    every core), a few wait, the rest get 429 with Retry-After at once."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # One search per two cores: the models of one search already use every core (torch's intra-op threads), so
    # more at once only divide them (on 2 cores, 16 clients: p95 0.80 s with 1 worker, 1.66 s with 2).
    workers: int = Field(
        default_factory=lambda: max(1, min(_cores() // 2, 4)), ge=1, le=64,
        description="Searches run at once, in the service's own threads (default: half the cores, 1 to 4).",
    )  # fmt: skip
    queue_size: int = Field(2, ge=0, le=1000, description="Searches waiting for a worker; beyond them, 429.")
    max_wait_s: float = Field(
        0.3, gt=0, le=60, description="A search that waited this long in line for a worker is refused (429) instead."
    )
    retry_after_s: int = Field(1, ge=1, le=600)


class RateLimitSettings(BaseModel):
    """Requests per client (its API key, else its address) on /v1/*: a token bucket. Off by default (one local
    user); the compose files turn it on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    per_minute: float = Field(120.0, gt=0, le=1_000_000, description="Sustained requests per minute per client.")
    burst: int = Field(30, ge=1, le=100_000, description="Requests a client may make at once before the rate applies.")
    max_clients: int = Field(
        10_000, ge=1, le=10_000_000, description="Clients remembered at once (the least recent are forgotten)."
    )


class MemorySettings(BaseModel):
    """How much freed memory the process keeps (glibc; runtime/arenas.py)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    malloc_arenas: int = Field(
        2, ge=0, le=1024, description="malloc arenas for the process's threads (0: glibc's default, 8 per core)."
    )
    trim_after_idle_s: float = Field(
        10.0, ge=0, le=3600,
        description="Freed memory goes back to the kernel once no search or answer has run for this long (0: never).",
    )  # fmt: skip
