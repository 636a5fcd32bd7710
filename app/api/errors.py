"""Every error leaves the service as JSON a person can act on: {"error": {code, message, request_id}}."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from answering.prompt import PromptTooLongError
from app.generation import GenerationTimeoutError, QueueFullError, ShuttingDownError
from app.search_admission import SearchBusyError
from corpus.search_backend import BackendUnavailable
from retrieval.search import RerankNotAvailableError

log = logging.getLogger(__name__)


class APIError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


INTERNAL_ERROR_MESSAGE = "The server failed to handle this request; it has been logged with this request id."


def public_message(error: BaseException) -> str:
    """What a client may read of an error met mid-stream (after the status line): timeouts and shutdowns say
    what happened; anything else is logged, and the client gets a pointer to the log."""
    if isinstance(error, TimeoutError | ShuttingDownError):
        return str(error)
    return "generation failed; see the server log"


def log_stream_failure(logger: logging.Logger, what: str, error: BaseException) -> None:
    """A failure after the status line: a timeout or a shutdown is expected (one line); anything else a traceback."""
    if isinstance(error, TimeoutError | ShuttingDownError):
        logger.warning("%s ended early: %s", what, error)
    else:
        logger.error("%s failed", what, exc_info=error)


def error_body(code: str, message: str, request_id: str | None, details: list[dict] | None = None) -> dict:
    body: dict = {"code": code, "message": message, "request_id": request_id}
    if details:
        body["details"] = details
    return {"error": body}


def error_response(
    request: Request, status: int, code: str, message: str,
    details: list[dict] | None = None, headers: dict[str, str] | None = None,
) -> JSONResponse:
    request_id = getattr(request.state, "request_id", None)
    return JSONResponse(error_body(code, message, request_id, details), status_code=status, headers=headers)


def describe_validation_errors(errors: list[dict]) -> tuple[str, list[dict]]:
    details = []
    for error in errors:
        location = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
        details.append({"field": location or "body", "problem": error.get("msg", "invalid"), "type": error.get("type")})
    summary = "; ".join(f"{d['field']}: {d['problem']}" for d in details)
    return f"The request is not valid: {summary}", details


def install_error_handlers(app: FastAPI, retry_after_s: int) -> None:
    @app.exception_handler(APIError)
    async def _api_error(request: Request, error: APIError) -> JSONResponse:
        return error_response(request, error.status, error.code, error.message, headers=error.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        errors = list(error.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(request, 400, "malformed_json", "The request body is not valid JSON.")
        message, details = describe_validation_errors(errors)
        return error_response(request, 422, "invalid_request", message, details)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, error: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "http_error")
        message = error.detail if isinstance(error.detail, str) else "HTTP error"
        if error.status_code == 404 and message == "Not Found":
            message = f"No such endpoint: {request.method} {request.url.path}. See /docs for the API."
        return error_response(request, error.status_code, code, message, headers=getattr(error, "headers", None))

    @app.exception_handler(RerankNotAvailableError)
    async def _no_rerank(request: Request, error: RerankNotAvailableError) -> JSONResponse:
        return error_response(request, 409, "rerank_unavailable", str(error))

    @app.exception_handler(BackendUnavailable)
    async def _index_unavailable(request: Request, error: BackendUnavailable) -> JSONResponse:
        # The database behind the index is down or restarting: the next request may work, no restart needed.
        return error_response(request, 503, "index_unavailable", f"The index cannot be searched right now ({error}); "
                              f"retry in {retry_after_s} s.", headers={"Retry-After": str(retry_after_s)})  # fmt: skip

    @app.exception_handler(QueueFullError)
    async def _busy(request: Request, error: QueueFullError) -> JSONResponse:
        retry = error.retry_after_s or retry_after_s
        return error_response(
            request, 429, "busy", f"The server is busy generating other answers ({error}); retry in {retry} s.",
            headers={"Retry-After": str(retry)},
        )

    @app.exception_handler(SearchBusyError)
    async def _search_busy(request: Request, error: SearchBusyError) -> JSONResponse:
        retry = request.app.state.settings.search.retry_after_s
        return error_response(request, 429, "busy", f"The server is busy with other searches ({error}); retry in "
                              f"{retry} s.", headers={"Retry-After": str(retry)})  # fmt: skip

    @app.exception_handler(GenerationTimeoutError)
    async def _timeout(request: Request, error: GenerationTimeoutError) -> JSONResponse:
        return error_response(request, 504, "generation_timeout", f"The answer took too long: {error}.")

    @app.exception_handler(ShuttingDownError)
    async def _shutting_down(request: Request, error: ShuttingDownError) -> JSONResponse:
        return error_response(request, 503, "shutting_down", str(error), headers={"Retry-After": str(retry_after_s)})

    @app.exception_handler(PromptTooLongError)
    async def _too_long(request: Request, error: PromptTooLongError) -> JSONResponse:
        return error_response(request, 422, "prompt_too_long", str(error))
