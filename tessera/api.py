"""The HTTP API: ``/search`` and ``/chunks/{id}`` behind API-key authentication.

The principal comes only from the key (``X-API-Key`` header or ``Authorization: Bearer``, both
declared as OpenAPI security schemes: ``/docs`` has *Authorize*), mapped server-side by the
configuration's ``api_keys_file``; no request can name a tenant. A missing or unknown key is
401 with ``WWW-Authenticate: Bearer realm="tessera"``; a chunk the principal may not see is 404,
exactly like one that does not exist. Results are labelled as untrusted source data with their
provenance, in the schema ``tessera search --json`` prints (``tessera.api_schema``). Keys, users
and groups are looked up per request (``ReloadingIdentities`` follows its files); while they
cannot be loaded every request is 503. Each retrieval is written to the audit log before it is
answered; if that fails the answer is 503 and carries no result.

``/healthz`` (the process answers; no key, reads nothing) and ``/readyz`` (the store is
reachable and the identities load; 503 in the error shape otherwise) need no key; they are
probes for the orchestrator, left out of the OpenAPI document. ``/docs`` and ``/redoc`` are
served from local assets (``fastapi-offline``), so they work without Internet access.

Every error answer has one body shape, ``{"detail": "<message>"}`` (``ErrorModel``): 400 bad
search options, 401 no or a bad key, 404 not found (absent or unreadable alike), 405 a wrong
method, 409 a model mismatch, 422 a bad parameter (the message names it: ``query parameter k:
...``), 500 an unexpected error (named by type only), 503 identities, the audit log or the
store unavailable.
(No ``from __future__ import annotations`` here: FastAPI reads annotations at run time.)
"""

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException

from tessera.api_auth import IDENTITIES_UNAVAILABLE, Authenticator, NotReady, check_ready
from tessera.api_ops import operator_router
from tessera.api_schema import (
    KEYED_ERRORS,
    ChunkResponse,
    CitationModel,
    ErrorModel,
    HealthResponse,
    HitModel,
    ReadyResponse,
    SearchResponse,
)
from tessera.boundary import typed
from tessera.cli_version import tessera_version
from tessera.config import TesseraConfig
from tessera.embedding.base import Embedder
from tessera.embedding.query_memo import for_owner, remember_queries
from tessera.errors import (
    AccessDenied,
    AuditError,
    InternalError,
    ModelIdentityError,
    StoreUnavailable,
    TesseraError,
)
from tessera.search.audit import AuditLog, AuditRecord, fetch_record, search_record
from tessera.search.citations import show
from tessera.search.identities import IdentitySource
from tessera.search.principal import Principal
from tessera.search.query import MAX_QUERY_CHARS, SearchOptions, for_tenant, search

__all__ = [
    "AUDIT_UNAVAILABLE", "IDENTITIES_UNAVAILABLE", "ChunkResponse", "CitationModel", "ErrorModel",
    "HitModel", "SearchResponse", "create_app", "unavailable", "validation_detail",
]  # fmt: skip

log = logging.getLogger(__name__)


def _param(loc: Sequence[Any]) -> str:
    where, *name = [str(x) for x in loc] or ["request"]
    return f"{where} parameter {'.'.join(name)}" if name else where


def validation_detail(exc: RequestValidationError) -> str:
    """FastAPI's list of validation errors as one message naming each bad parameter (never
    echoing the value: a query may be long or private)."""
    return "; ".join(f"{_param(err.get('loc', ()))}: {err.get('msg', 'invalid')}" for err in exc.errors())


def unavailable(e: BaseException, cfg: TesseraConfig) -> HTTPException:
    """503 or 500 for an error a handler did not expect: the type is named, the details (paths,
    places) go to the server log only."""
    err = typed(e, cfg.store.uri, cfg.store.work_dir)
    log.error("request failed: %s: %s", type(err).__name__, err)
    if isinstance(err, InternalError):
        return HTTPException(status_code=500, detail=f"internal error ({type(e).__name__})")
    if isinstance(err, StoreUnavailable):
        return HTTPException(status_code=503, detail="index unavailable (StoreUnavailable)")
    return HTTPException(status_code=503, detail=f"{type(err).__name__}: {err}")


AUDIT_UNAVAILABLE = "audit log unavailable: nothing is returned without an audit record"


def create_app(
    cfg: TesseraConfig,
    embedder: Embedder,
    identities: IdentitySource,
    others: Sequence[Embedder] = (),
    audit: AuditLog | None = None,
) -> FastAPI:
    """The HTTP API. ``others``: models still servable (``embedding.previous``); each request is
    embedded with the model that serves the caller's tenant, and each model's query vectors are
    remembered per caller for the life of the app (``tessera.embedding.query_memo``).
    ``identities``: a fixed ``IdentityStore`` or a ``ReloadingIdentities``; ``cfg`` gives the
    store and the audit log (``{store.work_dir}/audit``, unless ``audit`` is given)."""
    app: FastAPI = FastAPIOffline(
        title="Tessera",
        version=tessera_version(),
        description=__doc__,
        swagger_ui_parameters={"validatorUrl": None, "persistAuthorization": True},  # no outside calls
    )
    audit_log = audit or AuditLog(cfg.store.work_dir)
    embedder = remember_queries(embedder)  # a question asked again is not embedded again
    others = [remember_queries(e) for e in others]

    @app.exception_handler(RequestValidationError)
    def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": validation_detail(exc)})

    @app.exception_handler(StarletteHTTPException)
    def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = str(exc.detail)
        if exc.status_code == 405:
            detail = f"method {request.method} is not allowed on {request.url.path}"
        return JSONResponse(status_code=exc.status_code, content={"detail": detail}, headers=exc.headers)

    @app.exception_handler(Exception)
    def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        http = unavailable(exc, cfg)  # the server still logs the traceback (never swallowed)
        return JSONResponse(status_code=http.status_code, content={"detail": http.detail})

    def audited(record: AuditRecord) -> None:
        try:
            audit_log.append(record)
        except AuditError as e:
            raise HTTPException(status_code=503, detail=AUDIT_UNAVAILABLE) from e

    principal = Authenticator(identities)

    # the probes are for the orchestrator, outside the API's document (its every operation is
    # keyed and answers 401, 422, 500 and 503 in the one error shape)
    @app.get("/healthz", response_model=HealthResponse, include_in_schema=False)
    def healthz() -> HealthResponse:
        """The process answers. No key; reads no store, no identity."""
        return HealthResponse()

    @app.get("/readyz", response_model=ReadyResponse, include_in_schema=False)
    def readyz() -> ReadyResponse:
        """The configuration is loaded, the store is reachable and the identities load. No key."""
        try:
            check_ready(cfg, identities)
        except NotReady as e:
            log.error("not ready: %s (%r)", e, e.__cause__)
            raise HTTPException(status_code=503, detail=f"not ready: {e}") from e
        return ReadyResponse()  # no counts, no names: the probe needs no key

    unauthorized: dict[int | str, dict[str, Any]] = {
        **KEYED_ERRORS,
        503: {"model": ErrorModel, "description": "identities, the audit log or the store unavailable"},
    }

    @app.get(
        "/search",
        response_model=SearchResponse,
        responses={
            **unauthorized,
            400: {"model": ErrorModel, "description": "invalid search options"},
            409: {"model": ErrorModel, "description": "model version does not match the index"},
        },
    )
    def search_endpoint(
        who: Annotated[Principal, Depends(principal)],
        q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS)],
        k: Annotated[int, Query(ge=1, le=100)] = 5,
        mode: Annotated[Literal["dense", "lexical", "hybrid"], Query()] = "hybrid",
        expand: Annotated[str | None, Query(pattern=r"^(parent|neighbors:(1?[0-9]|20))$")] = None,
        token_budget: Annotated[int | None, Query(ge=1, le=100_000)] = None,
        as_of: datetime | None = None,
        model_version: Annotated[str | None, Query(max_length=200)] = None,
    ) -> SearchResponse:
        if as_of is not None and as_of.tzinfo is None:
            as_of = as_of.replace(tzinfo=UTC)  # as on the command line: no offset means UTC
        try:
            opts = SearchOptions(
                k=k,
                mode=mode,
                as_of=as_of,
                model_version=model_version,
                expand=expand,
                token_budget=token_budget,
            )
            serving = for_tenant(cfg.store.uri, who.tenant, [embedder, *others])
            mine = for_owner(serving, json.dumps([who.tenant, who.user]))  # no caller times another's
            hits = search(cfg.store.uri, mine, who, q, options=opts)
        except ModelIdentityError as e:
            raise HTTPException(status_code=409, detail=str(e)) from e
        except ValueError as e:
            raise HTTPException(status_code=400, detail=str(e)) from e
        except (TesseraError, RuntimeError, OSError) as e:  # a damaged store, a missing file
            raise unavailable(e, cfg) from e
        audited(search_record("api", who.tenant, who.user, q, mode, k, [h.chunk_id for h in hits]))
        return SearchResponse(
            model_version=serving.identity.key, mode=mode, results=[HitModel.of(h) for h in hits]
        )

    @app.get(
        "/chunks/{chunk_id}",
        response_model=ChunkResponse,
        responses={**unauthorized, 404: {"model": ErrorModel, "description": "not found"}},
    )
    def chunk_endpoint(
        who: Annotated[Principal, Depends(principal)],
        chunk_id: str,
    ) -> ChunkResponse:
        try:
            sl = show(cfg.store.uri, embedder, who, chunk_id)
        except (AccessDenied, ValueError) as e:  # absent, unreadable or malformed: the same 404
            audited(fetch_record("api", "show", who.tenant, who.user, chunk_id, None))
            raise HTTPException(status_code=404, detail="not found") from e
        except (TesseraError, RuntimeError, OSError) as e:  # a missing source blob, a damaged store
            raise unavailable(e, cfg) from e
        audited(fetch_record("api", "show", who.tenant, who.user, chunk_id, sl.citation.chunk_id))
        return ChunkResponse.of(sl)

    app.include_router(operator_router(cfg, identities, [embedder, *others], audited))  # /ops: operators only
    return app
