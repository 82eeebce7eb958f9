"""Sensors: tenant partitions follow the configuration; source changes request runs."""

from collections.abc import Iterator

from dagster import (
    AddDynamicPartitionsRequest,
    DefaultSensorStatus,
    DeleteDynamicPartitionsRequest,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from assets import tenant_partitions
from assets.activity import activity_materialization
from pipelines.jobs import RUN_TAGS, index_tenant_job
from resources.config import TesseraConfigResource
from resources.runs import TenantRunResource
from tessera.errors import TesseraError
from tessera.pipeline.listing import check_sources
from tessera.store.activity import ActivityJournal, JournalCursor

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


@sensor(
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "Shows index changes made outside Dagster (tessera run, retry, restore, model rollback, "
        "maintain, tenant purge) as materializations of the tenant's partition, within about 30 s. "
        "Running by default: it only reads the activity journal and requests no runs."
    ),
)
def cli_activity_sensor(
    context: SensorEvaluationContext, tessera_config: TesseraConfigResource
) -> SensorResult:
    """Reports the journal lines written since the cursor; the cursor moves past them."""
    journal = ActivityJournal(tessera_config.load().store.work_dir)
    read = journal.read(JournalCursor.decode(context.cursor))
    if read.restarted:
        context.log.warning(f"{journal.path} was replaced or truncated: read again from its start")
    if read.malformed:
        context.log.warning(f"{journal.path}: skipped {read.malformed} lines that are not index events")
    events = [activity_materialization(e) for e in read.events]
    skip = None if events else "no index change outside Dagster since the last tick"
    return SensorResult(asset_events=events, cursor=read.cursor.encode(), skip_reason=skip)
