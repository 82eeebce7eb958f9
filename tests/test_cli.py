"""The `tessera` command end to end (hash embedder, temporary store)."""

from __future__ import annotations

import hashlib
import json

import pytest

from tessera.cli import main

DOCS = {
    "runbook.md": "# Runbook\n\n## Paging\n\nPage the on-call engineer with the pager tool.\n",
    "secret.md": "# Salaries\n\nSalary bands for engineers.\n",
    "_access.yaml": "documents:\n  - match: secret.md\n    groups: [hr]\n",
}


@pytest.fixture
def project(ws):  # type: ignore[no-untyped-def]
    ws.tenant("acme", DOCS, users={"alice": ["staff"], "carol": ["staff", "hr"], "mallory": []})
    ws.tenant(
        "globex",
        {"g.md": "# Globex\n\nPage the globex dispatcher.\n"},
        groups=["employees"],
        users={"gina": ["employees"]},
    )
    return ws.config()


def _cli(cfg, *args: str) -> int:  # type: ignore[no-untyped-def]
    return main(["--config", str(cfg.path), "--fake-embedder", *args])


def test_run_search_json_and_fail_closed(project, capsys) -> None:  # type: ignore[no-untyped-def]
    assert _cli(project, "run", "--run-id", "r1") == 0
    capsys.readouterr()
    assert _cli(project, "search", "--tenant", "acme", "--user", "alice", "--json", "page the on-call") == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits and {"chunk_id", "doc_id", "text", "score", "heading_path", "byte_start", "byte_end"} <= set(
        hits[0]
    )
    assert {h["doc_id"] for h in hits} == {"runbook.md"}  # secret.md is hr-only, globex is another tenant
    assert (
        _cli(project, "search", "--tenant", "acme", "--user", "carol", "--json", "--k", "10", "salary") == 0
    )
    assert "secret.md" in {h["doc_id"] for h in json.loads(capsys.readouterr().out)}
    for user in ("mallory", "nobody"):
        assert _cli(project, "search", "--tenant", "acme", "--user", user, "--json", "salary") == 0
        assert json.loads(capsys.readouterr().out) == []


def test_versions_restore_and_errors(project, ws, capsys) -> None:  # type: ignore[no-untyped-def]
    assert _cli(project, "run", "--tenant", "acme", "--run-id", "r1") == 0
    (ws.root / "corpus" / "acme" / "runbook.md").write_text("# Runbook\n\nRewritten.\n", encoding="utf-8")
    assert _cli(project, "run", "--tenant", "acme", "--run-id", "r2") == 0
    capsys.readouterr()
    assert _cli(project, "versions", "--tenant", "acme", "--json") == 0
    pubs = json.loads(capsys.readouterr().out)
    assert [p["run_id"] for p in pubs] == ["r1", "r2"]
    first = pubs[0]["table_version"]
    assert _cli(project, "restore", "--tenant", "acme", "--version", str(first)) == 0
    texts = {r["text"] for r in ws.rows("acme")}
    assert any("pager tool" in t for t in texts) and not any("Rewritten" in t for t in texts)
    assert _cli(project, "restore", "--tenant", "acme", "--version", "999") == 1
    assert "does not exist" in capsys.readouterr().err
    assert _cli(project, "search", "--tenant", "nope", "--user", "alice", "x") == 1
    assert "unknown tenant" in capsys.readouterr().err
    assert (
        _cli(project, "search", "--tenant", "acme", "--user", "alice", "--model-version", "other", "x") == 1
    )
    assert "ModelIdentityError" in capsys.readouterr().err


def test_lineage_is_checked_field_by_field(project, ws, capsys) -> None:  # type: ignore[no-untyped-def]
    assert _cli(project, "run", "--tenant", "acme", "--run-id", "lin-1") == 0
    rows = {r["doc_id"]: r for r in ws.rows("acme")}
    row = rows["runbook.md"]
    capsys.readouterr()
    assert _cli(project, "lineage", row["id"], "--tenant", "acme", "--json") == 0
    info = json.loads(capsys.readouterr().out)
    raw = (ws.root / "corpus" / "acme" / "runbook.md").read_bytes()
    assert info["uri"] == (ws.root / "corpus" / "acme" / "runbook.md").resolve().as_uri()
    assert info["revision"] == hashlib.sha256(raw).hexdigest()
    assert (
        info["source_slice"] == raw[row["byte_start"] : row["byte_end"]].decode() and info["source_verified"]
    )
    assert info["run_id"] == "lin-1" and info["partition"] == "acme"
    pubs = ws.context("acme").index.publications()
    assert info["first_published_version"] == pubs[0]["table_version"] == info["active_version"]
    for key in (
        "parser_version",
        "chunker_version",
        "tokenizer_version",
        "model_version",
        "parent_id",
        "prev_id",
    ):
        assert info[key] == row[key]
    assert info["parser_version"].startswith("markdown-it-py") and info["chunker_version"] == "structural/3"
    assert info["duplicates"] == []
    assert info["sentence_vectors"] == len(row["sentence_vectors"] or [])
    assert _cli(project, "lineage", "0" * 64, "--tenant", "acme") == 1
    capsys.readouterr()
    # the citation `tessera search` prints is accepted as it is; another tenant's is refused
    assert _cli(project, "lineage", f"tessera:acme/{row['id']}", "--tenant", "acme", "--json") == 0
    assert json.loads(capsys.readouterr().out)["chunk_id"] == row["id"]
    assert _cli(project, "lineage", f"tessera:globex/{row['id']}", "--tenant", "acme") == 2
    assert "names tenant 'globex'" in capsys.readouterr().err
    assert _cli(project, "lineage", "tessera:acme/xyz", "--tenant", "acme") == 2


def test_model_status_rollback_maintain_and_html_lineage(project, ws, capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tessera.embedding.fake import HashEmbedder
    from tessera.store.active import ActivePointer

    key = HashEmbedder().identity.key
    assert _cli(project, "run", "--tenant", "acme", "--run-id", "r1") == 0
    capsys.readouterr()
    assert _cli(project, "model", "status", "--json") == 0
    status = {s["tenant"]: s for s in json.loads(capsys.readouterr().out)}
    assert status["acme"]["active"]["model"] == key and "pending" not in status["acme"]
    assert status["globex"]["active"] is None and status["globex"]["pending"]["documents_built"] == 0
    assert _cli(project, "model", "rollback", "--tenant", "acme") == 1  # nothing to roll back to
    assert "no previous model" in capsys.readouterr().err
    other = HashEmbedder(version="2")
    ws.run("acme", "r2", embedder=other)  # a complete build of another model cuts over
    ctx = ws.context("acme")
    assert ActivePointer(ctx.db, "acme").get().model_key == other.identity.key  # type: ignore[union-attr]
    assert _cli(project, "model", "rollback", "--tenant", "acme") == 0
    assert json.loads(capsys.readouterr().out)["active"] == key
    assert _cli(project, "maintain", "--tenant", "acme", "--keep-versions", "3") == 0
    reports = json.loads(capsys.readouterr().out)
    assert {r["tenant"] for r in reports} == {"acme"} and all(r["compacted"] for r in reports)
    assert _cli(project, "lineage", "--tenant", "acme", "--html", str(tmp_path / "lin")) == 0
    assert (tmp_path / "lin" / "index.html").exists() and "runbook.md" in (
        tmp_path / "lin" / "index.html"
    ).read_text()
