"""API-key authentication as FastAPI security schemes, and the readiness probe.

The key is sent as ``X-API-Key: <key>`` or ``Authorization: Bearer <key>``; both are declared
in the OpenAPI document (``ApiKey`` and ``Bearer``), so ``/docs`` offers *Authorize*. A
missing or unknown key is 401 with a ``WWW-Authenticate`` challenge (RFC 7235, RFC 6750);
while keys and users cannot be loaded every request is 503 (fail closed), and so is every
request of a tenant whose directory membership is past its grace (``DirectoryUnavailable``).
"""

from pathlib import Path
from typing import Annotated

from fastapi import HTTPException, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from tessera.config import TesseraConfig
from tessera.errors import ConfigError
from tessera.search.directory.base import DirectoryUnavailable
from tessera.search.identities import IdentitySource
from tessera.search.principal import Principal

API_KEY_HEADER = APIKeyHeader(
    name="X-API-Key", scheme_name="ApiKey", description="your API key", auto_error=False
)
BEARER = HTTPBearer(scheme_name="Bearer", description="your API key as a bearer token", auto_error=False)
REALM = 'Bearer realm="tessera"'
MISSING_KEY = "missing or invalid API key"
IDENTITIES_UNAVAILABLE = "identities unavailable: every request is refused until keys and users load again"
DIRECTORY_UNAVAILABLE = "directory unavailable: group membership is too old to trust; refused (fail closed)"


def unauthorized(key_given: bool) -> HTTPException:
    """401 with the challenge; ``error="invalid_token"`` when a key was sent but is unknown."""
    challenge = f'{REALM}, error="invalid_token"' if key_given else REALM
    return HTTPException(status_code=401, detail=MISSING_KEY, headers={"WWW-Authenticate": challenge})


class Authenticator:
    """The ``principal`` dependency: the caller's identity from the key, looked up per request."""

    def __init__(self, identities: IdentitySource) -> None:
        self._identities = identities

    def __call__(
        self,
        api_key: Annotated[str | None, Security(API_KEY_HEADER)] = None,
        bearer: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)] = None,
    ) -> Principal:
        key = api_key if api_key is not None else (bearer.credentials.strip() if bearer else None)
        if not key:
            raise unauthorized(api_key is not None or bearer is not None)
        try:
            who = self._identities.principal(key)
        except ConfigError as e:  # a failed reload: refuse everyone, never the old identities
            raise HTTPException(status_code=503, detail=IDENTITIES_UNAVAILABLE) from e
        except DirectoryUnavailable as e:  # past the grace: refuse the tenant, never widen or narrow silently
            raise HTTPException(status_code=503, detail=DIRECTORY_UNAVAILABLE) from e
        if who is None:
            raise unauthorized(True)
        return who


class NotReady(Exception):
    """What keeps the API from answering: ``/readyz`` is 503 with this message."""


def check_ready(cfg: TesseraConfig, identities: IdentitySource) -> None:
    """The store is reachable and the identities load; NotReady (a safe message) otherwise."""
    try:
        identities.principal(None)  # a ReloadingIdentities re-reads its files when they changed
    except ConfigError as e:
        raise NotReady("identities unavailable") from e
    uri = cfg.store.uri
    if not uri.startswith("s3://") and not Path(uri).is_dir():
        raise NotReady("index unavailable (the store folder is missing)")
    from tessera.store.db import connect

    try:
        connect(uri).table_names()
    except Exception as e:  # any failure to list the store means not ready; logged by the caller
        raise NotReady(f"index unavailable ({type(e).__name__})") from e
