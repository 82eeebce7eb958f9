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
