"""Index changes made outside Dagster (the CLI's activity journal) as asset materializations."""

from typing import Any

from dagster import AssetKey, AssetMaterialization, MetadataValue

from assets.index_maintenance import index_maintenance
from assets.published_index import published_index
from tessera.store.activity import INDEX_ASSET, MAINTENANCE_ASSET, IndexActivity

ASSET_KEYS: dict[str, AssetKey] = {INDEX_ASSET: published_index.key, MAINTENANCE_ASSET: index_maintenance.key}


def activity_materialization(event: IndexActivity) -> AssetMaterialization:
    """The tenant partition's materialization for one journal event: the same metadata names
    as the job's (``version``, ``inserted``, ...), plus where the change came from."""
    metadata: dict[str, Any] = {
        "tessera/surface": event.surface,
        "tessera/action": event.action,
        "run_id": event.run_id,
        "recorded_at": event.at,
        "table": event.table,
        "version": MetadataValue.int(event.version) if event.version is not None else MetadataValue.null(),
        "inserted": event.inserted,
        "updated": event.updated,
        "deleted": event.deleted,
        "docs_changed": event.docs_changed,
        "docs_removed": event.docs_removed,
    }
    if event.rows is not None:
        metadata["dagster/row_count"] = event.rows
    return AssetMaterialization(
        asset_key=ASSET_KEYS[event.asset],
        partition=event.tenant,
        description=f"{event.surface} {event.action}: {event.detail or 'committed'}",
        metadata=metadata,
    )
