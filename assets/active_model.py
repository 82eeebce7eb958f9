from typing import Any

from dagster import AssetExecutionContext, Output, asset

from assets.partitions import OWNERS, counts, manifest, tenant_partitions
from resources.runs import TenantRunResource
from tessera.pipeline.cutover import cutover_step
from tessera.pipeline.run import verify_step


@asset(partitions_def=tenant_partitions, group_name="indexing", kinds={"lancedb"}, owners=OWNERS)
def active_model(
    context: AssetExecutionContext, tenant_run: TenantRunResource, published_index: dict[str, Any]
) -> Output[dict[str, Any]]:
    """The model serving the tenant: moves to this run's model once its table is verified and
    holds every listed document (first build, or the end of a backfill). One commit, per tenant.

    Runs only after the blocking ``published_index_integrity`` check passed.
    """
    rc = tenant_run.from_manifest(published_index, context.run_id)
    summary = cutover_step(rc, verify_step(rc)[0], rc.serving)
    return Output(manifest(summary, rc.tenant, published_index["workspace_id"]), metadata=counts(summary))
