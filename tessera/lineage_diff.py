"""What changed between two versions of a tenant's table, per document, and why.

Chunk ids are content-addressed, so a chunk is never edited in place: a document's chunks are
added, removed or kept. Each document that differs gets one :class:`DocumentChange` with the
reason read from the rows themselves: a new or removed document, another source revision, a
parser, chunking profile or model change, or only its access or dates (a relabel: same chunks,
other readers).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Literal

from tessera.errors import InvalidArgument
from tessera.store.index import TenantIndex

Status = Literal["added", "removed", "changed", "relabelled"]

COLUMNS = [
    "id", "doc_id", "revision", "meta_hash", "chunking_config_hash", "parser_version",
    "model_version", "readers", "groups", "effective_from_us", "effective_to_us",
]  # fmt: skip


@dataclass(frozen=True)
class DocumentChange:
    doc_id: str
    status: Status
    why: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    kept: int = 0


@dataclass(frozen=True)
class PublicationDiff:
    tenant: str
    table: str
    old_version: int
    new_version: int
    documents: tuple[DocumentChange, ...]

    @property
    def added(self) -> int:
        return sum(len(d.added) for d in self.documents)

    @property
    def removed(self) -> int:
        return sum(len(d.removed) for d in self.documents)


def rows_at(index: TenantIndex, version: int) -> list[dict[str, Any]]:
    """The diff columns of every row of the table as it was at ``version``."""
    table = index.table()
    if table is None:
        raise InvalidArgument("--diff", f"tenant {index.tenant!r} has no published table")
    known = {int(v["version"]) for v in table.list_versions()}
    if version not in known:
        raise InvalidArgument(
            "--diff", f"version {version} of {index.name} does not exist (see tessera versions)"
        )
    table.checkout(version)  # a handle of its own: the live one is never moved
    cols = [c for c in COLUMNS if c in table.schema.names]  # older versions lack parser_version
    rows: list[dict[str, Any]] = table.search().select(cols).limit(None).to_arrow().to_pylist()
    return rows


def _access(r: dict[str, Any]) -> str:
    readers, groups = sorted(r["readers"] or []), sorted(r["groups"] or [])
    return f"groups [{', '.join(groups)}] readers [{', '.join(readers)}]"


def _why(old: dict[str, Any], new: dict[str, Any], same_chunks: bool) -> tuple[Status, str]:
    if old["revision"] != new["revision"]:
        return "changed", f"source changed: revision {old['revision'][:12]} -> {new['revision'][:12]}"
    for key, what in (
        ("model_version", "model"),
        ("chunking_config_hash", "chunking profile"),
        ("parser_version", "parser"),
    ):
        if old.get(key) != new.get(key):
            return "changed", f"{what} changed: {old.get(key)} -> {new.get(key)}"
    if same_chunks:
        if _access(old) != _access(new):
            return "relabelled", f"access changed: {_access(old)} -> {_access(new)}"
        return "relabelled", "effective dates changed"
    return "changed", "re-chunked (same source, parser, profile and model)"


def diff_versions(index: TenantIndex, old_version: int, new_version: int) -> PublicationDiff:
    """Per-document changes from ``old_version`` to ``new_version`` (documents that differ only)."""
    before: dict[str, list[dict[str, Any]]] = defaultdict(list)
    after: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows_at(index, old_version):
        before[r["doc_id"]].append(r)
    for r in rows_at(index, new_version):
        after[r["doc_id"]].append(r)
    changes: list[DocumentChange] = []
    for doc_id in sorted(set(before) | set(after)):
        old, new = before.get(doc_id, []), after.get(doc_id, [])
        old_ids, new_ids = {r["id"] for r in old}, {r["id"] for r in new}
        added, removed = tuple(sorted(new_ids - old_ids)), tuple(sorted(old_ids - new_ids))
        kept = len(old_ids & new_ids)
        if not old:
            changes.append(DocumentChange(doc_id, "added", "new document", added=added))
        elif not new:
            changes.append(DocumentChange(doc_id, "removed", "no longer published", removed=removed))
        elif added or removed or old[0]["meta_hash"] != new[0]["meta_hash"]:
            status, why = _why(old[0], new[0], not added and not removed)
            changes.append(DocumentChange(doc_id, status, why, added, removed, kept))
    return PublicationDiff(index.tenant, index.name, old_version, new_version, tuple(changes))
