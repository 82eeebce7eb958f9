"""Keep the tenant partitions in step with the configuration file."""

from dagster import SensorEvaluationContext, SensorResult, sensor

from assets import tenant_partitions
from pipelines.jobs import index_tenant_job
from resources.config import TesseraConfigResource


@sensor(job=index_tenant_job, minimum_interval_seconds=60)
def tenant_partitions_sensor(
    context: SensorEvaluationContext, tessera_config: TesseraConfigResource
) -> SensorResult:
    """Adds a partition for each configured tenant that has none (removal is explicit)."""
    configured = sorted(tessera_config.load().tenants)
    known = set(context.instance.get_dynamic_partitions(tenant_partitions.name or "tenants"))
    new = [t for t in configured if t not in known]
    return SensorResult(
        dynamic_partitions_requests=[tenant_partitions.build_add_request(new)] if new else [],
        run_requests=[],
    )
