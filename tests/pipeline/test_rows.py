"""The rows a commit writes are the rows the check passed: while they are small
(``KEEP_CHECKED_BYTES``) the very tables checked, so a staged file changed after the check
changes nothing that is published; past the bound they are read again batch by batch, and
both ways publish identical tables."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tessera.pipeline import rows as rows_module
from tessera.pipeline import staging
from tessera.pipeline.rows import StagedRows
from tessera.pipeline.run import chunk_step, embed_step, list_step, parse_step, run_tenant
from tests.conftest import Workspace
from tests.pipeline.test_executors import COLUMNS, DOCS


def _staged(ws: Workspace, run_id: str = "r1") -> StagedRows:
    rc = ws.context("acme", run_id)
    for step in (list_step, parse_step, chunk_step, embed_step):
        step(rc)
    return StagedRows(rc, rc.listing()[1])


def _tamper(staged: StagedRows) -> None:
    """Every staged chunk's text replaced, after the check."""
    table = pq.read_table(staged.path)
    text = pc.binary_join_element_wise(table.column("text"), pa.scalar(" TAMPERED"), "")
    pq.write_table(table.set_column(table.schema.get_field_index("text"), "text", text), staged.path)


def _read(staged: StagedRows, scope: set[str]) -> list[dict[str, Any]]:
    return sorted(staged.reader(scope).open().read_all().to_pylist(), key=lambda r: r["id"])


def test_small_checked_rows_are_the_rows_committed(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staging, "BATCH_ROWS", 7)  # several checked tables
    ws.tenant("acme", DOCS)
    staged = _staged(ws)
    assert staged.check() == [] and staged.checked is not None and len(staged.checked) > 3
    everything = set(staged.per_document)
    before = _read(staged, everything)
    assert len(before) == staged.rows and not any("TAMPERED" in r["text"] for r in before)
    _tamper(staged)
    assert _read(staged, everything) == before  # the checked tables, not the staged file again
    one = sorted(everything)[3]
    assert _read(staged, {one}) == [r for r in before if r["doc_id"] == one]  # the scope still applies
    assert staged.reader({one}).num_rows == staged.per_document[one]


def test_past_the_bound_rows_are_read_again_and_publish_the_same(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws.tenant("acme", DOCS)
    kept = _staged(ws, "kept")
    assert kept.check() == [] and kept.checked is not None
    expected = _read(kept, set(kept.per_document))
    monkeypatch.setattr(rows_module, "KEEP_CHECKED_BYTES", 1)
    streamed = _staged(ws, "streamed")
    assert streamed.check() == [] and streamed.checked is None
    got = _read(streamed, set(streamed.per_document))
    assert [{k: r[k] for k in COLUMNS} for r in got] == [{k: r[k] for k in COLUMNS} for r in expected]
    _tamper(streamed)  # nothing kept: the commit reads the staged file as it is now
    assert all(r["text"].endswith(" TAMPERED") for r in _read(streamed, set(streamed.per_document)))


def test_a_failed_check_keeps_nothing(ws: Workspace) -> None:
    ws.tenant("acme", DOCS)
    staged = _staged(ws)
    table = pq.read_table(staged.path)
    tenant = pa.array(["other", *table.column("tenant").to_pylist()[1:]])
    pq.write_table(table.set_column(table.schema.get_field_index("tenant"), "tenant", tenant), staged.path)
    assert staged.check() and staged.checked is None


@pytest.mark.parametrize("bound", [rows_module.KEEP_CHECKED_BYTES, 1])
def test_whole_runs_publish_identical_tables_either_way(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, bound: int
) -> None:
    ws.tenant("acme", DOCS)
    baseline = ws.run("acme", "base")
    assert baseline["publish"]["committed"]
    expected = [tuple(r[c] for c in COLUMNS) for r in ws.rows("acme")]
    monkeypatch.setattr(rows_module, "KEEP_CHECKED_BYTES", bound)
    other = Workspace(ws.root / "other")
    other.tenant("acme", DOCS)
    out = run_tenant(other.context("acme", "other"))
    assert out["publish"]["inserted"] == baseline["publish"]["inserted"]
    assert [tuple(r[c] for c in COLUMNS) for r in other.rows("acme")] == expected


def _holding(doc_ids: set[str], at_least: int) -> list[str]:
    """Live sets, frozensets and dicts (Counters included) that hold ``at_least`` of
    ``doc_ids``, and live :class:`StagedRows`, by type name. Garbage is collected first: an
    earlier test's publish that raised leaves its frame, and its rows, in a traceback's cycle
    until the collector runs (a CI run found one; nothing refers to it)."""
    import gc

    gc.collect()
    found = []
    for o in gc.get_objects():
        if isinstance(o, StagedRows):
            found.append("StagedRows")
        elif (
            isinstance(o, dict | set | frozenset)
            and len(o) >= at_least
            and o is not doc_ids
            and len(doc_ids.intersection(o)) >= at_least
        ):
            found.append(type(o).__name__)
    return found


def test_the_index_builds_run_without_the_commits_sets_of_every_document(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the publish (its commit, then its index builds) the step drops what only the
    plan needed: at 100,000 documents the replaced set, the guard's counts and the staged
    per-document counts were about 11 MB under the vector build (the run's peak)."""
    from tessera.store.index import TenantIndex

    ws.tenant("acme", DOCS)
    publish = TenantIndex.publish
    seen: list[list[str]] = []

    def probed(self: TenantIndex, *args: Any) -> Any:
        seen.append(sorted(_holding(set(DOCS), len(DOCS) - 2)))
        return publish(self, *args)

    monkeypatch.setattr(TenantIndex, "publish", probed)
    out = ws.run("acme")
    assert out["publish"]["committed"] and out["publish"]["docs_changed"] >= len(DOCS) - 2
    # left: the publish's scope (the reader's too, when nothing is relabelled) and the reader's
    # doc ids, and the staged rows it reads, counts dropped (the code before: the Counter and the
    # replaced set as well, and before that a copy of the scope for the reader; the guard's dict
    # of counts, str to int, is one the collector does not track)
    assert seen == [["StagedRows", "frozenset", "set"]]
    indexed = {r["doc_id"] for r in ws.rows("acme")}  # the work itself is whole
    assert len(indexed) >= len(DOCS) - 2 and indexed <= set(DOCS)


def test_under_the_index_builds_the_ids_are_held_once_and_the_lookup_is_gone(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the publish builds its indexes (the run's peak at 100,000 documents), the commit's
    ids are the scope's own strings (not a second copy from the staged counts), the listing's
    lookup by id (a dict and a string per document) is dropped, and nothing else holds the
    documents' ids; a later run, which needs the lookup, plans and publishes as before."""
    import gc
    import weakref

    from tessera.pipeline.listed import ListedDocuments
    from tessera.store.index import TenantIndex

    src = ws.tenant("acme", DOCS)
    # listings an earlier test left alive (a suite keeps some) are not this test's to judge
    earlier = {id(o): weakref.ref(o) for o in gc.get_objects() if isinstance(o, ListedDocuments)}
    publish, refresh = TenantIndex.publish, TenantIndex._refresh_indexes
    shared: list[bool] = []
    held: list[tuple[list[str], list[bool]]] = []

    def at_entry(self: TenantIndex, rows: Any, scope: set[str], *args: Any) -> Any:
        own = {d: d for d in scope}
        shared.append(bool(rows.doc_ids) and all(own[d] is d for d in rows.doc_ids))
        del own
        return publish(self, rows, scope, *args)

    def at_builds(self: TenantIndex, table: Any) -> Any:
        census = sorted(_holding(set(DOCS), len(DOCS) - 2))  # collects garbage first
        ours = [
            o
            for o in gc.get_objects()
            if isinstance(o, ListedDocuments) and (id(o) not in earlier or earlier[id(o)]() is not o)
        ]
        held.append((census, sorted({"_row" in vars(o) for o in ours})))  # [False]: some, none with it
        return refresh(self, table)

    monkeypatch.setattr(TenantIndex, "publish", at_entry)
    monkeypatch.setattr(TenantIndex, "_refresh_indexes", at_builds)
    first = ws.run("acme", "r1")["publish"]
    assert first["committed"] and first["docs_changed"] >= len(DOCS) - 2
    assert shared == [True]
    assert held == [(["StagedRows", "frozenset", "set"], [False])]  # the listing is held, its lookup not
    for name in ("guide/00.md", "guide/01.md"):  # a second run, of two changed documents
        text = DOCS[name]
        assert isinstance(text, str)
        (src / name).write_text(text + "\n\nA paragraph added later.\n", encoding="utf-8")
    second = ws.run("acme", "r2")["publish"]
    assert second["committed"] and second["docs_changed"] == 2 and shared == [True, True]
    assert held[1] == (["StagedRows"], [False])  # the reader's rows; no set of every document
    indexed = {r["doc_id"] for r in ws.rows("acme")}
    assert len(indexed) >= len(DOCS) - 2 and indexed <= set(DOCS)
