"""Outage versus empty: failed or unprovable listings never delete; the mass-deletion guard."""

from __future__ import annotations

from typing import Any

import pytest

from tessera.errors import MassDeletionBlocked, SourceError
from tessera.pipeline.listing import check_sources
from tessera.search import principal_from_config, search
from tessera.sources.memory import MemoryConnector

QUERIES = ["deploy rollback", "vacation policy", "incident severity"]


def docs(n: int) -> dict[str, str]:
    topics = ["deploy rollback steps", "vacation policy days", "incident severity levels", "coffee machine"]
    return {f"doc{i:02d}.md": f"# Doc {i}\n\n{topics[i % 4]} number {i}.\n" for i in range(n)}


def snapshot(ws: Any, tenant: str) -> tuple[Any, list[tuple[Any, ...]], list[list[str]]]:
    """Table version, (id, text, vector, ACL) rows and fixed query results."""
    table = ws.table(tenant)
    rows = [(r["id"], r["text"], r["vector"], r["readers"], r["groups"]) for r in ws.rows(tenant)]
    cfg = ws.config()
    principal = principal_from_config(cfg, tenant, "alice")
    results = [[h.chunk_id for h in search(cfg.store.uri, ws.embedder, principal, q, k=5)] for q in QUERIES]
    return table.version, rows, results


def memory(ws: Any, tenant: str, files: dict[str, str], **kw: Any) -> MemoryConnector:
    return MemoryConnector(tenant, files, ws.config().tenant(tenant).default_access, **kw)


@pytest.mark.parametrize("failure", ["raise", "bare_list", "no_proof"])
@pytest.mark.scenario("A6")
def test_failed_or_unprovable_listing_deletes_nothing(ws, failure: str) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", docs(6))
    ws.run("acme", "r1")
    before = snapshot(ws, "acme")
    with pytest.raises(SourceError):
        ws.run("acme", "r2", connector=memory(ws, "acme", {}, failure=failure))
    assert snapshot(ws, "acme") == before


def test_confirmed_empty_publishes_empty_and_touches_no_other_tenant(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", docs(4))
    ws.tenant("globex", docs(3))
    ws.run("acme", "r1")
    ws.run("globex", "r1")
    other = snapshot(ws, "globex")
    out = ws.run("acme", "r2", connector=memory(ws, "acme", {}))
    assert out["listing"]["verdict"] == "empty" and "holds no documents" in out["listing"]["proof"]
    assert ws.rows("acme") == [] and out["publish"]["deleted"] > 0
    assert snapshot(ws, "globex") == other


@pytest.mark.scenario("A7")
def test_mass_deletion_guard_blocks_then_override_publishes(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", docs(20))
    ws.run("acme", "r1")
    before = snapshot(ws, "acme")
    shrunk = dict(list(docs(20).items())[:12])  # 8 of 20 = 40% > 30%
    connector = memory(ws, "acme", shrunk)
    with pytest.raises(MassDeletionBlocked) as err:
        ws.run("acme", "r2", connector=connector)
    assert err.value.plan["to_delete"] == 8 and err.value.plan["blocked"]
    assert "doc19.md" in err.value.plan["documents"]
    assert snapshot(ws, "acme") == before
    status = check_sources(ws.context("acme", "probe", connector=connector))
    assert status["deletion"]["blocked"] and status["removed"] == 8
    out = ws.run("acme", "r3", connector=connector, allow_mass_delete=True)
    assert out["publish"]["docs_removed"] == 8 and out["publish"]["committed"]
    assert {r["doc_id"] for r in ws.rows("acme")} == set(shrunk)


def test_small_deletions_and_small_tenants_pass_the_guard(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", docs(20))
    ws.run("acme", "r1")
    out = ws.run("acme", "r2", connector=memory(ws, "acme", dict(list(docs(20).items())[:15])))  # 25%
    assert out["publish"]["docs_removed"] == 5
    ws.tenant("tiny", docs(3))
    ws.run("tiny", "r1")
    out = ws.run(
        "tiny", "r2", connector=memory(ws, "tiny", dict(list(docs(3).items())[:1]))
    )  # < min_documents
    assert out["publish"]["docs_removed"] == 2


def test_download_failure_quarantines_and_keeps_old_chunks(ws) -> None:  # type: ignore[no-untyped-def]
    files = docs(5)
    ws.tenant("acme", files)
    ws.run("acme", "r1")
    before = {r["id"]: r for r in ws.rows("acme") if r["doc_id"] == "doc01.md"}
    changed = {**files, "doc01.md": "# Doc 1\n\nrewritten text\n", "doc02.md": "# Doc 2\n\nalso new\n"}
    out = ws.run("acme", "r2", connector=memory(ws, "acme", changed, unreadable=("doc01.md",)))
    assert out["listing"]["quarantined"] == 1 and out["publish"]["quarantined"] == ["doc01.md"]
    after = ws.rows("acme")
    assert {r["id"]: r for r in after if r["doc_id"] == "doc01.md"} == before
    assert any("also new" in r["text"] for r in after)


def test_sources_check_reports_without_indexing(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", docs(4))
    status = check_sources(ws.context("acme", "probe"))
    assert (status["verdict"], status["documents"], status["changed"]) == ("complete", 4, 4)
    assert ws.table("acme") is None
    assert not (ws.root / "work" / "acme" / "probe" / "listing.json").exists()
