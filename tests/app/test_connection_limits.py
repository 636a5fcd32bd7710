"""The server's connection hygiene (app/server.py), over raw sockets against a real uvicorn server: requests that
never complete are answered 408 and closed within the timeout settings, oversized headers get 431, connections
beyond the limit 503, and well-behaved clients (keep-alive included) are served as before."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from app.config import Settings
from app.server import exposure_warning

FAST = {"header_timeout_s": 1.0, "body_timeout_s": 1.0, "keep_alive_s": 5}
# Generous: the server closes after 1 s; the bound only keeps a broken server from hanging the test.
WAIT_S = 30


@pytest.fixture
def server(live_server) -> str:
    base, _ = live_server(connections={**FAST, "max_header_bytes": 4096, "max_headers": 20, "max_connections": 8})
    return base


def connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=WAIT_S)
    return sock


def read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    started, received = time.monotonic(), b""
    while chunk := sock.recv(65536):
        received += chunk
    return received, time.monotonic() - started


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


@pytest.mark.parametrize("sent", [
    b"",  # connects and says nothing
    b"GET /healthz HTTP/1.1\r\nHost: x\r\n",  # half the headers (slowloris)
    b"GET /heal",  # half the request line
])  # fmt: skip
def test_a_request_whose_headers_never_complete_is_answered_408_and_closed(server: str, sent: bytes) -> None:
    with connect(server) as sock:
        sock.sendall(sent)
        response, _ = read_until_closed(sock)  # recv raises TimeoutError if the server held it WAIT_S
    assert status_of(response) == 408 and b"connection: close" in response.lower()


def test_a_stalled_body_is_answered_408_and_closed(server: str) -> None:
    with connect(server) as sock:
        sock.sendall(b"POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"query\": ")  # fmt: skip
        response, _ = read_until_closed(sock)
    assert status_of(response) == 408


def test_an_idle_keep_alive_connection_is_closed_and_its_next_request_must_be_quick(server: str) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        first = sock.recv(65536)
        assert status_of(first) == 200
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # the next request stalls in its headers
        response, _ = read_until_closed(sock)
    assert status_of(response) == 408


@pytest.mark.parametrize("headers", [
    b"X-Big: " + b"a" * 8000 + b"\r\n",  # one header over max_header_bytes
    b"".join(b"X-%d: y\r\n" % i for i in range(50)),  # more fields than max_headers
])  # fmt: skip
def test_oversized_headers_are_refused_with_431(server: str, headers: bytes) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
        response, _ = read_until_closed(sock)
    assert status_of(response) == 431


def test_an_overlong_request_line_is_refused_with_431(server: str) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /healthz?" + b"q" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        response, _ = read_until_closed(sock)
    assert status_of(response) == 431


def test_connections_beyond_the_limit_get_503_at_once(live_server) -> None:
    # Long timeouts here, so that the held connections stay open however slowly this machine runs.
    server, _ = live_server(connections={"header_timeout_s": 60, "keep_alive_s": 60, "max_connections": 8})
    held = [connect(server) for _ in range(8)]
    try:
        for sock in held:  # one answered request each: the server has taken every one of them
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert status_of(sock.recv(65536)) == 200
        with connect(server) as extra:
            response, _ = read_until_closed(extra)
        assert status_of(response) == 503
    finally:
        for sock in held:
            sock.close()
    assert httpx.get(f"{server}/healthz").status_code == 200  # freed places serve again


def test_well_behaved_clients_are_served_and_see_no_server_banner(server: str) -> None:
    with httpx.Client(base_url=server) as client:  # one keep-alive connection
        responses = [client.get("/healthz") for _ in range(3)]
        responses.append(client.post("/v1/search", json={"query": "carbon tax", "top_k": 2}))
    assert [r.status_code for r in responses] == [200, 200, 200, 200]
    assert all("server" not in r.headers for r in responses)
    assert all(r.headers["x-content-type-options"] == "nosniff" for r in responses)


@pytest.mark.parametrize(("host", "published", "key", "warns"), [
    ("127.0.0.1", None, None, False),
    ("::1", None, None, False),
    ("0.0.0.0", None, None, True),
    ("0.0.0.0", None, "k", False),
    ("0.0.0.0", "127.0.0.1", None, False),  # a container published on the host's loopback
    ("0.0.0.0", "0.0.0.0", None, True),
    ("example.org", None, None, True),
])  # fmt: skip
def test_start_warns_when_the_api_is_reachable_beyond_loopback_without_a_key(host, published, key, warns) -> None:
    settings = Settings(host=host, published_address=published, api_key=key)
    assert (exposure_warning(settings) is not None) is warns
