"""Tenants are dynamic partitions, added from the configuration file by a sensor or the CLI."""

from collections.abc import Callable
from functools import partial
from typing import Any

from dagster import (
    DagsterError,
    DynamicPartitionsDefinition,
    Failure,
    MetadataValue,
    TableColumn,
    TableSchema,
)

from resources.runs import ALLOW_MASS_DELETE_TAG
from tessera.errors import (
    ConfigError,
    MassDeletionBlocked,
    ModelIdentityError,
    PermanentEmbeddingError,
    StalePlanError,
)
from tessera.pipeline.footprint import measured
from tessera.pipeline.run import RunContext
from tessera.store.memory import release_memory

# Retrying cannot fix these. A stale plan (another run published after this one planned) is
# re-planned by the next run, never by re-executing the same publish step.
PERMANENT = (ConfigError, MassDeletionBlocked, ModelIdentityError, PermanentEmbeddingError, StalePlanError)

tenant_partitions = DynamicPartitionsDefinition(name="tenants")
OWNERS = ["team:search-platform"]
"""Who answers for every Tessera asset (Dagster asset owners; change to your team)."""


def manifest(summary: dict[str, Any], tenant: str, workspace_id: str) -> dict[str, Any]:
    """The small dict passed between assets: the step summary plus where its files are."""
    return {**summary, "tenant": tenant, "workspace_id": workspace_id}


def counts(summary: dict[str, Any]) -> dict[str, Any]:
    """Numbers and short strings of a summary as Dagster metadata."""
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if key == "memory" and isinstance(value, dict):  # numbers, which Dagster plots by run
            out.update({k: v for k, v in value.items() if isinstance(v, int | float)})
        elif isinstance(value, bool | int | float | str):
            out[key] = value
        elif isinstance(value, dict | list):
            out[key] = MetadataValue.json(value)
    return out


def run_tags(context: Any) -> dict[str, str]:
    try:
        return dict(context.run.tags)
    except (DagsterError, AttributeError):  # direct invocation has no run
        return {}


def allow_mass_delete(context: Any) -> bool:
    """Whether the run carries the explicit mass-deletion override tag."""
    return run_tags(context).get(ALLOW_MASS_DELETE_TAG, "").lower() == "true"


def call_step(step: Callable[[RunContext], dict[str, Any]], rc: RunContext) -> dict[str, Any]:
    """Run a core step; errors that a retry cannot fix fail without spending retries. The
    summary carries the step's ``memory`` footprint (:mod:`tessera.pipeline.footprint`), which
    :func:`counts` makes the asset's metadata."""
    name = getattr(step, "__name__", "step").removesuffix("_step")
    try:
        return measured(rc.tenant, name, partial(step, rc))
    except PERMANENT as e:
        raise Failure(description=f"{type(e).__name__}: {e}", allow_retries=False) from e
    finally:
        release_memory()  # the next step of an in-process run starts from what it needs


def table_metadata(rc: RunContext) -> dict[str, Any]:
    """Dagster's table metadata of the tenant's live table: rows, columns and name."""
    table = rc.index.table()
    if table is None:
        return {"dagster/row_count": 0}
    columns = [TableColumn(f.name, str(f.type)) for f in table.schema]
    return {
        "dagster/row_count": int(table.count_rows()),
        "dagster/column_schema": TableSchema(columns=columns),
        "dagster/table_name": rc.index.name,
    }
