"""``GET /ops/failures``: the operator's tenant's failed-document queue (:mod:`tessera.store.failures`).

Mounted on the operator router (``tessera.api_ops.operator_router``), whose dependency admits
only a caller whose API key is valid (401 otherwise) and who is listed in its tenant's
``access.operators`` (403 otherwise); an operator sees its own tenant's queue, never another's.
The answer is what ``tessera failures --json`` prints, as declared models.
(No ``from __future__ import annotations`` here: FastAPI reads annotations at run time.)
"""

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, ConfigDict

from tessera.api_schema import OPS_RESPONSES, OTHER_TENANT
from tessera.config import TesseraConfig
from tessera.search.audit import AuditRecord, operator_record
from tessera.search.principal import Principal
from tessera.store.db import connect
from tessera.store.failures import FailureQueue, FailureRecord


class FailuresResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    tenant: str
    count: int
    failures: list[FailureRecord]
    """One per queued document (a stdlib dataclass, validated and documented by pydantic)."""


def add_failure_routes(
    router: APIRouter,
    cfg: TesseraConfig,
    operator: Callable[..., Principal],
    audited: Callable[[AuditRecord], None],
) -> None:
    """Add ``GET /failures`` to ``router`` (the ``/ops`` operator router, so ``/ops/failures``);
    ``operator`` is the dependency that returns the authenticated operator (401 / 403 otherwise)."""

    @router.get("/failures", response_model=FailuresResponse, responses=OPS_RESPONSES)
    def failures_endpoint(
        who: Annotated[Principal, Depends(operator)],
        tenant: Annotated[str | None, Query(max_length=63, description="must be the caller's own")] = None,
    ) -> FailuresResponse:
        """The failed documents of the operator's tenant, by doc id (an empty list when none)."""
        if tenant is not None and tenant != who.tenant:
            raise HTTPException(status_code=403, detail=OTHER_TENANT)
        records = FailureQueue(connect(cfg.store.uri), who.tenant).records()
        audited(operator_record("failures", who.tenant, who.user, count=len(records)))
        return FailuresResponse(tenant=who.tenant, count=len(records), failures=list(records))
