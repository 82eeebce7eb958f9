"""Open-time health of a tenant's chunk table: refuse a damaged table, name the last good publication.

A table whose latest manifest was deleted opens without error at the version before it, and
would serve (and publish over) silently older rows. Two cheap signals catch that when the
table is opened (:func:`open_checked`, the path of searches and runs):

* the newest version the tenant's ``publications__<tenant>`` log names for this model is newer
  than the table's latest version (the log is read once per new publication and process:
  later opens read only the rows appended since, see :class:`_Seen`);
* a tag of the table points at a version newer than its latest one (tags live outside the
  manifests, so a deleted manifest leaves its tag behind).

Read failures of the table's files (a truncated data file, a deleted index) surface while
querying; :func:`read_guard` turns them into the same :class:`StoreDamaged`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tessera.errors import StoreDamaged
from tessera.store.db import (
    chunks_table_name,
    error_text,
    is_storage_error,
    open_table,
    publications_table_name,
)


@dataclass(frozen=True)
class Publication:
    """One row of the publications log (this model's table)."""

    version: int
    tag: str
    kind: str
    run_id: str
    config_hash: str
    published_at_us: int

    def label(self) -> str:
        return f"{self.tag or self.kind} (version {self.version})"


def publications(db: Any, tenant: str, model_key: str) -> list[Publication]:
    """This model's publications, oldest first (StoreDamaged when the log is unreadable)."""
    name = publications_table_name(tenant)
    table = open_table(db, name)
    if table is None:
        return []
    try:
        rows = table.to_arrow().to_pylist()
    except Exception as e:
        if is_storage_error(e):
            raise StoreDamaged(
                name, f"the publications log is unreadable: {error_text(e)}", tenant=tenant
            ) from e
        raise
    pubs = [
        Publication(
            int(r["table_version"]),
            r["tag"] or "",
            r["kind"] or "",
            r["run_id"] or "",
            r["config_hash"] or "",
            int(r["published_at_us"] or 0),
        )
        for r in rows
        if r["model_version"] == model_key
    ]
    return sorted(pubs, key=lambda p: (p.version, p.published_at_us))


def superseded(pubs: list[Publication]) -> set[Publication]:
    """Publications a doctor re-point left behind: logged before a ``repoint`` row, with a
    version between its target and the version it made (``config_hash`` ``repoint-of-N``)."""
    out: set[Publication] = set()
    for rp in (p for p in pubs if p.kind == "repoint" and p.config_hash.startswith("repoint-of-")):
        target = int(rp.config_hash.removeprefix("repoint-of-"))
        out |= {
            p
            for p in pubs
            if p is not rp and target < p.version < rp.version and p.published_at_us <= rp.published_at_us
        }
    return out


def sample_offsets(rows: int, sample: int) -> list[int]:
    """Up to ``sample`` row offsets spread over the whole table (first and last included)."""
    if rows <= sample:
        return list(range(rows))
    return sorted({round(i * (rows - 1) / (sample - 1)) for i in range(sample)})


def read_rows(table: Any, sample: int = 64) -> Any:
    """Read the id and doc_id columns in full and every column of ``sample`` rows spread over
    the table; returns the id/doc_id columns. Storage errors propagate."""
    ids = table.search().select(["id", "doc_id"]).limit(None).to_arrow()
    offsets = sample_offsets(ids.num_rows, sample)
    if offsets:
        table.take_offsets(offsets).to_arrow()
    return ids


def readable_at(reopen: Any, version: int) -> bool:
    """Whether ``version`` opens and reads (:func:`read_rows`)."""
    try:
        table = reopen()
        table.checkout(version)
        read_rows(table)
        return True
    except Exception as e:
        if isinstance(e, StoreDamaged) or is_storage_error(e):
            return False  # that version cannot be vouched for
        raise


def last_good(table: Any, reopen: Any, pubs: list[Publication]) -> Publication | None:
    """The newest publication whose version still exists (no newer than the latest), whose tag
    (when it has one) resolves to it, and whose rows read."""
    try:
        versions = {int(v["version"]) for v in table.list_versions()}
        tags = {name: int(t["version"]) for name, t in table.tags.list().items()}
    except Exception as e:
        if is_storage_error(e):
            return None
        raise
    lost = superseded(pubs)
    for p in reversed(pubs):
        if p in lost or p.version not in versions or tags.get(p.tag, p.version) != p.version:
            continue
        if readable_at(reopen, p.version):
            return p
    return None


def damaged(db: Any, tenant: str, model_key: str, problem: str) -> StoreDamaged:
    """The error for a damaged chunk table, naming its last good publication when one is known."""
    name = chunks_table_name(tenant, model_key)
    good: Publication | None = None
    try:
        table = open_table(db, name)
        if table is not None:
            good = last_good(table, lambda: open_table(db, name), publications(db, tenant, model_key))
    except StoreDamaged:
        pass  # the table or the log cannot be read at all: no publication can be vouched for
    return StoreDamaged(name, problem, good.label() if good else "", tenant)


@contextmanager
def read_guard(db: Any, tenant: str, model_key: str) -> Iterator[None]:
    """Storage failures while reading the chunk table become StoreDamaged (typed, named)."""
    try:
        yield
    except StoreDamaged:
        raise
    except Exception as e:
        if not is_storage_error(e):
            raise
        raise damaged(db, tenant, model_key, f"reading it failed: {error_text(e)}") from e


@dataclass
class _Seen:
    """What one process last read of a publications log: its version, row count and the newest
    table version per model. Appends only add rows, so a newer log version is caught up by
    reading the rows past ``rows``; an older version or fewer rows (a purge) reads it again."""

    version: int
    rows: int
    newest: dict[str, int]


_SEEN: dict[tuple[str, str], _Seen] = {}
_COLS = ["model_version", "table_version"]
_SMALL = 256
"""A log this short is read whole when it changed: faster than a tail read (12 ms against 22 ms
at 2 rows, measured); longer logs read only their new rows (22 ms at 1,000 rows, not 690 ms)."""


def _fold(seen: _Seen, rows: Any) -> None:
    for model, version in zip(
        rows.column("model_version").to_pylist(), rows.column("table_version").to_pylist(), strict=True
    ):
        seen.newest[model] = max(seen.newest.get(model, -1), int(version))


def newest_published(db: Any, tenant: str, model_key: str, fresh: bool = False) -> int | None:
    """The newest table version the publications log names for this model (None: none)."""
    name = publications_table_name(tenant)
    key = (str(getattr(db, "uri", id(db))), name)
    table = open_table(db, name)
    if table is None:
        _SEEN.pop(key, None)
        return None
    try:
        version, seen = int(table.version), _SEEN.get(key)
        if fresh or seen is None or version < seen.version or (version > seen.version and seen.rows < _SMALL):
            data = table.search().select(_COLS).limit(None).to_arrow()
            seen = _Seen(version, data.num_rows, {})
            _fold(seen, data)
        elif version > seen.version:
            rows = int(table.count_rows())
            if rows < seen.rows:
                return newest_published(db, tenant, model_key, fresh=True)
            known = seen.rows
            seen = _Seen(version, rows, dict(seen.newest))  # a new object: threads share _SEEN
            if rows > known:
                _fold(seen, table.take_offsets(list(range(known, rows))).select(_COLS).to_arrow())
    except Exception as e:
        if is_storage_error(e):
            raise StoreDamaged(
                name, f"the publications log is unreadable: {error_text(e)}", tenant=tenant
            ) from e
        raise
    _SEEN[key] = seen
    return seen.newest.get(model_key)


def regression(table: Any, newest: int | None) -> str:
    """Why ``table`` went back behind its history ('' when it did not)."""
    latest = int(table.version)
    if newest is not None and newest > latest:
        return (
            f"its latest version {latest} is older than version {newest}, which the publications log "
            "names (a manifest was deleted: the table silently went back)"
        )
    tagged = {name: int(t["version"]) for name, t in table.tags.list().items()}
    ahead = sorted(name for name, v in tagged.items() if v > latest)
    if ahead:
        return (
            f"its latest version {latest} is older than version {tagged[ahead[0]]} of tag {ahead[0]} "
            "(a manifest was deleted: the table silently went back)"
        )
    return ""


def open_checked(db: Any, tenant: str, model_key: str) -> Any | None:
    """The tenant's chunk table for ``model_key`` (None when it was never built), or
    StoreDamaged when it is unreadable, gone while publications name it, or went back."""
    name = chunks_table_name(tenant, model_key)
    newest = newest_published(db, tenant, model_key)  # first: a commit always precedes its log row
    try:
        table = open_table(db, name)
    except StoreDamaged as e:
        raise damaged(db, tenant, model_key, e.problem) from e
    if table is None:
        if newest_published(db, tenant, model_key, fresh=True) is not None:
            raise damaged(db, tenant, model_key, "the table is gone, but the publications log names it")
        return None
    with read_guard(db, tenant, model_key):
        if regression(table, newest):  # confirm: read the log afresh, then the table again
            newest = newest_published(db, tenant, model_key, fresh=True)
            table = open_table(db, name)
            why = "the table is gone" if table is None else regression(table, newest)
            if why:
                raise damaged(db, tenant, model_key, why)
    return table
