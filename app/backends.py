"""Opening the configured SearchBackend: the published directory in memory, or PostgreSQL + pgvector."""

from __future__ import annotations

import logging
import time

from app.config import Settings
from corpus.search_backend import BackendUnavailable, SearchBackend
from indexing.embedding import Embedder
from indexing.index import PublishedIndex
from indexing.local_backend import LocalIndexBackend
from retrieval.query import check_encoder

log = logging.getLogger(__name__)


def open_backend(settings: Settings, embedder: Embedder) -> SearchBackend:
    """The backend `settings.backend` names, checked against the query encoder; raises with a clear message."""
    if settings.backend.kind == "local":
        log.info("loading index from %s", settings.index_dir)
        index = PublishedIndex.load(settings.index_dir, embedder=embedder,
                                    expected_embedding_model=settings.embedding_model)  # fmt: skip
        backend: SearchBackend = LocalIndexBackend(index)
    else:
        from indexing.postgres.backend import PostgresBackend  # psycopg only where PostgreSQL is used

        assert settings.backend.dsn is not None  # BackendSettings refuses postgres without one
        backend = PostgresBackend(settings.backend.dsn.get_secret_value(), pool_size=settings.backend.pool_size)
        _wait_until_served(backend, settings.backend.start_wait_s)
    info = backend.info()
    check_encoder(info, embedder.model_name, embedder.weights_sha256)
    log.info("index: %s backend, %d chunks of %d documents", info.kind, info.chunks, info.documents)
    return backend


def _wait_until_served(backend: SearchBackend, wait_s: float) -> None:
    """A replica may start before the database, or before an ingest has published a build: wait a while."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            backend.info()
            return
        except BackendUnavailable as error:
            if time.monotonic() >= deadline:
                backend.close()
                raise BackendUnavailable(f"{error} (waited {wait_s:.0f} s)") from None
            log.info("waiting for the index: %s", error)
            time.sleep(1.0)
