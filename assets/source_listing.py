import warnings
from typing import Any

from dagster import AssetExecutionContext, BetaWarning, DataVersion, Output, asset

from assets.partitions import OWNERS, call_step, counts, manifest, tenant_partitions
from resources.runs import TenantRunResource
from tessera.pipeline.run import list_step

# Output(data_version=...) is a Dagster beta parameter; we rely on it knowingly.
warnings.filterwarnings("ignore", category=BetaWarning, module="dagster")


@asset(partitions_def=tenant_partitions, group_name="indexing", kinds={"s3", "git", "python"}, owners=OWNERS)
def source_listing(context: AssetExecutionContext, tenant_run: TenantRunResource) -> Output[dict[str, Any]]:
    """The tenant's documents with revisions and ACLs, diffed against the live index.

    A failed or unprovable listing raises here, before anything downstream can delete; the
    verdict and its proof (e.g. "folder exists and lists 0 files") are in the metadata.
    """
    rc = tenant_run.context_for(context.partition_key, context.run_id)
    summary = call_step(list_step, rc)
    return Output(
        manifest(summary, rc.tenant, rc.workspace_id or rc.run_id),
        metadata=counts(summary),
        data_version=DataVersion(summary["index_version"]),  # changes with the model or chunking profile
    )
