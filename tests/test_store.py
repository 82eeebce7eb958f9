"""Store-level guards: the tenant lock, publish scope, dimension mixing, blobs, escaping."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tessera.errors import PublishError, TenantLockedError
from tessera.store.blobs import BlobStore
from tessera.store.db import connect, sql_str, tag_for_run
from tessera.store.index import TenantIndex
from tessera.store.lock import tenant_lock
from tessera.store.schema import chunk_schema


@pytest.mark.scenario("C2")
def test_tenant_lock_is_exclusive_per_tenant(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with tenant_lock(tmp_path, "acme"):
        with pytest.raises(TenantLockedError), tenant_lock(tmp_path, "acme"):
            pass
        with tenant_lock(tmp_path, "globex"):  # other tenants are independent
            pass
    with tenant_lock(tmp_path, "acme"):  # released
        pass


@pytest.mark.scenario("C2")
def test_a_second_overlapping_run_fails_cleanly(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", {"a.md": "# A\n\nalpha\n"})
    rc = ws.context("acme", "first")
    with tenant_lock(rc.config.store.work_dir / "_locks", "acme"), pytest.raises(TenantLockedError):
        ws.run("acme", "second")
    assert ws.table("acme") is None or ws.rows("acme") == []
    ws.run("acme", "third")
    assert len(ws.rows("acme")) == 1


@pytest.mark.scenario("C8")
def test_publish_guards(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = connect(str(tmp_path / "db"))
    index = TenantIndex(db, "acme", "m-1", 4)
    empty = pa.Table.from_pylist([], schema=chunk_schema(4))
    assert index.publish(empty, set(), "r0", "c").committed is False  # nothing in scope: no commit
    assert index.table() is None
    row = {f.name: None for f in chunk_schema(4)}
    row.update(
        id="x",
        tenant="acme",
        doc_id="other.md",
        revision="r",
        checksum="c",
        meta_hash="m",
        vector=[0.0, 0.0, 0.0, 1.0],
    )
    rows = pa.Table.from_pylist([row], schema=chunk_schema(4))
    with pytest.raises(PublishError, match="outside the publish scope"):
        index.publish(rows, {"a.md"}, "r1", "c")
    index.publish(rows, {"other.md"}, "r1", "c")
    with pytest.raises(PublishError, match="another dimension"):
        TenantIndex(db, "acme", "m-1", 8).ensure()


def test_blob_store_is_content_addressed_and_verified(tmp_path) -> None:  # type: ignore[no-untyped-def]
    blobs = BlobStore(str(tmp_path / "idx"))
    rev = blobs.put("acme", b"hello")
    assert blobs.put("acme", b"hello") == rev and blobs.get("acme", rev) == b"hello"
    blobs.path("acme", rev).write_bytes(b"tampered")
    with pytest.raises(PublishError, match="corrupt"):
        blobs.get("acme", rev)


def test_sql_literals_and_tags_are_escaped() -> None:
    assert sql_str("o'brien") == "'o''brien'"
    assert sql_str("x') OR true --") == "'x'') OR true --'"
    with pytest.raises(ValueError):
        sql_str("a\x00b")
    assert tag_for_run("3f2a:b/c d") == "run-3f2a_b_c_d"


def test_a_table_from_an_older_release_gets_the_new_columns(ws) -> None:  # type: ignore[no-untyped-def]
    """Columns added since (dedup's ``dup_group``/``dup_bands``) are added, null, on the next publish."""
    ws.tenant("acme", {"a.md": "# A\n\nFirst version of the text.\n"})
    ws.run("acme", "r1")
    table = ws.table("acme")
    table.drop_columns(["dup_group", "dup_bands"])
    assert "dup_group" not in ws.table("acme").schema.names
    (ws.root / "corpus" / "acme" / "a.md").write_text(
        "# A\n\nSecond version of the text.\n", encoding="utf-8"
    )
    out = ws.run("acme", "r2")
    assert out["publish"]["committed"]
    rows = ws.rows("acme")
    assert {"dup_group", "dup_bands"} <= set(rows[0]) and all(r["dup_group"] for r in rows)


def test_create_or_open_survives_another_process_creating_the_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import lancedb
    import pyarrow as pa

    from tessera.store.db import create_or_open

    real = lancedb.connect(str(tmp_path))
    schema = pa.schema([pa.field("k", pa.string())])

    class Racing:  # the table appears between our "does it exist?" and our create
        def open_table(self, name: str):  # type: ignore[no-untyped-def]
            return real.open_table(name)

        def create_table(self, name: str, data, schema):  # type: ignore[no-untyped-def]
            real.create_table(name, data=pa.table({"k": ["theirs"]}, schema=schema), schema=schema)
            return real.create_table(name, data=data, schema=schema)

    table = create_or_open(Racing(), "t", pa.table({"k": ["ours"]}, schema=schema), schema)
    assert table is not None and table.to_arrow().column("k").to_pylist() == ["theirs"]
    assert create_or_open(real, "u", pa.table({"k": ["ours"]}, schema=schema), schema) is None
    assert real.open_table("u").to_arrow().column("k").to_pylist() == ["ours"]
