"""Maintenance: compaction and pruning keep tagged versions and the last N, rows unchanged."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tessera.errors import PublishError, TenantLockedError
from tessera.store.lock import tenant_lock
from tessera.store.maintenance import maintain_tenant

from .test_lifecycle import md_sections


def _versions(table: Any) -> list[int]:
    return sorted(int(v["version"]) for v in table.list_versions())


@pytest.mark.scenario("C4", "C6")
def test_pruning_keeps_tags_and_the_last_versions(ws: Any) -> None:
    src = ws.tenant("acme", {"a.md": md_sections("Alpha", 2)})
    for i in range(4):  # four publications, each tagged run-r{i}, plus index builds (untagged)
        (src / "a.md").write_text(md_sections(f"Alpha{i}", 2), encoding="utf-8")
        ws.run("acme", f"r{i}")
        time.sleep(0.3)
    table = ws.table("acme")
    table.tags.create("release-1", int(table.tags.list()["run-r2"]["version"]))  # an operator's tag
    rows = ws.rows("acme")
    before = _versions(table)
    tags_before = table.tags.list()
    time.sleep(0.3)
    cfg = ws.config()
    ctx = ws.context("acme")
    (report,) = maintain_tenant(
        ctx.db, cfg.store.work_dir, "acme", [ctx.index.name], keep_versions=2, keep_run_tags=1
    )
    table = ws.table("acme")
    after = _versions(table)
    tags = table.tags.list()
    assert len(after) < len(before)
    # run-r2 expired, but it names the same version as the operator's tag, which stays
    assert set(tags) == {"release-1", "run-r2", "run-r3"} and report.run_tags_deleted == ["run-r0", "run-r1"]
    # every version of the pruned publications is gone (a 100 ms safety margin may keep a few
    # versions written in the same second as the oldest kept one)
    assert min(after) > int(tags_before["run-r1"]["version"])
    for name, tag in tags.items():  # every remaining tag still resolves to its rows
        assert int(tag["version"]) in after, name
    assert int(tags_before["run-r3"]["version"]) in after
    assert after[-2:] == sorted(report.kept)[-2:]  # the last versions are kept
    # and nothing else: the untagged versions between the operator's old tag and the last two
    # are pruned too (an old tag pins its own version, not every later one)
    tagged = {int(t["version"]) for t in tags.values()}
    assert set(after) == tagged | set(after[-2:]) == set(report.kept)
    assert any(v not in after for v in range(min(tagged), after[-2]))
    assert ws.rows("acme") == rows  # maintenance never changes what is served
    v_release = int(tags["release-1"]["version"])
    ctx.index.restore(v_release, "restore-release")  # a kept version can be restored
    assert {r["doc_id"] for r in ws.rows("acme")} == {"a.md"}
    with pytest.raises(PublishError, match="does not exist"):
        ctx.index.restore(int(tags_before["run-r1"]["version"]), "restore-pruned")


@pytest.mark.scenario("C4")
def test_maintenance_waits_for_no_publish(ws: Any) -> None:
    ws.tenant("acme", {"a.md": md_sections("Alpha", 1)})
    ws.run("acme", "r1")
    cfg, ctx = ws.config(), ws.context("acme")
    with tenant_lock(cfg.store.work_dir / "_locks", "acme"), pytest.raises(TenantLockedError):
        maintain_tenant(ctx.db, cfg.store.work_dir, "acme", [ctx.index.name])


def test_the_maintenance_asset_merges_index_deltas_and_reports_them(
    ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run after the first leaves the text and scalar indexes in two segments; the asset, called directly,
    merges them and says so in its metadata, and the rows and search answers stay."""
    from tessera.store import segments as index_segments

    monkeypatch.setattr(index_segments, "DELTA_SHARE", 0.5)  # one document of 13 is a delta
    from dagster import build_asset_context

    from assets.index_maintenance import index_maintenance
    from resources import (
        ConfiguredSourceResource,
        FakeEmbedderResource,
        TenantRunResource,
        TesseraConfigResource,
    )
    from tessera.search import principal_from_config, search

    src = ws.tenant("acme", {f"d{i}.md": md_sections(f"Doc{i}", 2) for i in range(12)})
    ws.run("acme", "r1")
    (src / "b.md").write_text(md_sections("Beta", 2), encoding="utf-8")
    ws.run("acme", "r2")  # a small change: its rows are a delta segment of every index
    segments = {
        i.columns[0]: ws.table("acme").index_stats(i.name).num_indices
        for i in ws.table("acme").list_indices()
    }
    assert segments and set(segments.values()) == {2}
    cfg, rows = ws.config(), ws.rows("acme")
    alice = principal_from_config(cfg, "acme", "alice")
    hits = [h.chunk_id for h in search(cfg.store.uri, ws.embedder, alice, "Beta section", k=5)]
    run = TenantRunResource(
        config=TesseraConfigResource(config_path=str(cfg.path)),
        embedder=FakeEmbedderResource(),
        sources=ConfiguredSourceResource(),
    )
    with build_asset_context(partition_key="acme") as ctx:
        out = index_maintenance(ctx, tenant_run=run)
    name = ws.context("acme").index.name
    assert out.metadata["segments_merged"].data == {name: segments}
    table = ws.table("acme")
    assert {table.index_stats(i.name).num_indices for i in table.list_indices()} == {1}
    assert ws.rows("acme") == rows
    assert [h.chunk_id for h in search(cfg.store.uri, ws.embedder, alice, "Beta section", k=5)] == hits
