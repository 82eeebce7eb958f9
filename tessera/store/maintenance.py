"""Index maintenance: compact fragments, refresh indexes, prune old table versions.

Kept, always: the last ``keep_versions`` versions, every version with a tag that is not a
run tag (tags an operator set by hand), and the versions of the last ``keep_run_tags``
publications (``run-…`` tags). Older run tags are deleted first, then LanceDB removes the
versions older than the oldest kept one (it refuses to remove a tagged version, which is a
second guard). The whole pass holds the tenant's publish lock, so no run of that tenant
commits while it runs; files younger than LanceDB's safety window (7 days) that no version
references yet are never deleted, so a writer in another process is not disturbed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tessera.config import validate_tenant_id
from tessera.store.db import list_tables, open_table
from tessera.store.lock import tenant_lock

_MARGIN = timedelta(milliseconds=100)


@dataclass
class MaintenanceReport:
    table: str
    versions_before: int = 0
    versions_after: int = 0
    kept: list[int] = field(default_factory=list)
    run_tags_deleted: list[str] = field(default_factory=list)
    compacted: bool = False


def _ts(v: dict[str, Any]) -> datetime:
    t: datetime = v["timestamp"]
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def maintain_table(table: Any, keep_versions: int, keep_run_tags: int) -> MaintenanceReport:
    if keep_versions < 1 or keep_run_tags < 0:
        raise ValueError("keep_versions must be >= 1 and keep_run_tags >= 0")
    report = MaintenanceReport(table=table.name)
    table.optimize()  # compaction and index refresh: a new version, same rows
    report.compacted = True
    versions = sorted(table.list_versions(), key=lambda v: int(v["version"]))
    report.versions_before = len(versions)
    tags = {name: int(t["version"]) for name, t in table.tags.list().items()}
    run_tags = sorted((n for n in tags if n.startswith("run-")), key=lambda n: tags[n])
    expired = run_tags[: max(0, len(run_tags) - keep_run_tags)]
    keep = {int(v["version"]) for v in versions[-keep_versions:]}
    keep |= {v for n, v in tags.items() if n not in expired}
    for name in expired:
        if tags[name] not in keep:
            table.tags.delete(name)
            report.run_tags_deleted.append(name)
    oldest = min(_ts(v) for v in versions if int(v["version"]) in keep)
    older_than = datetime.now(UTC) - oldest + _MARGIN  # the margin keeps ``oldest`` itself
    if older_than > _MARGIN:
        table.optimize(cleanup_older_than=older_than)
    report.kept = sorted(keep)
    report.versions_after = len(table.list_versions())
    return report


def maintain_tenant(
    db: Any,
    work_dir: Path,
    tenant: str,
    table_names: list[str] | None = None,
    keep_versions: int = 10,
    keep_run_tags: int = 20,
) -> list[MaintenanceReport]:
    """Maintain the tenant's tables (default: every model's) under the tenant's publish lock."""
    if table_names is None:
        table_names = [n for n in list_tables(db) if n.startswith(f"chunks__{validate_tenant_id(tenant)}__")]
    out = []
    with tenant_lock(work_dir / "_locks", tenant):
        for name in table_names:
            table = open_table(db, name)
            if table is not None:
                out.append(maintain_table(table, keep_versions, keep_run_tags))
    return out
