"""Model cutover: a tenant's active pointer moves to a new model only when its table is complete.

A run with a model other than the active one builds that model's table next to the active
one (the table name carries the model key; the embedding cache is keyed by model too, so the
old model's vectors are never reused). Queries keep being served by the active model. After
the run's checks pass and the new table holds every listed document the active model serves
(a document quarantined in the new build would vanish from answers), the pointer moves in
one commit (:mod:`tessera.store.active`). The first build of a tenant activates its model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tessera.embedding.base import Embedder
from tessera.pipeline.context import RunContext
from tessera.pipeline.gate import cutover_gate
from tessera.store.active import ActivePointer
from tessera.store.db import chunks_table_name, open_table
from tessera.store.index import document_revisions


def _documents(rc: RunContext, model_key: str) -> set[str]:
    table = open_table(rc.db, chunks_table_name(rc.tenant, model_key))
    return set() if table is None else set(document_revisions(table))


def cutover_step(rc: RunContext, problems: list[str], serving: Sequence[Embedder] = ()) -> dict[str, Any]:
    """Activate this run's model for the tenant when it is verified, complete and, with a golden
    set, not worse than the active model. ``serving``: embedders that may be the active model
    (``embedding.previous``); the quality gate queries the active table with it."""
    key = rc.embedder.identity.key
    pointer = ActivePointer(rc.db, rc.tenant)
    current = pointer.get()
    out: dict[str, Any] = {"model": key, "active": current.model_key if current else None, "moved": False}
    if current is not None and current.model_key == key:
        return {**out, "reason": "already active"}
    if problems:
        return {**out, "reason": f"checks failed: {problems[:3]}"}
    listed = set(rc.listing()[1])
    built = rc.index.document_ids()
    served = _documents(rc, current.model_key) if current is not None else set()
    missing = sorted((listed & served) - built)  # documents the active model serves and the new one lacks
    if missing:
        return {
            **out,
            "reason": f"{len(missing)} listed documents are not in the new table",
            "missing": missing[:20],
        }
    if not built:
        return {**out, "reason": "the new table is empty"}
    if current is not None and rc.config.tenant(rc.tenant).quality is not None:
        active_embedder = next((e for e in serving if e.identity.key == current.model_key), None)
        active_table = open_table(rc.db, chunks_table_name(rc.tenant, current.model_key))
        if active_embedder is None or active_table is None:
            return {**out, "reason": f"the quality gate needs the active model {current.model_key} "
                    "(list it under embedding.previous)"}  # fmt: skip
        gate = cutover_gate(rc, active_table, active_embedder)
        if gate.status == "blocked":
            return {**out, "reason": f"quality gate: {gate.reason}", "quality_gate": gate.as_dict()}
    moved = pointer.move(key, rc.run_id, "first build" if current is None else "backfill complete")
    return {**out, "active": moved.model_key, "moved": True, "previous": moved.previous_key}
