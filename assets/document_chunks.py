from typing import Any

from dagster import AssetExecutionContext, Output, asset

from assets.partitions import OWNERS, call_step, counts, manifest, tenant_partitions
from resources.runs import TenantRunResource
from tessera.pipeline.run import chunk_step


@asset(partitions_def=tenant_partitions, group_name="indexing", kinds={"python", "parquet"}, owners=OWNERS)
def document_chunks(
    context: AssetExecutionContext, tenant_run: TenantRunResource, parsed_documents: dict[str, Any]
) -> Output[dict[str, Any]]:
    """Chunks of the changed documents, within the model's token budget (staged on disk)."""
    rc = tenant_run.from_manifest(parsed_documents, context.run_id)
    summary = call_step(chunk_step, rc)
    return Output(manifest(summary, rc.tenant, parsed_documents["workspace_id"]), metadata=counts(summary))
