"""The service's own pages: the question page at /, Swagger UI at /docs and ReDoc at /redoc.

Every asset is served from here (Swagger UI and ReDoc from the fastapi-offline package's static files, vendored
there with their licences), so the pages work with no internet: nothing is fetched from a CDN.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import FileResponse, HTMLResponse, Response

STATIC_DIR = Path(__file__).resolve().parents[2] / "static"
STATIC_URL = "/static"
DOCS_ASSETS_URL = f"{STATIC_URL}/docs"
TITLE = "aer-rag"
# ReDoc's sidebar shows Redocly's logo from its CDN; that address is blanked in the copy served here (the image
# then removes itself), so the page asks no other host for anything.
_REDOC_CDN_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
# The browser may load nothing from another host. The question page has no inline code at all; Swagger UI and
# ReDoc start from an inline script, and ReDoc runs a worker from a blob.
_PAGE_POLICY = ("default-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                "form-action 'self'; frame-ancestors 'none'")  # fmt: skip
_DOCS_POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
                "img-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; base-uri 'none'; "
                "frame-ancestors 'none'")  # fmt: skip

router = APIRouter(include_in_schema=False)


def docs_assets_dir() -> Path:
    """swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js and favicon.png from fastapi-offline."""
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("The fastapi-offline package (Swagger UI and ReDoc assets) is not installed.")
    return Path(spec.submodule_search_locations[0]) / "static"


@router.get("/")
def question_page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html",
                        headers={"Content-Security-Policy": _PAGE_POLICY})  # fmt: skip


def _with_policy(response: HTMLResponse) -> HTMLResponse:
    response.headers["Content-Security-Policy"] = _DOCS_POLICY
    return response


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    return _with_policy(get_swagger_ui_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title=f"{TITLE} - Swagger UI",
        oauth2_redirect_url=f"{root}/docs/oauth2-redirect",
        swagger_js_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui.css",
        swagger_favicon_url=f"{root}{DOCS_ASSETS_URL}/favicon.png",
        # Swagger UI would otherwise ask validator.swagger.io to check the spec.
        swagger_ui_parameters={"validatorUrl": None},
    ))  # fmt: skip


@router.get("/docs/oauth2-redirect")
def swagger_ui_redirect() -> HTMLResponse:
    return _with_policy(get_swagger_ui_oauth2_redirect_html())


@lru_cache(maxsize=1)
def _redoc_script() -> bytes:
    return (docs_assets_dir() / "redoc.standalone.js").read_bytes().replace(_REDOC_CDN_LOGO, b"data:,")


@router.get(f"{DOCS_ASSETS_URL}/redoc.standalone.js")
def redoc_script() -> Response:
    return Response(_redoc_script(), media_type="text/javascript", headers={"Cache-Control": "public, max-age=3600"})


@router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    return _with_policy(get_redoc_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title=f"{TITLE} - ReDoc",
        redoc_js_url=f"{root}{DOCS_ASSETS_URL}/redoc.standalone.js",
        redoc_favicon_url=f"{root}{DOCS_ASSETS_URL}/favicon.png",
        with_google_fonts=False,
    ))  # fmt: skip
