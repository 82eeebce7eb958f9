"""Scheduled corpus rebuilds: one run per tenant partition, on the configured cron."""

from dagster import RunRequest, ScheduleDefinition, ScheduleEvaluationContext, schedule

from assets import tenant_partitions
from pipelines.jobs import RUN_TAGS, index_tenant_job, maintain_index_job


def build_rebuild_schedule(cron: str) -> ScheduleDefinition:
    @schedule(
        job=index_tenant_job,
        cron_schedule=cron,
        name="tenant_rebuild_schedule",
        description="Rebuild every tenant (unchanged documents cost nothing: only changes are embedded).",
        execution_timezone="UTC",
    )
    def tenant_rebuild_schedule(context: ScheduleEvaluationContext) -> list[RunRequest]:
        tenants = context.instance.get_dynamic_partitions(tenant_partitions.name or "tenants")
        stamp = (
            context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
            if context.scheduled_execution_time
            else ""
        )
        return [
            RunRequest(
                partition_key=t,
                run_key=f"rebuild-{t}-{stamp}",
                tags={**RUN_TAGS, "tessera/trigger": "schedule"},
            )
            for t in sorted(tenants)
        ]

    return tenant_rebuild_schedule


@schedule(
    job=maintain_index_job,
    cron_schedule="0 4 * * 0",
    name="index_maintenance_schedule",
    description="Weekly: compact and prune every tenant's tables.",
    execution_timezone="UTC",
)
def index_maintenance_schedule(context: ScheduleEvaluationContext) -> list[RunRequest]:
    tenants = context.instance.get_dynamic_partitions(tenant_partitions.name or "tenants")
    stamp = context.scheduled_execution_time.strftime("%Y%m%d") if context.scheduled_execution_time else ""
    return [RunRequest(partition_key=t, run_key=f"maintain-{t}-{stamp}") for t in sorted(tenants)]
