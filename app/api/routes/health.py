from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from corpus.search_backend import BackendInfo, BackendUnavailable, SearchBackend

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Index and models are loaded", responses={503: {"description": "Not ready yet"}})
async def readyz(request: Request) -> JSONResponse:
    services = getattr(request.app.state, "services", None)
    if services is None:
        reason = getattr(request.app.state, "not_ready_reason", "loading the index and models")
        return JSONResponse({"status": "not_ready", "reason": reason}, status_code=503)
    try:  # a backend on a database is ready only while the database answers
        info = await run_in_threadpool(_served, services.backend)
    except BackendUnavailable as error:
        return JSONResponse({"status": "not_ready", "reason": f"the index is unavailable: {error}"}, status_code=503)
    return JSONResponse({"status": "ready", "chunks": info.chunks})


def _served(backend: SearchBackend) -> BackendInfo:
    backend.check()
    return backend.info()
