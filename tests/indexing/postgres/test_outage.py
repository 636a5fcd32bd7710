"""The database going away and coming back: BackendUnavailable while it is down, the same backend works after."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from corpus.search_backend import BackendUnavailable
from indexing.postgres.backend import PostgresBackend
from indexing.postgres.embedded import EmbeddedPostgres
from indexing.targets import BuildContent
from tests.conftest import throwaway_postgres

from .conftest import publish_build


@pytest.fixture
def own_server() -> Iterator[EmbeddedPostgres]:
    """A server of this test's own (it is stopped and started again), on a fixed port across the restart."""
    with throwaway_postgres("aer-pg-outage-") as server:
        yield server


def test_an_outage_raises_backend_unavailable_and_the_backend_recovers(own_server: EmbeddedPostgres,
                                                                       content: BuildContent) -> None:  # fmt: skip
    publish_build(own_server.dsn, content)
    backend = PostgresBackend(own_server.dsn, timeout=2.0)
    vector = content.vectors[0]
    calls: dict[str, Callable[[], object]] = {
        "check": backend.check,
        "keyword_search": lambda: backend.keyword_search("market", 5),
        "vector_search": lambda: backend.vector_search(vector, 5),
        "similarities": lambda: backend.similarities(vector, [content.chunks[0].chunk_id]),
        "chunks": lambda: backend.chunks([content.chunks[0].chunk_id]),
        "document": lambda: backend.document(content.documents[0].doc_id),
    }
    before = {name: call() for name, call in calls.items()}  # the pool now holds open connections

    own_server.stop()
    for call in calls.values():
        with pytest.raises(BackendUnavailable, match=r"PostgreSQL at postgresql://postgres@127\.0\.0\.1:\d+/aer_rag "
                                                     r"is unavailable"):  # fmt: skip
            call()
    backend.info_ttl_s = 0.0
    with pytest.raises(BackendUnavailable):
        backend.info()

    own_server.start()
    after = {name: call() for name, call in calls.items()}  # the same backend object: no restart
    assert after == before
    assert backend.info().chunks == len(content.chunks)
    backend.close()
