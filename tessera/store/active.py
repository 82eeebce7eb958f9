"""Which model's table serves a tenant: an append-only pointer per tenant.

``active__{tenant}`` holds one row per cutover (``seq``, ``model_key``, ``previous_key``,
``run_id``, time). The row with the highest ``seq`` is the active model. Moving the pointer
is one append, one LanceDB commit: atomic, and confined to that tenant's table, so a cutover
never touches another tenant. History stays for ``tessera model status`` and rollback.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from tessera.config import validate_tenant_id
from tessera.errors import PublishError
from tessera.store.db import chunks_table_name, create_or_open, open_table

_SCHEMA = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("model_key", pa.string(), nullable=False),
        pa.field("previous_key", pa.string()),
        pa.field("run_id", pa.string()),
        pa.field("reason", pa.string()),
        pa.field("at_us", pa.int64()),
    ]
)


def active_table_name(tenant: str) -> str:
    return f"active__{validate_tenant_id(tenant)}"


@dataclass(frozen=True)
class ActiveModel:
    seq: int
    model_key: str
    previous_key: str | None
    run_id: str
    reason: str
    at_us: int


class ActivePointer:
    def __init__(self, db: Any, tenant: str) -> None:
        self.db, self.tenant = db, tenant
        self.name = active_table_name(tenant)

    def history(self) -> list[ActiveModel]:
        table = open_table(self.db, self.name)
        rows = [] if table is None else table.to_arrow().to_pylist()
        return [ActiveModel(**r) for r in sorted(rows, key=lambda r: r["seq"])]

    def get(self) -> ActiveModel | None:
        history = self.history()
        return history[-1] if history else None

    def move(self, model_key: str, run_id: str, reason: str) -> ActiveModel:
        """Point the tenant at ``model_key`` (its table must exist and hold rows)."""
        table = open_table(self.db, chunks_table_name(self.tenant, model_key))
        if table is None or int(table.count_rows()) == 0:
            raise PublishError(f"tenant {self.tenant!r} has no built table for model {model_key}")
        current = self.get()
        if current is not None and current.model_key == model_key:
            return current
        row = ActiveModel(
            seq=0 if current is None else current.seq + 1,
            model_key=model_key,
            previous_key=None if current is None else current.model_key,
            run_id=run_id,
            reason=reason,
            at_us=int(time.time() * 1e6),
        )
        data = pa.Table.from_pylist([row.__dict__], schema=_SCHEMA)
        pointer = create_or_open(self.db, self.name, data, _SCHEMA)
        if pointer is not None:
            pointer.add(data)
        return row

    def rollback(self, run_id: str) -> ActiveModel:
        """Back to the previous model, while its table is retained."""
        current = self.get()
        if current is None or current.previous_key is None:
            raise PublishError(f"tenant {self.tenant!r} has no previous model to roll back to")
        return self.move(current.previous_key, run_id, "rollback")
