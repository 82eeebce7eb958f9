"""Operator endpoints (``/ops/...``): keyed like ``/search``, and only for the tenant's operators.

The caller authenticates with its API key exactly as ``/search`` does (``Authenticator``); it
must then be listed in its tenant's ``access.operators`` (empty by default, so every operator
endpoint is 403 until one is configured: fail closed; read from the configuration the identities
were last reloaded from, so a change to the list applies within the same bound as a key's),
and it acts only within its own tenant: a request naming another tenant (``tenant=``, or a
citation of another tenant) is 403 too.
Errors have the API's one shape, ``{"detail": "<message>"}`` (``ErrorModel``).

``GET /ops/diagnose`` answers the report ``tessera diagnose --json`` prints. Every answer is
written to the retrieval audit log first (operator, tenant, the user diagnosed for, digests of
the question and the document; never content), and none is given without its line (503).
(No ``from __future__ import annotations`` here: FastAPI reads annotations at run time.)
"""

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query

from tessera.api_auth import Authenticator
from tessera.api_failures import add_failure_routes
from tessera.api_schema import OPS_RESPONSES, OTHER_TENANT
from tessera.config import TesseraConfig
from tessera.diagnose import DiagnoseRequest, Diagnosis, diagnose, parse_range
from tessera.embedding.base import Embedder
from tessera.errors import InvalidArgument
from tessera.search.audit import AuditRecord, operator_record
from tessera.search.citations import parse_citation
from tessera.search.identities import IdentitySource, ReloadingIdentities
from tessera.search.options import MAX_QUERY_CHARS
from tessera.search.principal import Principal

NOT_OPERATOR = "forbidden: this key's user is not an operator of its tenant"


def operator_dependency(cfg: TesseraConfig, identities: IdentitySource) -> Callable[..., Principal]:
    """A FastAPI dependency returning the caller's Principal when it is an operator of its
    tenant: 401 without a valid key (as ``/search``), 403 otherwise."""
    authenticate = Authenticator(identities)

    def operator(who: Annotated[Principal, Depends(authenticate)]) -> Principal:
        # the configuration the key was just resolved with: a server that reloads its identities
        # (``ReloadingIdentities``) sees an operator added or removed within the same bound
        current = identities.snapshot().cfg if isinstance(identities, ReloadingIdentities) else cfg
        tenant = current.tenants.get(who.tenant)
        if tenant is None or who.user not in tenant.operators:
            raise HTTPException(status_code=403, detail=NOT_OPERATOR)
        return who

    return operator


def _invalid(e: InvalidArgument) -> HTTPException:
    return HTTPException(status_code=422, detail=f"query parameter {e}")


def operator_router(
    cfg: TesseraConfig,
    identities: IdentitySource,
    embedders: Sequence[Embedder],
    audited: Callable[[AuditRecord], None],
) -> APIRouter:
    """The ``/ops`` routes; ``operator`` is the dependency every one of them takes, and each
    answer is written to the audit log first (``audited``: 503 when it cannot be)."""
    router = APIRouter(prefix="/ops", tags=["operators"])
    operator = operator_dependency(cfg, identities)
    add_failure_routes(router, cfg, operator, audited)  # GET /ops/failures (tessera.api_failures)

    @router.get("/diagnose", response_model=Diagnosis, responses=OPS_RESPONSES)
    def diagnose_endpoint(
        who: Annotated[Principal, Depends(operator)],
        user: Annotated[str, Query(min_length=1, max_length=128, description="the user to diagnose for")],
        q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description="the question")],
        doc: Annotated[str | None, Query(min_length=1, max_length=4096, description="document id")] = None,
        citation: Annotated[
            str | None, Query(max_length=200, description="tessera:<tenant>/<chunk id>")
        ] = None,
        range: Annotated[
            str | None, Query(pattern=r"^[0-9]{1,15}:[0-9]{1,15}$", description="START:END")
        ] = None,
        expect: Annotated[str | None, Query(min_length=1, max_length=MAX_QUERY_CHARS)] = None,
        k: Annotated[int, Query(ge=1, le=100)] = 5,
        as_of: datetime | None = None,
        tenant: Annotated[str | None, Query(max_length=63, description="must be the caller's own")] = None,
    ) -> Diagnosis:
        """Why retrieval missed the document for ``user``: the stage that lost it, with evidence."""
        if tenant is not None and tenant != who.tenant:
            raise HTTPException(status_code=403, detail=OTHER_TENANT)
        if as_of is not None and as_of.tzinfo is None:
            as_of = as_of.replace(tzinfo=UTC)
        try:
            if citation is not None and parse_citation(citation)[0] not in (None, who.tenant):
                raise HTTPException(status_code=403, detail=OTHER_TENANT)
            req = DiagnoseRequest(
                tenant=who.tenant, user=user, question=q, doc_id=doc, citation=citation,
                byte_range=parse_range(range) if range is not None else None, expect=expect, k=k, as_of=as_of,
            )  # fmt: skip
            report = diagnose(cfg, req, embedders)
        except InvalidArgument as e:
            raise _invalid(e) from e
        asked = doc if doc is not None else citation
        audited(operator_record("diagnose", who.tenant, who.user, user, q, asked))
        return report

    return router
