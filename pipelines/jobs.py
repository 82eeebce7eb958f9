"""The tenant indexing job: the whole asset chain for one tenant partition."""

from dagster import AssetSelection, define_asset_job

from assets import EVALUATION_ASSETS, INDEXING_ASSETS, MAINTENANCE_ASSETS, tenant_partitions

RUN_TAGS = {
    # Run-level retry (needs run_retries enabled in dagster.yaml, as pipelines.main writes it).
    # Failures marked allow_retries=False (bad config, mass-deletion guard) are not retried.
    "dagster/max_retries": "2",
    "dagster/retry_strategy": "FROM_FAILURE",
    # Hang protection: run monitoring kills a run stuck past this many seconds.
    "dagster/max_runtime": "7200",
}

index_tenant_job = define_asset_job(
    name="index_tenant",
    selection=AssetSelection.assets(*INDEXING_ASSETS),
    partitions_def=tenant_partitions,
    description="List, parse, chunk, embed and publish one tenant (partition = tenant id).",
    # One run per tenant: dagster.yaml limits runs per unique `dagster/partition` tag value;
    # the core also holds a per-tenant lock around the publish.
    tags=RUN_TAGS,
)

evaluate_chunking_job = define_asset_job(
    name="evaluate_chunking",
    selection=AssetSelection.assets(*EVALUATION_ASSETS),
    description="Recall/IoU of chunking profiles on a question set (run config: corpus folder, grid).",
)

maintain_index_job = define_asset_job(
    name="maintain_index",
    selection=AssetSelection.assets(*MAINTENANCE_ASSETS),
    partitions_def=tenant_partitions,
    description="Compact one tenant's tables and prune old versions (tags and the last versions kept).",
)
