"""Typed dependencies for the routers."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from app.api.errors import APIError
from app.config import Settings
from app.services import Services

_bearer = HTTPBearer(auto_error=False, description="The API key, when the server sets one.")
_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="The API key, alternatively.")


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_services(request: Request) -> Services:
    services = getattr(request.app.state, "services", None)
    if services is None:
        raise APIError(503, "not_ready", "The service is still loading its index and models; retry shortly.")
    return services


SettingsDep = Annotated[Settings, Depends(get_settings)]
ServicesDep = Annotated[Services, Depends(get_services)]


def require_api_key(
    request: Request,
    settings: SettingsDep,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    header_key: Annotated[str | None, Depends(_api_key_header)],
) -> None:
    """Every credential sent must be the key (a wrong one is refused even beside a right one), and one is needed."""
    if settings.api_key is None:
        return
    offered = [header_key] if header_key is not None else []
    if "authorization" in request.headers:
        # Not "Bearer <key>" (another scheme, or no key) counts as a wrong credential.
        offered.append(bearer.credentials if bearer else "")
    if not offered:
        raise APIError(
            401, "unauthorized", "This server needs an API key: send 'Authorization: Bearer <key>' or 'X-API-Key'.",
            headers={"WWW-Authenticate": "Bearer"},
        )
    expected = settings.api_key.get_secret_value().encode()
    # Constant-time comparison, so response timing does not reveal how much of a key was right.
    if not all(hmac.compare_digest(key.encode(), expected) for key in offered):
        raise APIError(401, "unauthorized", "The API key is not valid.", headers={"WWW-Authenticate": "Bearer"})
