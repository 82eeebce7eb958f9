from typing import Any

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from assets.partitions import OWNERS, tenant_partitions
from resources.runs import TenantRunResource
from tessera.store.maintenance import maintain_tenant


@asset(partitions_def=tenant_partitions, group_name="maintenance", kinds={"lancedb"}, owners=OWNERS)
def index_maintenance(
    context: AssetExecutionContext, tenant_run: TenantRunResource
) -> MaterializeResult[Any]:
    """Compact the tenant's tables, merge their index deltas, check the vector index's recall
    after compaction (rebuilt when under target) and prune old versions: every
    operator tag, the last 20 publication tags and the last 10 versions stay. Holds the
    tenant's publish lock."""
    rc = tenant_run.context_for(context.partition_key, context.run_id)
    reports = maintain_tenant(rc.db, rc.config.store.work_dir, rc.tenant, keep_versions=10, keep_run_tags=20)
    return MaterializeResult(
        metadata={
            "tables": len(reports),
            "versions_before": sum(r.versions_before for r in reports),
            "versions_after": sum(r.versions_after for r in reports),
            "run_tags_deleted": MetadataValue.json([t for r in reports for t in r.run_tags_deleted]),
            "segments_merged": MetadataValue.json(
                {r.table: r.segments_merged for r in reports if r.segments_merged}
            ),
            "vector_index": MetadataValue.json({r.table: r.vector_index for r in reports if r.vector_index}),
        }
    )
