"""The tenant indexing job: the whole asset chain for one tenant partition."""

from dagster import AssetSelection, define_asset_job

from assets import INDEXING_ASSETS, tenant_partitions

index_tenant_job = define_asset_job(
    name="index_tenant",
    selection=AssetSelection.assets(*INDEXING_ASSETS),
    partitions_def=tenant_partitions,
    description="List, parse, chunk, embed and publish one tenant (partition = tenant id).",
    # One run per tenant: dagster.yaml limits runs per unique `dagster/partition` tag value;
    # the core also holds a per-tenant lock around the publish.
)
