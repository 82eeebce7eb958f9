"""``tessera doctor``: verify a tenant's tables and give a typed verdict per check.

Checked, for the chunk table of one model (the active or configured one), its embedding
cache, the publications log and the active pointer: manifests and data files readable (the
table opens, ``count_rows``, ``list_versions``, every column of a bounded sample spread over
the table, the id and doc_id columns in full), indexes present and usable (each one probed
with a query that uses it, then one filtered vector and one FTS query), every publication's
tag resolving to an existing version, the live version recorded (tagged and logged), and the
log's newest version no newer than the table's latest (a deleted latest manifest shows so).

Verdicts: ``ok``; ``repairable`` (a safe repair exists: :mod:`tessera.store.doctor_repair`);
``damaged`` (needs an operator: re-pointing to the last good publication, with confirmation,
when one exists). Every message names the table and the last good publication.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tessera.errors import StoreDamaged
from tessera.store.active import active_table_name
from tessera.store.db import (
    cache_table_name,
    chunks_table_name,
    error_text,
    is_storage_error,
    open_table,
    publications_table_name,
)
from tessera.store.doctor_probe import (
    Verdict,
    active_check,
    cache_check,
    content,
    index_check,
    search_check,
    tag_check,
)
from tessera.store.health import (
    Publication,
    last_good,
    newest_published,
    publications,
    read_rows,
    regression,
    sample_offsets,
    superseded,
)

_RANK = {"ok": 0, "repairable": 1, "damaged": 2}


@dataclass(frozen=True)
class Check:
    name: str
    table: str
    verdict: Verdict
    message: str
    repair: str = ""
    """The repair that fixes it: ``rebuild-indexes``, ``retag``, ``record-live`` (safe) or
    ``repoint`` (needs confirmation); empty when none is safe."""
    items: tuple[str, ...] = ()
    """What the repair acts on: index names, ``tag@version`` pairs."""
    detail: str = ""
    """The message without the table and last good publication (the human table's column)."""


@dataclass(frozen=True)
class DoctorReport:
    tenant: str
    model_key: str
    table: str
    live_version: int | None
    last_good: Publication | None
    checks: tuple[Check, ...]

    @property
    def verdict(self) -> Verdict:
        return max((c.verdict for c in self.checks), key=_RANK.__getitem__, default="ok")

    def problems(self) -> list[str]:
        return [f"{c.name}: {c.message}" for c in self.checks if c.verdict != "ok"]

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["verdict"] = self.verdict
        out["last_good"] = None if self.last_good is None else asdict(self.last_good)
        return out


class _Say:
    """Builds checks whose message names the table and the last good publication."""

    def __init__(self, good: Publication | None) -> None:
        self.good = f"last good publication {good.label()}" if good else "no good publication"
        self.checks: list[Check] = []

    def __call__(
        self, name: str, table: str, verdict: Verdict, text: str, repair: str = "", *items: str
    ) -> Check:
        check = Check(name, table, verdict, f"{table}: {text}; {self.good}", repair, tuple(items), text)
        self.checks.append(check)
        return check


def _fault(e: BaseException) -> str:
    if isinstance(e, StoreDamaged):
        return e.problem
    if is_storage_error(e):
        return error_text(e)
    raise e


def diagnose(db: Any, tenant: str, model_key: str, sample_rows: int = 64) -> DoctorReport:
    """Read-only: nothing is written. Unreadable files are reported, never raised."""
    name = chunks_table_name(tenant, model_key)
    pubs: list[Publication] = []
    log_fault = ""
    try:
        pubs = publications(db, tenant, model_key)
    except Exception as e:
        log_fault = _fault(e)
    table: Any = None
    open_fault = ""
    try:
        table = open_table(db, name)
    except Exception as e:
        open_fault = _fault(e)
    good = last_good(table, lambda: open_table(db, name), pubs) if table is not None and pubs else None
    say = _Say(good)
    _log_check(say, db, tenant, log_fault, pubs)
    if table is None:
        if open_fault:
            say("chunks.open", name, "damaged", f"cannot be opened: {open_fault}", "repoint" if good else "")
        elif pubs:
            say("chunks.open", name, "damaged", f"is gone, but {len(pubs)} publications name it")
        else:
            say("chunks.open", name, "ok", "not built yet (no publications)")
    else:
        _chunk_checks(say, db, tenant, model_key, table, pubs, good, sample_rows)
    cache = cache_check(db, tenant, model_key, sample_rows)
    say("cache", cache_table_name(tenant, model_key), cache.verdict, cache.text)
    active = active_check(db, tenant)
    say("active", active_table_name(tenant), active.verdict, active.text)
    live = None if table is None else int(table.version)
    return DoctorReport(tenant, model_key, name, live, good, tuple(say.checks))


def _log_check(say: _Say, db: Any, tenant: str, fault: str, pubs: list[Publication]) -> None:
    name = publications_table_name(tenant)
    if fault:
        say("publications", name, "damaged", f"unreadable: {fault}")
        return
    try:
        log = open_table(db, name)
        if log is None:
            say("publications", name, "ok", "no publications yet")
            return
        versions = len(log.list_versions())
        say(
            "publications",
            name,
            "ok",
            f"{log.count_rows()} rows ({len(pubs)} of this model), {versions} versions",
        )
    except Exception as e:
        say("publications", name, "damaged", f"unreadable: {_fault(e)}")


def _chunk_checks(
    say: _Say, db: Any, tenant: str, model_key: str, table: Any, pubs: list[Publication],
    good: Publication | None, sample_rows: int,
) -> None:  # fmt: skip
    name = table.name
    repoint = "repoint" if good else ""
    try:
        rows, versions = int(table.count_rows()), [int(v["version"]) for v in table.list_versions()]
    except Exception as e:
        say("chunks.open", name, "damaged", f"manifests unreadable: {_fault(e)}", repoint)
        return
    say("chunks.open", name, "ok", f"version {table.version}, {rows} rows, {len(versions)} versions readable")
    try:
        newest = newest_published(db, tenant, model_key, fresh=True)
        went_back = regression(table, newest)
    except Exception as e:
        went_back = f"its tags or the publications log are unreadable: {_fault(e)}"
    if went_back:
        say("chunks.latest", name, "damaged", went_back, repoint)
    else:
        say(
            "chunks.latest",
            name,
            "ok",
            f"latest version {table.version} is not behind any publication or tag",
        )
    data_ok = _data_check(say, table, rows, sample_rows, repoint)
    if not data_ok:
        for check in ("chunks.indexes", "chunks.search"):
            say(check, name, "damaged", "not checked: the rows are unreadable", repoint)
    else:
        indexes = index_check(table, rows)
        say("chunks.indexes", name, indexes.verdict, indexes.text, indexes.repair, *indexes.items)
        found = search_check(table, rows)
        verdict: Verdict = (
            "repairable" if indexes.verdict != "ok" and found.verdict != "ok" else found.verdict
        )
        say("chunks.search", name, verdict, found.text, "rebuild-indexes" if verdict == "repairable" else "")
    tags = tag_check(table, versions, pubs, superseded(pubs))
    say("chunks.tags", name, tags.verdict, tags.text, tags.repair, *tags.items)
    if went_back or not data_ok:
        say("chunks.recorded", name, "damaged", "not checked: the table is damaged", repoint)
    else:
        _recorded_check(say, table, rows, pubs, lambda: open_table(db, name))


def _data_check(say: _Say, table: Any, rows: int, sample_rows: int, repoint: str) -> bool:
    name = table.name
    try:
        ids = read_rows(table, sample_rows)
    except Exception as e:
        say("chunks.data", name, "damaged", f"rows unreadable: {_fault(e)}", repoint)
        return False
    unique = len(set(ids.column("id").to_pylist()))
    if ids.num_rows != rows or unique != rows:
        text = f"count_rows says {rows}, the id column has {ids.num_rows} rows ({unique} distinct)"
        say("chunks.data", name, "damaged", text, repoint)
        return False
    sampled = len(sample_offsets(rows, sample_rows))
    docs = len(set(ids.column("doc_id").to_pylist()))
    say("chunks.data", name, "ok", f"{rows} ids ({docs} documents) and {sampled} whole rows read")
    return True


def _recorded_check(say: _Say, table: Any, rows: int, pubs: list[Publication], reopen: Any) -> None:
    name, latest = table.name, int(table.version)
    lost = superseded(pubs)
    logged = [p for p in pubs if p not in lost and p.version <= latest]
    tagged = {n: int(t["version"]) for n, t in table.tags.list().items()}
    if not logged:
        if rows == 0:
            say("chunks.recorded", name, "ok", "empty and never published")
        else:
            text = f"live version {latest} holds {rows} rows but no publication records it"
            say("chunks.recorded", name, "repairable", text, "record-live", str(latest))
        return
    newest = logged[-1]
    if newest.version == latest or content(reopen, latest) == content(reopen, newest.version):
        since = "" if newest.version == latest else " (only index or compaction commits since)"
        tag = f", tagged {newest.tag}" if newest.tag and tagged.get(newest.tag) == newest.version else ""
        say(
            "chunks.recorded",
            name,
            "ok",
            f"live version {latest} is publication {newest.label()}{tag}{since}",
        )
        return
    text = (
        f"live version {latest} is not recorded: its rows differ from the newest publication "
        f"{newest.label()} (a crash between commit and tag); it is missing from 'tessera versions'"
    )
    say("chunks.recorded", name, "repairable", text, "record-live", str(latest))
