from typing import Any

from dagster import AssetExecutionContext, MetadataValue, Output, asset

from assets.freshness import published_freshness
from assets.partitions import (
    OWNERS,
    allow_mass_delete,
    call_step,
    counts,
    manifest,
    table_metadata,
    tenant_partitions,
)
from resources.runs import TenantRunResource
from tessera.pipeline.failures import queue_summary
from tessera.pipeline.lineage import lineage_step
from tessera.pipeline.run import publish_step
from tessera.store.failures import FailureSummary


def failure_metadata(summary: FailureSummary) -> dict[str, Any]:
    reasons = {reason: n for reason, n in summary.top_reasons}
    return {"failed_documents": summary.count, "failed_top_reasons": MetadataValue.json(reasons)}


@asset(partitions_def=tenant_partitions, group_name="indexing", kinds={"lancedb"}, owners=OWNERS)
def published_index(
    context: AssetExecutionContext, tenant_run: TenantRunResource, chunk_embeddings: dict[str, Any]
) -> Output[dict[str, Any]]:
    """The tenant's LanceDB table: changed documents reconciled in one tagged commit.

    Staged rows are checked first; nothing changed means no new table version.
    """
    rc = tenant_run.from_manifest(chunk_embeddings, context.run_id, allow_mass_delete(context))
    summary = call_step(publish_step, rc)
    lineage = lineage_step(rc)
    metadata = {
        **counts(summary),
        "lineage_report": MetadataValue.path(lineage["report"]),
        "provenance_sample": MetadataValue.md(lineage["sample"]),
        **failure_metadata(queue_summary(rc)),  # the failed-document queue after this publish
        **published_freshness(rc, tenant_run.sources),  # lag, pending, verdict (read-only)
        **table_metadata(rc),  # rows, column schema, table name
    }
    return Output(manifest(summary, rc.tenant, chunk_embeddings["workspace_id"]), metadata=metadata)
