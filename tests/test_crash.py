"""Crash safety: SIGKILL a real run process at each publish phase; the table stays consistent.

After every kill the table opens at the previous version or the complete new one, holds no
duplicate chunk ids, and the next run converges to what a clean build produces.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    sys.path.insert(0, {root!r})
    from tessera.config import load_config
    from tessera.embedding.fake import HashEmbedder
    from tessera.pipeline.run import RunContext, run_tenant
    from tessera.store import index as index_module

    phase = sys.argv[1]
    original_publish = index_module.TenantIndex.publish
    original_record = index_module.TenantIndex._record

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def publish(self, rows, scope, run_id, config_hash):
        if phase == "after_staging":
            die()
        if phase == "during_commit":
            threading.Timer(0.02, die).start()
        return original_publish(self, rows, scope, run_id, config_hash)

    def record(self, *args, **kwargs):
        if phase == "before_bookkeeping":
            die()
        return original_record(self, *args, **kwargs)

    index_module.TenantIndex.publish = publish
    index_module.TenantIndex._record = record
    cfg = load_config(sys.argv[2])
    run_tenant(RunContext(cfg, "acme", "crash-" + phase, HashEmbedder(), sleep=lambda s: None))
    time.sleep(5)  # the timer of during_commit fires while the commit runs or right after it
    """
)


def docs(version: int) -> dict[str, str]:
    return {f"d{i}.md": f"# Doc {i}\n\n" + f"version {version} text {i}. " * 3 + "\n" for i in range(6)}


def state(ws: Any, tenant: str = "acme") -> tuple[int, list[tuple[str, str]]]:
    rows = ws.rows(tenant)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate chunk ids"
    return ws.table(tenant).version, sorted((r["doc_id"], r["text"]) for r in rows)


@pytest.mark.parametrize("phase", ["after_staging", "during_commit", "before_bookkeeping"])
@pytest.mark.scenario("C1", "A9")
def test_sigkill_at_each_publish_phase(ws: Any, tmp_path: Path, phase: str) -> None:
    src = ws.tenant("acme", docs(1))
    cfg = ws.config()
    ws.run("acme", "r1")
    before_version, before = state(ws)
    for name, text in docs(2).items():
        (src / name).write_text(text, encoding="utf-8")
    script = tmp_path / "crash.py"
    script.write_text(SCRIPT.format(root=str(Path(__file__).resolve().parent.parent)), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script), phase, str(cfg.path)], capture_output=True, timeout=120
    )
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]

    version, rows = state(ws)  # the table opens, with no duplicate ids
    texts = {t for _, t in rows}
    old = any("version 1" in t for t in texts)
    new = any("version 2" in t for t in texts)
    assert not (old and new), "a mix of old and new chunks is visible"
    if phase == "after_staging":
        assert (version, rows) == (before_version, before)

    ws.run("acme", "r-after")  # the next run converges to what a clean build gives
    ws.tenant("fresh", docs(2))
    ws.run("fresh", "r1")
    assert state(ws)[1] == state(ws, "fresh")[1]
    assert ws.run("acme", "r-again")["publish"]["committed"] is False  # and stays converged
