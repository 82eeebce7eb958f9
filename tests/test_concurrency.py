"""Two real processes at once: same tenant (one writer wins, no duplicates), two tenants (both commit)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tessera.pipeline.run import verify_step

from .test_lifecycle import md_sections

ROOT = Path(__file__).resolve().parent.parent


def _start(cfg_path: Path, tenant: str, run_id: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "tessera.cli", "--config", str(cfg_path), "--fake-embedder"]
    cmd += ["run", "--tenant", tenant, "--run-id", run_id]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(procs: list[subprocess.Popen[bytes]]) -> list[tuple[int, str]]:
    out = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        out.append((p.returncode, err.decode(errors="replace")))
    return out


@pytest.mark.scenario("C2")
def test_two_runs_of_one_tenant_never_publish_duplicates(ws: Any) -> None:
    ws.tenant("acme", {f"d{i:02d}.md": md_sections(f"Doc{i}", 3) for i in range(30)})
    cfg = ws.config()
    results = _finish([_start(cfg.path, "acme", "p1"), _start(cfg.path, "acme", "p2")])
    codes = [code for code, _ in results]
    assert 0 in codes, results  # at least one run published
    for code, err in results:  # the other finished too, or failed cleanly on the tenant lock
        assert code == 0 or "is being published by another run" in err, err[-2000:]
    rows = ws.rows("acme")
    assert rows and max(Counter(r["id"] for r in rows).values()) == 1
    assert {r["doc_id"] for r in rows} == {f"d{i:02d}.md" for i in range(30)}
    rc = ws.context("acme", "p1")
    if rc.workspace.exists() and (rc.workspace / "listing.json").exists():
        assert verify_step(rc)[0] == []
    again = ws.run("acme", "p3")  # and a later run converges to a no-op
    assert again["publish"]["committed"] is False


@pytest.mark.scenario("C2")
def test_two_tenants_commit_at_the_same_time(ws: Any) -> None:
    for t in ("acme", "globex"):
        ws.tenant(t, {f"{t}{i}.md": md_sections(f"{t}{i}", 2) for i in range(10)})
    cfg = ws.config()
    results = _finish([_start(cfg.path, "acme", "a1"), _start(cfg.path, "globex", "g1")])
    assert [code for code, _ in results] == [0, 0], results
    for t in ("acme", "globex"):
        rows = ws.rows(t)
        assert {r["tenant"] for r in rows} == {t} and len({r["doc_id"] for r in rows}) == 10
