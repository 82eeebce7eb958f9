"""The doctor's repairs: only what is safe, and a re-point only with explicit confirmation.

* ``rebuild-indexes``: drop the indexes that no longer answer, then ``ensure_indexes``
  creates the missing ones and rebuilds stale ones (new versions, the same rows).
* ``retag``: re-create a publication's deleted tag on its (existing) version.
* ``record-live``: a live version no publication records (a crash between the commit and
  its tag) gets the tag ``recovered-<version>`` and a publications row of kind ``recovered``.
* ``repoint`` (``confirm`` only): make the last good publication current again, as a new
  version after every version the log or a tag names (a lost version number is never reused;
  tags left pointing at lost versions are deleted first), logged as kind ``repoint`` with
  ``config_hash`` ``repoint-of-<version>``. Rows published after it are no longer served; the
  next run re-publishes the documents that changed since.

Nothing is repaired on a chunk table that stays damaged (it went back and no re-point was
confirmed, or its rows are unreadable): every later commit would build on the wrong state.
Callers hold the tenant's writer lock (the CLI does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tessera.errors import PublishError
from tessera.store.db import open_table
from tessera.store.doctor import DoctorReport, diagnose
from tessera.store.health import Publication, newest_published
from tessera.store.index import PublishResult, TenantIndex
from tessera.store.indexes import ensure_indexes


@dataclass(frozen=True)
class RepairOutcome:
    done: tuple[str, ...]
    skipped: tuple[str, ...]
    report: DoctorReport
    """The diagnosis after the repairs."""


def repair(db: Any, report: DoctorReport, run_id: str, confirm: bool = False) -> RepairOutcome:
    """Repair what ``report`` found, then diagnose again."""
    done: list[str] = []
    skipped: list[str] = []
    tenant, model_key = report.tenant, report.model_key
    wants = {c.repair for c in report.checks if c.verdict != "ok" and c.table == report.table}
    if "repoint" in wants and report.last_good is not None:
        good = report.last_good
        if not confirm:
            skipped.append(
                f"re-point {report.table} to {good.label()}: needs confirmation (--yes); rows published "
                "after it stop being served until the next run re-publishes them"
            )
            return RepairOutcome(tuple(done), tuple(skipped), report)
        done.append(_repoint(db, report, good, run_id))
        report = diagnose(db, tenant, model_key)
    damaged = [c for c in report.checks if c.table == report.table and c.verdict == "damaged"]
    if damaged:
        skipped.append(f"{report.table} stays damaged, nothing repaired there: {damaged[0].message}")
        return RepairOutcome(tuple(done), tuple(skipped), report)
    todo: dict[str, list[str]] = {}
    for c in report.checks:
        if c.verdict == "repairable" and c.table == report.table and c.repair:
            todo.setdefault(c.repair, []).extend(i for i in c.items if i not in todo.get(c.repair, []))
    table = open_table(db, report.table)
    if table is not None:
        if "rebuild-indexes" in todo:
            for name in todo["rebuild-indexes"]:  # unusable: their files are gone or unreadable
                table.drop_index(name)
            built = ensure_indexes(table)
            done.append(
                f"indexes of {report.table}: dropped unusable {todo['rebuild-indexes']}, built {built}"
            )
        if "retag" in todo:
            for item in todo["retag"]:
                tag, version = item.rsplit("@", 1)
                table.tags.create(tag, int(version))
            done.append(f"re-created tags {todo['retag']} of {report.table}")
        if "record-live" in todo:
            done.append(_record_live(db, report, table, run_id))
    for c in report.checks:
        if c.verdict != "ok" and (c.table != report.table or not c.repair):
            skipped.append(f"no safe repair: {c.message}")
    return RepairOutcome(tuple(done), tuple(skipped), diagnose(db, tenant, model_key))


def _index(db: Any, report: DoctorReport, table: Any) -> TenantIndex:
    dimension = int(table.schema.field("vector").type.list_size)
    return TenantIndex(db, report.tenant, report.model_key, dimension)


def _record_live(db: Any, report: DoctorReport, table: Any, run_id: str) -> str:
    version = int(table.version)
    tag = f"recovered-{version}"
    if tag in table.tags.list():
        raise PublishError(f"tag {tag} of {report.table} exists already; see 'tessera versions'")
    index = _index(db, report, table)
    index._record(table, "recovered", PublishResult(True, version, tag=tag), run_id, "recovered")
    return f"recorded live version {version} of {report.table} as {tag} (publication kind 'recovered')"


def _repoint(db: Any, report: DoctorReport, good: Publication, run_id: str) -> str:
    table = open_table(db, report.table)
    if table is None:
        raise PublishError(f"{report.table} cannot be opened; nothing to re-point")
    versions = {int(v["version"]) for v in table.list_versions()}
    tags = {name: int(t["version"]) for name, t in table.tags.list().items()}
    ceiling = max([newest_published(db, report.tenant, report.model_key, fresh=True) or 0, *tags.values()])
    dangling = sorted(name for name, v in tags.items() if v not in versions)
    for name in dangling:  # they would name whatever commit reuses their version number
        table.tags.delete(name)
    table.restore(good.version)
    while int(table.version) <= ceiling:  # never reuse a version number the log or a tag named
        table.restore(good.version)
    ensure_indexes(table)
    version = int(table.version)
    result = PublishResult(True, version, tag=f"repoint-{version}")
    _index(db, report, table)._record(table, "repoint", result, run_id, f"repoint-of-{good.version}")
    gone = f"; deleted tags of lost versions {dangling}" if dangling else ""
    return f"re-pointed {report.table} to {good.label()} as version {version} (tag repoint-{version}){gone}"
