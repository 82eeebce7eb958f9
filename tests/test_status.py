"""``tessera status``: one row per tenant (live version, documents, chunks, active model,
freshness), a human table by default and ``--json``; exit 0 whatever the verdict, a typed
error for an unknown tenant, and nothing written."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tessera.cli import main
from tessera.cli_status import duration
from tests.conftest import Workspace

DOCS: dict[str, str | bytes] = {
    "a.md": "# Alpha\n\nalphamarker The alpha guide.\n",
    "b.md": "# Beta\n\nbetamarker The beta guide.\n",
}


@pytest.fixture
def project(ws: Workspace) -> Path:
    """acme: published, nothing pending. globex (bound 1 h): a change waiting for 2 h."""
    ws.tenant("acme", dict(DOCS))
    src = ws.tenant("globex", {"x.md": "# X\n\nglobex only.\n", "y.md": "# Y\n\nwhy.\n"})
    ws.tenants["globex"]["freshness"] = {"max_lag_seconds": 3600}
    cfg = ws.config()
    assert main(["--config", str(cfg.path), "--fake-embedder", "run", "--run-id", "r1", "--json"]) == 0
    (src / "x.md").write_text("# X\n\nglobex rewritten.\n", encoding="utf-8")
    (src / "z.md").write_text("# Z\n\nzed.\n", encoding="utf-8")
    t = time.time() - 7200
    os.utime(src / "x.md", (t, t))
    return cfg.path


def cli(cfg: Path, capsys: Any, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--config", str(cfg), "--fake-embedder", "status", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_table_for_every_tenant(project: Path, capsys: Any) -> None:
    code, out, err = cli(project, capsys)
    assert code == 0 and err == ""  # stale is a report, not a failure
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["tenant", "freshness", "lag", "bound", "pending"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {"acme", "globex"}
    acme, globex = rows["acme"].split(), rows["globex"].split()
    assert acme[1:5] == ["fresh", "0s", "1d02h", "0"]
    assert globex[1] == "stale" and globex[2].startswith("2h0") and globex[3] == "1h00m"
    assert "2 (1 new, 1 changed)" in rows["globex"]
    assert "hash-embedder-" in rows["acme"] and "{" not in out


def test_json_for_two_tenants(project: Path, capsys: Any) -> None:
    code, out, _ = cli(project, capsys, "--json")
    assert code == 0
    report = {r["tenant"]: r for r in json.loads(out)}
    acme, globex = report["acme"], report["globex"]
    assert acme["verdict"] == "fresh" and acme["lag_seconds"] == 0 and acme["live_documents"] == 2
    assert acme["live_chunks"] >= 2 and acme["run_id"] == "r1" and acme["published_version"] is not None
    assert acme["active_model"] == acme["model"] and acme["max_lag_seconds"] == 93_600
    assert globex["verdict"] == "stale" and globex["max_lag_seconds"] == 3600
    assert globex["pending"] == {"new": 1, "changed": 1, "metadata": 0, "removed": 0, "unreadable": 0}
    assert 7000 < globex["lag_seconds"] < 7400
    assert [d["doc_id"] for d in globex["pending_documents"]] == ["x.md", "z.md"]  # oldest first
    assert globex["oldest_pending_change"] < globex["published_at"] <= globex["checked_at"]


def test_one_tenant_and_an_unknown_one(project: Path, capsys: Any) -> None:
    code, out, _ = cli(project, capsys, "--tenant", "globex", "--json")
    assert code == 0 and [r["tenant"] for r in json.loads(out)] == ["globex"]
    code, out, err = cli(project, capsys, "--tenant", "nope")
    assert code == 1 and out == ""
    assert err.startswith("tessera: ConfigError: ") and "nope" in err and len(err.splitlines()) == 1
    code, out, err = cli(project, capsys, "--tenant", "nope", "--json")
    assert code == 1 and out == "" and err.startswith("tessera: ConfigError: ")


def test_an_unavailable_source_is_reported_not_fatal(project: Path, ws: Workspace, capsys: Any) -> None:
    shutil.rmtree(ws.root / "corpus" / "acme")
    code, out, err = cli(project, capsys)
    assert code == 0 and err == ""
    row = next(line for line in out.splitlines() if line.startswith("acme "))
    assert row.split()[1:5] == ["source-unavailable", "?", "1d02h", "?"]
    assert any(line.startswith("acme: source unavailable: SourceError:") for line in out.splitlines())
    code, out, _ = cli(project, capsys, "--json")
    acme = next(r for r in json.loads(out) if r["tenant"] == "acme")
    assert acme["verdict"] == "source-unavailable" and "SourceError" in acme["error"]
    assert acme["live_documents"] == 2  # what is live is still shown


def test_never_published_tenant(ws: Workspace, capsys: Any) -> None:
    ws.tenant("acme", dict(DOCS))
    cfg = ws.config()
    code, out, _ = cli(cfg.path, capsys)
    row = out.splitlines()[1].split()
    assert code == 0 and row[:2] == ["acme", "never-published"] and "never" in row and row[-1] == "none"
    code, out, _ = cli(cfg.path, capsys, "--json")
    (acme,) = json.loads(out)
    assert acme["published_at"] is None and acme["active_model"] is None and acme["pending"]["new"] == 2


def test_status_writes_nothing(project: Path, ws: Workspace, capsys: Any) -> None:
    def snapshot() -> dict[str, tuple[int, int]]:
        return {
            str(p): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(ws.root.rglob("*"))
            if p.is_file()
        }

    before = snapshot()
    assert cli(project, capsys)[0] == 0 and cli(project, capsys, "--json")[0] == 0
    assert snapshot() == before


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59.9, "59s"), (60, "1m00s"), (3599, "59m59s"), (3600, "1h00m"), (93_600, "1d02h")],
)
def test_duration(seconds: float, text: str) -> None:
    assert duration(seconds) == text
