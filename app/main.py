"""The FastAPI application: routers, middleware, error handlers, and startup loading (lifespan)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware

from app import __version__
from app.api.deps import require_api_key
from app.api.errors import install_error_handlers
from app.api.middleware import RequestContextMiddleware
from app.api.routes import ask, documents, health, info, search
from app.api.routes import metrics as metrics_route
from app.config import Settings, get_settings
from app.metrics import ServiceMetrics
from app.services import Services, load_services

log = logging.getLogger(__name__)

DESCRIPTION = """Ask questions about American Economic Review research; answers come from the papers'
abstracts, with citations checked against the passages. `/v1/search` is hybrid retrieval (BM25 + dense,
fused, optionally reranked); `/v1/ask` answers, as JSON or streamed Server-Sent Events."""


def create_app(settings: Settings | None = None, services: Services | None = None) -> FastAPI:
    """Build the app. With `services` given (tests, `python -m app`) nothing is loaded at startup."""
    settings = settings or get_settings()
    metrics = services.metrics if services else ServiceMetrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if app.state.services is None:
            # Fails startup with IndexLoadError & co. when the index is missing, corrupt or mismatched.
            app.state.services = load_services(settings, metrics)
        try:
            yield
        finally:
            loaded, app.state.services = app.state.services, None
            loaded.close()

    app = FastAPI(
        title="aer-rag",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        openapi_tags=[
            {"name": "ask", "description": "Answers with citations"},
            {"name": "search", "description": "Retrieval only"},
        ],
    )
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.services = services

    install_error_handlers(app, settings.generation.retry_after_s)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type"],
        )
    app.add_middleware(RequestContextMiddleware, metrics=metrics)

    app.include_router(health.router)
    app.include_router(metrics_route.router)
    protected = [Depends(require_api_key)]
    for router in (search.router, ask.router, documents.router, info.router):
        app.include_router(router, dependencies=protected)
    return app
