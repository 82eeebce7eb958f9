"""The failed-document queue (``failures__{tenant}``), on the real stack: folder or memory source,
LanceDB store in tmp_path, the hash embedder, and the real CLI (``tessera failures``).

Guarantees attacked: a quarantined document is queued with its stage and typed reason, and
counted once per run; the first failure time is kept; a fixed or removed document is cleared;
a run that fails (embedding outage, deletion guard) changes nothing; purge and maintenance
cover the table; the CLI reports the queue as a table and as JSON.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from assets.published_index import failure_metadata
from tessera.api import create_app
from tessera.cli import main
from tessera.config import load_config
from tessera.embedding.base import Vectors
from tessera.embedding.fake import HashEmbedder
from tessera.errors import ChunkingError, MassDeletionBlocked, PermanentEmbeddingError
from tessera.pipeline.failures import queue_summary
from tessera.search.principal import IdentityStore, key_digest
from tessera.sources.memory import MemoryConnector
from tessera.store.db import connect, list_tables, open_table
from tessera.store.failures import Failure, FailureQueue, FailureRecord, failures_table_name
from tessera.store.maintenance import maintain_tenant
from tessera.store.purge import purge_tenant
from tests.conftest import Workspace
from tests.s3server import MotoS3
from tests.test_s3_source import admin, moto, new_bucket  # noqa: F401

BINARY = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
GOOD: dict[str, str | bytes] = {
    "guide.md": "# Guide\n\nThe guide explains alpha and beta.\n",
    "notes.md": "# Notes\n\nNotes about gamma and delta.\n",
}


def queue(ws: Workspace, tenant: str = "acme") -> dict[str, FailureRecord]:
    rc = ws.context(tenant, "inspect")
    return {r.doc_id: r for r in FailureQueue(rc.db, tenant).records()}


def queue_version(ws: Workspace, tenant: str = "acme") -> int | None:
    table = open_table(ws.context(tenant, "inspect").db, failures_table_name(tenant))
    return None if table is None else int(table.version)


def doc_rows(ws: Workspace, doc_id: str, tenant: str = "acme") -> list[tuple[str, str, str]]:
    return sorted((r["id"], r["revision"], r["text"]) for r in ws.rows(tenant) if r["doc_id"] == doc_id)


def cli(ws: Workspace, *args: str) -> list[str]:
    return ["--config", str(ws.root / "tessera.yaml"), "--fake-embedder", *args]


class RefusingEmbedder(HashEmbedder):
    """An embedding service that refuses every request (a revoked key)."""

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        raise PermanentEmbeddingError("401 unauthorized")


def test_a_binary_and_a_corrupt_pdf_are_queued_with_stage_reason_and_one_attempt(ws: Workspace) -> None:
    src = ws.tenant("acme", {**GOOD, "image.md": BINARY, "report.pdf": b"%PDF-1.7\nnot a pdf at all\n"})
    out = ws.run("acme", "r1")
    q = queue(ws)
    assert set(q) == {"image.md", "report.pdf"}  # the good documents are not queued
    image = q["image.md"]
    assert (image.stage, image.reason) == ("parse", "invalid_content")
    assert (image.attempts, image.last_run_id) == (1, "r1")
    assert image.first_failed_at == image.last_failed_at
    assert abs(image.first_failed_at - datetime.now(UTC)) < timedelta(minutes=5)
    assert image.uri.startswith("file://") and image.uri.endswith(f"{src.name}/image.md")
    assert "invalid_content" in image.message
    pdf = q["report.pdf"]
    assert pdf.stage == "parse" and pdf.reason and pdf.attempts == 1
    assert out["publish"]["failures"] == {"failed": 2, "cleared": 0, "version": queue_version(ws)}
    assert {r["doc_id"] for r in ws.rows("acme")} == set(GOOD)  # nothing of them published


def test_each_failing_run_counts_an_attempt_and_keeps_the_first_failure_time(ws: Workspace) -> None:
    src = ws.tenant("acme", {**GOOD, "image.md": BINARY})
    ws.run("acme", "r1")
    first = queue(ws)["image.md"]
    (src / "guide.md").write_text("# Guide\n\nThe guide now explains epsilon.\n", encoding="utf-8")
    ws.run("acme", "r2")  # another document changes and is published; image.md fails again
    second = queue(ws)["image.md"]
    assert second.attempts == 2 and second.last_run_id == "r2"
    assert second.first_failed_at == first.first_failed_at
    assert second.last_failed_at > first.last_failed_at
    ws.run("acme", "r3")  # nothing else changes: the publish is a no-op, the failure still counts
    third = queue(ws)["image.md"]
    assert (third.attempts, third.first_failed_at) == (3, first.first_failed_at)


def test_the_same_run_id_counts_once(ws: Workspace) -> None:
    """A re-executed publish of one run (a Dagster retry) does not count the failure twice."""
    ws.tenant("acme", GOOD)
    rc = ws.context("acme", "inspect")
    fq = FailureQueue(rc.db, "acme")
    now = datetime(2026, 5, 1, tzinfo=UTC)
    f = Failure("x.md", "file:///x.md", "parse", "parse_error", "x.md: parse_error: boom")
    assert fq.apply([f], None, "run-a", now).committed
    version = queue_version(ws)
    again = fq.apply([f], None, "run-a", now + timedelta(hours=1))
    assert not again.committed and queue_version(ws) == version  # no new commit either
    assert fq.get("x.md") == FailureRecord(
        "x.md", "file:///x.md", "parse", "parse_error", "x.md: parse_error: boom", now, now, 1, "run-a"
    )
    later = fq.apply([f], None, "run-b", now + timedelta(hours=2))
    record = fq.get("x.md")
    assert later.committed and record is not None and record.attempts == 2 and record.first_failed_at == now
    with pytest.raises(ValueError, match="stage"):
        Failure("x.md", "", "embed", "r", "m")  # only the stages that quarantine


def test_fixing_the_document_clears_it_and_publishes_it(ws: Workspace) -> None:
    src = ws.tenant("acme", {**GOOD, "image.md": BINARY})
    ws.run("acme", "r1")
    assert "image.md" in queue(ws)
    (src / "image.md").write_text("# Image\n\nNow a caption in plain text.\n", encoding="utf-8")
    out = ws.run("acme", "r2")
    assert queue(ws) == {} and out["publish"]["failures"]["cleared"] == 1
    assert doc_rows(ws, "image.md")
    version = queue_version(ws)
    ws.run("acme", "r3")  # a clean run with an empty queue commits nothing to it
    assert queue_version(ws) == version


def test_removing_the_document_clears_it_with_or_without_live_chunks(ws: Workspace) -> None:
    src = ws.tenant("acme", {**GOOD, "image.md": "# Image\n\nA caption.\n", "never.md": BINARY})
    ws.run("acme", "r1")
    (src / "image.md").write_bytes(BINARY)  # published once, now broken: its old chunks stay
    ws.run("acme", "r2")
    assert set(queue(ws)) == {"image.md", "never.md"} and doc_rows(ws, "image.md")
    (src / "image.md").unlink()
    (src / "never.md").unlink()  # never had a chunk: not a "removed" document of the diff
    ws.run("acme", "r3")
    assert queue(ws) == {} and not doc_rows(ws, "image.md")


def test_a_listing_stage_failure_is_queued(ws: Workspace) -> None:
    """A download that fails at the listing keeps the document's chunks and queues it as ``listing``."""
    ws.tenant("acme", {})
    files = {**GOOD, "flaky.md": "# Flaky\n\nSometimes readable.\n"}
    access = ws.config().tenant("acme").default_access
    ws.run("acme", "r1", connector=MemoryConnector("acme", files, access))
    files = {**files, "flaky.md": "# Flaky\n\nv2\n"}
    ws.run("acme", "r2", connector=MemoryConnector("acme", files, access, unreadable=("flaky.md",)))
    record = queue(ws)["flaky.md"]
    assert (record.stage, record.reason, record.attempts) == ("listing", "download_error", 1)
    assert doc_rows(ws, "flaky.md")  # the old chunks stay live
    ws.run("acme", "r3", connector=MemoryConnector("acme", files, access))
    assert queue(ws) == {}


def test_a_chunking_failure_is_queued_as_chunk(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    import tessera.pipeline.work as work

    real = work.chunker_for

    class Refusing:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def chunk(self, doc: Any, parsed: Any, ctx: Any) -> Any:
            if doc.doc_id == "table.md":
                raise ChunkingError("a row does not fit the token budget")
            return self.inner.chunk(doc, parsed, ctx)

    monkeypatch.setattr(work, "chunker_for", lambda kind, strategy: Refusing(real(kind, strategy)))
    ws.tenant("acme", {**GOOD, "table.md": "# Table\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"})
    ws.run("acme", "r1")
    record = queue(ws)["table.md"]
    assert (record.stage, record.reason, record.attempts) == ("chunk", "chunking_error", 1)
    assert "token budget" in record.message
    monkeypatch.setattr(work, "chunker_for", real)
    ws.run("acme", "r2")
    assert queue(ws) == {} and doc_rows(ws, "table.md")


def test_a_failed_run_changes_nothing(ws: Workspace) -> None:
    src = ws.tenant("acme", {**GOOD, "image.md": BINARY})
    ws.run("acme", "r1")
    before, version = queue(ws), queue_version(ws)
    # the embedding service is down: image.md is fixed but nothing publishes, so nothing clears
    (src / "image.md").write_text("# Image\n\nA fresh caption to embed.\n", encoding="utf-8")
    with pytest.raises(PermanentEmbeddingError):
        ws.run("acme", "r2", embedder=RefusingEmbedder())
    assert queue(ws) == before and queue_version(ws) == version
    # still broken, another document changed, embedding down: no attempt is counted
    (src / "image.md").write_bytes(BINARY + b"more")
    (src / "notes.md").write_text("# Notes\n\nNew notes to embed.\n", encoding="utf-8")
    with pytest.raises(PermanentEmbeddingError):
        ws.run("acme", "r3", embedder=RefusingEmbedder())
    assert queue(ws) == before and queue_version(ws) == version
    # the deletion guard blocks a run that would remove every document: nothing clears either
    for name in ("guide.md", "notes.md", "image.md"):
        (src / name).unlink()
    (src / "other.md").write_text("# Other\n\nSomething else.\n", encoding="utf-8")
    with pytest.raises(MassDeletionBlocked):
        ws.run("acme", "r4")
    assert queue(ws) == before and queue_version(ws) == version
    ws.run("acme", "r5", allow_mass_delete=True)  # with the override it publishes, and clears
    assert queue(ws) == {}


def test_tenants_have_separate_queues(ws: Workspace) -> None:
    ws.tenant("acme", {**GOOD, "image.md": BINARY})
    ws.tenant("globex", {**GOOD, "blob.md": BINARY})
    ws.run("acme", "r1")
    ws.run("globex", "r1")
    assert set(queue(ws, "acme")) == {"image.md"} and set(queue(ws, "globex")) == {"blob.md"}
    (ws.root / "corpus" / "globex" / "blob.md").unlink()
    ws.run("globex", "r2")
    assert queue(ws, "globex") == {} and set(queue(ws, "acme")) == {"image.md"}


def test_purge_drops_the_queue_and_maintenance_prunes_it(ws: Workspace) -> None:
    src = ws.tenant("acme", {**GOOD, "image.md": BINARY})
    for i in range(4):
        (src / "image.md").write_bytes(BINARY + bytes([i]))
        ws.run("acme", f"r{i}")
    cfg = ws.config()
    db = connect(cfg.store.uri)
    name = failures_table_name("acme")
    before = queue(ws)
    assert before["image.md"].attempts == 4
    reports = {r.table: r for r in maintain_tenant(db, cfg.store.work_dir, "acme", keep_versions=1)}
    assert reports[name].versions_before >= 4 and reports[name].versions_after == 1
    assert queue(ws) == before  # rows kept, only old versions go
    purged = purge_tenant(db, cfg.store.uri, cfg.store.work_dir, "acme")
    assert name in purged["tables"] and name not in list_tables(db)
    assert queue(ws) == {}


def test_summary_and_dagster_metadata_name_the_commonest_reasons(ws: Workspace) -> None:
    ws.tenant("acme", GOOD)
    rc = ws.context("acme", "inspect")
    assert queue_summary(rc).count == 0 and failure_metadata(queue_summary(rc))["failed_documents"] == 0
    kinds = [("parse", "invalid_content")] * 3 + [("parse", "parse_error")] * 2
    kinds += [("listing", "download_error"), ("chunk", "chunking_error")]
    failed = [Failure(f"d{i}.md", "", stage, reason, "m") for i, (stage, reason) in enumerate(kinds)]
    FailureQueue(rc.db, "acme").apply(failed, None, "r1", datetime.now(UTC))
    summary = queue_summary(rc)
    assert summary.count == 7
    assert summary.top_reasons == (
        ("parse:invalid_content", 3),
        ("parse:parse_error", 2),
        ("chunk:chunking_error", 1),
    )
    meta = failure_metadata(summary)
    assert meta["failed_documents"] == 7
    assert meta["failed_top_reasons"].data == {
        "parse:invalid_content": 3,
        "parse:parse_error": 2,
        "chunk:chunking_error": 1,
    }


def test_cli_failures_table_json_and_empty(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    src = ws.tenant("acme", {**GOOD, "image.md": BINARY})
    ws.tenant("globex", GOOD)
    ws.run("acme", "r1")
    ws.run("globex", "r1")
    capsys.readouterr()
    assert main(cli(ws, "failures", "--tenant", "acme")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["doc", "stage", "reason", "attempts"]
    row = lines[1].split()
    assert row[:4] == ["image.md", "parse", "invalid_content", "1"]
    assert "image.md: invalid_content:" not in lines[1]  # the prefix the columns already show
    assert max(map(len, lines)) < 200  # the message is cut
    assert main(cli(ws, "failures", "--tenant", "acme", "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tenant"] == "acme" and data["count"] == 1
    (entry,) = data["failures"]
    assert entry["doc_id"] == "image.md" and entry["attempts"] == 1 and entry["stage"] == "parse"
    assert datetime.fromisoformat(entry["first_failed_at"]).tzinfo is not None
    assert main(cli(ws, "failures", "--tenant", "globex")) == 0
    assert capsys.readouterr().out.strip() == "tenant globex: no failed documents"
    assert main(cli(ws, "failures", "--tenant", "globex", "--json")) == 0
    assert json.loads(capsys.readouterr().out) == {"tenant": "globex", "count": 0, "failures": []}
    assert main(cli(ws, "failures", "--tenant", "nobody")) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tessera: ConfigError: ") and "nobody" in err[0]
    shutil.rmtree(src)  # the queue is read from the store, not the source
    assert main(cli(ws, "failures", "--tenant", "acme", "--json")) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 1


def test_the_queue_lives_in_an_s3_store(
    ws: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    moto: MotoS3,  # noqa: F811
    admin: Any,  # noqa: F811
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.endpoint)
    bucket = new_bucket(admin)
    ws.store_uri = f"s3://{bucket}/tessera"
    src = ws.tenant("acme", {**GOOD, "image.md": BINARY})
    ws.run("acme", "r1")
    ws.run("acme", "r2")
    assert queue(ws)["image.md"].attempts == 2
    keys = [o["Key"] for o in admin.list_objects_v2(Bucket=bucket)["Contents"]]
    assert any(k.startswith("tessera/failures__acme.lance/") for k in keys)
    (src / "image.md").unlink()
    ws.run("acme", "r3")
    assert queue(ws) == {}
    cfg = ws.config()
    purged = purge_tenant(connect(cfg.store.uri), cfg.store.uri, cfg.store.work_dir, "acme")
    assert failures_table_name("acme") in purged["tables"]


# ----------------------------------------------------------------------------- GET /ops/failures

KEYS = {
    "olga-key": ("acme", "olga"),  # an operator of acme
    "alice-key": ("acme", "alice"),  # a user of acme, not an operator
    "gary-key": ("globex", "gary"),  # an operator of globex
    "ian-key": ("initech", "ian"),  # initech configures no operators: fail closed
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    ws = Workspace(tmp_path_factory.mktemp("ops_failures"))
    ws.tenant("acme", {**GOOD, "image.md": BINARY}, users={"olga": ["staff"], "alice": ["staff"]})
    ws.tenant("globex", GOOD, users={"gary": ["staff"]})
    ws.tenant("initech", {**GOOD, "blob.md": BINARY}, users={"ian": ["staff"]})
    ws.tenants["acme"]["access"]["operators"] = ["olga"]
    ws.tenants["globex"]["access"]["operators"] = ["gary"]
    for tenant in ("acme", "globex", "initech"):
        ws.run(tenant, "r1")
    lines = [f"  - {{sha256: {key_digest(k)}, tenant: {t}, user: {u}}}\n" for k, (t, u) in KEYS.items()]
    (ws.root / "keys.yaml").write_text("keys:\n" + "".join(lines), encoding="utf-8")
    ws.config()
    data = yaml.safe_load((ws.root / "tessera.yaml").read_text(encoding="utf-8"))
    (ws.root / "tessera.yaml").write_text(yaml.safe_dump({**data, "api_keys_file": "keys.yaml"}))
    cfg = load_config(ws.root / "tessera.yaml")
    assert cfg.api_keys_file is not None
    app = create_app(cfg, HashEmbedder(), IdentityStore.load(cfg, cfg.api_keys_file))
    return TestClient(app, raise_server_exceptions=False)


def _error(r: Any, status: int) -> str:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert set(body) == {"detail"} and isinstance(body["detail"], str), body
    return str(body["detail"])


def test_an_operator_reads_its_tenants_queue(client: TestClient) -> None:
    r = client.get("/ops/failures", headers={"X-API-Key": "olga-key"})
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["tenant"] == "acme" and data["count"] == 1
    (entry,) = data["failures"]
    assert (entry["doc_id"], entry["stage"], entry["reason"], entry["attempts"]) == (
        "image.md", "parse", "invalid_content", 1,
    )  # fmt: skip
    assert datetime.fromisoformat(entry["first_failed_at"]) <= datetime.fromisoformat(entry["last_failed_at"])
    same = client.get(
        "/ops/failures", params={"tenant": "acme"}, headers={"Authorization": "Bearer olga-key"}
    )
    assert same.status_code == 200 and same.json() == data
    empty = client.get("/ops/failures", headers={"X-API-Key": "gary-key"})
    assert empty.status_code == 200 and empty.json() == {"tenant": "globex", "count": 0, "failures": []}


def test_ops_failures_refuses_everyone_else(client: TestClient) -> None:
    assert "not an operator" in _error(client.get("/ops/failures", headers={"X-API-Key": "alice-key"}), 403)
    assert "not an operator" in _error(client.get("/ops/failures", headers={"X-API-Key": "ian-key"}), 403)
    other = client.get("/ops/failures", params={"tenant": "acme"}, headers={"X-API-Key": "gary-key"})
    assert "own tenant" in _error(other, 403)  # globex's operator never sees acme's queue
    for headers in ({}, {"X-API-Key": "wrong"}, {"Authorization": "Basic b2xnYS1rZXk6"}):
        r = client.get("/ops/failures", headers=headers)
        _error(r, 401)
        assert r.headers["WWW-Authenticate"].startswith('Bearer realm="tessera"'), headers
    _error(client.get("/ops/failures", params={"tenant": "x" * 64}, headers={"X-API-Key": "olga-key"}), 422)
    assert client.post("/ops/failures", headers={"X-API-Key": "olga-key"}).status_code == 405


def test_ops_failures_is_declared_in_openapi(client: TestClient) -> None:
    op = client.get("/openapi.json").json()["paths"]["/ops/failures"]["get"]
    assert {"200", "401", "403"} <= set(op["responses"])
    assert op["responses"]["403"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorModel")
    assert op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/FailuresResponse"
    )
    assert "WWW-Authenticate" in op["responses"]["401"]["headers"]


def test_the_published_index_asset_reports_the_queue(ws: Workspace) -> None:
    """The Dagster path (no retry scope) fills the queue too, and the asset's metadata shows it."""
    from dagster import build_asset_context

    from assets.chunk_embeddings import chunk_embeddings
    from assets.document_chunks import document_chunks
    from assets.parsed_documents import parsed_documents
    from assets.published_index import published_index
    from assets.source_listing import source_listing
    from resources import (
        ConfiguredSourceResource,
        FakeEmbedderResource,
        TenantRunResource,
        TesseraConfigResource,
    )

    ws.tenant("acme", {**GOOD, "image.md": BINARY})
    run = TenantRunResource(
        config=TesseraConfigResource(config_path=str(ws.config().path)),
        embedder=FakeEmbedderResource(),
        sources=ConfiguredSourceResource(),
    )
    with build_asset_context(partition_key="acme") as ctx:
        listing = source_listing(ctx, tenant_run=run).value
        parsed = parsed_documents(ctx, tenant_run=run, source_listing=listing).value
        chunks = document_chunks(ctx, tenant_run=run, parsed_documents=parsed).value
        emb = chunk_embeddings(ctx, tenant_run=run, document_chunks=chunks).value
        out = published_index(ctx, tenant_run=run, chunk_embeddings=emb)
    assert out.metadata["failed_documents"].value == 1
    assert out.metadata["failed_top_reasons"].data == {"parse:invalid_content": 1}
    assert queue(ws)["image.md"].attempts == 1
