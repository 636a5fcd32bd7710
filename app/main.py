"""The FastAPI application: routers, middleware, error handlers, and startup loading (lifespan)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles

from app import __version__
from app.api.body_guard import RequestBodyGuard
from app.api.deps import require_api_key
from app.api.errors import install_error_handlers
from app.api.head import HeadAsGet
from app.api.middleware import RequestContextMiddleware
from app.api.rate_limit import RateLimit
from app.api.routes import ask, documents, health, info, openai, pages, search
from app.api.routes import metrics as metrics_route
from app.config import Settings, get_settings
from app.metrics import ServiceMetrics
from app.schemas import PROTECTED_RESPONSES
from app.services import Services, load_services

log = logging.getLogger(__name__)

DESCRIPTION = """Ask questions about American Economic Review research; answers come from the papers'
abstracts, with citations checked against the passages. `/v1/search` is hybrid retrieval (BM25 + dense,
fused, optionally reranked); `/v1/ask` answers, as JSON or streamed Server-Sent Events."""


def open_spec(app: FastAPI) -> dict:
    """The OpenAPI spec of a server that needs no API key: without the key's security requirements (the
    dependency is always there, but lets every request through)."""
    if app.openapi_schema is None:
        spec = FastAPI.openapi(app)
        for methods in spec.get("paths", {}).values():
            for operation in methods.values():
                operation.pop("security", None)
                operation.get("responses", {}).pop("401", None)
        spec.get("components", {}).pop("securitySchemes", None)
        app.openapi_schema = spec
    return app.openapi_schema


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
        docs_url=None,  # served by app/api/routes/pages.py from local assets, not a CDN
        redoc_url=None,
        openapi_tags=[
            {"name": "ask", "description": "Answers with citations"},
            {"name": "search", "description": "Retrieval only"},
            {"name": "openai", "description": "OpenAI-compatible chat completions, for existing clients"},
        ],
    )
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.services = services

    install_error_handlers(app, settings.generation.retry_after_s)
    app.add_middleware(RequestBodyGuard, max_body_bytes=settings.max_body_bytes,
                       max_json_depth=settings.max_json_depth, routes=app.router.routes)  # fmt: skip
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type"],
        )
    app.add_middleware(HeadAsGet, routes=app.router.routes)
    if settings.rate_limit.enabled:
        key = settings.api_key.get_secret_value() if settings.api_key else None
        app.add_middleware(RateLimit, settings=settings.rate_limit, api_key=key, metrics=metrics)
    app.add_middleware(RequestContextMiddleware, metrics=metrics)

    if settings.api_key is None:
        app.openapi = lambda: open_spec(app)  # type: ignore[method-assign]
    app.include_router(pages.router)
    app.mount(pages.DOCS_ASSETS_URL, StaticFiles(directory=pages.docs_assets_dir()), name="docs-assets")
    app.mount(pages.STATIC_URL, StaticFiles(directory=pages.STATIC_DIR), name="static")
    app.include_router(health.router)
    protected = [Depends(require_api_key)]
    # With a key set, the metrics (routes, rates, queue depths) are for the key's holders too, unless opened.
    metrics_guarded = settings.api_key is not None and settings.metrics_need_key
    app.include_router(metrics_route.router, **({"dependencies": protected, "responses": PROTECTED_RESPONSES}
                                                if metrics_guarded else {}))  # fmt: skip
    for router in (search.router, ask.router, documents.router, info.router, openai.router):
        app.include_router(router, dependencies=protected, responses=PROTECTED_RESPONSES)
    return app
