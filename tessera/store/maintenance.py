"""Index maintenance: compact fragments, refresh indexes, prune old table versions.

Kept, always: the last ``keep_versions`` versions, every version with a tag that is not a
run tag (tags an operator set by hand), and the versions of the last ``keep_run_tags``
publications (``run-…`` tags). Older run tags are deleted first; then Lance removes every
untagged version outside the last ``keep_versions``, including those *between* tagged ones,
so an operator's old tag keeps its own version and no other. (``Table.optimize`` of lancedb
0.40 prunes only below the oldest tagged version and raises when one is older, so an old tag
pinned every later version; pruning here goes through pylance's ``cleanup_old_versions``
with ``error_if_tagged_old_versions=False``, which skips tagged versions instead.) So
``Table.optimize`` is not called at all (:func:`compact`): it prunes too, by its own rule (every
version older than seven days but the latest), so from a week after a tenant's first tag it
raised on every call, and on an untagged log it left one version whatever ``keep_versions``
said. Pylance's compaction and index refresh, which it runs around that prune, run here
without it, and the refresh merges nothing (:func:`compact`).

The tenant's publications log, failed-document queue and embedding caches are compacted and
pruned too (no tags: their rows are all kept, only old versions go), so a tenant's open cost
stays flat however often it publishes. The whole pass holds the tenant's publish lock, so no
run of that tenant commits while it runs; files younger than Lance's safety window (7 days)
that no version references are never deleted, so a writer in another process is not
disturbed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from tessera.config import validate_tenant_id
from tessera.store.db import list_tables, open_table, publications_table_name
from tessera.store.failures import failures_table_name
from tessera.store.indexes import merge_segments, recheck_vector_index
from tessera.store.lock import tenant_lock


@dataclass
class MaintenanceReport:
    table: str
    versions_before: int = 0
    versions_after: int = 0
    kept: list[int] = field(default_factory=list)
    run_tags_deleted: list[str] = field(default_factory=list)
    compacted: bool = False
    segments_merged: dict[str, int] = field(default_factory=dict)
    """Per index whose deltas were merged (``merge_segments``), the segments it had: a text or
    scalar index then has one, the vector index two (its trained segment and one delta)."""
    vector_index: str | None = None
    """The vector index after compaction (``recheck_vector_index``): kept or rebuilt, with its
    recall@10; None without one."""


def _versions(table: Any) -> list[int]:
    return sorted(int(v["version"]) for v in table.list_versions())


def compact(table: Any) -> None:
    """Compact the table's fragments (Lance remaps every index to the rewritten rows), then index
    the rows no index has as a delta segment of each, merging nothing: ``merge_segments`` merges
    afterwards, never into the vector index's trained segment.

    lancedb's ``Table.optimize`` runs ``optimize_indices`` with Lance's default options instead,
    which merged every vector segment into one, rebuilding the HNSW graphs: on a 102,400-row
    copy of the benchmark's vectors (a trained segment and three deltas) that took 21 s and
    recall@10 from 0.994 to 0.938, where compaction alone took 1.0 s and kept 1.0."""
    table.to_lance().optimize.compact_files()
    table.checkout_latest()
    table.to_lance().optimize.optimize_indices(num_indices_to_merge=0)
    table.checkout_latest()


def _prune(table: Any, keep_versions: int) -> None:
    """Remove every untagged version but the last ``keep_versions`` (tagged ones stay)."""
    table.to_lance().cleanup_old_versions(
        older_than=timedelta(0), retain_versions=keep_versions, error_if_tagged_old_versions=False
    )
    table.checkout_latest()


def maintain_table(table: Any, keep_versions: int, keep_run_tags: int) -> MaintenanceReport:
    if keep_versions < 1 or keep_run_tags < 0:
        raise ValueError("keep_versions must be >= 1 and keep_run_tags >= 0")
    report = MaintenanceReport(table=table.name)
    compact(table)  # a new version, same rows
    report.compacted = True
    report.segments_merged = merge_segments(table)  # compaction leaves the deltas
    report.vector_index = recheck_vector_index(table)  # measured, never assumed
    versions = _versions(table)
    report.versions_before = len(versions)
    tags = {name: int(t["version"]) for name, t in table.tags.list().items()}
    run_tags = sorted((n for n in tags if n.startswith("run-")), key=lambda n: tags[n])
    expired = run_tags[: max(0, len(run_tags) - keep_run_tags)]
    keep = set(versions[-keep_versions:])
    keep |= {v for n, v in tags.items() if n not in expired}
    for name in expired:
        if tags[name] not in keep:
            table.tags.delete(name)
            report.run_tags_deleted.append(name)
    _prune(table, keep_versions)
    after = _versions(table)
    report.kept = sorted(keep & set(after))
    report.versions_after = len(after)
    return report


def maintain_log(table: Any, keep_versions: int) -> MaintenanceReport:
    """Compact an append-only table (publications log, embedding cache) and prune its versions."""
    if keep_versions < 1:
        raise ValueError("keep_versions must be >= 1")
    report = MaintenanceReport(table=table.name, versions_before=len(table.list_versions()))
    compact(table)
    report.compacted = True
    _prune(table, keep_versions)
    report.kept = _versions(table)
    report.versions_after = len(report.kept)
    return report


def maintain_tenant(
    db: Any,
    work_dir: Path,
    tenant: str,
    table_names: list[str] | None = None,
    keep_versions: int = 10,
    keep_run_tags: int = 20,
) -> list[MaintenanceReport]:
    """Maintain ``table_names`` (chunk tables) under the tenant's publish lock; by default every
    model's chunk table, then the tenant's embedding caches, its publications log and its
    failed-document queue."""
    tenant = validate_tenant_id(tenant)
    logs: list[str] = []
    if table_names is None:
        names = list_tables(db)
        table_names = [n for n in names if n.startswith(f"chunks__{tenant}__")]
        logs = [n for n in names if n.startswith(f"embed_cache__{tenant}__")]
        logs += [n for n in names if n in (publications_table_name(tenant), failures_table_name(tenant))]
    out = []
    with tenant_lock(work_dir / "_locks", tenant):
        for name in table_names:
            table = open_table(db, name)
            if table is not None:
                out.append(maintain_table(table, keep_versions, keep_run_tags))
        for name in logs:
            table = open_table(db, name)
            if table is not None:
                out.append(maintain_log(table, keep_versions))
    return out
