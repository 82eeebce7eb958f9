"""The index on S3-compatible object storage (a loopback server): same code, same results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tessera.lineage import lineage
from tessera.search import principal_from_config, search
from tessera.store.db import connect, list_tables
from tessera.store.maintenance import maintain_tenant
from tessera.store.purge import purge_tenant
from tests.conftest import Workspace
from tests.s3server import MotoS3
from tests.test_s3_source import admin, moto, new_bucket  # noqa: F401

from .test_lifecycle import md_sections

DOCS = {"a.md": md_sections("Alpha", 3), "b.md": md_sections("Beta", 2)}


def _ids_and_texts(ws: Workspace) -> list[tuple[str, str]]:
    return sorted((r["id"], r["text"]) for r in ws.rows("acme"))


def test_publish_search_restore_and_purge_on_s3(
    ws: Workspace,
    tmp_path: Path,
    moto: MotoS3,  # noqa: F811
    admin: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.endpoint)
    bucket = new_bucket(admin)
    ws.store_uri = f"s3://{bucket}/tessera"
    ws.tenant("acme", DOCS)
    first = ws.run("acme", "r1")
    assert first["publish"]["committed"] and first["cutover"]["moved"]
    keys = [o["Key"] for o in admin.list_objects_v2(Bucket=bucket)["Contents"]]
    assert any(k.startswith("tessera/chunks__acme__") for k in keys)
    assert any(k.startswith("tessera/_sources/acme/") for k in keys)

    local = Workspace(tmp_path / "local")  # the same corpus on a local index gives the same chunks
    local.tenant("acme", DOCS)
    local.run("acme", "r1")
    assert _ids_and_texts(ws) == _ids_and_texts(local)

    cfg, local_cfg = ws.config(), local.config()
    alice = principal_from_config(cfg, "acme", "alice")
    for query in ("Beta paragraph 1 topic1", "About Alpha", "gamma2"):
        hits = search(cfg.store.uri, ws.embedder, alice, query, k=3)
        same = search(
            local_cfg.store.uri, local.embedder, principal_from_config(local_cfg, "acme", "alice"), query, k=3
        )
        assert hits and [h.chunk_id for h in hits] == [h.chunk_id for h in same]
    ctx = ws.context("acme")
    info = lineage(ctx.index, cfg.store.uri, hits[0].chunk_id)
    assert info.source_verified  # the source slice was read back from the bucket

    v1 = ctx.index.version()
    (ws.root / "corpus" / "acme" / "a.md").write_text(md_sections("Alpha", 1), encoding="utf-8")
    second = ws.run("acme", "r2")
    assert second["publish"]["deleted"] > 0 and ctx.index.version() > v1  # type: ignore[operator]
    assert v1 is not None
    ctx.index.restore(v1, "restore-1")
    assert _ids_and_texts(ws) == _ids_and_texts(local)
    (report,) = maintain_tenant(ctx.db, cfg.store.work_dir, "acme", [ctx.index.name], keep_versions=2)
    assert report.versions_after <= report.versions_before + 1
    assert _ids_and_texts(ws) == _ids_and_texts(local)

    purged = purge_tenant(connect(cfg.store.uri), cfg.store.uri, cfg.store.work_dir, "acme")
    assert purged["tables"] and not [n for n in list_tables(connect(cfg.store.uri)) if "acme" in n]
    left = admin.list_objects_v2(Bucket=bucket, Prefix="tessera/_sources/acme/").get("KeyCount", 0)
    assert left == 0
