"""Ordered publishes: a run publishes only against the state it planned from (fencing).

Two real processes of one tenant overlap in both orders. A test connector pauses a run after it
planned (listed, read the live manifest, downloaded the changed bytes) until the test lets it go,
so the interleaving is exact rather than timed. In both orders the final index holds the newest
source revision; the older plan is never published over the newer one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tessera.errors import StalePlanError
from tessera.pipeline.run import verify_step

ROOT = Path(__file__).resolve().parent.parent

DRIVER = r"""
import json, sys, time
from pathlib import Path
from tessera.config import load_config
from tessera.embedding.fake import HashEmbedder
from tessera.pipeline.run import RunContext, run_tenant
from tessera.sources.folder import FolderConnector

cfg_path, tenant, run_id, gate = sys.argv[1:5]
gate = Path(gate)

class Pausing(FolderConnector):
    paused = False
    def read(self, doc):
        raw = super().read(doc)
        if not Pausing.paused:  # only the first plan pauses; a re-plan runs straight through
            Pausing.paused = True
            (gate / f"{run_id}.planned").touch()
            while not (gate / f"{run_id}.go").exists():
                time.sleep(0.02)
        return raw

cfg = load_config(cfg_path)
t = cfg.tenant(tenant)
pausing = Pausing(tenant, t.source.path, t.default_access)
rc = RunContext(cfg, tenant, run_id, HashEmbedder(), connector=pausing)
print(json.dumps(run_tenant(rc), default=str))
"""


def _start(ws: Any, run_id: str, gate: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-c", DRIVER, str(ws.config().path), "acme", run_id, str(gate)]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_planned(gate: Path, run_id: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not (gate / f"{run_id}.planned").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{run_id} never planned"
        time.sleep(0.05)


def _finish(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()[-3000:]
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


def _text(version: str) -> str:
    return f"# Runbook\n\n## Paging\n\nPage the on-call engineer, revision {version} of the runbook.\n"


def _live_texts(ws: Any) -> str:
    return " ".join(r["text"] for r in ws.rows("acme") if r["doc_id"] == "runbook.md")


@pytest.fixture
def tenant(ws: Any, tmp_path: Path) -> tuple[Any, Path, Path]:
    src = ws.tenant("acme", {"runbook.md": _text("v0"), "other.md": "# Other\n\nUnrelated page.\n"})
    ws.run("acme", "r0")
    gate = tmp_path / "gate"
    gate.mkdir()
    return ws, src, gate


@pytest.mark.scenario("safety-ordering", "C2")
def test_an_older_plan_that_publishes_last_re_plans(tenant: tuple[Any, Path, Path]) -> None:
    ws, src, gate = tenant
    (src / "runbook.md").write_text(_text("v1"), encoding="utf-8")
    older = _start(ws, "older", gate)
    _wait_planned(gate, "older", older)  # planned from v0 with the v1 bytes in hand
    (src / "runbook.md").write_text(_text("v2"), encoding="utf-8")
    cli = [sys.executable, "-m", "tessera.cli", "--config", str(ws.config().path), "--fake-embedder"]
    newer = subprocess.run(  # a newer run, another real process, publishes v2 meanwhile
        [*cli, "run", "--tenant", "acme", "--run-id", "newer"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=300,
    )
    assert newer.returncode == 0, newer.stderr.decode()[-3000:]
    assert "revision v2" in _live_texts(ws)
    (gate / "older.go").touch()
    out = _finish(older)
    assert out["publish"]["committed"] is False  # it re-planned, found v2 live, published nothing
    assert "revision v2" in _live_texts(ws) and "revision v1" not in _live_texts(ws)
    assert verify_step(ws.context("acme", "newer"))[0] == []


@pytest.mark.scenario("safety-ordering", "C2")
def test_an_older_plan_that_publishes_first_is_overtaken_by_the_newer(tenant: tuple[Any, Path, Path]) -> None:
    ws, src, gate = tenant
    (src / "runbook.md").write_text(_text("v1"), encoding="utf-8")
    older = _start(ws, "older", gate)
    _wait_planned(gate, "older", older)
    (src / "runbook.md").write_text(_text("v2"), encoding="utf-8")
    newer = _start(ws, "newer", gate)
    _wait_planned(gate, "newer", newer)  # both planned from v0
    (gate / "older.go").touch()
    first = _finish(older)
    assert first["publish"]["committed"] is True and "revision v1" in _live_texts(ws)
    (gate / "newer.go").touch()
    second = _finish(newer)  # its plan (from v0) is stale: it re-plans against v1 and publishes v2
    assert second["publish"]["committed"] is True
    assert "revision v2" in _live_texts(ws) and "revision v1" not in _live_texts(ws)
    ids = [r["id"] for r in ws.rows("acme")]
    assert len(ids) == len(set(ids))
    assert {r["doc_id"] for r in ws.rows("acme")} == {"runbook.md", "other.md"}


@pytest.mark.scenario("safety-ordering", "C2")
def test_a_stale_plan_is_refused_at_the_publish_step(ws: Any) -> None:
    """The fence itself, step by step: nothing is written by the refused publish."""
    from tessera.pipeline.run import chunk_step, embed_step, list_step, parse_step, publish_step

    src = ws.tenant("acme", {"runbook.md": _text("v0")})
    ws.run("acme", "r0")
    (src / "runbook.md").write_text(_text("v1"), encoding="utf-8")
    stale = ws.context("acme", "stale")
    for step in (list_step, parse_step, chunk_step, embed_step):
        step(stale)
    (src / "runbook.md").write_text(_text("v2"), encoding="utf-8")
    ws.run("acme", "newer")
    version, rows = ws.table("acme").version, ws.rows("acme")
    with pytest.raises(StalePlanError, match="changed after this run planned"):
        publish_step(stale)
    assert ws.table("acme").version == version and ws.rows("acme") == rows
    # a restore also moves the live state: a run planned before it is refused too
    (src / "runbook.md").write_text(_text("v3"), encoding="utf-8")
    planned = ws.context("acme", "before-restore")
    for step in (list_step, parse_step, chunk_step, embed_step):
        step(planned)
    ws.context("acme", "x").index.restore(int(ws.table("acme").tags.list()["run-r0"]["version"]), "rb")
    with pytest.raises(StalePlanError):
        publish_step(planned)
    assert "revision v0" in _live_texts(ws)


def _planned(ws: Any, run_id: str) -> Any:
    from tessera.pipeline.run import chunk_step, embed_step, list_step, parse_step

    rc = ws.context("acme", run_id)
    for step in (list_step, parse_step, chunk_step, embed_step):
        step(rc)
    return rc


def _count_manifest_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from tessera.store import index as index_module

    reads: list[int] = []
    real = index_module.read_manifest

    def counted(table: Any) -> Any:
        reads.append(1)
        return real(table)

    monkeypatch.setattr(index_module, "read_manifest", counted)
    return reads


@pytest.mark.scenario("safety-ordering", "C2")
def test_the_fence_reads_the_manifest_again_only_when_something_committed(
    ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing committed since the plan: the publish reads no manifest and commits. A commit
    that changes no document (a no-op delete): the manifest is read, matches, and the publish
    commits. A commit that changes a document: read, refused, nothing written."""
    from tessera.pipeline.run import publish_step

    src = ws.tenant("acme", {"runbook.md": _text("v0"), "other.md": "# Other\n\nUnrelated page.\n"})
    ws.run("acme", "r0")
    reads = _count_manifest_reads(monkeypatch)
    (src / "runbook.md").write_text(_text("v1"), encoding="utf-8")
    rc = _planned(ws, "quiet")
    assert len(reads) == 1  # the listing's
    assert publish_step(rc)["committed"] is True and len(reads) == 1
    assert "revision v1" in _live_texts(ws)

    (src / "runbook.md").write_text(_text("v2"), encoding="utf-8")
    rc = _planned(ws, "after-noop-commit")
    before = ws.table("acme").version
    ws.table("acme").delete("doc_id = 'no such document'")
    assert ws.table("acme").version > before  # a commit, but the same rows
    reads.clear()
    assert publish_step(rc)["committed"] is True and len(reads) == 1
    assert "revision v2" in _live_texts(ws)

    (src / "runbook.md").write_text(_text("v3"), encoding="utf-8")
    rc = _planned(ws, "after-real-commit")
    table = ws.table("acme")
    table.update(where="doc_id = 'other.md'", values={"revision": "planted"})
    version, rows = ws.table("acme").version, ws.rows("acme")
    with pytest.raises(StalePlanError):
        publish_step(rc)
    assert ws.table("acme").version == version and ws.rows("acme") == rows


@pytest.mark.scenario("safety-ordering", "C2")
def test_a_plan_without_its_commit_is_fenced_by_the_manifest(
    ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing that names no commit (an older release's, or one whose commit was not certain)
    takes the full re-check: stale plans are refused, current ones publish."""
    from tessera.pipeline.run import publish_step
    from tessera.store.index import TenantIndex

    real = TenantIndex.planned_state
    monkeypatch.setattr(TenantIndex, "planned_state", lambda self: (real(self)[0], lambda: ""))
    src = ws.tenant("acme", {"runbook.md": _text("v0")})
    ws.run("acme", "r0")
    (src / "runbook.md").write_text(_text("v1"), encoding="utf-8")
    stale = _planned(ws, "stale")
    assert stale.listing()[0]["planned_at"] == ""
    (src / "runbook.md").write_text(_text("v2"), encoding="utf-8")
    ws.run("acme", "newer")
    with pytest.raises(StalePlanError):
        publish_step(stale)
    (src / "runbook.md").write_text(_text("v3"), encoding="utf-8")
    assert publish_step(_planned(ws, "current"))["committed"] is True
    assert "revision v3" in _live_texts(ws)
