"""The directory sensor: tenants' group membership refreshed on a schedule (thin; the logic is
``tessera.search.directory.membership.refresh_due``)."""

from dagster import DefaultSensorStatus, SensorEvaluationContext, SkipReason, sensor

from resources.config import TesseraConfigResource
from tessera.search.directory.membership import refresh_due


@sensor(
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "Refreshes the group membership of every tenant with a directory (tenants.T.directory) "
        "once it is refresh_seconds old, so that a change in LDAP reaches search within that bound "
        "even between API requests. Running by default: it requests no runs, reads only the "
        "directory and writes only {work_dir}/{tenant}/.directory-membership.json; tenants "
        "without a directory cost nothing. The API server and the CLI also refresh on read."
    ),
)
def directory_refresh_sensor(
    context: SensorEvaluationContext, tessera_config: TesseraConfigResource
) -> SkipReason:
    """Refreshes what is due; a failed tenant is logged (its grace keeps it served, then closed)."""
    outcomes = refresh_due(tessera_config.load())
    for o in outcomes:
        if o.error:
            context.log.error(f"{o.tenant}: directory refresh failed: {o.error}")
    done = [f"{o.tenant} ({o.users} users)" for o in outcomes if o.due and not o.error]
    failed = [o.tenant for o in outcomes if o.error]
    if not outcomes:
        return SkipReason("no tenant has a directory")
    return SkipReason(f"refreshed: {', '.join(done) or 'none due'}; failed: {', '.join(failed) or 'none'}")
