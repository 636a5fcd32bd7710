from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Index and models are loaded", responses={503: {"description": "Not ready yet"}})
def readyz(request: Request) -> JSONResponse:
    services = getattr(request.app.state, "services", None)
    if services is None:
        reason = getattr(request.app.state, "not_ready_reason", "loading the index and models")
        return JSONResponse({"status": "not_ready", "reason": reason}, status_code=503)
    return JSONResponse({"status": "ready", "chunks": len(services.index.chunks)})
