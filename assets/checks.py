import warnings
from functools import partial
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    MetadataValue,
    PreviewWarning,
    asset_check,
)

from assets.chunk_embeddings import chunk_embeddings
from assets.freshness import freshness_metadata, freshness_of
from assets.partitions import allow_mass_delete, counts, tenant_partitions
from assets.published_index import published_index
from assets.source_listing import source_listing
from resources.runs import ALLOW_MASS_DELETE_TAG, TenantRunResource
from tessera.pipeline.footprint import with_footprint
from tessera.pipeline.freshness import FreshnessVerdict
from tessera.pipeline.listing import guard_status
from tessera.pipeline.run import gate_step, verify_step
from tessera.store.db import connect
from tessera.store.doctor import diagnose

# Partitioned asset checks are a Dagster "preview" feature; we rely on them knowingly.
warnings.filterwarnings("ignore", category=PreviewWarning, module="dagster")


@asset_check(asset=source_listing, partitions_def=tenant_partitions, blocking=True)
def mass_deletion_guard(
    context: AssetCheckExecutionContext, tenant_run: TenantRunResource, source_listing: dict[str, Any]
) -> AssetCheckResult:
    """Blocks the run when it would delete more of the tenant than its guard allows.

    Override for one run with the run tag ``tessera/allow_mass_delete=true``.
    """
    rc = tenant_run.from_manifest(source_listing, context.run.run_id, allow_mass_delete(context))
    plan = guard_status(rc)
    return AssetCheckResult(
        passed=not plan["blocked"],
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "to_delete": plan["to_delete"],
            "live_documents": plan["live_documents"],
            "fraction": plan["fraction"],
            "max_fraction": plan["max_fraction"],
            "override": plan["override"],
            "override_tag": ALLOW_MASS_DELETE_TAG,
            "would_delete": MetadataValue.json(plan["documents"]),
        },
    )


@asset_check(asset=published_index, partitions_def=tenant_partitions, blocking=True)
def published_index_integrity(
    context: AssetCheckExecutionContext, tenant_run: TenantRunResource, published_index: dict[str, Any]
) -> AssetCheckResult:
    """No stale ids, tenant and ACL on every row, vector dimension, sampled offsets vs source."""
    rc = tenant_run.from_manifest(published_index, context.run.run_id)
    (problems, stats), memory = with_footprint(rc.tenant, "verify", partial(verify_step, rc))
    return AssetCheckResult(
        passed=not problems,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            **stats,
            "problems": "\n".join(problems[:20]) or "none",
            **counts({"memory": memory.as_dict()}),
        },
    )


@asset_check(asset=chunk_embeddings, partitions_def=tenant_partitions, blocking=True)
def quality_gate(
    context: AssetCheckExecutionContext, tenant_run: TenantRunResource, chunk_embeddings: dict[str, Any]
) -> AssetCheckResult:
    """Golden-question recall@k of the staged version vs the published one (``tenants.T.quality``).

    Blocks publishing when recall drops by more than ``max_recall_drop``; skipped (passes)
    for a tenant without golden questions or a run that changes nothing.
    """
    rc = tenant_run.from_manifest(chunk_embeddings, context.run.run_id)
    result = gate_step(rc)
    return AssetCheckResult(
        passed=result.status != "blocked",
        severity=AssetCheckSeverity.ERROR,
        metadata={k: v for k, v in result.as_dict().items() if v is not None},
    )


@asset_check(asset=published_index, partitions_def=tenant_partitions, blocking=False)
def store_health(tenant_run: TenantRunResource, published_index: dict[str, Any]) -> AssetCheckResult:
    """``tessera doctor`` on the published table (read-only): WARN when something is safely
    repairable (``tessera doctor --repair``), ERROR when the table is damaged."""
    rc = tenant_run.from_manifest(published_index, "store-health")
    report = diagnose(connect(rc.config.store.uri, fresh=True), rc.tenant, rc.embedder.identity.key)
    return AssetCheckResult(
        passed=report.verdict == "ok",
        severity=AssetCheckSeverity.ERROR if report.verdict == "damaged" else AssetCheckSeverity.WARN,
        metadata={
            "verdict": report.verdict,
            "table": report.table,
            "last_good": report.last_good.label() if report.last_good else "none",
            "problems": "\n".join(report.problems()[:20]) or "none",
        },
    )


@asset_check(asset=published_index, partitions_def=tenant_partitions, blocking=False)
def index_freshness(tenant_run: TenantRunResource, published_index: dict[str, Any]) -> AssetCheckResult:
    """How stale the tenant's index is: a fresh, read-only listing of the source against what
    is live. WARN (never blocking) when a source change has waited longer than
    ``tenants.<t>.freshness.max_lag_seconds``, when the source cannot be listed, or when
    nothing was ever published; passes while every pending change is younger than the bound."""
    rc = tenant_run.from_manifest(published_index, "index-freshness")
    f = freshness_of(rc, tenant_run.sources)
    return AssetCheckResult(
        passed=f.verdict is FreshnessVerdict.FRESH,
        severity=AssetCheckSeverity.WARN,
        metadata=freshness_metadata(f),
        description=f"{f.verdict.value}: lag {f.lag_seconds:.0f}s of {f.max_lag_seconds:.0f}s allowed",
    )
