"""The publish and verify steps: staged rows checked, guarded (deletion guard, quality gate)
and reconciled into the live table in one commit under the tenant's lock."""

from __future__ import annotations

import itertools
import logging
import shutil
from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any

import pyarrow as pa

from tessera.errors import (
    MassDeletionBlocked,
    PublishError,
    QualityGateBlocked,
    StalePlanError,
)
from tessera.parsing.base import ParserVersions
from tessera.pipeline import parse_cache
from tessera.pipeline.checks import VerifyInputs, check_rows
from tessera.pipeline.context import SENTENCE_COUNTS, SENTENCE_VECTORS, RunContext
from tessera.pipeline.failures import update_queue
from tessera.pipeline.gate import GateResult, quality_gate
from tessera.pipeline.listing import block_message, guard_status, plan_fingerprint
from tessera.pipeline.progress import log as progress_log
from tessera.pipeline.relabel import relabelled
from tessera.pipeline.rows import StagedRows
from tessera.pipeline.staging import (
    CHUNK_REPORT,
    CHUNKS,
    PARSE_REPORT,
    PARSED,
    PUBLISH_REPORT,
    QUALITY_GATE,
    VECTORS,
)
from tessera.pipeline.steps import listed_documents, staged_chunks
from tessera.pipeline.verified import VERIFIED_FILE, verify_published
from tessera.store.index import StreamedRows, document_revisions
from tessera.store.lock import tenant_lock
from tessera.store.memory import release_memory
from tessera.types import SourceDocument

log = logging.getLogger(__name__)


def candidate_scope(rc: RunContext) -> set[str]:
    """Documents this run would replace or remove: changed and parsed, plus removed."""
    data = rc.listing()[0]
    return (set(data["to_parse"]) - _quarantined(rc)) | set(data["removed"])


def gate_step(rc: RunContext) -> GateResult:
    """The tenant's quality gate on the staged version (see :mod:`tessera.pipeline.gate`)."""
    done = rc.workspace / QUALITY_GATE
    if done.exists():  # already decided for this staged version (the Dagster check ran it)
        return GateResult(**rc.read(QUALITY_GATE))
    scope = candidate_scope(rc)
    result = (
        quality_gate(rc, scope, lambda: staged_chunks(rc))
        if scope
        else GateResult("skipped", "nothing changes")
    )
    rc.write(QUALITY_GATE, result.as_dict())
    return result


def _quarantined(rc: RunContext) -> set[str]:
    """Documents that failed to download, parse or chunk: neither updated nor deleted."""
    failed = rc.listing()[0].get("quarantined", []) + rc.read(PARSE_REPORT)["quarantined"]
    if (rc.workspace / CHUNK_REPORT).exists():
        failed = failed + rc.read(CHUNK_REPORT)["quarantined"]
    return {q["doc_id"] for q in failed}


def publish_step(rc: RunContext) -> dict[str, Any]:
    """Stage rows, check them, then reconcile the changed documents in one commit.

    A re-execution of a publish that already committed this plan (a Dagster run retry after the
    worker died past the commit) returns the recorded summary instead of publishing twice."""
    data, docs = listed_documents(rc)
    done = rc.workspace / PUBLISH_REPORT
    if done.exists():
        recorded: dict[str, Any] = rc.read(PUBLISH_REPORT)
        if recorded.get("planned_from") == data.get("planned_from"):  # this execution commits nothing
            return {**recorded, "committed": False, "already_published": recorded.get("version")}
    staged = StagedRows(rc, docs)
    problems = staged.check()
    release_memory()  # the checked batches' buffers, before the commit reads them again
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
    relabel = set(data.get("relabel", []))
    scope = replaced | set(data["removed"]) | relabel
    with tenant_lock(rc.config.store.work_dir / "_locks", rc.tenant):
        if scope and not _committed_nothing_since(rc, data):
            _fence(rc, data, docs, scope)
        rows = staged.reader(scope - relabel if relabel else scope)  # not a copy of every id
        if scope & relabel:  # read under the lock, after the fencing check: the state planned from
            rows = _with_relabelled(rc, rows, scope & relabel, docs)
        if scope <= relabel:  # every live row of every document in scope: none can go
            rows = replace(rows, whole=True)
        # what the commit no longer needs goes before its index builds allocate (at 100,000
        # documents the replaced set, the guard's counts and the staged per-document counts:
        # about 11 MB of hash tables under the vector build, the run's peak; the listing's
        # lookup by id, another 11 MB, is built again if a later step asks)
        staged.drop_counts()
        docs.drop_lookup()
        del replaced, new_chunks, staged
        result = rc.index.publish(rows, scope, rc.run_id, rc.chunk_context.config_hash)
        queue = update_queue(rc)  # the failed-document queue, once the publish committed
    summary = {
        **asdict(result),
        "docs_changed": len(scope - set(data["removed"])),
        "docs_removed": len(set(data["removed"]) & scope),
        "quarantined": sorted(quarantined),
        "table": rc.index.name,
        "planned_from": data.get("planned_from", ""),
        "failures": {"failed": len(queue.failed), "cleared": len(queue.cleared), "version": queue.version},
    }
    rc.write(PUBLISH_REPORT, summary)
    if result.committed:
        progress_log.info(
            "%s publish: version %s of %s (chunks +%d/~%d/-%d; %d documents changed, %d removed)",
            rc.tenant, result.version, rc.index.name, result.inserted, result.updated, result.deleted,
            summary["docs_changed"], summary["docs_removed"],
        )  # fmt: skip
    else:
        progress_log.info("%s publish: nothing changed, version %s stays live", rc.tenant, result.version)
    parse_cache.adopt(
        rc.workspace / parse_cache.PENDING, parse_cache.cache_dir(rc.config.store.work_dir, rc.tenant)
    )
    for heavy in (PARSED, CHUNKS, VECTORS, SENTENCE_VECTORS, SENTENCE_COUNTS):
        path = rc.workspace / heavy
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    return summary


def _committed_nothing_since(rc: RunContext, data: dict[str, Any]) -> bool:
    """Whether the live table is still at the commit this run planned from. Then its state is
    the planned one, so every document in scope still differs from it (that is how the listing
    chose them) and :func:`_fence` would neither drop one nor refuse: its manifest read is
    skipped. A listing without the commit (no table then, or an older release) is fenced."""
    planned_at = data.get("planned_at") or ""
    return bool(planned_at) and rc.index.commit_key() == planned_at


def _fence(rc: RunContext, data: dict[str, Any], docs: Mapping[str, SourceDocument], scope: set[str]) -> None:
    """Re-check under the lock, against the live manifest: drop from ``scope`` the documents
    another run already brought up to date; then publish what is left only against the state
    this run planned from, so an older run never publishes over a newer one (otherwise
    :class:`StalePlanError`, and ``run_tenant`` plans again)."""
    live = rc.index.manifest()
    cfg_hash = rc.chunk_context.config_hash
    parsers = ParserVersions()
    for doc_id in list(scope):
        doc, state = docs.get(doc_id), live.get(doc_id)
        if (doc is None and state is None) or (
            doc is not None
            and state is not None
            and (state.revision, state.meta_hash, state.config_hash)
            == (doc.revision, doc.meta_hash, cfg_hash)
            and not parsers.changed(doc.content_type, state.parser_version)
        ):
            scope.discard(doc_id)
    if scope and data.get("planned_from") and plan_fingerprint(live) != data["planned_from"]:
        raise StalePlanError(
            f"the live index of {rc.tenant!r} changed after this run planned (another run published "
            "or a restore ran); nothing was published: list and plan again"
        )


def _with_relabelled(
    rc: RunContext, staged: StreamedRows, doc_ids: set[str], docs: Mapping[str, SourceDocument]
) -> StreamedRows:
    """The staged rows followed by the relabelled live rows of ``doc_ids``, checked as staged
    rows are (tenant, an ACL on every row, ids, vector type)."""
    table = rc.index.table()
    assert table is not None  # relabelled documents have live rows (the fencing check held)
    schema = rc.index.schema
    extra = relabelled(table, doc_ids, docs, rc.run_id, schema)
    problems = check_rows(extra, rc.tenant, rc.embedder.identity.dimension)
    if problems:
        raise PublishError(f"relabelled rows failed checks: {problems[:5]}")

    def open_reader() -> pa.RecordBatchReader:
        batches = itertools.chain(staged.open(), extra.to_batches())
        return pa.RecordBatchReader.from_batches(schema, batches)

    ids = frozenset(extra.column("doc_id").to_pylist())
    return StreamedRows(open_reader, staged.num_rows + extra.num_rows, staged.doc_ids | ids)


def verify_step(rc: RunContext, sample_size: int = 25) -> tuple[list[str], dict[str, int]]:
    """Checks on the live table against this run's listing (the asset check calls this)."""
    _, docs = listed_documents(rc)
    table = rc.index.table()
    if table is None:
        return ([] if not docs else ["no published table"]), {"rows": 0}
    quarantined = _quarantined(rc)
    if rc.doc_scope is not None:  # a retry answers for its documents only: others may be stale
        quarantined |= set(document_revisions(table)) - rc.doc_scope
    path = rc.config.store.work_dir / rc.tenant / VERIFIED_FILE
    inputs = VerifyInputs(
        rc.tenant, rc.embedder.identity.dimension, docs.revisions(), quarantined, sample_size
    )
    return verify_published(table, inputs, rc.blobs, path)
