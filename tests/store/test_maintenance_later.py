"""Maintenance a week after the publications it maintains, under a clock moved forward.

Lance's version cleanup decides what is old by the commit time in each manifest against the
clock, so these tests run ``tessera maintain`` in a process whose clock is eight days ahead
(libfaketime, ``make faketime``): every tag and version of the tenant is then older than the
seven days lancedb's ``Table.optimize`` prunes by default."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tessera.store.db import publications_table_name
from tests.test_lifecycle import md_sections

FAKETIME = shutil.which("faketime")
pytestmark = pytest.mark.skipif(FAKETIME is None, reason="faketime is not installed (make faketime)")
REPO = Path(__file__).resolve().parents[2]


def _versions(table: Any) -> list[int]:
    return sorted(int(v["version"]) for v in table.list_versions())


def maintain_later(ws: Any, days: int, *args: str) -> list[dict[str, Any]]:
    """``tessera maintain --json`` for the workspace's tenants, run ``days`` days from now."""
    ws.config()  # writes tessera.yaml
    env = {**os.environ, "PYTHONPATH": str(REPO), "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    cmd = [FAKETIME or "faketime", "-f", f"+{days}d", sys.executable, "-m", "tessera"]
    cmd += ["--config", str(ws.root / "tessera.yaml"), "maintain", *args, "--json"]
    done = subprocess.run(cmd, cwd=ws.root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    reports: list[dict[str, Any]] = json.loads(done.stdout)
    return reports


def published(ws: Any, tenant: str, runs: int) -> Path:
    src: Path = ws.tenant(tenant, {"a.md": md_sections("Alpha", 2)})
    for i in range(runs):  # each publication tagged run-r{i}
        (src / "a.md").write_text(md_sections(f"Alpha{i}", 2), encoding="utf-8")
        ws.run(tenant, f"r{i}")
    return src


def test_the_clock_really_moves_for_the_maintenance_process() -> None:
    """The tests below mean something only if that process sees the later clock."""
    env = {**os.environ, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    cmd = [FAKETIME or "faketime", "-f", "+8d", sys.executable, "-c", "import time; print(time.time())"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert float(out.stdout) - time.time() > 7.9 * 86400


@pytest.mark.scenario("C6")
def test_maintenance_a_week_later_keeps_tags_and_the_last_versions(ws: Any) -> None:
    published(ws, "acme", 4)
    table = ws.table("acme")
    table.tags.create("release-1", int(table.tags.list()["run-r1"]["version"]))  # an operator's tag
    rows, tags_before, before = ws.rows("acme"), table.tags.list(), _versions(table)
    release = int(tags_before["release-1"]["version"])
    table.checkout(release)
    release_ids = sorted(table.to_arrow().column("id").to_pylist())
    assert release_ids != [r["id"] for r in rows]

    reports = maintain_later(ws, 8, "--tenant", "acme", "--keep-versions", "3", "--keep-run-tags", "2")

    chunks = next(r for r in reports if r["table"] == ws.context("acme").index.name)
    # run-r1 expired, but it names the version of the operator's tag, so it stays with it
    assert chunks["compacted"] and chunks["run_tags_deleted"] == ["run-r0"]
    table = ws.table("acme")
    after, tags = _versions(table), table.tags.list()
    assert set(tags) == {"release-1", "run-r1", "run-r2", "run-r3"}  # old as they are
    assert after[-3:] == sorted(chunks["kept"])[-3:] and len(after) < len(before)
    assert {int(t["version"]) for t in tags.values()} <= set(after)
    assert ws.rows("acme") == rows  # maintenance never changes what is served
    ctx = ws.context("acme")
    ctx.index.restore(release, "restore-release")  # the old tag still restores its rows
    assert [r["id"] for r in ws.rows("acme")] == release_ids
    (ws.root / "corpus" / "acme" / "b.md").write_text(md_sections("Beta", 1), encoding="utf-8")
    assert ws.run("acme", "r-after")["publish"]["committed"]  # and the tenant publishes on
    assert {r["doc_id"] for r in ws.rows("acme")} == {"a.md", "b.md"}


def test_maintenance_a_week_later_keeps_the_last_versions_of_an_untagged_log(ws: Any) -> None:
    """The publications log has no tags: lancedb's default prune would leave it one version."""
    published(ws, "acme", 4)
    log_name = publications_table_name("acme")
    db = ws.context("acme").db
    before = _versions(db.open_table(log_name))
    assert len(before) >= 4

    reports = maintain_later(ws, 8, "--tenant", "acme", "--keep-versions", "3")

    log = next(r for r in reports if r["table"] == log_name)
    assert log["compacted"] and log["versions_after"] == 3
    assert _versions(db.open_table(log_name))[-3:] == log["kept"]
    assert len(db.open_table(log_name).to_arrow()) == 4  # every publication still logged


def test_maintenance_a_day_later_still_works_when_nothing_is_old(ws: Any) -> None:
    published(ws, "acme", 2)
    rows = ws.rows("acme")
    reports = maintain_later(ws, 1, "--tenant", "acme")
    assert all(r["compacted"] for r in reports) and ws.rows("acme") == rows
