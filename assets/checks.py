import warnings
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    PreviewWarning,
    asset_check,
)

from assets.partitions import tenant_partitions
from assets.published_index import published_index
from resources.runs import TenantRunResource
from tessera.run import verify_step

# Partitioned asset checks are a Dagster "preview" feature; we rely on them knowingly.
warnings.filterwarnings("ignore", category=PreviewWarning, module="dagster")


@asset_check(asset=published_index, partitions_def=tenant_partitions, blocking=True)
def published_index_integrity(
    context: AssetCheckExecutionContext, tenant_run: TenantRunResource, published_index: dict[str, Any]
) -> AssetCheckResult:
    """No stale ids, tenant and ACL on every row, vector dimension, sampled offsets vs source."""
    rc = tenant_run.from_manifest(published_index, context.run.run_id)
    problems, stats = verify_step(rc)
    return AssetCheckResult(
        passed=not problems,
        severity=AssetCheckSeverity.ERROR,
        metadata={**stats, "problems": "\n".join(problems[:20]) or "none"},
    )
