"""The publish and verify steps: staged rows checked, guarded (deletion guard, quality gate)
and reconciled into the live table in one commit under the tenant's lock."""

from __future__ import annotations

import logging
import shutil
from dataclasses import asdict
from typing import Any

from tessera.errors import (
    MassDeletionBlocked,
    PublishError,
    QualityGateBlocked,
    StalePlanError,
)
from tessera.pipeline.checks import check_published
from tessera.pipeline.context import SENTENCE_COUNTS, SENTENCE_VECTORS, RunContext
from tessera.pipeline.gate import GateResult, quality_gate
from tessera.pipeline.listing import block_message, guard_status, plan_fingerprint
from tessera.pipeline.rows import StagedRows
from tessera.pipeline.staging import (
    CHUNKS,
    PARSED,
    VECTORS,
)
from tessera.pipeline.steps import listed_documents, staged_chunks
from tessera.store.lock import tenant_lock

log = logging.getLogger(__name__)


def candidate_scope(rc: RunContext) -> set[str]:
    """Documents this run would replace or remove: changed and parsed, plus removed."""
    data = rc.read("listing.json")
    return (set(data["to_parse"]) - _quarantined(rc)) | set(data["removed"])


def gate_step(rc: RunContext) -> GateResult:
    """The tenant's quality gate on the staged version (see :mod:`tessera.pipeline.gate`)."""
    done = rc.workspace / "quality_gate.json"
    if done.exists():  # already decided for this staged version (the Dagster check ran it)
        return GateResult(**rc.read("quality_gate.json"))
    scope = candidate_scope(rc)
    result = quality_gate(rc, scope, staged_chunks(rc)) if scope else GateResult("skipped", "nothing changes")
    rc.write("quality_gate.json", result.as_dict())
    return result


def _quarantined(rc: RunContext) -> set[str]:
    """Documents that failed to download, parse or chunk: neither updated nor deleted."""
    failed = rc.read("listing.json").get("quarantined", []) + rc.read("parse_report.json")["quarantined"]
    if (rc.workspace / "chunk_report.json").exists():
        failed = failed + rc.read("chunk_report.json")["quarantined"]
    return {q["doc_id"] for q in failed}


def publish_step(rc: RunContext) -> dict[str, Any]:
    """Stage rows, check them, then reconcile the changed documents in one commit.

    A re-execution of a publish that already committed this plan (a Dagster run retry after the
    worker died past the commit) returns the recorded summary instead of publishing twice."""
    data, docs = listed_documents(rc)
    done = rc.workspace / "publish.json"
    if done.exists():
        recorded: dict[str, Any] = rc.read("publish.json")
        if recorded.get("planned_from") == data.get("planned_from"):  # this execution commits nothing
            return {**recorded, "committed": False, "already_published": recorded.get("version")}
    staged = StagedRows(rc, docs)
    problems = staged.check()
    if problems:
        raise PublishError(f"staged rows failed checks: {problems[:5]}")
    quarantined = _quarantined(rc)
    replaced = set(data["to_parse"]) - quarantined
    new_chunks = dict.fromkeys(replaced, 0) | {d: n for d, n in staged.per_document.items() if d in replaced}
    deletion = guard_status(rc, new_chunks)
    if deletion["blocked"]:
        raise MassDeletionBlocked(block_message(deletion), deletion)
    gate = gate_step(rc)
    if gate.status == "blocked":
        raise QualityGateBlocked(f"quality gate: {gate.reason}", gate.as_dict())
    with tenant_lock(rc.config.store.work_dir / "_locks", rc.tenant):
        live = rc.index.manifest()
        scope = replaced | set(data["removed"])
        # Re-check under the lock: drop documents another run already brought up to date.
        cfg_hash = rc.chunk_context.config_hash
        for doc_id in list(scope):
            doc, state = docs.get(doc_id), live.get(doc_id)
            if (doc is None and state is None) or (
                doc is not None
                and state is not None
                and (state.revision, state.meta_hash, state.config_hash)
                == (doc.revision, doc.meta_hash, cfg_hash)
            ):
                scope.discard(doc_id)
        # Fencing: whatever is left is published only against the state this run planned from,
        # so an older run can never publish over a newer one; otherwise re-plan (run_tenant).
        if scope and data.get("planned_from") and plan_fingerprint(live) != data["planned_from"]:
            raise StalePlanError(
                f"the live index of {rc.tenant!r} changed after this run planned (another run published "
                "or a restore ran); nothing was published: list and plan again"
            )
        result = rc.index.publish(staged.reader(scope), scope, rc.run_id, cfg_hash)
    summary = {
        **asdict(result),
        "docs_changed": len(scope - set(data["removed"])),
        "docs_removed": len(set(data["removed"]) & scope),
        "quarantined": sorted(quarantined),
        "table": rc.index.name,
        "planned_from": data.get("planned_from", ""),
    }
    rc.write("publish.json", summary)
    for heavy in (PARSED, CHUNKS, VECTORS, SENTENCE_VECTORS, SENTENCE_COUNTS):
        path = rc.workspace / heavy
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    return summary


def verify_step(rc: RunContext, sample_size: int = 25) -> tuple[list[str], dict[str, int]]:
    """Checks on the live table against this run's listing (the asset check calls this)."""
    _, docs = listed_documents(rc)
    table = rc.index.table()
    if table is None:
        return ([] if not docs else ["no published table"]), {"rows": 0}
    quarantined = _quarantined(rc)
    return check_published(
        table, rc.tenant, rc.embedder.identity.dimension, docs, quarantined, rc.blobs, sample_size
    )
