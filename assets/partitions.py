"""Tenants are dynamic partitions, added from the configuration file by a sensor or the CLI."""

from typing import Any

from dagster import DynamicPartitionsDefinition, MetadataValue

tenant_partitions = DynamicPartitionsDefinition(name="tenants")


def manifest(summary: dict[str, Any], tenant: str, workspace_id: str) -> dict[str, Any]:
    """The small dict passed between assets: the step summary plus where its files are."""
    return {**summary, "tenant": tenant, "workspace_id": workspace_id}


def counts(summary: dict[str, Any]) -> dict[str, Any]:
    """Numbers and short strings of a summary as Dagster metadata."""
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if isinstance(value, bool | int | float | str):
            out[key] = value
        elif isinstance(value, dict | list):
            out[key] = MetadataValue.json(value)
    return out
