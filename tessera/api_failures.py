"""``GET /ops/failures``: the operator's tenant's failed-document queue (:mod:`tessera.store.failures`).

Mounted on the operator router (``tessera.api_ops.operator_router``), whose dependency admits
only a caller whose API key is valid (401 otherwise) and who is listed in its tenant's
``access.operators`` (403 otherwise); an operator sees its own tenant's queue, never another's.
The answer is what ``tessera failures --json`` prints, as declared models.
(No ``from __future__ import annotations`` here: FastAPI reads annotations at run time.)
"""

from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, ConfigDict

from tessera.api_schema import ErrorModel
from tessera.config import TesseraConfig
from tessera.search.principal import Principal
from tessera.store.db import connect
from tessera.store.failures import FailureQueue, FailureRecord


class FailureModel(BaseModel):
    """One queued document: the stage it last failed at (``listing``, ``parse``, ``chunk``), the
    typed reason and message, when it first and last failed, and in how many runs."""

    model_config = ConfigDict(frozen=True)

    doc_id: str
    uri: str
    stage: str
    reason: str
    message: str
    first_failed_at: datetime
    last_failed_at: datetime
    attempts: int
    last_run_id: str

    @classmethod
    def of(cls, r: FailureRecord) -> "FailureModel":
        return cls(**asdict(r))


class FailuresResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    tenant: str
    count: int
    failures: list[FailureModel]


OTHER_TENANT = "forbidden: an operator acts only within its own tenant"

FAILURE_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {
        "model": ErrorModel,
        "description": "missing or invalid API key",
        "headers": {"WWW-Authenticate": {"description": "the challenge", "schema": {"type": "string"}}},
    },
    403: {"model": ErrorModel, "description": "not an operator of the tenant, or another tenant"},
    422: {"model": ErrorModel, "description": "a bad parameter; the message names it"},
    500: {"model": ErrorModel, "description": "an unexpected error, named by type only"},
    503: {"model": ErrorModel, "description": "identities or the store unavailable"},
}


def add_failure_routes(router: APIRouter, cfg: TesseraConfig, operator: Callable[..., Principal]) -> None:
    """Add ``GET /failures`` to ``router`` (the ``/ops`` operator router, so ``/ops/failures``);
    ``operator`` is the dependency that returns the authenticated operator (401 / 403 otherwise)."""

    @router.get("/failures", response_model=FailuresResponse, responses=FAILURE_RESPONSES)
    def failures_endpoint(
        who: Annotated[Principal, Depends(operator)],
        tenant: Annotated[str | None, Query(max_length=63, description="must be the caller's own")] = None,
    ) -> FailuresResponse:
        """The failed documents of the operator's tenant, by doc id (an empty list when none)."""
        if tenant is not None and tenant != who.tenant:
            raise HTTPException(status_code=403, detail=OTHER_TENANT)
        records = FailureQueue(connect(cfg.store.uri), who.tenant).records()
        return FailuresResponse(
            tenant=who.tenant, count=len(records), failures=[FailureModel.of(r) for r in records]
        )
