"""The deletion guard counts what users lose, not only lost paths (scenarios A6, A7).

Attacks: every file truncated to 0 bytes, whitespace-only rewrites, documents gutted to a
fraction of their chunks, an empty folder that looks like an unmounted mount point, on small and
large tenants, through the real CLI and the pipeline. Each checks that the live index is
unchanged, that the override (or a proof of emptiness) lets a deliberate change through, and
that ordinary edits, shrinking documents and renames still publish without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tessera.cli import main
from tessera.errors import MassDeletionBlocked
from tessera.pipeline.listing import check_sources

from .test_lifecycle import md_sections


def _cli(ws: Any, *args: str) -> int:
    return main(["--config", str(ws.config().path), "--fake-embedder", *args])


def _docs(n: int, sections: int = 1) -> dict[str, str]:
    return {f"doc{i:02d}.md": md_sections(f"Doc{i}", sections) for i in range(n)}


@pytest.mark.scenario("safety-deletion", "A7")
def test_truncating_every_file_of_a_small_tenant_is_blocked(ws: Any, capsys: Any) -> None:
    src = ws.tenant("acme", _docs(3))
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r1") == 0
    before = ws.rows("acme")
    for path in src.glob("*.md"):
        path.write_bytes(b"")  # a botched sync, or ransomware-style truncation
    capsys.readouterr()
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r2") == 1
    err = capsys.readouterr().err
    assert "MassDeletionBlocked" in err and "3 of 3 documents" in err and "3 emptied" in err
    assert ws.rows("acme") == before
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r3", "--allow-mass-delete") == 0
    assert ws.rows("acme") == []  # the override publishes the deliberate change


@pytest.mark.scenario("safety-deletion", "A7")
def test_emptied_and_whitespace_documents_count_on_a_large_tenant(ws: Any) -> None:
    src = ws.tenant("acme", _docs(20))
    ws.run("acme", "r1")
    before = ws.rows("acme")
    for i in range(4):
        (src / f"doc{i:02d}.md").write_bytes(b"")
    for i in range(4, 7):
        (src / f"doc{i:02d}.md").write_text("\n   \n\t\n", encoding="utf-8")  # no extractable text
    (src / "doc07.md").unlink()
    # 0 zero-byte files are visible to the listing check already (Dagster's blocking guard)
    status = check_sources(ws.context("acme", "probe"))
    assert status["deletion"]["emptied"] == [f"doc{i:02d}.md" for i in range(4)]
    assert status["deletion"]["removed"] == 1
    with pytest.raises(MassDeletionBlocked) as err:  # the publish step counts all 8: 40% > 30%
        ws.run("acme", "r2")
    plan = err.value.plan
    assert (plan["to_delete"], plan["removed"], len(plan["emptied"])) == (8, 1, 7)
    assert ws.rows("acme") == before
    out = ws.run("acme", "r3", allow_mass_delete=True)
    assert out["publish"]["committed"] and {r["doc_id"] for r in ws.rows("acme")} == {
        f"doc{i:02d}.md" for i in range(8, 20)
    }


@pytest.mark.scenario("safety-deletion", "A7")
def test_gutted_documents_count_and_ordinary_shrinking_does_not(ws: Any) -> None:
    src = ws.tenant("acme", _docs(10, sections=8))
    ws.run("acme", "r1")
    chunks = ws.context("acme", "probe").index.manifest()
    assert min(s.chunks for s in chunks.values()) >= 4
    before = ws.rows("acme")
    for i in range(4):  # each keeps 1 of its chunks: lost content, though every path is still there
        (src / f"doc{i:02d}.md").write_text(md_sections(f"Doc{i}", 1), encoding="utf-8")
    with pytest.raises(MassDeletionBlocked) as err:
        ws.run("acme", "r2")
    assert err.value.plan["gutted"] == [f"doc{i:02d}.md" for i in range(4)] and err.value.plan["removed"] == 0
    assert ws.rows("acme") == before
    for i in range(4):  # a document that halves (A2) is an edit, not a loss
        (src / f"doc{i:02d}.md").write_text(md_sections(f"Doc{i}", 5), encoding="utf-8")
    out = ws.run("acme", "r3")
    assert out["publish"]["committed"] and out["publish"]["deleted"] > 0


@pytest.mark.scenario("safety-deletion", "A6")
def test_an_empty_folder_without_proof_never_wipes_a_small_tenant(ws: Any, capsys: Any) -> None:
    src = ws.tenant("acme", _docs(2))
    ws.tenant("globex", _docs(2))
    assert _cli(ws, "run", "--run-id", "r1") == 0
    before, other = ws.rows("acme"), ws.rows("globex")
    for path in src.iterdir():  # what an unmounted mount point looks like
        path.unlink()
    capsys.readouterr()
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r2") == 1
    assert "did not prove it is empty" in capsys.readouterr().err
    assert ws.rows("acme") == before and ws.rows("globex") == other
    assert _cli(ws, "sources", "check", "--tenant", "acme", "--json") == 0
    status = json.loads(capsys.readouterr().out)
    assert (
        status["verdict"] == "empty"
        and status["deletion"]["blocked"]
        and "no .tessera-root" in status["proof"]
    )
    (src / ".tessera-root").write_bytes(b"")  # provisioned empty: the proof
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r3") == 0
    assert ws.rows("acme") == [] and ws.rows("globex") == other


@pytest.mark.scenario("safety-deletion", "A7")
def test_renames_and_edits_are_not_losses(ws: Any, tmp_path: Path) -> None:
    src = ws.tenant("acme", _docs(3))
    ws.run("acme", "r1")
    for path in sorted(src.glob("*.md")):  # every file moved: nothing is lost
        (src / "archive").mkdir(exist_ok=True)
        path.rename(src / "archive" / path.name)
    out = ws.run("acme", "r2")
    assert out["publish"]["committed"] and out["publish"]["docs_removed"] == 3
    assert {r["doc_id"] for r in ws.rows("acme")} == {f"archive/doc{i:02d}.md" for i in range(3)}
    (src / "archive" / "doc00.md").write_text(md_sections("Doc0", 2, title="Doc0 v2"), encoding="utf-8")
    assert ws.run("acme", "r3")["publish"]["committed"]
