from typing import Any

from dagster import AssetExecutionContext, Output, asset

from assets.partitions import OWNERS, call_step, counts, manifest, tenant_partitions
from resources.runs import TenantRunResource
from tessera.pipeline.run import parse_step


@asset(
    partitions_def=tenant_partitions,
    group_name="indexing",
    kinds={"pymupdf", "markdown", "html"},
    owners=OWNERS,
)
def parsed_documents(
    context: AssetExecutionContext, tenant_run: TenantRunResource, source_listing: dict[str, Any]
) -> Output[dict[str, Any]]:
    """Changed documents parsed to normalized text, blocks and offset maps (staged on disk).

    Documents that fail to parse are quarantined with a typed reason; their old chunks stay.
    """
    rc = tenant_run.from_manifest(source_listing, context.run_id)
    summary = call_step(parse_step, rc)
    return Output(manifest(summary, rc.tenant, source_listing["workspace_id"]), metadata=counts(summary))
