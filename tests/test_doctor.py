"""`tessera doctor` and a store that diagnoses itself: real tenants, damaged for real on disk.

Each test builds a tenant with two runs (r1, then r2 rewrites a.md), damages the chunk table's
files the way an operator or a disk would (a deleted latest manifest, deleted index files, a
truncated data file, a deleted tag, a crash between commit and tag, a table folder gone), then
checks three things: the doctor's verdict names the table and the last good publication;
search and run refuse with ``StoreDamaged`` (never wrong or silently older rows, never a raw
traceback); ``--repair`` repairs only what is safe, and a re-point needs ``--yes``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from assets.checks import store_health
from resources import ConfiguredSourceResource, FakeEmbedderResource, TenantRunResource, TesseraConfigResource
from tessera.cli import main
from tessera.errors import PublishError, StoreDamaged
from tessera.search import principal_from_config, search
from tessera.store.db import connect, reset_connections
from tessera.store.doctor import DoctorReport, diagnose
from tests.s3server import MotoS3
from tests.test_s3_source import admin, moto, new_bucket  # noqa: F401

A1 = "# Alpha\n\nAlpha text about paging the on-call engineer.\n\n## Escalation\n\nEscalate to the lead.\n"
A2 = "# Alpha\n\nAlpha rewritten: page the incident commander.\n"
B1 = "# Beta\n\nBeta text on the pager rotation.\n"
QUERIES = ("pager rotation", "page the incident commander", "escalate to the lead")


def doctor(ws: Any) -> DoctorReport:
    return diagnose(connect(ws.config().store.uri, fresh=True), "acme", ws.context("acme").index.model_key)


def cli(ws: Any, capsys: Any, *args: str) -> tuple[int, str, str]:
    """``tessera --config ... --fake-embedder ARGS``: exit code, stdout, stderr."""
    capsys.readouterr()
    code = main(["--config", str(ws.root / "tessera.yaml"), "--fake-embedder", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


class Tenant:
    """The ``acme`` tenant after runs r1 and r2, with handles on its files and snapshots."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.src = ws.tenant("acme", {"a.md": A1, "b.md": B1})
        self.v1 = ws.run("acme", "r1")["publish"]["version"]
        self.rows_v1 = ws.rows("acme")
        (self.src / "a.md").write_text(A2, encoding="utf-8")
        self.v2 = ws.run("acme", "r2")["publish"]["version"]
        self.rows_v2 = ws.rows("acme")
        self.cfg = ws.config()
        self.name = ws.context("acme").index.name
        self.dir = Path(self.cfg.store.uri) / f"{self.name}.lance"
        self.hits_v2 = self.hits()

    def hits(self) -> list[list[tuple[str, float]]]:
        alice = principal_from_config(self.cfg, "acme", "alice")
        return [
            [
                (h.chunk_id, round(h.score, 6))
                for h in search(self.cfg.store.uri, self.ws.embedder, alice, q, k=5)
            ]
            for q in QUERIES
        ]

    def doctor(self) -> DoctorReport:
        return doctor(self.ws)

    def cli(self, capsys: Any, *args: str) -> tuple[int, str, str]:
        return cli(self.ws, capsys, *args)

    def manifests(self) -> list[Path]:
        """Newest first: manifest names count down from u64::MAX (V2 naming)."""
        return sorted((self.dir / "_versions").glob("*.manifest"))

    def version(self) -> int:
        return int(connect(self.cfg.store.uri).open_table(self.name).version)


@pytest.fixture
def tenant(ws: Any) -> Tenant:
    return Tenant(ws)


def check(report: DoctorReport, name: str) -> Any:
    (found,) = [c for c in report.checks if c.name == name]
    return found


def assert_refused(t: Tenant, capsys: Any, last_good: str) -> None:
    """Search and run fail typed, naming the table and the last good publication; through the
    CLI: exit 1 and one ``tessera: StoreDamaged: ...`` line, no traceback."""
    with pytest.raises(StoreDamaged) as e:
        t.hits()
    assert t.name in str(e.value) and f"last good publication: {last_good}" in str(e.value)
    with pytest.raises(StoreDamaged, match=t.name):
        t.ws.run("acme", "r-refused")
    code, out, err = t.cli(capsys, "search", "--tenant", "acme", "--user", "alice", "pager")
    assert code == 1 and out == "" and "Traceback" not in err
    assert err.startswith("tessera: StoreDamaged: ") and last_good in err
    code, _, err = t.cli(capsys, "run", "--tenant", "acme", "--run-id", "r-refused-cli")
    assert code == 1 and "tessera: StoreDamaged: " in err and "Traceback" not in err


def test_healthy_tenant_is_ok_and_left_unchanged(tenant: Tenant, capsys: Any) -> None:
    t = tenant
    report = t.doctor()
    assert report.verdict == "ok", report.problems()
    assert report.last_good is not None and (report.last_good.tag, report.last_good.version) == (
        "run-r2",
        t.v2,
    )
    assert {c.name for c in report.checks} >= {
        "publications", "chunks.open", "chunks.latest", "chunks.data", "chunks.indexes",
        "chunks.search", "chunks.tags", "chunks.recorded", "cache", "active",
    }  # fmt: skip
    for c in report.checks:  # every message names its table and the last good publication
        assert c.table in c.message and f"run-r2 (version {t.v2})" in c.message
    tags = connect(t.cfg.store.uri).open_table(t.name).tags.list()
    code, out, _ = t.cli(capsys, "doctor", "--tenant", "acme", "--repair", "--yes")
    assert code == 0 and "verdict: ok" in out and "repaired" not in out
    code, out, _ = t.cli(capsys, "doctor", "--tenant", "acme", "--json")
    assert code == 0 and json.loads(out)["verdict"] == "ok"
    assert t.version() == t.v2 and t.ws.rows("acme") == t.rows_v2  # nothing written
    assert connect(t.cfg.store.uri).open_table(t.name).tags.list() == tags
    assert t.hits() == t.hits_v2


@pytest.mark.scenario("C6")
def test_deleted_latest_manifest_is_refused_then_repointed_with_yes(tenant: Tenant, capsys: Any) -> None:
    t = tenant
    t.manifests()[0].unlink()  # the table now silently opens at the version before
    reset_connections()  # what a new process (the next CLI call, a restarted server) sees
    assert t.version() == t.v2 - 1
    report = t.doctor()
    latest = check(report, "chunks.latest")
    assert report.verdict == latest.verdict == "damaged" and latest.repair == "repoint"
    assert f"version {t.v2}" in latest.message and t.name in latest.message
    assert f"last good publication run-r1 (version {t.v1})" in latest.message
    assert_refused(t, capsys, f"run-r1 (version {t.v1})")
    assert t.version() == t.v2 - 1  # the refused run committed nothing

    code, out, _ = t.cli(capsys, "doctor", "--tenant", "acme", "--repair")  # no --yes: nothing moves
    assert code == 1 and "needs confirmation (--yes)" in out and t.version() == t.v2 - 1
    code, out, _ = t.cli(capsys, "doctor", "--tenant", "acme", "--repair", "--yes", "--json")
    result = json.loads(out)
    assert code == 0 and result["verdict"] == "ok" and result["before"]["verdict"] == "damaged"
    assert any(
        "re-pointed" in line and "run-r2" in line for line in result["repaired"]
    )  # its tag was dangling
    assert t.ws.rows("acme") == t.rows_v1  # snapshot-equal to the last good publication
    assert t.version() > t.v2  # a new version after every one the log named: none is reused
    code, out, _ = t.cli(capsys, "versions", "--tenant", "acme", "--json")
    assert [p["kind"] for p in json.loads(out)] == ["publish", "publish", "repoint"]

    out = t.ws.run("acme", "r3")  # the next run re-publishes what changed since run-r1
    assert out["publish"]["committed"] is True
    assert t.ws.rows("acme") == t.rows_v2 or [r["id"] for r in t.ws.rows("acme")] == [
        r["id"] for r in t.rows_v2
    ]
    assert t.doctor().verdict == "ok"


def test_deleted_index_files_are_rebuilt_and_search_answers_as_before(tenant: Tenant, capsys: Any) -> None:
    t = tenant
    shutil.rmtree(t.dir / "_indices")
    reset_connections()  # a new process: no index pages cached from before the damage
    report = t.doctor()
    indexes = check(report, "chunks.indexes")
    assert report.verdict == indexes.verdict == "repairable" and indexes.repair == "rebuild-indexes"
    assert (
        "unusable" in indexes.message and f"last good publication run-r2 (version {t.v2})" in indexes.message
    )
    assert set(indexes.items) >= {"embedding_text_idx", "doc_id_idx", "readers_idx"}
    with pytest.raises(StoreDamaged, match=f"last good publication: run-r2 \\(version {t.v2}\\)"):
        t.hits()  # not a raw lance error, not wrong rows
    code, _, err = t.cli(capsys, "search", "--tenant", "acme", "--user", "alice", "pager")
    assert code == 1 and err.startswith("tessera: StoreDamaged: ")

    code, out, _ = t.cli(capsys, "doctor", "--tenant", "acme")  # diagnose only: nothing written
    assert code == 1 and "repairable" in out and "[repair: rebuild-indexes]" in out
    code, out, _ = t.cli(capsys, "doctor", "--tenant", "acme", "--repair")  # safe: no --yes needed
    assert code == 0 and "repaired: indexes of" in out and out.rstrip().endswith("verdict: ok")
    assert t.hits() == t.hits_v2  # the same results as before the damage
    assert t.ws.rows("acme") == t.rows_v2
    code, out, _ = t.cli(capsys, "versions", "--tenant", "acme", "--json")
    assert [p["kind"] for p in json.loads(out)] == [
        "publish",
        "publish",
    ]  # an index rebuild is no publication


def test_truncated_data_file_is_refused_and_repoint_needs_yes(tenant: Tenant, capsys: Any) -> None:
    t = tenant
    newest = max((t.dir / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)  # only r2 uses it
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    reset_connections()
    report = t.doctor()
    data = check(report, "chunks.data")
    assert data.verdict == "damaged" and data.repair == "repoint" and "unreadable" in data.message
    assert report.last_good is not None and report.last_good.version == t.v1  # run-r2's rows do not read
    assert_refused(t, capsys, f"run-r1 (version {t.v1})")

    code, out, _ = t.cli(capsys, "doctor", "--tenant", "acme", "--repair")
    assert code == 1 and "needs confirmation (--yes)" in out and t.version() == t.v2
    code, out, _ = t.cli(capsys, "doctor", "--tenant", "acme", "--repair", "--yes")
    assert code == 0 and f"re-pointed {t.name} to run-r1 (version {t.v1})" in out
    assert t.ws.rows("acme") == t.rows_v1
    t.ws.run("acme", "r3")
    assert [r["id"] for r in t.ws.rows("acme")] == [r["id"] for r in t.rows_v2]
    assert t.doctor().verdict == "ok"


def test_deleted_tag_is_recreated_and_restore_by_tag_works_again(tenant: Tenant, capsys: Any) -> None:
    t = tenant
    (t.dir / "_refs" / "tags" / "run-r1.json").unlink()
    assert t.hits() == t.hits_v2  # tags are history: search is unaffected
    report = t.doctor()
    tags = check(report, "chunks.tags")
    assert report.verdict == tags.verdict == "repairable" and tags.items == (f"run-r1@{t.v1}",)
    code, _, err = t.cli(capsys, "restore", "--tenant", "acme", "--tag", "run-r1", "--dry-run")
    assert code == 1 and "run-r1" in err
    code, out, _ = t.cli(capsys, "doctor", "--tenant", "acme", "--repair")
    assert code == 0 and "re-created tags" in out
    code, out, _ = t.cli(capsys, "restore", "--tenant", "acme", "--tag", "run-r1", "--dry-run")
    assert code == 0 and f"restore of version {t.v1}" in out
    assert t.version() == t.v2 and t.ws.rows("acme") == t.rows_v2


@pytest.mark.scenario("C1")
def test_crash_between_commit_and_tag_is_recorded_by_repair(
    ws: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = ws.tenant("acme", {"a.md": A1, "b.md": B1})
    ws.run("acme", "r1")
    (src / "a.md").write_text(A2, encoding="utf-8")
    tags_cls = type(ws.table("acme").tags)

    def crash(self: Any, tag: str, version: int) -> None:
        raise OSError("process killed after the commit")

    with monkeypatch.context() as m:
        m.setattr(tags_cls, "create", crash)
        with pytest.raises(PublishError, match="is live, but tagging or logging it failed"):
            ws.run("acme", "r2")
    live = int(ws.table("acme").version)
    assert ws.run("acme", "r3")["publish"]["committed"] is False  # a no-op: never recorded by runs
    rows = ws.rows("acme")
    report = doctor(ws)
    recorded = check(report, "chunks.recorded")
    assert report.verdict == recorded.verdict == "repairable" and recorded.repair == "record-live"
    assert (
        f"live version {live} is not recorded" in recorded.message and "run-r1 (version" in recorded.message
    )
    code, out, _ = cli(ws, capsys, "versions", "--tenant", "acme", "--json")
    assert live not in [p["table_version"] for p in json.loads(out)]

    code, out, _ = cli(ws, capsys, "doctor", "--tenant", "acme", "--repair")
    assert code == 0 and f"recorded live version {live}" in out
    code, out, _ = cli(ws, capsys, "versions", "--tenant", "acme", "--json")
    pubs = json.loads(out)
    assert (pubs[-1]["table_version"], pubs[-1]["kind"], pubs[-1]["tag"]) == (
        live,
        "recovered",
        f"recovered-{live}",
    )
    assert ws.table("acme").tags.get_version(f"recovered-{live}") == live
    assert ws.rows("acme") == rows and int(ws.table("acme").version) == live  # recorded, not rewritten
    assert doctor(ws).verdict == "ok"


def test_table_gone_or_manifests_unreadable_is_damaged_never_an_empty_index(
    tenant: Tenant, capsys: Any
) -> None:
    t = tenant
    backup = t.dir.with_name("backup.lance")
    shutil.copytree(t.dir, backup)
    for m in t.manifests():  # every manifest gone: LanceDB alone would call the table absent
        m.unlink()
    reset_connections()
    report = t.doctor()
    assert check(report, "chunks.open").verdict == "damaged" and report.verdict == "damaged"
    with pytest.raises(StoreDamaged, match="the table is gone, but the publications log names it"):
        t.hits()  # not [] as for a tenant never indexed
    with pytest.raises(StoreDamaged):
        t.ws.run("acme", "r-refused")  # never silently re-created empty
    code, out, _ = t.cli(capsys, "doctor", "--tenant", "acme", "--repair", "--yes")
    assert code == 1 and "not repaired" in out

    shutil.rmtree(t.dir)
    shutil.copytree(backup, t.dir)
    latest = t.manifests()[0]
    latest.write_bytes(latest.read_bytes()[:100])  # a truncated (corrupt) latest manifest
    reset_connections()
    with pytest.raises(StoreDamaged, match="manifest is unreadable"):
        t.hits()
    assert check(t.doctor(), "chunks.open").verdict == "damaged"


def test_tag_still_shows_a_lost_version_when_the_log_went_back_too(tenant: Tenant) -> None:
    t = tenant
    t.manifests()[0].unlink()
    pubs = Path(t.cfg.store.uri) / "publications__acme.lance" / "_versions"
    sorted(pubs.glob("*.manifest"))[0].unlink()  # the log lost run-r2's row as well
    reset_connections()
    with pytest.raises(StoreDamaged, match="tag run-r2"):
        t.hits()
    assert check(t.doctor(), "chunks.latest").verdict == "damaged"


def test_purge_and_reindex_in_one_process_is_not_mistaken_for_damage(tenant: Tenant) -> None:
    from tessera.store.purge import purge_tenant

    t = tenant
    assert t.hits() == t.hits_v2  # the process now remembers the publications log
    purge_tenant(connect(t.cfg.store.uri), t.cfg.store.uri, t.cfg.store.work_dir, "acme")
    (t.src / "a.md").write_text(A1, encoding="utf-8")
    t.ws.run("acme", "p1")
    assert t.hits() and t.doctor().verdict == "ok"


def test_store_health_asset_check(tenant: Tenant) -> None:
    t = tenant
    config = TesseraConfigResource(config_path=str(t.cfg.path))
    run = TenantRunResource(
        config=config, embedder=FakeEmbedderResource(), sources=ConfiguredSourceResource()
    )
    manifest = {"tenant": "acme", "workspace_id": "r2"}
    ok = store_health(tenant_run=run, published_index=manifest)
    assert ok.passed and ok.metadata["verdict"].value == "ok"
    shutil.rmtree(t.dir / "_indices")
    reset_connections()
    warn = store_health(tenant_run=run, published_index=manifest)
    assert (
        not warn.passed and warn.severity.value == "WARN" and warn.metadata["verdict"].value == "repairable"
    )
    t.manifests()[0].unlink()
    err = store_health(tenant_run=run, published_index=manifest)
    assert not err.passed and err.severity.value == "ERROR"
    assert "run-r1" in err.metadata["last_good"].value and "chunks.latest" in err.metadata["problems"].value


@pytest.mark.scenario("C6")
def test_deleted_latest_manifest_on_s3_is_refused_and_repointed(
    ws: Any,
    moto: MotoS3,  # noqa: F811
    admin: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.endpoint)
    bucket = new_bucket(admin)
    ws.store_uri = f"s3://{bucket}/tessera"
    src = ws.tenant("acme", {"a.md": A1, "b.md": B1})
    ws.run("acme", "r1")
    rows_v1 = ws.rows("acme")
    (src / "a.md").write_text(A2, encoding="utf-8")
    ws.run("acme", "r2")
    prefix = f"tessera/{ws.context('acme').index.name}.lance/_versions/"
    listed = admin.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]
    manifests = sorted(o["Key"] for o in listed if o["Key"].endswith(".manifest"))
    admin.delete_object(Bucket=bucket, Key=manifests[0])  # the newest (names count down)
    reset_connections()
    latest = check(doctor(ws), "chunks.latest")
    assert latest.verdict == "damaged" and "run-r1 (version" in latest.message
    alice = principal_from_config(ws.config(), "acme", "alice")
    with pytest.raises(StoreDamaged, match="last good publication: run-r1"):
        search(ws.config().store.uri, ws.embedder, alice, "pager rotation", k=5)
    code, out, _ = cli(ws, capsys, "doctor", "--tenant", "acme", "--repair", "--yes")
    assert code == 0 and "re-pointed" in out
    assert ws.rows("acme") == rows_v1 and doctor(ws).verdict == "ok"


def test_restore_and_maintenance_are_not_mistaken_for_damage(tenant: Tenant, capsys: Any) -> None:
    from tessera.store.maintenance import maintain_tenant

    t = tenant
    code, _, _ = t.cli(capsys, "restore", "--tenant", "acme", "--tag", "run-r1", "--run-id", "back")
    assert code == 0 and t.ws.rows("acme") == t.rows_v1
    assert t.doctor().verdict == "ok"
    (t.src / "b.md").write_text(B1 + "\nOne more line.\n", encoding="utf-8")
    t.ws.run("acme", "r3")
    ctx = t.ws.context("acme")
    maintain_tenant(ctx.db, t.cfg.store.work_dir, "acme", [ctx.index.name], keep_versions=2, keep_run_tags=1)
    reset_connections()
    report = t.doctor()  # old tags deleted and old versions pruned, as maintenance does
    assert report.verdict == "ok", report.problems()
    assert "pruned by maintenance" in check(report, "chunks.tags").message
    assert report.last_good is not None and report.last_good.tag == "run-r3"
    assert t.hits()  # and search still answers
