"""Backfill after a model change: build next to the active model, cut over atomically, roll back."""

from __future__ import annotations

from typing import Any

import pymupdf
import pytest

from tessera.cli_model import model_status
from tessera.embedding.fake import HashEmbedder
from tessera.errors import ModelIdentityError
from tessera.pipeline.cutover import cutover_step
from tessera.pipeline.run import chunk_step as chunk
from tessera.pipeline.run import embed_step, list_step, parse_step, publish_step, verify_step
from tessera.search import principal_from_config, search
from tessera.search.query import for_tenant
from tessera.store.active import ActivePointer
from tessera.store.embedding_cache import EmbeddingCache

from .conftest import Workspace

DOCS = {
    "install.md": "# Install\n\nRun the installer, then restart the router.\n",
    "billing.md": "# Billing\n\nInvoices are sent on the first day of each month.\n",
    "travel.md": "# Travel\n\nBook trains two weeks ahead for the lower fare.\n",
}
OLD, NEW = HashEmbedder(version="1"), HashEmbedder(version="2")


def _build_without_cutover(ws: Workspace, tenant: str, run_id: str, embedder: HashEmbedder) -> Any:
    rc = ws.context(tenant, run_id, embedder=embedder)
    steps = {f.__name__: f(rc) for f in (list_step, parse_step, chunk, embed_step, publish_step)}
    return rc, steps


def _search(ws: Workspace, embedder: HashEmbedder, tenant: str = "acme") -> list[str]:
    cfg = ws.config()
    who = principal_from_config(cfg, tenant, "alice")
    return [h.doc_id for h in search(cfg.store.uri, embedder, who, "invoices first day of the month", k=1)]


@pytest.mark.scenario("B4")
def test_backfill_serves_the_old_model_until_an_atomic_cutover_and_rolls_back(ws: Workspace) -> None:
    assert OLD.identity.key != NEW.identity.key
    ws.tenant("acme", DOCS)
    ws.tenant("globex", {"x.md": "# X\n\nGlobex handbook.\n"})
    first = ws.run("acme", "r1", embedder=OLD)
    ws.run("globex", "g1", embedder=OLD)
    assert first["cutover"]["moved"] and first["cutover"]["active"] == OLD.identity.key
    uri = ws.config().store.uri
    old_cache_rows = EmbeddingCache(ws.context("acme").db, "acme", OLD.identity).count()

    rc, steps = _build_without_cutover(ws, "acme", "r2", NEW)
    assert steps["list_step"]["changed"] == len(DOCS)  # the new model's table starts empty
    assert steps["embed_step"]["cache_hits"] == 0  # the old model's vectors are never reused
    assert steps["publish_step"]["committed"]
    # Serving stays on the old model while the new table exists next to it.
    assert ActivePointer(rc.db, "acme").get().model_key == OLD.identity.key  # type: ignore[union-attr]
    assert _search(ws, OLD) == ["billing.md"]
    assert for_tenant(uri, "acme", [NEW, OLD]) is OLD
    with pytest.raises(ModelIdentityError, match=OLD.identity.key):
        _search(ws, NEW)
    status = model_status(ws.config(), "acme", [NEW, OLD])
    assert status["active"]["model"] == OLD.identity.key
    assert status["pending"] == {"model": NEW.identity.key, "documents_built": 3, "documents_served": 3}
    assert set(status["retained"]) == {OLD.identity.key, NEW.identity.key}

    moved = cutover_step(rc, verify_step(rc)[0])
    assert moved["moved"] and moved["previous"] == OLD.identity.key
    assert _search(ws, NEW) == ["billing.md"]
    with pytest.raises(ModelIdentityError, match=f"served by model {NEW.identity.key}"):
        _search(ws, OLD)  # a query with the old model is refused, naming the active one
    assert for_tenant(uri, "acme", [OLD, NEW]) is NEW
    assert ActivePointer(rc.db, "globex").get().model_key == OLD.identity.key  # type: ignore[union-attr]
    cfg = ws.config()
    globex = principal_from_config(cfg, "globex", "alice")
    assert [h.doc_id for h in search(cfg.store.uri, OLD, globex, "Globex handbook", k=1)] == ["x.md"]
    assert "pending" not in model_status(ws.config(), "acme", [NEW, OLD])

    # The new model's cache: a rerun embeds nothing; the old model's cache is untouched.
    again = ws.run("acme", "r3", embedder=NEW)
    assert again["embed"]["embedded"] == 0 and again["cutover"]["reason"] == "already active"
    assert EmbeddingCache(ws.context("acme").db, "acme", OLD.identity).count() == old_cache_rows

    back = ActivePointer(rc.db, "acme").rollback("rollback-1")
    assert back.model_key == OLD.identity.key and back.previous_key == NEW.identity.key
    assert _search(ws, OLD) == ["billing.md"]
    with pytest.raises(ModelIdentityError):
        _search(ws, NEW)
    history = [a.model_key for a in ActivePointer(rc.db, "acme").history()]
    assert history == [OLD.identity.key, NEW.identity.key, OLD.identity.key]


def _pdf(text: str) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    return bytes(doc.tobytes())


def test_no_cutover_while_the_new_table_lacks_a_served_document(ws: Workspace) -> None:
    src = ws.tenant("acme", {**DOCS, "manual.pdf": _pdf("Manual page one.")})
    ws.run("acme", "r1", embedder=OLD)
    (src / "manual.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 10)  # now unparseable
    out = ws.run("acme", "r2", embedder=NEW)
    assert "manual.pdf" in out["publish"]["quarantined"]
    assert not out["cutover"]["moved"] and out["cutover"]["missing"] == ["manual.pdf"]
    assert ActivePointer(ws.context("acme").db, "acme").get().model_key == OLD.identity.key  # type: ignore[union-attr]
    with pytest.raises(Exception, match="no previous model"):
        ActivePointer(ws.context("acme").db, "acme").rollback("x")


def test_dagster_model_change_marks_a_new_data_version_and_cuts_over(ws: Workspace) -> None:
    from dagster import DagsterInstance, materialize

    from assets import INDEXING_ASSETS, INDEXING_CHECKS
    from resources import (
        ConfiguredSourceResource,
        FakeEmbedderResource,
        TenantRunResource,
        TesseraConfigResource,
    )

    ws.tenant("acme", DOCS)
    cfg = ws.config()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme"])

    def build(version: str) -> Any:
        config = TesseraConfigResource(config_path=str(cfg.path))
        run = TenantRunResource(
            config=config, embedder=FakeEmbedderResource(version=version), sources=ConfiguredSourceResource()
        )
        resources = {"tessera_config": config, "tenant_run": run}
        return materialize(
            [*INDEXING_ASSETS, *INDEXING_CHECKS], partition_key="acme", instance=instance, resources=resources
        )

    first, second = build("1"), build("2")
    versions = [
        r.asset_materializations_for_node("source_listing")[0].tags["dagster/data_version"]
        for r in (first, second)
    ]
    assert versions[0] != versions[1]  # a model change is a new data version: downstream shows stale
    assert first.output_for_node("active_model")["moved"]
    cut = second.output_for_node("active_model")
    assert cut["moved"] and cut["previous"] == HashEmbedder(version="1").identity.key
    assert cut["active"] == HashEmbedder(version="2").identity.key


@pytest.mark.model
def test_minilm_to_a_test_embedder_and_back(ws: Workspace) -> None:
    """The bundled MiniLM as the active model, a deterministic test embedder as the new one."""
    from tessera.config import EmbeddingConfig
    from tessera.embedding.sentence import SentenceTransformerEmbedder

    minilm = SentenceTransformerEmbedder(EmbeddingConfig(model="sentence-transformers/all-MiniLM-L6-v2"))
    test_model = HashEmbedder(dimension=96, name="tessera/test-embedder", version="7")
    ws.tenant("acme", DOCS)
    first = ws.run("acme", "m1", embedder=minilm)
    assert first["cutover"]["active"] == minilm.identity.key
    assert _search(ws, minilm) == ["billing.md"]  # the real model answers

    rc, steps = _build_without_cutover(ws, "acme", "m2", test_model)
    assert steps["embed_step"]["cache_hits"] == 0 and steps["embed_step"]["embedded"] > 0
    assert _search(ws, minilm) == ["billing.md"]  # still served by MiniLM during the backfill
    with pytest.raises(ModelIdentityError, match=minilm.identity.key):
        _search(ws, test_model)
    assert cutover_step(rc, verify_step(rc)[0])["moved"]
    with pytest.raises(ModelIdentityError, match=test_model.identity.key):
        _search(ws, minilm)
    assert _search(ws, test_model) == ["billing.md"]
    ActivePointer(rc.db, "acme").rollback("back")
    assert _search(ws, minilm) == ["billing.md"]
    again = ws.run("acme", "m3", embedder=minilm)  # MiniLM's own cache: nothing embedded again
    assert again["embed"]["embedded"] == 0
