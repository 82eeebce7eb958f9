"""Sensors: tenant partitions follow the configuration; source changes request runs."""

from collections.abc import Iterator

from dagster import (
    AddDynamicPartitionsRequest,
    DeleteDynamicPartitionsRequest,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from assets import tenant_partitions
from pipelines.jobs import RUN_TAGS, index_tenant_job
from resources.config import TesseraConfigResource
from resources.runs import TenantRunResource
from tessera.errors import TesseraError
from tessera.pipeline.listing import check_sources

PARTITIONS = tenant_partitions.name or "tenants"


@sensor(job=index_tenant_job, minimum_interval_seconds=60)
def tenant_partitions_sensor(
    context: SensorEvaluationContext, tessera_config: TesseraConfigResource
) -> SensorResult:
    """Adds a partition per configured tenant and removes partitions of removed tenants.

    Removing a partition deletes no data: `tessera tenant purge T` does, explicitly.
    """
    configured = set(tessera_config.load().tenants)
    known = set(context.instance.get_dynamic_partitions(PARTITIONS))
    new, gone = sorted(configured - known), sorted(known - configured)
    requests: list[AddDynamicPartitionsRequest | DeleteDynamicPartitionsRequest] = []
    if new:
        requests.append(tenant_partitions.build_add_request(new))
    if gone:
        requests.append(tenant_partitions.build_delete_request(gone))
    return SensorResult(dynamic_partitions_requests=requests, run_requests=[])


@sensor(job=index_tenant_job, minimum_interval_seconds=300)
def source_change_sensor(
    context: SensorEvaluationContext, tenant_run: TenantRunResource
) -> Iterator[RunRequest | SkipReason]:
    """Requests a tenant run when its source listing differs from what is published.

    The run key is the listing's fingerprint, so one change triggers one run. A tenant whose
    listing fails is skipped (and logged): an outage never triggers a run, let alone a delete.
    """
    requested = 0
    for tenant in sorted(context.instance.get_dynamic_partitions(PARTITIONS)):
        try:
            status = check_sources(tenant_run.context_for(tenant, run_id="source-change-sensor"))
        except TesseraError as e:
            context.log.warning(f"{tenant}: listing failed, no run requested: {e}")
            continue
        if status["changed"] or status["meta_only"] or status["removed"]:
            requested += 1
            yield RunRequest(
                partition_key=tenant,
                run_key=f"{tenant}-{status['fingerprint'][:32]}",
                tags={**RUN_TAGS, "tessera/trigger": "source_change"},
            )
    if not requested:
        yield SkipReason("no tenant's source changed since its last publish")
