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


def connect(base: str, source: str | None = None) -> socket.socket:
    """A connection to the server, from `source` (another loopback address: 127.0.0.2 is a second client)."""
    host, port = base.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=WAIT_S,
                                    source_address=(source, 0) if source else None)  # fmt: skip


def get(sock: socket.socket, path: str) -> int:
    sock.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
    return status_of(sock.recv(65536))


def search_from(base: str, source: str) -> int:
    with httpx.Client(base_url=base, transport=httpx.HTTPTransport(local_address=source)) as client:
        return client.post("/v1/search", json={"query": "carbon tax", "top_k": 2}).status_code


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
    server, _ = live_server(connections={"header_timeout_s": 60, "keep_alive_s": 60, "max_connections": 8,
                                         "health_reserve": 0})  # fmt: skip
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


def test_one_address_cannot_hold_the_pool_another_address_is_still_served(live_server) -> None:
    """The reproduction of a connection-holding client: one address opens far more sockets than the pool holds and
    keeps them; a second address's health probes and searches are all served."""
    server, _ = live_server(connections={"header_timeout_s": 60, "keep_alive_s": 60})  # 256 in all, 32 per address
    held, refused = [], 0
    try:
        for _ in range(300):
            sock = connect(server, "127.0.0.1")
            held.append(sock)
        for sock in held[:40]:  # the first 32 are served; the rest were answered 503 and closed at once
            sock.settimeout(WAIT_S)
            try:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                refused += status_of(sock.recv(65536)) == 503
            except OSError:
                refused += 1  # closed by the server before the request went out
        assert refused == 8
        probes = []
        for _ in range(20):
            with connect(server, "127.0.0.2") as sock:
                probes.append(get(sock, "/healthz"))
            probes.append(search_from(server, "127.0.0.2"))
        assert probes == [200] * 40
    finally:
        for sock in held:
            sock.close()


def test_a_full_pool_still_answers_the_health_probes_from_its_reserve(live_server) -> None:
    server, _ = live_server(connections={"header_timeout_s": 60, "keep_alive_s": 60, "max_connections": 4,
                                         "health_reserve": 2})  # fmt: skip
    held = [connect(server, f"127.0.0.{i + 1}") for i in range(4)]
    try:
        assert [get(sock, "/healthz") for sock in held] == [200] * 4
        with connect(server, "127.0.0.9") as probe:
            assert get(probe, "/readyz") == 200  # the reserve serves the probes
            with connect(server, "127.0.0.10") as other:
                other.sendall(b"POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
                assert status_of(read_until_closed(other)[0]) == 503  # and nothing else
            with connect(server, "127.0.0.10") as second:
                assert get(second, "/healthz") == 200
                with connect(server, "127.0.0.11") as beyond:  # past the reserve: 503 at once
                    assert status_of(read_until_closed(beyond)[0]) == 503
    finally:
        for sock in held:
            sock.close()


def test_an_unlimited_client_such_as_a_trusted_proxy_is_not_held_to_the_share(live_server) -> None:
    server, _ = live_server(connections={"header_timeout_s": 60, "keep_alive_s": 60, "max_connections_per_client": 2,
                                         "unlimited_clients": ["127.0.0.1"]})  # fmt: skip
    held = [connect(server, "127.0.0.1") for _ in range(4)] + [connect(server, "127.0.0.3") for _ in range(3)]
    try:
        assert [get(sock, "/healthz") for sock in held[:4]] == [200] * 4
        assert [get(sock, "/healthz") for sock in held[4:6]] == [200, 200]
        assert status_of(read_until_closed(held[6])[0]) == 503
    finally:
        for sock in held:
            sock.close()


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
