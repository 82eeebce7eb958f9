"""Safe restore: publications by default, counted before anything changes, guarded like a run.

* A restore targets a **publication**: a version logged in ``publications__<tenant>`` for this
  model, or one an operator or run tag names. Any other table version is an internal commit
  (an index refresh, a half-done experiment, the empty version 1 of a new table) and needs
  ``allow_untagged``.
* The plan counts what the restore would change, per document, against the live version:
  documents added back, removed, changed; rows now and then. ``--dry-run`` prints it.
* A restore that would remove more than the tenant guard's share of documents (from
  ``min_documents``), or every document at any size, is refused unless ``allow_mass_delete``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tessera.errors import PublishError, RestoreBlocked


@dataclass(frozen=True)
class RestoreGuard:
    max_delete_fraction: float = 0.3
    min_documents: int = 10


@dataclass(frozen=True)
class RestorePlan:
    tenant: str
    table: str
    target_version: int
    live_version: int
    labels: tuple[str, ...]
    """Tags and publication kinds naming the target (empty: an untagged internal version)."""
    documents_live: int
    documents_target: int
    rows_live: int
    rows_target: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    blocked: tuple[str, ...]
    """Why the restore is refused without an override (empty when it may go ahead)."""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("added", "removed", "changed"):
            out[key] = {"count": len(out[key]), "documents": list(out[key][:50])}
        return out


def _documents(table: Any) -> tuple[dict[str, str], int]:
    data = table.search().select(["doc_id", "revision"]).limit(None).to_arrow()
    docs = dict(zip(data.column("doc_id").to_pylist(), data.column("revision").to_pylist(), strict=True))
    return docs, data.num_rows


def target_labels(table: Any, publications: list[dict[str, Any]], version: int) -> tuple[str, ...]:
    tags = sorted(name for name, t in table.tags.list().items() if int(t["version"]) == version)
    kinds = sorted({f"publication:{p['kind']}" for p in publications if p["table_version"] == version})
    return tuple(tags + kinds)


def resolve_tag(table: Any, tag: str) -> int:
    tags = table.tags.list()
    if tag not in tags:
        raise PublishError(f"tag {tag!r} does not exist; known: {sorted(tags)}")
    return int(tags[tag]["version"])


def plan_restore(
    table: Any,
    reopen: Any,
    tenant: str,
    name: str,
    publications: list[dict[str, Any]],
    version: int,
    guard: RestoreGuard,
    allow_untagged: bool = False,
    allow_mass_delete: bool = False,
) -> RestorePlan:
    """What restoring ``version`` would do. ``reopen()`` gives a second handle of the table
    (checked out at the target, so the live handle is never moved)."""
    known = {int(v["version"]) for v in table.list_versions()}
    if version not in known:
        raise PublishError(f"version {version} does not exist; known: {sorted(known)}")
    live_docs, live_rows = _documents(table)
    old = reopen()
    old.checkout(version)
    then_docs, then_rows = _documents(old)
    labels = target_labels(table, publications, version)
    removed = sorted(set(live_docs) - set(then_docs))
    blocked: list[str] = []
    if not labels and not allow_untagged:
        blocked.append(
            f"version {version} is not a publication (no run or operator tag names it); "
            "restore a publication (see 'tessera versions') or pass the explicit flag for internal versions"
        )
    n = len(live_docs)
    if not allow_mass_delete and n:
        if not then_docs:
            blocked.append(f"version {version} holds no documents: the restore would empty the tenant")
        elif n >= guard.min_documents and len(removed) / n > guard.max_delete_fraction:
            blocked.append(
                f"the restore would remove {len(removed)} of {n} documents "
                f"({len(removed) / n:.0%} > {guard.max_delete_fraction:.0%})"
            )
    return RestorePlan(
        tenant=tenant,
        table=name,
        target_version=version,
        live_version=int(table.version),
        labels=labels,
        documents_live=n,
        documents_target=len(then_docs),
        rows_live=live_rows,
        rows_target=then_rows,
        added=tuple(sorted(set(then_docs) - set(live_docs))),
        removed=tuple(removed),
        changed=tuple(sorted(d for d in set(live_docs) & set(then_docs) if live_docs[d] != then_docs[d])),
        blocked=tuple(blocked),
    )


def check_plan(plan: RestorePlan) -> None:
    if plan.blocked:
        reasons = "; ".join(plan.blocked)
        raise RestoreBlocked(f"restore of version {plan.target_version} refused: {reasons}", plan.as_dict())
