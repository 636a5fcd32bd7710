"""A small thread-safe connection pool that never hides a database outage and recovers without a restart.

Idle connections are reused last-in first-out; at most `max_size` are out at once (a caller waits up to
`timeout` seconds for one). A connection that failed is closed, never returned; one that was idle while the
server restarted fails on its first statement, which `PostgresBackend` retries once on a fresh connection.
Connecting is attempted per call (no background thread, no backoff), so the first call after the database
is back succeeds.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg
from psycopg import pq


class PoolExhausted(RuntimeError):
    """Every connection stayed in use for the whole wait."""


class ConnectionPool:
    def __init__(self, dsn: str, max_size: int = 8, timeout: float = 10.0, connect_timeout: int = 3,
                 idle_max: int | None = None, read_only: bool = False) -> None:  # fmt: skip
        if max_size < 1:
            raise ValueError(f"max_size must be at least 1, not {max_size}.")
        self.dsn = dsn
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.read_only = read_only  # every transaction starts BEGIN READ ONLY (no SET round trip per call)
        self.idle_max = idle_max if idle_max is not None else max_size
        self._slots = threading.BoundedSemaphore(max_size)
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._closed = False

    def take(self) -> tuple[psycopg.Connection[Any], bool]:
        """(a connection, whether it was reused from the idle list). Raises psycopg.OperationalError when a new
        connection cannot be made, PoolExhausted when none frees up in time."""
        if self._closed:
            raise PoolExhausted("the backend is closed")
        if not self._slots.acquire(timeout=self.timeout):
            raise PoolExhausted(f"all connections stayed busy for {self.timeout:.0f} s")
        try:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is not None and not connection.closed:
                return connection, True
            connection = psycopg.connect(self.dsn, connect_timeout=self.connect_timeout)
            connection.read_only = self.read_only
            return connection, False
        except BaseException:
            self._slots.release()
            raise

    def give(self, connection: psycopg.Connection[Any], broken: bool = False) -> None:
        """Hand a connection back: kept when healthy and idle, closed otherwise."""
        try:
            healthy = (not broken and not connection.closed
                       and connection.info.transaction_status == pq.TransactionStatus.IDLE)  # fmt: skip
            with self._lock:
                keep = healthy and not self._closed and len(self._idle) < self.idle_max
                if keep:
                    self._idle.append(connection)
            if not keep:
                connection.close()
        finally:
            self._slots.release()

    def clear(self) -> None:
        """Close every idle connection (after an outage they are all stale)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def close(self) -> None:
        self._closed = True
        self.clear()
