"""Metadata-only changes relabel the live rows in place (tessera.pipeline.relabel).

Attacks: a relabel must never widen access beyond the new policy, never keep a revoked
reader, never skip a document whose URI changed (parsed again instead), never publish rows
without an ACL, and must commit together with content changes in one version. Legitimate
work: the newly allowed group sees the document at once; texts, vectors and ids are kept.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pyarrow.compute as pc
import pytest
import yaml

from tessera.errors import PublishError
from tessera.pipeline.publish import _with_relabelled
from tessera.pipeline.relabel import live_rows, relabelled, split_meta_only
from tessera.search import principal_from_config, search
from tessera.search.options import SearchOptions
from tessera.store.index import StreamedRows
from tessera.types import SourceDocument

CONTENT = ["id", "text", "embedding_text", "vector", "checksum", "start", "end", "byte_start", "byte_end"]


def _policy(src: Any, rules: list[dict[str, Any]]) -> None:
    (src / "_access.yaml").write_text(yaml.safe_dump({"documents": rules}), encoding="utf-8")


def _docs(ws: Any, tenant: str, user: str, query: str, **kw: Any) -> set[str]:
    cfg = ws.config()
    principal = principal_from_config(cfg, tenant, user)
    assert principal is not None
    opts = SearchOptions(**{"k": 50, **kw})
    return {h.doc_id for h in search(cfg.store.uri, ws.embedder, principal, query, options=opts)}


def _by_id(rows: list[dict[str, Any]], doc_id: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in rows if r["doc_id"] == doc_id}


FILES = {
    "a.md": "# Alpha\n\nalpha merger plans are secret.\n\n## More\n\nalpha details follow here.\n",
    "b.md": "# Beta\n\nbeta onboarding guide for staff.\n",
    "c.md": "# Gamma\n\ngamma roadmap for the board.\n",
}
USERS = {"sam": ["staff"], "lee": ["legal"], "bo": ["board"]}


def test_acl_change_relabels_and_moves_access_exactly(ws: Any) -> None:
    src = ws.tenant("acme", FILES, users=USERS)
    ws.run("acme", "r1")
    before = ws.rows("acme")
    assert "a.md" in _docs(ws, "acme", "sam", "alpha merger plans")

    _policy(src, [{"match": "a.md", "groups": ["legal"]}])
    out = ws.run("acme", "r2")
    assert out["listing"]["relabel"] == 1 and out["listing"]["changed"] == 0
    assert out["parse"]["parsed"] == 0 and out["chunk"]["chunks"] == 0 and out["embed"]["texts"] == 0
    after = ws.rows("acme")
    old, new = _by_id(before, "a.md"), _by_id(after, "a.md")
    assert set(old) == set(new)
    for cid, row in new.items():
        assert {c: row[c] for c in CONTENT} == {c: old[cid][c] for c in CONTENT}
        assert row["groups"] == ["legal"] and row["readers"] == []
        assert row["run_id"] == "r2" and row["acl_source"] == "_access.yaml"
    for other in ("b.md", "c.md"):  # untouched documents keep every column, run id included
        assert _by_id(after, other) == _by_id(before, other)
    # the revoked group loses it on every path; the granted one sees it at once
    for mode in ("dense", "lexical", "hybrid"):
        assert "a.md" not in _docs(ws, "acme", "sam", "alpha merger plans", mode=mode)
    assert "a.md" in _docs(ws, "acme", "lee", "alpha merger plans")
    assert "b.md" in _docs(ws, "acme", "sam", "beta onboarding")
    # verify's checks hold on the relabelled table, and a rerun is a no-op
    again = ws.run("acme", "r3")
    assert again["publish"]["committed"] is False and again["listing"]["relabel"] == 0


def test_relabel_and_content_change_commit_in_one_version(ws: Any) -> None:
    src = ws.tenant("acme", FILES, users=USERS)
    ws.run("acme", "r1")
    version = ws.table("acme").version
    _policy(src, [{"match": "c.md", "groups": ["board"]}])
    (src / "b.md").write_text("# Beta\n\nbeta onboarding guide, second edition.\n", encoding="utf-8")
    out = ws.run("acme", "r2")
    assert out["listing"]["relabel"] == 1 and out["listing"]["changed"] == 1
    assert out["publish"]["docs_changed"] == 2
    # one data commit: the version right after the old one already holds both changes
    # (index refreshes add versions after it)
    table = ws.table("acme")
    table.checkout(version + 1)
    first = table.to_arrow().to_pylist()
    assert {tuple(r["groups"]) for r in first if r["doc_id"] == "c.md"} == {("board",)}
    assert any("second edition" in r["text"] for r in first if r["doc_id"] == "b.md")
    assert out["publish"]["updated"] == sum(r["doc_id"] == "c.md" for r in first)
    assert "c.md" in _docs(ws, "acme", "bo", "gamma roadmap")
    assert "c.md" not in _docs(ws, "acme", "sam", "gamma roadmap")
    assert "b.md" in _docs(ws, "acme", "sam", "second edition")


def test_effective_dates_relabel_and_filter(ws: Any) -> None:
    src = ws.tenant("acme", FILES, users=USERS)
    ws.run("acme", "r1")
    _policy(src, [{"match": "b.md", "groups": ["staff"], "effective_from": "2999-01-01T00:00:00Z"}])
    out = ws.run("acme", "r2")
    assert out["listing"]["relabel"] == 1
    assert "b.md" not in _docs(ws, "acme", "sam", "beta onboarding")
    later = datetime(3000, 1, 1, tzinfo=UTC)
    assert "b.md" in _docs(ws, "acme", "sam", "beta onboarding", as_of=later)


def test_a_moved_source_is_parsed_again_not_relabelled(ws: Any) -> None:
    """The URI is part of what a row cites: a moved root re-parses (new URIs in every row)."""
    ws.tenant("acme", FILES, users=USERS)
    ws.run("acme", "r1")
    shutil.move(str(ws.root / "corpus" / "acme"), str(ws.root / "corpus" / "moved"))
    ws.tenants["acme"]["source"]["path"] = "corpus/moved"
    out = ws.run("acme", "r2")
    assert out["listing"]["meta_only"] == 3 and out["listing"]["relabel"] == 0
    assert out["parse"]["parsed"] == 3
    assert all("/corpus/moved/" in r["uri"] for r in ws.rows("acme"))


def test_split_meta_only_needs_every_live_row_to_match(ws: Any) -> None:
    ws.tenant("acme", FILES, users=USERS)
    ws.run("acme", "r1")
    rc = ws.context("acme", "inspect")
    table = rc.index.table()
    docs = {d.doc_id: d for d in rc.connector.list().documents}
    assert split_meta_only(table, ["a.md", "b.md"], docs) == (["a.md", "b.md"], [])
    other = {**docs, "a.md": _with(docs["a.md"], uri="file:///elsewhere/a.md")}
    assert split_meta_only(table, ["a.md", "b.md"], other) == (["b.md"], ["a.md"])
    typed = {**docs, "b.md": _with(docs["b.md"], content_type="text/html")}
    assert split_meta_only(table, ["a.md", "b.md"], typed) == (["a.md"], ["b.md"])
    # a document with no live rows is never relabelled (nothing to relabel: parse it)
    ghost = {**docs, "zz.md": _with(docs["a.md"], doc_id="zz.md")}
    assert split_meta_only(table, ["zz.md"], ghost) == ([], ["zz.md"])
    assert split_meta_only(None, ["a.md"], docs) == ([], ["a.md"])
    assert live_rows(table, []).num_rows == 0


def test_relabelled_rows_without_acl_fail_the_publish(ws: Any) -> None:
    ws.tenant("acme", FILES, users=USERS)
    ws.run("acme", "r1")
    rc = ws.context("acme", "r2")
    docs = {d.doc_id: d for d in rc.connector.list().documents}
    open_to_all = {**docs, "a.md": _with(docs["a.md"], readers=(), groups=())}
    rows = relabelled(rc.index.table(), {"a.md"}, open_to_all, "r2", rc.index.schema)
    assert rows.num_rows == 2 and rows.column("groups").to_pylist() == [[], []]
    empty = StreamedRows.of(rc.index.schema.empty_table())
    with pytest.raises(PublishError, match="without any reader or group"):
        _with_relabelled(rc, empty, {"a.md"}, open_to_all)
    fine = _with_relabelled(rc, empty, {"a.md"}, docs)
    assert fine.num_rows == 2 and fine.doc_ids == frozenset({"a.md"})
    assert sum(b.num_rows for b in fine.open()) == 2


def _with(doc: SourceDocument, **changes: Any) -> SourceDocument:
    from dataclasses import replace

    return replace(doc, **changes)


def test_a_relabel_only_publish_deletes_nothing_and_a_content_change_still_does(
    ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A publish of relabels alone hands its rows as ``whole`` and commits without
    ``merge_insert``'s delete of the scope's unmatched rows (the clause that joins the whole
    table): they are every live row of the scope. With a content change in the same run, or
    alone, the stale rows still go."""
    from tessera.store.index import TenantIndex

    src = ws.tenant("acme", FILES, users=USERS)
    ws.run("acme", "r1")
    asked: list[bool] = []
    publish = TenantIndex.publish

    def spy(self: TenantIndex, rows: StreamedRows, *args: Any) -> Any:
        asked.append(not rows.whole)  # whether the commit may delete
        return publish(self, rows, *args)

    monkeypatch.setattr(TenantIndex, "publish", spy)
    _policy(src, [{"match": "a.md", "groups": ["legal"]}])
    assert ws.run("acme", "r2")["publish"]["deleted"] == 0
    _policy(src, [{"match": "a.md", "groups": ["board"]}])
    (src / "b.md").write_text("# Beta\n\nbeta handbook, rewritten.\n", encoding="utf-8")
    both = ws.run("acme", "r3")["publish"]
    (src / "c.md").write_text("# Gamma\n\ngamma plans, replaced.\n", encoding="utf-8")
    content = ws.run("acme", "r4")["publish"]
    assert asked == [False, True, True]
    assert both["deleted"] >= 1 and content["deleted"] >= 1  # the old chunks of b.md, c.md
    rows = ws.rows("acme")
    assert not any("onboarding" in r["text"] or "roadmap" in r["text"] for r in rows)
    assert {tuple(r["groups"]) for r in rows if r["doc_id"] == "a.md"} == {("board",)}


def test_a_publish_of_whole_rows_keeps_rows_it_does_not_name(ws: Any) -> None:
    """Rows marked ``whole`` (a relabel's: every live row of the scope) are updated and
    inserted only: a live row of a scoped document missing from them stays (without the mark
    it goes), and an empty set of them commits nothing."""
    ws.tenant("acme", FILES, users=USERS)
    ws.run("acme", "r1")
    index = ws.context("acme").index
    live = [r for r in ws.rows("acme") if r["doc_id"] == "a.md"]
    assert len(live) >= 2
    table = index.table()
    assert table is not None
    data = table.to_arrow()
    keep = data.filter(pc.equal(data["id"], live[0]["id"]))
    kept = index.publish(replace(StreamedRows.of(keep), whole=True), {"a.md"}, "r2", "cfg")
    assert kept.deleted == 0 and len([r for r in ws.rows("acme") if r["doc_id"] == "a.md"]) == len(live)
    empty = replace(StreamedRows.of(keep.slice(0, 0)), whole=True)
    assert not index.publish(empty, {"a.md"}, "r3", "cfg").committed
    gone = index.publish(keep, {"a.md"}, "r4", "cfg")
    assert gone.deleted == len(live) - 1 and [r["id"] for r in ws.rows("acme") if r["doc_id"] == "a.md"] == [
        live[0]["id"]
    ]
