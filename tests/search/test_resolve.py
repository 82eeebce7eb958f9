"""A search's tenant answer (active model, checked chunk table) is held between searches of
one process (``tessera.search.resolve``): it must be worked out again, damage checks included,
after every change to the tables behind it, without a new connection."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tessera.errors import ModelIdentityError, StoreDamaged
from tessera.search import principal_from_config, resolve, search
from tessera.store.active import active_table_name
from tessera.store.db import connect, reset_connections

A1 = "# Alpha\n\nAlpha text about paging the on-call engineer.\n"
A2 = "# Alpha\n\nAlpha rewritten: page the incident commander.\n"
B1 = "# Beta\n\nBeta text on the pager rotation.\n"


class Tenant:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.src = ws.tenant("acme", {"a.md": A1, "b.md": B1})
        ws.run("acme", "r1")
        self.cfg = ws.config()
        self.uri = self.cfg.store.uri
        self.dir = Path(self.uri) / f"{ws.context('acme').index.name}.lance"

    def texts(self, query: str = "page the incident commander") -> list[str]:
        alice = principal_from_config(self.cfg, "acme", "alice")
        return [h.text for h in search(self.uri, self.ws.embedder, alice, query, k=5)]


@pytest.fixture
def tenant(ws: Any) -> Tenant:
    return Tenant(ws)


@pytest.fixture
def worked_out(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tenants whose answer was worked out (not reused), in order."""
    done: list[str] = []

    class Recorded(resolve.TenantIndex):  # type: ignore[misc,name-defined]
        def table(self) -> Any:
            done.append(self.tenant)
            return super().table()

    monkeypatch.setattr(resolve, "TenantIndex", Recorded)
    return done


def test_an_unchanged_tenant_is_worked_out_once(tenant: Tenant, worked_out: list[str]) -> None:
    first = tenant.texts()
    assert tenant.texts() == tenant.texts() == first and first
    assert worked_out == ["acme"]
    reset_connections()  # a new connection starts afresh
    assert tenant.texts() == first and worked_out == ["acme", "acme"]


def test_a_publish_is_seen_by_the_next_search(tenant: Tenant, worked_out: list[str]) -> None:
    assert not any("commander" in t for t in tenant.texts())
    (tenant.src / "a.md").write_text(A2, encoding="utf-8")
    tenant.ws.run("acme", "r2")
    assert any("commander" in t for t in tenant.texts())
    assert worked_out.count("acme") == 2


def test_a_deleted_latest_manifest_is_refused_without_a_new_connection(tenant: Tenant) -> None:
    (tenant.src / "a.md").write_text(A2, encoding="utf-8")
    tenant.ws.run("acme", "r2")
    assert any("commander" in t for t in tenant.texts())
    sorted((tenant.dir / "_versions").glob("*.manifest"))[0].unlink()  # newest first (V2 names)
    with pytest.raises(StoreDamaged, match="went back"):
        tenant.texts()  # never the older version's rows, silently


def test_a_removed_table_is_refused_without_a_new_connection(tenant: Tenant) -> None:
    assert tenant.texts()
    shutil.rmtree(tenant.dir)
    with pytest.raises(StoreDamaged, match="gone"):
        tenant.texts()


def test_a_pointer_moved_to_another_model_is_refused_at_once(tenant: Tenant) -> None:
    assert tenant.texts()
    db = connect(tenant.uri)
    row = {"seq": 10**6, "model_key": "another-model", "previous_key": None, "run_id": "x", "reason": "t"}
    row["at_us"] = 0
    name = active_table_name("acme")
    if name in db.table_names():
        table = db.open_table(name)
        table.add(pa.Table.from_pylist([row], schema=table.schema))
    else:
        from tessera.store.active import _SCHEMA

        db.create_table(name, data=pa.Table.from_pylist([row], schema=_SCHEMA))
    with pytest.raises(ModelIdentityError, match="another-model"):
        tenant.texts()


def test_an_object_store_answer_is_never_reused() -> None:
    for name in ("chunks__acme__m", "active__acme"):
        assert not resolve._mark("s3://bucket/prefix", name).unchanged()


def test_a_table_created_committed_or_dropped_is_noticed(tmp_path: Path) -> None:
    import lance

    rows, path = pa.table({"a": [1, 2]}), tmp_path / "later.lance"
    mark = resolve._mark(str(tmp_path), "later")
    assert mark.stamp is None and mark.unchanged()  # absent, and still absent
    lance.write_dataset(rows, path)
    assert not mark.unchanged()  # created
    mark = resolve._mark(str(tmp_path), "later")
    assert mark.unchanged()
    lance.write_dataset(rows, path, mode="append")
    assert not mark.unchanged()  # a commit
    mark = resolve._mark(str(tmp_path), "later")
    shutil.rmtree(path)
    lance.write_dataset(rows, path)
    lance.write_dataset(rows, path, mode="append")
    assert lance.dataset(path).version == 2 and not mark.unchanged()  # dropped, built again to version 2
    mark = resolve._mark(str(tmp_path), "later")
    sorted((path / "_versions").glob("*.manifest"))[0].unlink()  # the latest manifest deleted
    assert not mark.unchanged()
    (path / "_versions").rename(path / "moved")
    assert resolve._mark(str(tmp_path), "later").stamp == resolve._UNREADABLE
    assert not resolve._mark(str(tmp_path), "later").unchanged()  # there, unreadable: never reused


def test_a_purged_tenant_indexed_again_is_never_answered_from_the_old_table(tenant: Tenant) -> None:
    """Purged and indexed again in one process, to the same version number: the answer, and the
    rows held in memory for the old table, must not serve the old rows."""
    from tessera.store.purge import purge_tenant

    old = [tenant.texts("alpha paging on-call") for _ in range(5)]  # rows held from the 4th search
    assert all(any("on-call" in t for t in texts) for texts in old)
    version = tenant.ws.table("acme").version
    purge_tenant(connect(tenant.uri), tenant.uri, tenant.cfg.store.work_dir, "acme")
    (tenant.src / "a.md").write_text(A2, encoding="utf-8")
    tenant.ws.run("acme", "p1")
    assert tenant.ws.table("acme").version == version  # the same version number, another table
    texts = tenant.texts("alpha paging on-call")
    assert texts and not any("on-call" in t for t in texts)
