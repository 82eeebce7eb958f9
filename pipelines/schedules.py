"""Scheduled corpus rebuilds: one run per tenant partition that needs one, on the configured
cron; weekly maintenance of every tenant."""

import logging

from dagster import RunRequest, ScheduleDefinition, ScheduleEvaluationContext, SkipReason, schedule

from assets import tenant_partitions
from pipelines.jobs import RUN_TAGS, index_tenant_job, maintain_index_job
from pipelines.noop import run_needed
from resources.runs import TenantRunResource
from tessera.pipeline.listing import check_sources

log = logging.getLogger(__name__)


def build_rebuild_schedule(cron: str) -> ScheduleDefinition:
    @schedule(
        job=index_tenant_job,
        cron_schedule=cron,
        name="tenant_rebuild_schedule",
        description=(
            "Rebuild every tenant that needs it: a run per tenant whose source, profile, model or "
            "parser changed, whose listing is incomplete or fails, or that was never published. "
            "An up-to-date tenant gets no run (what its run would publish: nothing). "
            "To rebuild regardless, launch a backfill of index_tenant."
        ),
        execution_timezone="UTC",
    )
    def tenant_rebuild_schedule(
        context: ScheduleEvaluationContext, tenant_run: TenantRunResource
    ) -> list[RunRequest] | SkipReason:
        tenants = context.instance.get_dynamic_partitions(tenant_partitions.name or "tenants")
        stamp = (
            context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
            if context.scheduled_execution_time
            else ""
        )
        requests = []
        for t in sorted(tenants):
            try:
                rc = tenant_run.context_for(t, run_id="rebuild-schedule")
                reason = run_needed(rc, check_sources(rc))
            except Exception as e:  # not swallowed: the run meets it again and records it where
                # operators look; one tenant's failing check never holds back the others
                reason = f"check failed: {type(e).__name__}"
                log.warning("%s: check failed, a run is requested to record it: %s", t, e)
            if reason is not None:
                tags = {**RUN_TAGS, "tessera/trigger": "schedule", "tessera/reason": reason[:200]}
                requests.append(RunRequest(partition_key=t, run_key=f"rebuild-{t}-{stamp}", tags=tags))
        if not requests:
            return SkipReason(f"all {len(tenants)} tenants are up to date")
        return requests

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
