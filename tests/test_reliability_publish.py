"""Publishing scenarios of ../shared/RELIABILITY.md that the lifecycle tests cover only in part.

A1 (a duplicated chunk in a batch), A2 (other tenants untouched), A4 (every version a run
creates, and a reader during the run), A8 (the delete-only commit fails), A10 (a failure in
the middle of a run that also removes a document), C4 (readers during publish and
maintenance), C8 (merge_insert edges). Real runs on a local LanceDB, the hash embedder.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pytest
import yaml

from tessera.chunking.structural import StructuralChunker
from tessera.config import load_config
from tessera.errors import PermanentEmbeddingError, PublishError
from tessera.parsing.markdown import MarkdownParser
from tessera.pipeline.run import RunContext, run_tenant, verify_step
from tessera.search import principal_from_config, search
from tessera.store.db import connect
from tessera.store.maintenance import maintain_tenant
from tests.conftest import Workspace

from .test_lifecycle import FlakyEmbedder, by_doc, md_sections


def ids(rows: list[dict[str, Any]], doc: str) -> set[str]:
    return {r["id"] for r in rows if r["doc_id"] == doc}


@pytest.mark.scenario("A1")
def test_a_chunk_duplicated_in_a_batch_is_stored_once_and_the_rerun_is_a_noop(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    para = "Restart the router, then wait thirty seconds before testing the connection again."
    doc = f"# Manual\n\nHow to set it up.\n\n## Setup\n\n{para}\n\n## Again\n\n{para}\n"
    src = ws.tenant("acme", {"manual.md": doc, "copy.md": doc})  # the same text four times
    first = ws.run("acme", "r1")
    assert first["embed"]["unique"] < first["embed"]["texts"]  # duplicated texts embedded once
    rc = ws.context("acme", "inspect")
    version, rows, cached = rc.index.version(), ws.rows("acme"), len(ws.embedder.calls)
    assert len({r["id"] for r in rows}) == len(rows)  # one row per source range, never two per id

    second = ws.run("acme", "r2")  # identical content: added 0, deleted 0, everything skipped
    assert second["listing"]["unchanged"] == 2 and second["listing"]["changed"] == 0
    assert second["publish"]["committed"] is False and second["embed"]["embedded"] == 0
    assert len(ws.embedder.calls) == cached and rc.index.version() == version and ws.rows("acme") == rows

    # A chunker that emits a chunk twice: the staged batch holds the same id twice. It is never
    # stored twice: the staged checks refuse the publish, the previous version stays current.
    (src / "manual.md").write_text(doc + "\n## Tail\n\nOne more line.\n", encoding="utf-8")
    original = StructuralChunker.chunk

    def twice(self: Any, d: Any, parsed: Any, ctx: Any) -> Any:
        out = list(original(self, d, parsed, ctx))
        return out + out[:1] if d.doc_id == "manual.md" else out

    with monkeypatch.context() as m:
        m.setattr(StructuralChunker, "chunk", twice)
        with pytest.raises(PublishError, match="duplicate"):
            ws.run("acme", "r3")
    assert rc.index.version() == version and ws.rows("acme") == rows
    out = ws.run("acme", "r4")
    after = ws.rows("acme")
    assert out["publish"]["committed"] and len({r["id"] for r in after}) == len(after)


@pytest.mark.scenario("A2")
def test_a_shrinking_document_has_exactly_its_new_chunks_and_nothing_else_moves(ws: Workspace) -> None:
    src = ws.tenant("acme", {"d.md": md_sections("Delta", 4), "b.md": md_sections("Beta", 2)})
    ws.tenant("globex", {"g.md": md_sections("Globex", 3)})
    ws.run("acme", "r1")
    ws.run("globex", "r1")
    before, globex = by_doc(ws.rows("acme")), (ws.table("globex").version, ws.rows("globex"))
    assert len(before["d.md"]) == 5

    (src / "d.md").write_text(md_sections("Delta", 1), encoding="utf-8")
    ws.run("acme", "r2")

    after = by_doc(ws.rows("acme"))
    fresh = Workspace(ws.root / "fresh")  # exactly the chunks a clean build of the new D has
    fresh.tenant("acme", {"d.md": md_sections("Delta", 1)})
    fresh.run("acme", "f1")
    assert len(after["d.md"]) == 2
    assert ids(ws.rows("acme"), "d.md") == ids(fresh.rows("acme"), "d.md")
    assert after["b.md"] == before["b.md"]  # every other document of the tenant, every column
    assert (ws.table("globex").version, ws.rows("globex")) == globex  # and every other tenant


def _config_with_batch_size(ws: Workspace, batch_size: int) -> Path:
    path = ws.config().path
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["embedding"]["batch_size"] = batch_size
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.scenario("A4")
def test_every_version_holds_all_old_or_all_new_chunks_of_a_document(ws: Workspace) -> None:
    src = ws.tenant("acme", {"d.md": md_sections("Delta", 3), "b.md": md_sections("Beta", 1)})
    cfg = load_config(_config_with_batch_size(ws, 2))  # 4 chunks of D, embedded 2 at a time
    run_tenant(RunContext(cfg, "acme", "r1", ws.embedder, sleep=lambda _s: None))
    table = ws.table("acme")
    v1, old = int(table.version), ids(ws.rows("acme"), "d.md")
    assert len(old) == 4

    (src / "d.md").write_text(md_sections("Delta v2", 3), encoding="utf-8")
    seen: list[frozenset[str]] = []
    stop = threading.Event()

    def read() -> None:  # a reader polling the live table through the whole run
        while not stop.is_set():
            live = connect(cfg.store.uri).open_table(table.name)
            rows = live.search().where("doc_id = 'd.md'").select(["id"]).limit(None).to_arrow()
            seen.append(frozenset(rows.column("id").to_pylist()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    out = run_tenant(RunContext(cfg, "acme", "r2", ws.embedder, sleep=lambda _s: None))
    stop.set()
    reader.join(timeout=30)
    new = ids(ws.rows("acme"), "d.md")
    assert out["embed"]["batches"] >= 2 and len(new) == 4 and not old & new
    assert seen and set(seen) <= {frozenset(old), frozenset(new)}, "a reader saw a mix"

    versions = sorted(int(v["version"]) for v in table.list_versions())
    checked = 0
    for version in (v for v in versions if v >= v1):  # every version, index commits included
        view = ws.table("acme")
        view.checkout(version)
        got = {r["id"] for r in view.to_arrow().to_pylist() if r["doc_id"] == "d.md"}
        assert got in (old, new), version
        checked += 1
    assert checked >= 2


@pytest.mark.scenario("A8")
def test_a_failed_delete_fails_loudly_and_the_next_run_finishes_the_cleanup(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = ws.tenant("acme", {f"{d}.md": md_sections(d.title(), 2) for d in ("a", "b", "c")})
    ws.run("acme", "r1")
    rc = ws.context("acme", "inspect")
    version, rows, pubs = rc.index.version(), ws.rows("acme"), rc.index.publications()
    (src / "b.md").unlink()  # only a removal: the publish is a scoped delete

    def broken(self: Any, where: str) -> None:
        raise OSError("delete failed after removing 1 of 2 fragments")

    with monkeypatch.context() as m:
        m.setattr(type(ws.table("acme")), "delete", broken)
        with pytest.raises(PublishError, match="delete failed"):
            ws.run("acme", "r2")
    # no row lost, the leftovers are only the extra rows of b.md, nothing recorded as done
    assert rc.index.version() == version and ws.rows("acme") == rows
    assert rc.index.publications() == pubs and "run-r2" not in ws.table("acme").tags.list()

    out = ws.run("acme", "r3")  # the next run finishes the cleanup: the exact final set
    assert out["publish"]["deleted"] == len(by_doc(rows)["b.md"])
    assert {r["id"] for r in ws.rows("acme")} == ids(rows, "a.md") | ids(rows, "c.md")
    assert verify_step(ws.context("acme", "r3"))[0] == []


@pytest.mark.scenario("A10")
def test_a_failure_in_the_middle_of_a_run_purges_nothing_and_never_deletes_twice(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = ws.tenant("acme", {f"{d}.md": md_sections(d.title(), 2) for d in ("a", "b", "c")})
    ws.run("acme", "r1")
    rc = ws.context("acme", "inspect")
    version, rows = rc.index.version(), ws.rows("acme")
    (src / "a.md").write_text(md_sections("Alpha kaboom", 3), encoding="utf-8")  # A changed
    (src / "b.md").unlink()  # B removed

    # Embedding A fails: the run stops before publishing. B is not purged, A is unchanged.
    flaky = FlakyEmbedder(ws.embedder, "kaboom", failures=None, error=PermanentEmbeddingError)
    with pytest.raises(PermanentEmbeddingError):
        ws.run("acme", "r2", embedder=flaky)
    assert rc.index.version() == version and ws.rows("acme") == rows

    # Parsing A fails: A is quarantined (its old chunks kept, snapshot-equal), and the run
    # publishes B's real removal, once.
    original = MarkdownParser.parse

    def failing(self: Any, doc: Any, raw: bytes) -> Any:
        if doc.doc_id == "a.md":
            raise RuntimeError("parser bug")
        return original(self, doc, raw)

    with monkeypatch.context() as m:
        m.setattr(MarkdownParser, "parse", failing)
        out = ws.run("acme", "r3")
    assert out["publish"]["quarantined"] == ["a.md"] and out["publish"]["deleted"] == len(ids(rows, "b.md"))
    after = ws.rows("acme")
    assert [r for r in after if r["doc_id"] == "a.md"] == [r for r in rows if r["doc_id"] == "a.md"]
    assert not ids(after, "b.md")

    # The healthy rerun updates A; B's delete is not attempted again, nothing aborts.
    again = ws.run("acme", "r4")
    assert again["publish"]["committed"] and again["publish"]["docs_removed"] == 0
    assert ids(ws.rows("acme"), "a.md") and not ids(ws.rows("acme"), "a.md") & ids(rows, "a.md")
    assert ws.run("acme", "r5")["publish"]["committed"] is False


@pytest.mark.scenario("C4")
def test_readers_see_whole_versions_during_publish_and_maintenance(ws: Workspace) -> None:
    src = ws.tenant("acme", {"d.md": md_sections("Delta", 3)})
    ws.run("acme", "r1")
    cfg = ws.config()
    name = ws.context("acme").index.name
    states = [frozenset(ids(ws.rows("acme"), "d.md"))]
    seen: list[frozenset[str]] = []
    errors: list[Exception] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                rows = connect(cfg.store.uri).open_table(name).to_arrow().column("id").to_pylist()
                seen.append(frozenset(rows))
            except Exception as e:  # asserted empty below
                errors.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    for i in (2, 3):
        (src / "d.md").write_text(md_sections(f"Delta v{i}", 3), encoding="utf-8")
        ws.run("acme", f"r{i}")
        states.append(frozenset(ids(ws.rows("acme"), "d.md")))
        ctx = ws.context("acme")
        maintain_tenant(ctx.db, cfg.store.work_dir, "acme", [name], keep_versions=1, keep_run_tags=0)
    stop.set()
    reader.join(timeout=30)
    assert not errors, errors[:3]
    assert seen and set(seen) <= set(states), "a reader saw rows of no published version"

    # A fresh search after the publish returns the new version (no stale cached handle).
    alice = principal_from_config(cfg, "acme", "alice")
    hits = search(cfg.store.uri, ws.embedder, alice, "Delta v3 paragraph", k=50)
    assert hits and {h.chunk_id for h in hits} <= states[-1]
    # A reader of a pruned version gets an error, never rows.
    stale = lancedb.connect(cfg.store.uri).open_table(name)
    with pytest.raises(Exception, match=r"(?i)not found|does not exist|version"):
        stale.checkout(2)
        stale.to_arrow()


@pytest.mark.scenario("C8")
def test_merge_insert_edges(ws: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    src = ws.tenant("acme", {f"{d}.md": md_sections(d.title(), 2) for d in ("a", "b", "c")})
    ws.run("acme", "r1")
    rc = ws.context("acme", "inspect")
    rows, version = ws.rows("acme"), rc.index.version()
    table = ws.table("acme")
    assert {"doc_id"} <= {c for idx in table.list_indices() for c in idx.columns}  # a BTREE on the key

    # (a) an empty source batch never reaches merge_insert, so it can never wipe the scope
    empty = pa.Table.from_pylist([], schema=rc.index.schema)
    with monkeypatch.context() as m:
        m.setattr(type(table), "merge_insert", lambda *_a, **_k: pytest.fail("merge_insert with no rows"))
        assert rc.index.publish(empty, set(), "edge-a", "c").committed is False
        assert ws.run("acme", "r-noop")["publish"]["committed"] is False
    assert rc.index.version() == version and ws.rows("acme") == rows

    # (b) a builder configured twice: the latest condition wins (LanceDB semantics we rely on)
    db = lancedb.connect(str(tmp_path / "scratch"))
    scratch = db.create_table("t", data=pa.table({"id": [1, 2, 3], "doc": ["a", "b", "c"]}))
    source = pa.table({"id": [9], "doc": ["z"]})
    builder = scratch.merge_insert("id").when_not_matched_insert_all()
    builder.when_not_matched_by_source_delete("doc = 'a'").when_not_matched_by_source_delete("doc = 'b'")
    builder.execute(source)
    assert sorted(scratch.to_arrow().column("doc").to_pylist()) == ["a", "c", "z"]

    # (c) with the scalar indexes on the join key: the exact deleted count, never reappearing
    (src / "b.md").unlink()
    out = ws.run("acme", "r2")
    assert out["publish"]["deleted"] == len(ids(rows, "b.md"))
    maintain_tenant(rc.db, ws.config().store.work_dir, "acme", [rc.index.name], keep_versions=1)
    for where in ("doc_id = 'b.md'", "doc_id IN ('b.md')"):
        assert ws.table("acme").count_rows(where) == 0
    assert not ids(ws.rows("acme"), "b.md")
    alice = principal_from_config(ws.config(), "acme", "alice")
    assert "b.md" not in {h.doc_id for h in search(ws.config().store.uri, ws.embedder, alice, "Beta", k=50)}
